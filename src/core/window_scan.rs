//! The window scan, on every core or on the calling thread: the entry point
//! that picks [`crate::core::scan_ahead`] (speculated elections on a pool)
//! or [`crate::core::near_dups::scan_sequential`]; both give the same
//! removals.
//!
//! Cost: that of the scan it picks.
//!
//! Reference: [`crate::core::near_dups`] (the scan's contract).

use rayon::ThreadPool;

use crate::core::halt::Halt;
use crate::core::measure::Measure;
use crate::core::near_dups::{scan_measured, Removal, ScanRow, ScanStats};
use crate::core::pools::helpers;

/// Runs the scan over `rows` (in scan order), comparing each row with the
/// next `distance` rows. Returns the removed rows in the order they were
/// decided, and the work counters. An error from the row source stops the
/// scan and is returned; so does a [`Halt`]: `poll` is asked every few
/// milliseconds, also inside long comparisons (the SQL layer polls
/// `sqlite3_interrupt`), and memory is allocated fallibly.
pub fn scan<E: From<Halt>>(
    rows: impl IntoIterator<Item = Result<ScanRow, E>>,
    threshold: f64,
    distance: usize,
    poll: &mut dyn FnMut() -> bool,
) -> Result<(Vec<Removal>, ScanStats), E> {
    scan_on(helpers(), rows, threshold, distance, poll)
}

/// [`scan`] by `measure`. Resemblance compares two shingle sets in linear
/// time, so its scan runs on the calling thread.
pub fn scan_by<E: From<Halt>>(
    rows: impl IntoIterator<Item = Result<ScanRow, E>>,
    threshold: f64,
    measure: &Measure,
    distance: usize,
    poll: &mut dyn FnMut() -> bool,
) -> Result<(Vec<Removal>, ScanStats), E> {
    match measure {
        Measure::Levenshtein => scan(rows, threshold, distance, poll),
        Measure::Resemblance(_) => scan_measured(rows, threshold, measure, distance, poll),
    }
}

/// [`scan`] on `pool`'s threads and the calling thread
/// ([`scan_ahead`](crate::core::scan_ahead)), or on the calling thread alone
/// when there is no pool: the same results either way.
pub fn scan_on<E: From<Halt>>(
    pool: Option<&ThreadPool>,
    rows: impl IntoIterator<Item = Result<ScanRow, E>>,
    threshold: f64,
    distance: usize,
    poll: &mut dyn FnMut() -> bool,
) -> Result<(Vec<Removal>, ScanStats), E> {
    match pool {
        Some(pool) if distance > 0 => {
            crate::core::scan_ahead::scan(pool, rows, threshold, distance, poll)
        }
        _ => scan_measured(rows, threshold, &Measure::Levenshtein, distance, poll),
    }
}
