//! SQL read from the database (a `prefer` term in `dedup_settings`) held to
//! the rules SQLite applies to an untrusted schema, before the host
//! connection compiles it.
//!
//! What: the statement that will carry the text is prepared first on a
//! private in-memory connection holding an empty copy of the table's
//! columns (and a stand-in for each of the host's own functions), under an
//! authorizer that allows one `SELECT` reading that table only, and calls
//! only of functions the host flags `SQLITE_INNOCUOUS` and not
//! `SQLITE_DIRECTONLY` (SQLite's own rule for a schema's triggers and views
//! under `PRAGMA trusted_schema = OFF`: the built-in scalar, aggregate and
//! window functions and this extension's pure ones; never `load_extension`,
//! the shell's `readfile`, `writefile` or `edit`, nor any function a host
//! registers without `SQLITE_INNOCUOUS`). The host's own authorizer is
//! never touched. The same text given in the call's JSON argument is the
//! caller's own SQL and is compiled as given.
//!
//! Cost: one prepare on a private connection per run that has such terms.

use crate::sqlite::ground::error::Code;
use std::collections::HashMap;
use std::ffi::{c_char, c_int, c_void, CStr};

use rusqlite::functions::FunctionFlags;
use rusqlite::{ffi, Connection};

use crate::sqlite::ground::error::{fail, DedupError};
use crate::sqlite::ground::shown::truncate;
use crate::sqlite::tables::schema::quote_ident;

const INNOCUOUS: i64 = 0x20_0000;
const DIRECTONLY: i64 = 0x8_0000;

/// Checks `select`, a statement reading `main.table` that embeds text read
/// from the database, against the untrusted-schema rules; `what` names that
/// text in the error (e.g. `prefer term 1 from dedup_settings`).
pub fn check(db: &Connection, table: &str, select: &str, what: &str) -> Result<(), DedupError> {
    // Each function name the host knows: callable from a schema only when
    // every function of that name is innocuous and not direct-only.
    let mut callable: HashMap<String, bool> = HashMap::new();
    let mut own: Vec<(String, i32)> = Vec::new();
    {
        let mut stmt =
            db.prepare("SELECT name, builtin, type, narg, flags FROM pragma_function_list")?;
        let mut rows = stmt.query([])?;
        while let Some(r) = rows.next()? {
            let name: String = r.get::<_, String>(0)?.to_ascii_lowercase();
            let builtin: bool = r.get(1)?;
            let kind: String = r.get(2)?;
            let narg: i32 = r.get(3)?;
            let flags: i64 = r.get(4)?;
            let ok = flags & INNOCUOUS != 0 && flags & DIRECTONLY == 0;
            let entry = callable.entry(name.clone()).or_insert(true);
            *entry = *entry && ok;
            if !builtin && kind == "s" {
                own.push((name, narg));
            }
        }
    }
    let sandbox = Connection::open_in_memory()?;
    // (The table, and every other table and view of the database, stand
    // in empty with their columns, so that a read of another one is
    // refused as such, not as "no such table".)
    let tables: Vec<String> = {
        let mut stmt = db.prepare(
            "SELECT name FROM main.sqlite_schema WHERE type IN ('table', 'view')
             AND name NOT LIKE 'sqlite~_%' ESCAPE '~'",
        )?;
        let rows = stmt.query_map([], |r| r.get::<_, String>(0))?;
        rows.collect::<rusqlite::Result<_>>()?
    };
    for name in &tables {
        let columns: Vec<String> = {
            let mut stmt = db.prepare("SELECT name FROM pragma_table_xinfo(?1, 'main')")?;
            let rows = stmt.query_map([name], |r| r.get::<_, String>(0))?;
            rows.collect::<rusqlite::Result<_>>()?
        };
        let declared: Vec<String> = columns.iter().map(|c| quote_ident(c)).collect();
        if !declared.is_empty() {
            sandbox.execute_batch(&format!(
                "CREATE TABLE main.{}({})",
                quote_ident(name),
                declared.join(", ")
            ))?;
        }
    }
    for (name, narg) in &own {
        // (A stand-in, never called: the statement is only prepared.)
        let _ = sandbox.create_scalar_function(
            name.as_str(),
            *narg,
            FunctionFlags::SQLITE_UTF8,
            |_| Ok(rusqlite::types::Value::Null),
        );
    }
    if compiled_without_authorizer(db) {
        return fail(Code::Setting, format!(
            "dedup: {what} cannot be checked: this SQLite was built with SQLITE_OMIT_AUTHORIZATION, so SQL read from the database is not run; give the same term in the call's JSON argument (the caller's own SQL); nothing was changed"
        ));
    }
    let mut gate = Gate {
        callable,
        wanted: table.to_string(),
        selects: 0,
        refused: None,
    };
    let prepared = {
        // SAFETY: `gate` outlives the statement's preparation, and the
        // authorizer is removed before `gate` is read or dropped.
        unsafe {
            ffi::sqlite3_set_authorizer(
                sandbox.handle(),
                Some(authorize),
                (&mut gate as *mut Gate).cast::<c_void>(),
            );
        }
        let prepared = sandbox.prepare(select).map(|_| ());
        unsafe {
            ffi::sqlite3_set_authorizer(sandbox.handle(), None, std::ptr::null_mut());
        }
        prepared
    };
    let why = gate.refused.take();
    match (why, prepared) {
        (Some(why), _) => fail(Code::Setting, format!(
            "dedup: {what} may use only the columns of {}, literals, operators and the functions a trigger may call, got {why}; the same term in the call's JSON argument runs as the caller's own SQL; nothing was changed",
            quote_ident(table)
        )),
        (None, Err(e)) => fail(Code::Setting, format!(
            "dedup: {what} must be an SQL ordering term over the columns of {}, got {}; nothing was changed",
            quote_ident(table),
            truncate(DedupError::from(e).words(), 200)
        )),
        (None, Ok(())) => Ok(()),
    }
}

