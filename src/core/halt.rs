//! Why a long computation stopped before its end: the caller asked it to
//! (an interrupt) or memory ran out. Kernels take a `stop` callback, ask it
//! every few milliseconds of work, and allocate their large buffers with
//! [`try_vec`], so neither an interrupt nor a failed allocation has to wait
//! for (or abort) the whole computation.
//!
//! Cost: a callback every few milliseconds of work; [`try_vec`] is one
//! fallible allocation.
//!
//! Reference: SQLite's `sqlite3_interrupt` (which the SQL layer's callback
//! polls) and Rust's `Vec::try_reserve`.

use std::fmt;

/// A computation that did not finish.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Halt {
    /// `stop` returned true (the SQL layer: `sqlite3_interrupt`).
    Stopped,
    /// A buffer could not be allocated.
    OutOfMemory,
}

impl fmt::Display for Halt {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Halt::Stopped => "interrupted",
            Halt::OutOfMemory => "out of memory",
        })
    }
}

/// A stop callback that never stops.
pub fn never() -> bool {
    false
}

/// `vec![value; len]`, or [`Halt::OutOfMemory`] instead of an abort.
pub fn try_vec<T: Clone>(len: usize, value: T) -> Result<Vec<T>, Halt> {
    let mut v = Vec::new();
    v.try_reserve_exact(len).map_err(|_| Halt::OutOfMemory)?;
    v.resize(len, value);
    Ok(v)
}

/// Collects an iterator of known length into a vector allocated fallibly.
pub fn try_collect<T>(len: usize, items: impl Iterator<Item = T>) -> Result<Vec<T>, Halt> {
    let mut v = Vec::new();
    v.try_reserve_exact(len).map_err(|_| Halt::OutOfMemory)?;
    v.extend(items);
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_impossible_allocation_is_an_error() {
        assert_eq!(
            try_vec(usize::MAX / 2, 0u64).unwrap_err(),
            Halt::OutOfMemory
        );
        assert_eq!(try_vec(3, 7u8).unwrap(), vec![7, 7, 7]);
        assert_eq!(Halt::Stopped.to_string(), "interrupted");
    }
}
