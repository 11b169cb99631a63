//! The one place a run's writes are made safe: everything inside
//! [`atomically`] is committed together or not at all, whatever fails
//! (an error, a panic, a failed COMMIT), in every host, with or without
//! the shell's `-bail`, because the whole run is a single SQL statement.

use crate::sqlite::ground::error::Code;
use std::panic::{catch_unwind, AssertUnwindSafe};

use rusqlite::{ffi, Connection};

use crate::sqlite::ground::error::DedupError;

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
/// a full disk) is rolled back too and reported as such. While it runs, the
/// call waits for other connections' locks at most the connection's own
/// busy timeout in all (or `busy_timeout_ms` when it has none), however
/// many times it has to wait.
pub fn atomically<T>(
    db: &Connection,
    lock: Lock,
    busy_timeout_ms: i64,
    function: &str,
    work: impl FnOnce(&Connection) -> Result<T, DedupError>,
) -> Result<T, DedupError> {
    guarded(db, lock, End::Keep, busy_timeout_ms, function, work)
}

/// Runs `work` as [`atomically`] does with [`Lock::Write`], then takes
/// back everything it wrote, whether it succeeded or not: what a call
/// that asks "what would happen if" does (`dedup_similar` adds the page,
/// plans the run and reads the plan). Its value is returned only once
/// the database is as before.
pub fn tentatively<T>(
    db: &Connection,
    busy_timeout_ms: i64,
    function: &str,
    work: impl FnOnce(&Connection) -> Result<T, DedupError>,
) -> Result<T, DedupError> {
    guarded(db, Lock::Write, End::Undo, busy_timeout_ms, function, work)
}

/// What becomes of the work's changes when it succeeds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum End {
    /// Committed (or released into the caller's transaction).
    Keep,
    /// Rolled back.
    Undo,
}

fn guarded<T>(
    db: &Connection,
    lock: Lock,
    end: End,
    busy_timeout_ms: i64,
    function: &str,
    work: impl FnOnce(&Connection) -> Result<T, DedupError>,
) -> Result<T, DedupError> {
    let running = busy_statements(db);
    if running > 1 {
        return Err(DedupError::new(Code::State, format!(
            "{function}: must be the only statement running on its connection, got {} (finish or reset the others; {function} cannot be called from inside a query that reads)",
            running - 1
        )));
    }
    if lock == Lock::Write && read_only(db)? {
        return Err(DedupError::new(Code::State, format!(
            "{function}: the database is readonly on this connection (opened read-only, a file or folder this user may not write, PRAGMA query_only, or a Datasette query), got no way to write; nothing was changed (run it where it can write: the sqlite3 shell, `sqlite-dedup run DB`, `sqlite-utils dedup DB`)"
        )));
    }
    let previous_timeout: i64 = db.query_row("PRAGMA busy_timeout", [], |r| r.get(0))?;
    let budget = if previous_timeout > 0 {
        previous_timeout
    } else {
        busy_timeout_ms.max(0)
    };
    let mut waits = WaitBudget {
        budget_ms: budget,
        waited_ms: 0,
    };
    // Safety: the handler's state outlives its use: the connection's own
    // timeout (or none) is put back below, before `waits` is dropped.
    unsafe {
        ffi::sqlite3_busy_handler(
            db.handle(),
            Some(on_busy),
            &mut waits as *mut WaitBudget as *mut std::ffi::c_void,
        );
    }
    let previous_sorters = lend_sorter_threads(db);
    let result = in_transaction(db, lock, end, budget, function, work);
    // Safety: as above; this also uninstalls `on_busy`. The handle is this
    // connection's, on its own thread.
    unsafe {
        ffi::sqlite3_busy_timeout(
            db.handle(),
            previous_timeout.clamp(0, i32::MAX as i64) as i32,
        );
        if let Some(n) = previous_sorters {
            ffi::sqlite3_limit(db.handle(), ffi::SQLITE_LIMIT_WORKER_THREADS, n);
        }
    }
    result
}

/// For a lock another connection held past the call's wait: what held it
/// and how to wait longer; nothing for any other error.
fn locked_hint(e: &rusqlite::Error, budget_ms: i64) -> String {
    if !matches!(
        e.sqlite_error_code(),
        Some(rusqlite::ErrorCode::DatabaseBusy)
    ) {
        return String::new();
    }
    format!(
        " (another connection held the database's lock longer than this call waits, {budget_ms} ms: \
         the connection's busy timeout, or the busy_timeout setting when it has none, \
         e.g. {{\"busy_timeout\": 60000}} or sqlite-dedup --busy-timeout 60000)"
    )
}

