//! `dedup_require(condition, message)`: stops a statement with a clear
//! message when a condition does not hold (for checks in SQL scripts).

use rusqlite::types::ValueRef;
use rusqlite::{Connection, Error, Result};

use crate::sqlite::ground::arguments::describe;

/// Registers `dedup_require(condition, message)`.
pub fn register(db: &Connection) -> Result<()> {
    // Pure: the outcome depends only on the arguments.
    db.create_scalar_function(
        "dedup_require",
        2,
        crate::sqlite::ground::arguments::PURE,
        |ctx| {
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
        },
    )?;
    Ok(())
}
