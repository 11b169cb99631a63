//! The runner's step clock: with `DEDUP_TRACE` set in the environment, each
//! step's seconds go to standard error as it ends (`TRACE <step> <seconds>`,
//! what the benchmarks' profiles read; the report keeps seconds per phase).

use std::time::Instant;

/// Prints `TRACE <label> <seconds>` when dropped (with `DEDUP_TRACE` set):
/// the seconds since the clock given.
pub struct Trace(pub String, pub Instant);

impl Drop for Trace {
    fn drop(&mut self) {
        if traced() {
            eprintln!("TRACE {} {:.3}", self.0, self.1.elapsed().as_secs_f64());
        }
    }
}

/// With `DEDUP_TRACE` set, prints `TRACE <label> <seconds since *since>`
/// and restarts the clock (a step of a longer function).
pub fn lap(label: &str, since: &mut Instant) {
    if traced() {
        eprintln!("TRACE {label} {:.3}", since.elapsed().as_secs_f64());
        *since = Instant::now();
    }
}

/// Whether `DEDUP_TRACE` is set.
fn traced() -> bool {
    std::env::var_os("DEDUP_TRACE").is_some()
}
