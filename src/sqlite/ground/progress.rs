//! How far the running call is, for a display: its phase (an index the
//! caller's list of phases gives), the step of steps, and the rows done of
//! the total. One state per process (every connection of the process sees
//! the latest run); the pipeline's `dedup_progress()` shows it
//! (`crate::sqlite::pipeline::run::progress`), the table-valued functions
//! count their rows into it.
//!
//! The state is a handful of atomics, never a lock: a process forked while
//! another of its threads was counting rows (phase 1 counts each) would
//! otherwise inherit a lock that no thread of the child ever releases, and
//! the child's first run would wait on it for ever. A reader may see one
//! field of a phase that has just begun beside another of the phase
//! before, for the instant between their writes: a display's tolerance.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering::Relaxed};
use std::sync::OnceLock;
use std::time::Instant;

/// The current phase's index plus one; 0 before the first run.
static PHASE: AtomicUsize = AtomicUsize::new(0);
static STEP: AtomicUsize = AtomicUsize::new(0);
static STEPS: AtomicUsize = AtomicUsize::new(0);
static DONE: AtomicU64 = AtomicU64::new(0);
static TOTAL: AtomicU64 = AtomicU64::new(0);
/// When the current phase began, in nanoseconds after [`epoch`].
static SINCE: AtomicU64 = AtomicU64::new(0);
static RUNNING: AtomicBool = AtomicBool::new(false);

/// The clock's origin: set when `dedup_progress()` is registered, at the
/// extension's load, before any run.
pub fn epoch() -> Instant {
    static EPOCH: OnceLock<Instant> = OnceLock::new();
    *EPOCH.get_or_init(Instant::now)
}

fn nanos_since_epoch() -> u64 {
    epoch().elapsed().as_nanos().min(u64::MAX as u128) as u64
}

/// Phase `at` (the caller's index) starts: `step` of `steps`.
pub fn phase(at: usize, step: usize, steps: usize) {
    DONE.store(0, Relaxed);
    TOTAL.store(0, Relaxed);
    SINCE.store(nanos_since_epoch(), Relaxed);
    STEP.store(step, Relaxed);
    STEPS.store(steps, Relaxed);
    PHASE.store(at + 1, Relaxed);
    RUNNING.store(true, Relaxed);
}

/// The current phase has `total` rows to go through.
pub fn total(total: u64) {
    TOTAL.store(total, Relaxed);
}

/// `done` rows of the current phase are through.
pub fn done(done: u64) {
    DONE.store(done, Relaxed);
}

/// One more row of the current phase is through (phase 1 counts its rows
/// this way, as it checks each).
pub fn tick() {
    if RUNNING.load(Relaxed) {
        DONE.fetch_add(1, Relaxed);
    }
}

/// The run ended (finished or failed).
pub fn end() {
    RUNNING.store(false, Relaxed);
}

/// The state: (the phase's index, step, steps, done, total, seconds into
/// the phase, whether a run is going on); `None` before the first run.
pub fn state() -> Option<(usize, usize, usize, u64, u64, f64, bool)> {
    let phase = PHASE.load(Relaxed).checked_sub(1)?;
    let seconds = nanos_since_epoch().saturating_sub(SINCE.load(Relaxed)) as f64 / 1e9;
    Some((
        phase,
        STEP.load(Relaxed),
        STEPS.load(Relaxed),
        DONE.load(Relaxed),
        TOTAL.load(Relaxed),
        seconds,
        RUNNING.load(Relaxed),
    ))
}
