//! `strip_segments(text, hashes)`: `text` without the segments (lines) whose
//! hash is in `hashes`, a JSON array of integers such as
//! `json_group_array(hash)` over `dedup_segments` or `segments(text)` makes.

use rusqlite::types::ValueRef;
use rusqlite::{Connection, Result};

use crate::core::segments::{parse_hashes, strip};
use crate::sqlite::ground::arguments::{check_arity, describe, text_arg, PURE};

const NAME: &str = "strip_segments";

/// Registers `strip_segments`.
pub fn register(db: &Connection) -> Result<()> {
    db.create_scalar_function(NAME, -1, PURE, |ctx| {
        check_arity(ctx, NAME, 2, 2)?;
        let hashes = ctx.get_or_create_aux(1, |v| -> std::result::Result<Vec<i64>, String> {
            match v {
                ValueRef::Null => Ok(Vec::new()),
                ValueRef::Text(t) => std::str::from_utf8(t)
                    .map_err(|_| "hashes are not valid UTF-8".to_string())
                    .and_then(|list| parse_hashes(list).map_err(|e| e.to_string()))
                    .map_err(|e| format!("{NAME}[argument]: {e}, got {}", describe(v))),
                other => Err(format!(
                    "{NAME}[argument]: hashes must be a JSON array of integers, got {}",
                    describe(other)
                )),
            }
        })?;
        let Some(text) = text_arg(ctx, 0, NAME, "text")? else {
            return Ok(None);
        };
        Ok(Some(
            strip(text, |h| hashes.binary_search(&h).is_ok()).unwrap_or_else(|| text.to_string()),
        ))
    })
}
