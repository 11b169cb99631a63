//! How far the running pipeline is, for a display: its phases by name, and
//! `dedup_progress()`, which reads the process's state
//! ([`crate::sqlite::ground::progress`]) as JSON from any connection, e.g. a
//! second one polled by the `sqlite-dedup` command while the first runs.

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

/// A phase starts: `step` of `steps`. (Every phase's name is in `NAMES`,
/// as a test checks; another would be shown as the apply.)
pub fn phase(name: &str, step: usize, steps: usize) {
    let at = NAMES
        .iter()
        .position(|n| *n == name)
        .unwrap_or(NAMES.len() - 1);
    crate::sqlite::ground::progress::phase(at, step, steps);
}

/// The state as `dedup_progress()` shows it; `None` before the first run.
fn shown() -> Option<String> {
    let (phase, step, steps, done, total, seconds, running) =
        crate::sqlite::ground::progress::state()?;
    Some(format!(
        "{{\"phase\":{},\"step\":{step},\"steps\":{steps},\"done\":{done},\"total\":{total},\"seconds\":{seconds:.3},\"running\":{running}}}",
        crate::sqlite::ground::json::json_string(NAMES[phase.min(NAMES.len() - 1)]),
    ))
}

/// Registers `dedup_progress()`: JSON `{"phase", "step", "steps", "done",
/// "total", "seconds", "running"}` of the latest run in this process, or NULL
/// before the first.
pub fn register(db: &Connection) -> Result<()> {
    crate::sqlite::ground::progress::epoch();
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
        use crate::sqlite::ground::progress::{done, end, tick, total};
        use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
        use std::sync::Arc;
        use std::time::Instant;
        let stop = Arc::new(AtomicBool::new(false));
        phase("01_canonicalize", 1, 7);
        let counter = {
            let stop = stop.clone();
            std::thread::spawn(move || {
                while !stop.load(Relaxed) {
                    tick();
                    done(crate::sqlite::ground::progress::state().map_or(0, |s| s.3));
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
