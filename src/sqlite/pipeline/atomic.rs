//! The one place a run's writes are made safe: everything inside
//! [`atomically`] is committed together or not at all, whatever fails
//! (an error, a panic, a failed COMMIT), in every host, with or without
//! the shell's `-bail`, because the whole run is a single SQL statement.

use std::panic::{catch_unwind, AssertUnwindSafe};

use rusqlite::{ffi, Connection};

use super::DedupError;

/// What the work inside needs from the database.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lock {
    /// Reads only (the main schema); temp tables may be written.
    Read,
    /// Writes: in autocommit mode the transaction starts IMMEDIATE, so the
    /// plan is made on the data it is applied to.
    Write,
}

const SAVEPOINT: &str = "dedup_atomic";

/// Runs `work` so that its changes all land or none do.
///
/// In autocommit mode it owns a transaction (`BEGIN`, then `COMMIT`); inside
/// the caller's transaction it uses a savepoint, and the caller's COMMIT
/// decides. On any error (or panic) everything `work` did is rolled back
/// before the error is returned; a COMMIT that fails (a lock held too long,
/// a full disk) is rolled back too and reported as such. While it runs, a
/// busy timeout of `busy_timeout_ms` applies when the connection has none.
pub fn atomically<T>(
    db: &Connection,
    lock: Lock,
    busy_timeout_ms: i64,
    function: &str,
    work: impl FnOnce(&Connection) -> Result<T, DedupError>,
) -> Result<T, DedupError> {
    let running = busy_statements(db);
    if running > 1 {
        return Err(DedupError::new(format!(
            "{function}: must be the only statement running on its connection, got {} (finish or reset the others; {function} cannot be called from inside a query that reads)",
            running - 1
        )));
    }
    let previous_timeout: i64 = db.query_row("PRAGMA busy_timeout", [], |r| r.get(0))?;
    let set_timeout = previous_timeout == 0 && busy_timeout_ms > 0;
    if set_timeout {
        db.query_row(
            &format!("PRAGMA busy_timeout = {busy_timeout_ms}"),
            [],
            |_| Ok(()),
        )?;
    }
    let result = in_transaction(db, lock, function, work);
    if set_timeout {
        let _ = db.query_row("PRAGMA busy_timeout = 0", [], |_| Ok(()));
    }
    result
}

fn in_transaction<T>(
    db: &Connection,
    lock: Lock,
    function: &str,
    work: impl FnOnce(&Connection) -> Result<T, DedupError>,
) -> Result<T, DedupError> {
    let owned = db.is_autocommit();
    let begin = match (owned, lock) {
        (true, Lock::Write) => "BEGIN IMMEDIATE".to_string(),
        (true, Lock::Read) => "BEGIN".to_string(),
        (false, _) => format!("SAVEPOINT {SAVEPOINT}"),
    };
    db.execute_batch(&begin).map_err(|e| {
        DedupError::new(format!(
            "{function}: could not start the transaction, nothing was changed: {e}"
        ))
    })?;
    let outcome = catch_unwind(AssertUnwindSafe(|| work(db))).unwrap_or_else(|panic| {
        let what = panic
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| panic.downcast_ref::<String>().cloned())
            .unwrap_or_default();
        Err(DedupError::new(format!(
            "{function}: internal error (a bug; please report it): {what}"
        )))
    });
    match outcome {
        Ok(value) => {
            let end = if owned {
                "COMMIT".to_string()
            } else {
                format!("RELEASE {SAVEPOINT}")
            };
            match db.execute_batch(&end) {
                Ok(()) => Ok(value),
                Err(e) => {
                    roll_back(db, owned);
                    Err(DedupError::new(format!(
                        "{function}: could not commit, nothing was changed: {e}"
                    )))
                }
            }
        }
        Err(e) => {
            roll_back(db, owned);
            Err(e)
        }
    }
}

/// Undoes what the work did. SQLite may already have rolled the whole
/// transaction back itself (after a full disk, an I/O error or an
/// interrupt); then there is nothing left to undo.
fn roll_back(db: &Connection, owned: bool) {
    if owned {
        if !db.is_autocommit() {
            let _ = db.execute_batch("ROLLBACK");
        }
    } else if !db.is_autocommit() {
        let _ = db.execute_batch(&format!("ROLLBACK TO {SAVEPOINT}; RELEASE {SAVEPOINT}"));
    }
}

/// How many statements of this connection are running (stepped and not
/// reset), the caller's own included.
fn busy_statements(db: &Connection) -> usize {
    let mut n = 0;
    // Safety: the handle is this connection's, used on its own thread for
    // the duration of the call; sqlite3_next_stmt only walks its list.
    unsafe {
        let handle = db.handle();
        let mut stmt = ffi::sqlite3_next_stmt(handle, std::ptr::null_mut());
        while !stmt.is_null() {
            if ffi::sqlite3_stmt_busy(stmt) != 0 {
                n += 1;
            }
            stmt = ffi::sqlite3_next_stmt(handle, stmt);
        }
    }
    n
}
