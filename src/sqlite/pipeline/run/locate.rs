//! Naming the row a statement over many rows was refused on: a constraint
//! (a UNIQUE index, a CHECK, NOT NULL, a trigger's RAISE) says what, not
//! which row, so the statement is tried again row by row inside a savepoint
//! that is rolled back after. Used by the run's writes and by restore.

use rusqlite::{Connection, ErrorCode};

/// Whether `e` is a constraint's refusal: a row's doing, worth locating
/// (an interrupt, a full disk or a lock is not).
pub fn refused(e: &rusqlite::Error) -> bool {
    matches!(e.sqlite_error_code(), Some(ErrorCode::ConstraintViolation))
}

/// The first of `ids` for which `one` (the statement for that row) is
/// refused by a constraint, with its error, each tried in turn inside a
/// savepoint that is then rolled back. `None` when no row is refused alone,
/// when another error stops the search, or when the connection is in no
/// transaction (a trigger's `RAISE(ROLLBACK)` ends it: a try would then
/// change the database for good, so none is made).
pub fn first_refused(
    db: &Connection,
    ids: &[i64],
    one: impl Fn(i64) -> rusqlite::Result<usize>,
) -> Option<(i64, rusqlite::Error)> {
    if db.is_autocommit() || db.execute_batch("SAVEPOINT dedup_locate").is_err() {
        return None;
    }
    let mut found = None;
    for &id in ids {
        match one(id) {
            Ok(_) if db.is_autocommit() => break,
            Ok(_) => {}
            Err(e) if refused(&e) => {
                found = Some((id, e));
                break;
            }
            Err(_) => break,
        }
        if db.is_autocommit() {
            break;
        }
    }
    if db.is_autocommit() {
        // (The transaction ended under the search: what it found is not
        // trusted, and nothing is left to undo.)
        return None;
    }
    // (Should this fail, the caller's error undoes the whole run.)
    let _ = db.execute_batch("ROLLBACK TO dedup_locate; RELEASE dedup_locate");
    found
}
