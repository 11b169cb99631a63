//! How far the running pipeline is, for a display: the phase, and in the
//! near-duplicate scan the rows done of the total. One state per process
//! (every connection of the process sees the latest run); `dedup_progress()`
//! reads it as JSON from any connection, e.g. a second one polled by the
//! `sqlite-dedup` command while the first runs.

use std::sync::Mutex;
use std::time::Instant;

use rusqlite::{Connection, Result};

struct State {
    phase: String,
    step: usize,
    steps: usize,
    done: u64,
    total: u64,
    since: Instant,
    running: bool,
}

static STATE: Mutex<Option<State>> = Mutex::new(None);

fn with(f: impl FnOnce(&mut State)) {
    if let Ok(mut guard) = STATE.lock() {
        if let Some(state) = guard.as_mut() {
            f(state);
        }
    }
}

/// A phase starts: `step` of `steps`.
pub fn phase(name: &str, step: usize, steps: usize) {
    if let Ok(mut guard) = STATE.lock() {
        *guard = Some(State {
            phase: name.to_string(),
            step,
            steps,
            done: 0,
            total: 0,
            since: Instant::now(),
            running: true,
        });
    }
}

/// The current phase has `total` rows to go through.
pub fn total(total: u64) {
    with(|s| s.total = total);
}

/// `done` rows of the current phase are through.
pub fn done(done: u64) {
    with(|s| s.done = done);
}

/// One more row of the current phase is through (phase 1 counts its rows
/// this way, as it checks each).
pub fn tick() {
    with(|s| {
        if s.running {
            s.done += 1;
        }
    });
}

/// The run ended (finished or failed).
pub fn end() {
    with(|s| s.running = false);
}

/// Registers `dedup_progress()`: JSON `{"phase", "step", "steps", "done",
/// "total", "seconds", "running"}` of the latest run in this process, or NULL
/// before the first.
pub fn register(db: &Connection) -> Result<()> {
    db.create_scalar_function(
        "dedup_progress",
        0,
        rusqlite::functions::FunctionFlags::SQLITE_UTF8,
        |_| {
            let guard = STATE.lock().map_err(|_| {
                rusqlite::Error::UserFunctionError("dedup_progress: state unavailable, got a poisoned lock".into())
            })?;
            Ok(guard.as_ref().map(|s| {
                format!(
                    "{{\"phase\":{},\"step\":{},\"steps\":{},\"done\":{},\"total\":{},\"seconds\":{:.3},\"running\":{}}}",
                    super::json::json_string(&s.phase),
                    s.step,
                    s.steps,
                    s.done,
                    s.total,
                    s.since.elapsed().as_secs_f64(),
                    s.running
                )
            }))
        },
    )
}
