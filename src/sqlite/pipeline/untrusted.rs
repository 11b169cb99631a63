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

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use rusqlite::functions::FunctionFlags;
use rusqlite::hooks::{AuthAction, AuthContext, Authorization};
use rusqlite::Connection;

use super::schema::quote_ident;
use super::shown::truncate;
use super::{fail, DedupError};

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
    let refused: Arc<Mutex<Option<String>>> = Arc::new(Mutex::new(None));
    let seen = refused.clone();
    let wanted = table.to_string();
    let mut selects = 0;
    sandbox.authorizer(Some(move |ctx: AuthContext<'_>| {
        let why = match ctx.action {
            AuthAction::Select => {
                selects += 1;
                (selects > 1).then(|| "a subquery".to_string())
            }
            AuthAction::Read { table_name, .. } => (!table_name.eq_ignore_ascii_case(&wanted)
                || ctx.database_name != Some("main"))
            .then(|| format!("a read of another table ({table_name})")),
            AuthAction::Function { function_name } => {
                let name = function_name.to_ascii_lowercase();
                (!callable.get(&name).copied().unwrap_or(false)).then(|| {
                    format!(
                        "{function_name}(), which SQLite would refuse to a schema's triggers and views (not flagged innocuous, or direct-only)"
                    )
                })
            }
            _ => Some("a statement other than a read of the table".to_string()),
        };
        match why {
            None => Authorization::Allow,
            Some(why) => {
                let mut first = seen.lock().unwrap_or_else(|e| e.into_inner());
                first.get_or_insert(why);
                Authorization::Deny
            }
        }
    }))?;
    let prepared = sandbox.prepare(select).map(|_| ());
    sandbox.authorizer(None::<fn(AuthContext<'_>) -> Authorization>)?;
    let why = refused.lock().unwrap_or_else(|e| e.into_inner()).take();
    match (why, prepared) {
        (Some(why), _) => fail(format!(
            "dedup: {what} may use only the columns of {}, literals, operators and the functions a trigger may call, got {why}; the same term in the call's JSON argument runs as the caller's own SQL; nothing was changed",
            quote_ident(table)
        )),
        (None, Err(e)) => fail(format!(
            "dedup: {what} must be an SQL ordering term over the columns of {}, got {}; nothing was changed",
            quote_ident(table),
            truncate(&DedupError::from(e).to_string(), 200)
        )),
        (None, Ok(())) => Ok(()),
    }
}