/// How long the whole call may wait for other connections' locks, and how
/// long it has waited. SQLite's busy timeout bounds each wait: a run in
/// rollback-journal mode may wait at BEGIN, at every cache spill and at
/// COMMIT, and new readers are held out while it waits for the exclusive
/// lock. The budget bounds them all together.
struct WaitBudget {
    budget_ms: i64,
    waited_ms: i64,
}

/// The busy handler: sleeps a little and retries while the budget lasts.
extern "C" fn on_busy(state: *mut std::ffi::c_void, _count: std::ffi::c_int) -> std::ffi::c_int {
    // Safety: `state` is the `WaitBudget` `atomically` installed, alive
    // until the handler is uninstalled; SQLite calls it on the
    // connection's thread.
    let waits = unsafe { &mut *(state as *mut WaitBudget) };
    let left = waits.budget_ms - waits.waited_ms;
    if left <= 0 {
        return 0;
    }
    let step = left.min(if waits.waited_ms < 20 { 1 } else { 10 });
    std::thread::sleep(std::time::Duration::from_millis(step as u64));
    waits.waited_ms += step;
    1
}

fn in_transaction<T>(
    db: &Connection,
    lock: Lock,
    end: End,
    budget_ms: i64,
    function: &str,
    work: impl FnOnce(&Connection) -> Result<T, DedupError>,
) -> Result<T, DedupError> {
    let owned = db.is_autocommit();
    let begin = match (owned, lock) {
        (true, Lock::Write) => "BEGIN IMMEDIATE".to_string(),
        (true, Lock::Read) => "BEGIN".to_string(),
        (false, _) => format!("SAVEPOINT {SAVEPOINT}"),
    };
    let breaker = Breaker::new(db).map_err(|e| {
        DedupError::new(
            Code::of(&e),
            format!("{function}: could not start, nothing was changed: {e}"),
        )
    })?;
    db.execute_batch(&begin).map_err(|e| {
        DedupError::new(
            Code::of(&e),
            format!(
                "{function}: could not start the transaction, nothing was changed: {e}{}",
                locked_hint(&e, budget_ms)
            ),
        )
    })?;
    let outcome = catch_unwind(AssertUnwindSafe(|| work(db))).unwrap_or_else(|panic| {
        let what = panic
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| panic.downcast_ref::<String>().cloned())
            .unwrap_or_default();
        Err(DedupError::new(
            Code::Internal,
            format!("{function}: internal error (a bug; please report it): {what}"),
        ))
    });
    match outcome {
        Ok(value) if end == End::Undo => match roll_back(db, owned, &breaker) {
            RolledBack::Done => Ok(value),
            RolledBack::Whole => Err(DedupError::new(Code::Sqlite, format!(
                "{function}: the transaction {function} ran inside was rolled back as a whole \
                 (SQLite does so after an interrupt, a full disk or an I/O error): the changes made \
                 in it before {function} are undone too"
            ))),
            RolledBack::StillOpen => Err(still_open(
                function,
                Code::Sqlite,
                format!("{function}: could not take back what it tried"),
            )),
        },
        Ok(value) => {
            let end = if owned {
                "COMMIT".to_string()
            } else {
                format!("RELEASE {SAVEPOINT}")
            };
            let mut step = std::time::Instant::now();
            let ended = db.execute_batch(&end);
            crate::sqlite::ground::trace::lap("commit", &mut step);
            match ended {
                Ok(()) => Ok(value),
                Err(e) => Err(undone(
                    db,
                    owned,
                    &breaker,
                    function,
                    Code::of(&e),
                    format!(
                        "{function}: could not commit, nothing was changed: {e}{}",
                        locked_hint(&e, budget_ms)
                    ),
                )),
            }
        }
        Err(e) => Err(undone(
            db,
            owned,
            &breaker,
            function,
            e.code(),
            worded(function, &e),
        )),
    }
}

/// SQLite's own words for a table function whose constructor failed
/// without saying why (`vtable constructor failed: segments`: what an
/// interrupt gives while the constructor declares its table), said so that
/// a user knows what happened.
fn worded(function: &str, e: &DedupError) -> String {
    match e.words().strip_prefix("vtable constructor failed: ") {
        Some(name) => format!(
            "{function}: the table function {name} could not start (the call was interrupted, or memory ran out); nothing was changed"
        ),
        None => e.to_string(),
    }
}

