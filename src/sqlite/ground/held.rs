//! The statements the extension keeps prepared across calls of a
//! function, and what finalizes them when the connection closes: the
//! eponymous table `dedup_held_statements`
//! (`crate::sqlite::vtab::held_statements`), which lists them.
//!
//! A statement a function prepares on every call costs more than the work
//! of many calls (`dupe_probability` reads one stamp row). Kept prepared
//! by the function alone, it would make `sqlite3_close` fail ("unfinalized
//! statements") in the shell, and leave a zombie connection under
//! `sqlite3_close_v2`. So its owner is this eponymous table: SQLite
//! disconnects every virtual table, eponymous ones included, before
//! `sqlite3_close` checks for unfinalized statements, and the disconnect
//! finalizes them. (The table is connected by the first use, not at load:
//! naming a table reads the schema, which loading the extension must not
//! depend on.) A host may
//! also finalize every statement of the connection itself
//! (`sqlite3_next_stmt`) before it closes: before each use, and before it
//! finalizes, the owner checks that the statement is still one of the
//! connection's, with its own SQL text (which ends in a comment that no
//! other statement has), and prepares it again when it is not.
//!
//! Where the table is not connected (another SQLite than the versions this
//! was checked on, or after the module was registered again), callers
//! prepare the statement for the call, as before ([`Held::value`] answers
//! `None`).

use std::ffi::{c_int, CStr};
use std::sync::{Arc, Mutex};

use rusqlite::types::Value;
use rusqlite::{ffi, Connection, Error, Result};

pub const NAME: &str = "dedup_held_statements";

/// The oldest SQLite this relies on: 3.40.0, the oldest the tests ran
/// against (Debian 12's). Older ones prepare on every call.
pub const SINCE: c_int = 3_040_000;

/// The statements one connection holds, shared by the functions that use
/// them and the table that owns them.
#[derive(Clone, Default)]
pub struct Held(Arc<Mutex<State>>);

#[derive(Default)]
struct State {
    /// Whether the table was registered (SQLite is recent enough).
    registered: bool,
    /// Whether a use tried to connect the table.
    tried: bool,
    /// The connection, while the table is connected (as an address).
    db: Option<usize>,
    /// Each statement's SQL and its handle (an address).
    slots: Vec<(&'static CStr, usize)>,
}

/// Whether `stmt` is still a statement of `db`, with text `sql`.
///
/// Safety: `db` is an open connection.
unsafe fn is_live(db: *mut ffi::sqlite3, stmt: *mut ffi::sqlite3_stmt, sql: &CStr) -> bool {
    let mut p = ffi::sqlite3_next_stmt(db, std::ptr::null_mut());
    while !p.is_null() {
        if p == stmt {
            let text = ffi::sqlite3_sql(p);
            return !text.is_null() && CStr::from_ptr(text) == sql;
        }
        p = ffi::sqlite3_next_stmt(db, p);
    }
    false
}

/// The connection's last error, as rusqlite reports a failed statement.
///
/// Safety: `db` is an open connection.
unsafe fn last_error(db: *mut ffi::sqlite3, rc: c_int) -> Error {
    let message = ffi::sqlite3_errmsg(db);
    let message =
        (!message.is_null()).then(|| CStr::from_ptr(message).to_string_lossy().into_owned());
    Error::SqliteFailure(ffi::Error::new(rc), message)
}

/// Column 0 of the row `stmt` stands on.
///
/// Safety: `stmt` has just returned `SQLITE_ROW`.
unsafe fn first_column(stmt: *mut ffi::sqlite3_stmt) -> Value {
    match ffi::sqlite3_column_type(stmt, 0) {
        ffi::SQLITE_INTEGER => Value::Integer(ffi::sqlite3_column_int64(stmt, 0)),
        ffi::SQLITE_FLOAT => Value::Real(ffi::sqlite3_column_double(stmt, 0)),
        ffi::SQLITE_TEXT => {
            let p = ffi::sqlite3_column_text(stmt, 0);
            let n = ffi::sqlite3_column_bytes(stmt, 0).max(0) as usize;
            if p.is_null() {
                Value::Null
            } else {
                let bytes = std::slice::from_raw_parts(p, n);
                Value::Text(String::from_utf8_lossy(bytes).into_owned())
            }
        }
        ffi::SQLITE_BLOB => {
            let p = ffi::sqlite3_column_blob(stmt, 0).cast::<u8>();
            let n = ffi::sqlite3_column_bytes(stmt, 0).max(0) as usize;
            Value::Blob(if p.is_null() {
                Vec::new()
            } else {
                std::slice::from_raw_parts(p, n).to_vec()
            })
        }
        _ => Value::Null,
    }
}

impl Held {
    /// Column 0 of the first row of `sql` (no parameters), `Ok(None)` for
    /// no row, run on the statement held for `sql` (prepared at its first
    /// use); `None` when nothing can be held on `db` now: the caller runs
    /// `sql` its own way. `sql` must be unique to its caller (end it with
    /// a comment naming it).
    pub fn value(&self, db: &Connection, sql: &'static CStr) -> Option<Result<Option<Value>>> {
        self.connect_once(db);
        // (try_lock: a call from inside a call of this connection runs the
        // statement its own way rather than wait.)
        let mut state = self.0.try_lock().ok()?;
        // Safety: the handle is the connection running the caller, open for
        // the call.
        let handle = unsafe { db.handle() };
        if state.db != Some(handle as usize) {
            return None;
        }
        let at = match state.slots.iter().position(|(s, _)| *s == sql) {
            Some(at) => at,
            None => {
                state.slots.push((sql, 0));
                state.slots.len() - 1
            }
        };
        // Safety: `handle` is open; a held statement is used only after it
        // is found among the connection's statements with its text, and is
        // reset before this returns.
        unsafe {
            let mut stmt = state.slots[at].1 as *mut ffi::sqlite3_stmt;
            if stmt.is_null() || !is_live(handle, stmt, sql) {
                state.slots[at].1 = 0;
                let mut made = std::ptr::null_mut();
                let rc = ffi::sqlite3_prepare_v3(
                    handle,
                    sql.as_ptr(),
                    -1,
                    ffi::SQLITE_PREPARE_PERSISTENT as _,
                    &mut made,
                    std::ptr::null_mut(),
                );
                if rc != ffi::SQLITE_OK {
                    let e = last_error(handle, rc);
                    ffi::sqlite3_finalize(made);
                    return Some(Err(e));
                }
                stmt = made;
                state.slots[at].1 = stmt as usize;
            }
            let rc = ffi::sqlite3_step(stmt);
            let out = match rc {
                ffi::SQLITE_ROW => Ok(Some(first_column(stmt))),
                ffi::SQLITE_DONE => Ok(None),
                _ => Err(last_error(handle, rc)),
            };
            ffi::sqlite3_reset(stmt);
            Some(out)
        }
    }

