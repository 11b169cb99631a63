//! How far the running pipeline is, for a display: the phase, and in the
//! near-duplicate scan the rows done of the total. One state per process
//! (every connection of the process sees the latest run); `dedup_progress()`
//! reads it as JSON from any connection, e.g. a second one polled by the
//! `sqlite-dedup` command while the first runs.
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

use rusqlite::{Connection, Result};

use crate::sqlite::pipeline::scripts::{EXTERNAL, PHASES};

/// The phases a run reports, by the names the phase lists give them
/// (`scripts`: a run's, then the one a run decided elsewhere has in place
/// of phase 6), then the apply.
const NAMES: [&str; 8] = [
    PHASES[0].0,
    PHASES[1].0,
    PHASES[2].0,
    PHASES[3].0,
    PHASES[4].0,
    PHASES[5].0,
    EXTERNAL[1].0,
    "apply",
];

/// The current phase's place in [`NAMES`] plus one; 0 before the first run.
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
fn epoch() -> Instant {
    static EPOCH: OnceLock<Instant> = OnceLock::new();
    *EPOCH.get_or_init(Instant::now)
}

fn nanos_since_epoch() -> u64 {
    epoch().elapsed().as_nanos().min(u64::MAX as u128) as u64
}

/// A phase starts: `step` of `steps`. (Every phase's name is in `NAMES`,
/// as a test checks; another would be shown as the apply.)
pub fn phase(name: &str, step: usize, steps: usize) {
    let at = NAMES
        .iter()
        .position(|n| *n == name)
        .unwrap_or(NAMES.len() - 1);
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

/// The state as `dedup_progress()` shows it; `None` before the first run.
fn shown() -> Option<String> {
    let phase = PHASE.load(Relaxed).checked_sub(1)?;
    let seconds = nanos_since_epoch().saturating_sub(SINCE.load(Relaxed)) as f64 / 1e9;
    Some(format!(
        "{{\"phase\":{},\"step\":{},\"steps\":{},\"done\":{},\"total\":{},\"seconds\":{:.3},\"running\":{}}}",
        crate::sqlite::pipeline::json::json_string(NAMES[phase.min(NAMES.len() - 1)]),
        STEP.load(Relaxed),
        STEPS.load(Relaxed),
        DONE.load(Relaxed),
        TOTAL.load(Relaxed),
        seconds,
        RUNNING.load(Relaxed)
    ))
}

/// Registers `dedup_progress()`: JSON `{"phase", "step", "steps", "done",
/// "total", "seconds", "running"}` of the latest run in this process, or NULL
/// before the first.
pub fn register(db: &Connection) -> Result<()> {
    epoch();
    db.create_scalar_function(
        "dedup_progress",
        0,
        rusqlite::functions::FunctionFlags::SQLITE_UTF8,
        |_| Ok(shown()),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every phase a run of any kind passes is shown under its own name,
    /// and the progress JSON names it.
    #[test]
    fn every_phase_of_every_kind_of_run_has_its_name() {
        use crate::sqlite::pipeline::scripts::PREPARE_ONLY;
        let passed: Vec<&str> = PHASES
            .iter()
            .chain(PREPARE_ONLY.iter())
            .chain(EXTERNAL.iter())
            .map(|(name, _)| *name)
            .chain(["apply"])
            .collect();
        for name in passed {
            assert!(NAMES.contains(&name), "{name} is not among the names shown");
        }
    }

    /// A child forked while another thread of its parent counts rows as
    /// fast as it can runs its own phases and ends: nothing it needs can
    /// have been left held by a thread it does not have. (With the state
    /// behind a lock, most children waited for ever.)
    #[cfg(target_os = "linux")]
    #[test]
    fn a_child_forked_while_rows_are_counted_runs_its_own_phases() {
        use std::sync::atomic::AtomicBool;
        use std::sync::Arc;
        let stop = Arc::new(AtomicBool::new(false));
        phase("01_canonicalize", 1, 7);
        let counter = {
            let stop = stop.clone();
            std::thread::spawn(move || {
                while !stop.load(Relaxed) {
                    tick();
                    done(DONE.load(Relaxed));
                }
            })
        };
        let mut stuck = 0;
        for _ in 0..40 {
            // Safety: the child only touches this module's atomics and
            // formats a string, then leaves with _exit (no destructors,
            // no test harness); the parent waits for it below.
            let pid = unsafe { libc::fork() };
            assert!(pid >= 0, "fork failed");
            if pid == 0 {
                phase("04_near_dups", 4, 7);
                tick();
                total(10);
                let ok = shown().is_some_and(|s| s.contains("\"04_near_dups\""));
                end();
                unsafe { libc::_exit(if ok { 0 } else { 3 }) };
            }
            let mut status = 0;
            let started = Instant::now();
            loop {
                // Safety: waits for (or kills) the child made above.
                let r = unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) };
                if r == pid {
                    assert!(
                        libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
                        "child status {status}"
                    );
                    break;
                }
                if started.elapsed().as_secs() >= 5 {
                    unsafe {
                        libc::kill(pid, libc::SIGKILL);
                        libc::waitpid(pid, &mut status, 0);
                    }
                    stuck += 1;
                    break;
                }
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
        }
        stop.store(true, Relaxed);
        counter.join().unwrap();
        assert_eq!(stuck, 0, "forked children that never ended");
    }
}