/// The one statement that can still end a transaction after an interrupt.
///
/// After `sqlite3_interrupt`, every statement this connection starts fails
/// while any of its statements is still running, and the caller's `SELECT
/// dedup_run()` is: a ROLLBACK is refused (it writes nothing, so SQLite
/// does not roll back for it). But a statement that writes, when
/// interrupted, makes SQLite roll back the whole transaction itself. This
/// one sets the temp schema's `user_version` to the value it had before
/// the call (so, not interrupted, it changes nothing). Its text has no
/// white space and ends in `;`: SQLite's parser looks for an interrupt only
/// at white space, comments and the end of the text, so it can still be
/// prepared. (A statement prepared earlier would not do: the run's temp
/// tables expire it, and re-preparing it is refused.)
struct Breaker(std::ffi::CString);

impl Breaker {
    /// The statement for this connection, read before the transaction.
    fn new(db: &Connection) -> rusqlite::Result<Self> {
        let version: i64 = db.query_row("PRAGMA temp.user_version", [], |r| r.get(0))?;
        let sql = format!("PRAGMA\"temp\".\"user_version\"={version};");
        Ok(Breaker(std::ffi::CString::new(sql).expect("no NUL in SQL")))
    }

    /// Prepares, steps and finalizes the statement (its error, if any, is
    /// the interrupt itself).
    fn step(&self, db: &Connection) {
        // Safety: the handle is this connection's, used on its own thread;
        // the statement is finalized before returning.
        unsafe {
            let mut stmt = std::ptr::null_mut();
            let rc = ffi::sqlite3_prepare_v2(
                db.handle(),
                self.0.as_ptr(),
                -1,
                &mut stmt,
                std::ptr::null_mut(),
            );
            if rc == ffi::SQLITE_OK && !stmt.is_null() {
                ffi::sqlite3_step(stmt);
            }
            ffi::sqlite3_finalize(stmt);
        }
    }
}

/// Lets SQLite's sorter use the cores the crate's pool has beside the
/// calling thread (`PRAGMA threads`, which the connection's default keeps
/// at 0) for the work inside: the run's sorts (phase 2's window, its
/// indexes, its ordered inserts) merge on a second core, a quarter faster
/// at a million rows. Returns the connection's own limit to put back, when
/// it was raised; a connection that allows more keeps its own, and a
/// SQLite built without worker threads keeps 0 (the limit cannot exceed
/// what it was built with). A thread SQLite cannot start leaves the sort
/// on the calling thread.
fn lend_sorter_threads(db: &Connection) -> Option<i32> {
    let helpers = crate::core::pools::pool()
        .map_or(0, |p| p.current_num_threads().saturating_sub(1))
        .min(8) as i32;
    // Safety: the handle is this connection's, used on its own thread; -1
    // only reads the limit.
    unsafe {
        let own = ffi::sqlite3_limit(db.handle(), ffi::SQLITE_LIMIT_WORKER_THREADS, -1);
        if own >= helpers {
            return None;
        }
        ffi::sqlite3_limit(db.handle(), ffi::SQLITE_LIMIT_WORKER_THREADS, helpers);
        Some(own)
    }
}

/// Undoes what the work did after it failed with `message`, and returns the
/// error that says truthfully what the database now holds.
///
/// SQLite may already have rolled the whole transaction back itself (after
/// a full disk, an I/O error, or an interrupted write); inside the caller's
/// transaction that undid the caller's own earlier changes too, and the
/// error says so.
fn undone(
    db: &Connection,
    owned: bool,
    breaker: &Breaker,
    function: &str,
    code: Code,
    message: String,
) -> DedupError {
    match roll_back(db, owned, breaker) {
        RolledBack::Done => DedupError::new(code, message),
        RolledBack::Whole => DedupError::new(
            code,
            format!(
                "{message}; but the transaction {function} ran inside was rolled back as a whole \
             (SQLite does so after an interrupt, a full disk or an I/O error): the changes made \
             in it before {function} are undone too, and nothing of the run was kept"
            ),
        ),
        RolledBack::StillOpen => still_open(function, code, message),
    }
}

/// What rolling the work back left.
enum RolledBack {
    /// The work's changes are undone, the caller's own kept.
    Done,
    /// SQLite rolled back the caller's whole transaction (inside one).
    Whole,
    /// Neither ROLLBACK nor the breaker could end the transaction.
    StillOpen,
}