    /// Connects the table at the first use (preparing a statement that
    /// names it connects it; it stays connected after the statement is
    /// gone, until the connection closes). Not again after it was tried:
    /// a table disconnected earlier (the module registered again) stays so.
    fn connect_once(&self, db: &Connection) {
        let first = match self.0.try_lock() {
            Ok(mut state) if state.registered && !state.tried => {
                state.tried = true;
                true
            }
            _ => false,
        };
        if first {
            // (An error leaves it unconnected: then nothing is held.)
            let _ = db.prepare(&format!("SELECT sql FROM {NAME}"));
        }
    }

    /// The SQL of the statements held now.
    pub fn texts(&self) -> Vec<String> {
        let Ok(state) = self.0.lock() else {
            return Vec::new();
        };
        state
            .slots
            .iter()
            .filter(|(_, stmt)| *stmt != 0)
            .map(|(sql, _)| sql.to_string_lossy().into_owned())
            .collect()
    }

    /// Marks the owning table registered (SQLite is recent enough).
    pub fn registered(&self) {
        if let Ok(mut state) = self.0.lock() {
            state.registered = true;
        }
    }

    /// The owning table connected to the connection `db` (an address).
    pub fn connected(&self, db: usize) {
        if let Ok(mut state) = self.0.lock() {
            state.db = Some(db);
        }
    }

    /// The owning table's disconnect (at close, before SQLite checks for
    /// unfinalized statements): the held statements that are still the
    /// connection's are finalized, and nothing is held from now on.
    pub fn disconnected(&self) {
        let mut state = match self.0.lock() {
            Ok(s) => s,
            Err(poisoned) => poisoned.into_inner(),
        };
        if let Some(db) = state.db.take() {
            for (sql, stmt) in state.slots.drain(..) {
                let stmt = stmt as *mut ffi::sqlite3_stmt;
                // Safety: the connection is open while its tables
                // disconnect; only a statement still among its own is
                // finalized.
                unsafe {
                    if !stmt.is_null() && is_live(db as *mut ffi::sqlite3, stmt, sql) {
                        ffi::sqlite3_finalize(stmt);
                    }
                }
            }
        }
    }
}
