//! An input statement a table-valued function steps across its cursor's
//! calls (rusqlite's `Statement` borrows a `Connection` the cursor cannot
//! hold), and the values it reads, kept as they are.

use std::ffi::{c_int, CString};

use rusqlite::types::{ToSqlOutput, ValueRef};
use rusqlite::{ffi, Result};

/// A value of the row kept as it is, its bytes untouched (a text need not
/// be valid UTF-8 to pass through).
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Null,
    Integer(i64),
    Real(f64),
    Text(Vec<u8>),
    Blob(Vec<u8>),
}

impl Value {
    pub fn sql(&self) -> ToSqlOutput<'_> {
        ToSqlOutput::Borrowed(match self {
            Value::Null => ValueRef::Null,
            Value::Integer(i) => ValueRef::Integer(*i),
            Value::Real(r) => ValueRef::Real(*r),
            Value::Text(t) => ValueRef::Text(t),
            Value::Blob(b) => ValueRef::Blob(b),
        })
    }
}

/// A statement stepped one row at a time across the cursor's calls
/// (rusqlite's `Statement` borrows a `Connection` the cursor cannot hold).
pub struct Statement {
    stmt: *mut ffi::sqlite3_stmt,
    db: *mut ffi::sqlite3,
    /// The table-valued function reading it, which its errors name.
    function: &'static str,
}

impl Statement {
    /// The statement of `sql` for `function`, or SQLite's message why not.
    pub fn prepare(
        db: *mut ffi::sqlite3,
        sql: &str,
        function: &'static str,
    ) -> std::result::Result<Self, String> {
        let sql = CString::new(sql).map_err(|_| "a NUL in its name".to_string())?;
        let mut stmt = std::ptr::null_mut();
        // Safety: `db` is the connection running the query; the statement
        // is finalized on drop.
        let rc = unsafe {
            ffi::sqlite3_prepare_v2(db, sql.as_ptr(), -1, &mut stmt, std::ptr::null_mut())
        };
        if rc != ffi::SQLITE_OK {
            return Err(Self::message(db));
        }
        Ok(Statement { stmt, db, function })
    }

    /// SQLite's message of the connection's last error.
    fn message(db: *mut ffi::sqlite3) -> String {
        // Safety: `db` is valid; the message is copied at once.
        unsafe { std::ffi::CStr::from_ptr(ffi::sqlite3_errmsg(db)) }
            .to_string_lossy()
            .into_owned()
    }

    /// The error of a step that failed with `rc`.
    fn failure(&self, rc: c_int, what: &str) -> rusqlite::Error {
        rusqlite::Error::SqliteFailure(
            ffi::Error::new(rc),
            Some(format!(
                "{}: {what}: {}",
                self.function,
                Self::message(self.db)
            )),
        )
    }

    /// Steps to the next row: false at the end.
    pub fn step(&mut self) -> Result<bool> {
        // Safety: the statement is this struct's, on the connection's thread.
        match unsafe { ffi::sqlite3_step(self.stmt) } {
            ffi::SQLITE_ROW => Ok(true),
            ffi::SQLITE_DONE => Ok(false),
            rc => Err(self.failure(rc, "reading input failed")),
        }
    }

    /// Column `i`'s SQLite type code.
    pub fn kind(&self, i: c_int) -> c_int {
        // Safety: a row is current (after `step` returned true).
        unsafe { ffi::sqlite3_column_type(self.stmt, i) }
    }

    /// Column `i` as an integer.
    pub fn int(&self, i: c_int) -> i64 {
        // Safety: as above.
        unsafe { ffi::sqlite3_column_int64(self.stmt, i) }
    }

    /// The bytes of a TEXT or BLOB column, valid until the next step.
    pub fn bytes(&self, i: c_int) -> &[u8] {
        // Safety: as above; text first, then its length (SQLite's order).
        unsafe {
            let p = if self.kind(i) == ffi::SQLITE_BLOB {
                ffi::sqlite3_column_blob(self.stmt, i) as *const u8
            } else {
                ffi::sqlite3_column_text(self.stmt, i)
            };
            let n = ffi::sqlite3_column_bytes(self.stmt, i) as usize;
            if p.is_null() {
                &[]
            } else {
                std::slice::from_raw_parts(p, n)
            }
        }
    }

    /// Column `i` as an owned value of its type.
    pub fn value(&self, i: c_int) -> Value {
        match self.kind(i) {
            ffi::SQLITE_NULL => Value::Null,
            ffi::SQLITE_INTEGER => Value::Integer(self.int(i)),
            // Safety: as above.
            ffi::SQLITE_FLOAT => Value::Real(unsafe { ffi::sqlite3_column_double(self.stmt, i) }),
            ffi::SQLITE_TEXT => Value::Text(self.bytes(i).to_vec()),
            _ => Value::Blob(self.bytes(i).to_vec()),
        }
    }
}

impl Drop for Statement {
    fn drop(&mut self) {
        // Safety: the statement is this struct's and not used after.
        unsafe {
            ffi::sqlite3_finalize(self.stmt);
        }
    }
}