/// Undoes the work: its own transaction rolled back, or its savepoint
/// inside the caller's (SQLite may already have rolled the whole
/// transaction back itself, after a full disk, an I/O error, or an
/// interrupted write).
fn roll_back(db: &Connection, owned: bool, breaker: &Breaker) -> RolledBack {
    if owned {
        if !db.is_autocommit() {
            let _ = db.execute_batch("ROLLBACK");
        }
        if !db.is_autocommit() {
            breaker.step(db);
        }
        return if db.is_autocommit() {
            RolledBack::Done
        } else {
            RolledBack::StillOpen
        };
    }
    if !db.is_autocommit() {
        let undo = format!("ROLLBACK TO {SAVEPOINT}; RELEASE {SAVEPOINT}");
        if db.execute_batch(&undo).is_ok() {
            return RolledBack::Done;
        }
        // The savepoint cannot be reached: end the whole transaction rather
        // than leave part of a run in it for the caller to commit.
        breaker.step(db);
    }
    if db.is_autocommit() {
        RolledBack::Whole
    } else {
        RolledBack::StillOpen
    }
}

/// The error when neither ROLLBACK nor the breaker could end the
/// transaction: the run's writes are still pending in it.
fn still_open(function: &str, code: Code, message: String) -> DedupError {
    let what = message.replace("nothing was changed", "the run was not undone");
    DedupError::new(
        code,
        format!(
        "{what}; {function} could not roll back its own transaction, which still holds part of \
         the run: ROLLBACK it (or close the connection) and do not COMMIT"
    ),
    )
}

/// Whether this connection cannot write the main database.
fn read_only(db: &Connection) -> Result<bool, DedupError> {
    // Safety: the handle is this connection's; the name is a C string.
    let flag = unsafe { ffi::sqlite3_db_readonly(db.handle(), c"main".as_ptr()) };
    let query_only: bool = db.query_row("PRAGMA query_only", [], |r| r.get(0))?;
    Ok(flag == 1 || query_only)
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

/// Whether the statement running on this connection (the caller's, when it
/// is the only one) opens a cursor on a table or index of a database
/// (`OpenRead`, `OpenWrite` or `ReopenIdx` in its program, read with
/// `EXPLAIN`): a rollback that undoes a schema change aborts such reads,
/// so work taken back ([`tentatively`]) must not run under it. False when
/// no single statement runs or its text is unknown.
pub fn caller_uses_tables(db: &Connection) -> Result<bool, DedupError> {
    let mut running = Vec::new();
    // Safety: as in `busy_statements`; the text is copied before the
    // statement can be finalized.
    unsafe {
        let handle = db.handle();
        let mut stmt = ffi::sqlite3_next_stmt(handle, std::ptr::null_mut());
        while !stmt.is_null() {
            if ffi::sqlite3_stmt_busy(stmt) != 0 {
                let sql = ffi::sqlite3_sql(stmt);
                running.push(
                    (!sql.is_null())
                        .then(|| std::ffi::CStr::from_ptr(sql).to_string_lossy().into_owned()),
                );
            }
            stmt = ffi::sqlite3_next_stmt(handle, stmt);
        }
    }
    let [Some(sql)] = running.as_slice() else {
        return Ok(false);
    };
    let mut program = db.prepare(&format!("EXPLAIN {sql}"))?;
    // (Its parameters left unbound: EXPLAIN lists the program, runs none of it.)
    let mut rows = program.raw_query();
    while let Some(row) = rows.next()? {
        let opcode: String = row.get(1)?;
        if matches!(opcode.as_str(), "OpenRead" | "OpenWrite" | "ReopenIdx") {
            return Ok(true);
        }
    }
    Ok(false)
}

#[cfg(test)]
mod tests {
    use super::worded;
    use crate::sqlite::ground::error::{Code, DedupError};

    #[test]
    fn a_constructor_that_failed_without_words_is_named() {
        let said = "dedup_run: the table function segments could not start (the call was interrupted, or memory ran out); nothing was changed";
        let bare = DedupError::new(Code::Sqlite, "vtable constructor failed: segments");
        assert_eq!(worded("dedup_run", &bare), said);
        // (Carried back through a run's step, the text has its code in front.)
        let carried = DedupError::new(Code::Sqlite, bare.to_string());
        assert_eq!(worded("dedup_run", &carried), said);
        let other = DedupError::new(Code::Interrupted, "interrupted");
        assert_eq!(
            worded("dedup_run", &other),
            "dedup[interrupted]: interrupted"
        );
    }
}
