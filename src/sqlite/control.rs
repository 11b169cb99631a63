//! Functions the pipeline scripts use for control flow: `dedup_require`
//! stops a script with a clear message, `dedup_eval` runs SQL built at run
//! time (column lists of the user's `pages` table).

use rusqlite::functions::FunctionFlags;
use rusqlite::types::ValueRef;
use rusqlite::{Connection, Error, Result};

use crate::sqlite::scalars::{describe, user_error};

/// Registers `dedup_require(condition, message)` and `dedup_eval(sql)`.
pub fn register(db: &Connection) -> Result<()> {
    // Pure: the outcome depends only on the arguments.
    db.create_scalar_function("dedup_require", 2, crate::sqlite::scalars::PURE, |ctx| {
        let ok = match ctx.get_raw(0) {
            ValueRef::Integer(i) => i != 0,
            ValueRef::Real(r) => r != 0.0,
            _ => false,
        };
        if ok {
            Ok(1)
        } else {
            let message = match ctx.get_raw(1) {
                ValueRef::Text(t) => String::from_utf8_lossy(t).into_owned(),
                other => describe(other),
            };
            Err(Error::UserFunctionError(message.into()))
        }
    })?;
    // Runs arbitrary SQL: never in views, triggers or schema objects.
    db.create_scalar_function(
        "dedup_eval",
        1,
        FunctionFlags::SQLITE_UTF8 | FunctionFlags::SQLITE_DIRECTONLY,
        |ctx| {
            let sql = match ctx.get_raw(0) {
                ValueRef::Null => return Ok(None::<i64>),
                ValueRef::Text(t) => std::str::from_utf8(t)
                    .map_err(|_| {
                        user_error(
                            "dedup_eval",
                            "sql is not valid UTF-8",
                            &format!("text of {} bytes", t.len()),
                        )
                    })?
                    .to_owned(),
                other => {
                    return Err(user_error(
                        "dedup_eval",
                        "sql must be TEXT",
                        &describe(other),
                    ))
                }
            };
            // Safety: the handle is the connection running this function; it
            // is only used on this thread, for the duration of the call.
            let db = unsafe { ctx.get_connection()? };
            db.execute_batch(&sql)
                .map_err(|e| user_error("dedup_eval", &e.to_string(), &format!("'{sql}'")))?;
            Ok(Some(db.changes() as i64))
        },
    )?;
    Ok(())
}
