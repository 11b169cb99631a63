//! The SQL functions the incremental index is written and checked with:
//! `dedup_fingerprint` (a row's values), `dedup_chars` and
//! `dedup_histogram` (phase 4's bounds of a text).

use rusqlite::functions::FunctionFlags;
use rusqlite::types::ValueRef;
use rusqlite::Connection;

use crate::core::hash::Fingerprint;
use crate::core::similarity::CharHistogram;
use crate::sqlite::tables::schema::Source;

/// The SQL function that fingerprints a row's values.
pub const FINGERPRINT: &str = "dedup_fingerprint";

/// Registers `dedup_fingerprint(value, ...)` ([`Fingerprint`]),
/// `dedup_chars(text)`: the text's length in code points, as phase 4's
/// bounds count it (SQLite's `length` stops at a NUL), NULL for another
/// type, and `dedup_histogram(text)`: its character histogram as phase 4's
/// bounds count it ([`CharHistogram::to_bytes`]), NULL for another type.
pub fn register(db: &Connection) -> rusqlite::Result<()> {
    let flags = FunctionFlags::SQLITE_UTF8 | FunctionFlags::SQLITE_DETERMINISTIC;
    db.create_scalar_function("dedup_chars", 1, flags, |ctx| {
        Ok(match ctx.get_raw(0) {
            ValueRef::Text(t) => std::str::from_utf8(t)
                .ok()
                .map(|s| s.chars().count() as i64),
            _ => None,
        })
    })?;
    db.create_scalar_function("dedup_histogram", 1, flags, |ctx| {
        Ok(match ctx.get_raw(0) {
            ValueRef::Text(t) => std::str::from_utf8(t)
                .ok()
                .map(|s| CharHistogram::new(s).to_bytes()),
            _ => None,
        })
    })?;
    db.create_scalar_function(FINGERPRINT, -1, flags, |ctx| {
        let mut f = Fingerprint::new();
        for i in 0..ctx.len() {
            match ctx.get_raw(i) {
                ValueRef::Null => f.null(),
                ValueRef::Integer(v) => f.integer(v),
                ValueRef::Real(v) => f.real(v),
                ValueRef::Text(t) => f.text(t),
                ValueRef::Blob(b) => f.blob(b),
            }
        }
        Ok(f.finish())
    })
}

/// `dedup_fingerprint(every column)` of the table's row `alias` (also what
/// a plan's snapshot keeps, [`super::snapshot`]).
pub fn fingerprint_of(source: &Source, alias: &str) -> String {
    format!("{FINGERPRINT}({})", source.every_column(alias))
}