/// What the authorizer knows and what it found.
struct Gate {
    /// Each function name the host knows, and whether a schema may call it.
    callable: HashMap<String, bool>,
    /// The one table the statement may read.
    wanted: String,
    /// `SELECT`s seen so far (the statement's own is the first).
    selects: u32,
    /// The first thing refused, in words.
    refused: Option<String>,
}

impl Gate {
    /// Why the action is refused, or `None` when it is allowed.
    fn refuse(
        &mut self,
        action: c_int,
        arg1: Option<&str>,
        arg2: Option<&str>,
        db: Option<&str>,
    ) -> Option<String> {
        match action {
            ffi::SQLITE_SELECT => {
                self.selects += 1;
                (self.selects > 1).then(|| "a subquery".to_string())
            }
            ffi::SQLITE_READ => {
                let table = arg1.unwrap_or("");
                (!table.eq_ignore_ascii_case(&self.wanted) || db != Some("main"))
                    .then(|| format!("a read of another table ({table})"))
            }
            ffi::SQLITE_FUNCTION => {
                let function = arg2.unwrap_or("");
                (!self.callable.get(&function.to_ascii_lowercase()).copied().unwrap_or(false)).then(|| {
                    format!(
                        "{function}(), which SQLite would refuse to a schema's triggers and views (not flagged innocuous, or direct-only)"
                    )
                })
            }
            _ => Some("a statement other than a read of the table".to_string()),
        }
    }
}

/// The authorizer callback (`sqlite3_set_authorizer`): allows what
/// [`Gate::refuse`] allows and records the first refusal.
unsafe extern "C" fn authorize(
    data: *mut c_void,
    action: c_int,
    arg1: *const c_char,
    arg2: *const c_char,
    db: *const c_char,
    _inner: *const c_char,
) -> c_int {
    let text = |p: *const c_char| {
        (!p.is_null()).then(|| unsafe { CStr::from_ptr(p) }.to_str().unwrap_or(""))
    };
    let decided = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        // SAFETY: `data` is the `Gate` given with this callback.
        let gate = unsafe { &mut *data.cast::<Gate>() };
        match gate.refuse(action, text(arg1), text(arg2), text(db)) {
            None => ffi::SQLITE_OK,
            Some(why) => {
                gate.refused.get_or_insert(why);
                ffi::SQLITE_DENY
            }
        }
    }));
    decided.unwrap_or(ffi::SQLITE_DENY)
}

/// Whether the host's SQLite lacks `sqlite3_set_authorizer`. (Unknown
/// when it was built without compile-option diagnostics: then the call
/// itself is the test.)
fn compiled_without_authorizer(db: &Connection) -> bool {
    db.query_row(
        "SELECT sqlite_compileoption_used('OMIT_AUTHORIZATION')",
        [],
        |r| r.get::<_, bool>(0),
    )
    .unwrap_or(false)
}
