//! A survivor's identity as the run left it: the SHA-1 digest
//! ([`crate::core::hash::RowDigest`]) of the page columns the run reads and
//! writes (those of [`PAGE_COLUMNS`] the table has), taken after the run's
//! rewrite and whatever the user's triggers wrote then. Apply keeps it in
//! `dedup_rewritten.identity`; restore gives a survivor its old values back
//! only on the row whose values still have that digest: its own rowid, or
//! after a `VACUUM` renumbered the rows, the one row that does. A page
//! crawled since at the survivor's URL, a survivor whose URL or text was
//! changed, two survivors whose URLs were swapped: none has the digest, so
//! none is written to.
//!
//! Cost: one SHA-1 pass over each rewritten survivor's page columns at
//! apply and at restore; after a `VACUUM` (rowids renumbered), one pass
//! over every row of the table.

use rusqlite::types::ValueRef;
use rusqlite::Connection;

use crate::core::hash::RowDigest;
use crate::sqlite::tables::schema::{quote_ident, Source, PAGE_COLUMNS};

/// The SQL function that digests a row's values.
pub const ROW_DIGEST: &str = "dedup_row_digest";

/// Registers `dedup_row_digest(value, ...)`: the 20-byte SHA-1 of the
/// values, each tagged with its type and length ([`RowDigest`]).
pub fn register(db: &Connection) -> rusqlite::Result<()> {
    let flags = rusqlite::functions::FunctionFlags::SQLITE_UTF8
        | rusqlite::functions::FunctionFlags::SQLITE_DETERMINISTIC
        | rusqlite::functions::FunctionFlags::SQLITE_INNOCUOUS;
    db.create_scalar_function(ROW_DIGEST, -1, flags, |ctx| {
        let mut d = RowDigest::new();
        for i in 0..ctx.len() {
            match ctx.get_raw(i) {
                ValueRef::Null => d.null(),
                ValueRef::Integer(v) => d.integer(v),
                ValueRef::Real(v) => d.real(v),
                ValueRef::Text(t) => d.text(t),
                ValueRef::Blob(b) => d.blob(b),
            }
        }
        Ok(d.finish().to_vec())
    })
}

/// The identity of the table's row `alias`, as SQL: the digest of its page
/// columns (the pipeline's names, through the `columns` setting), absent
/// ones as NULL.
pub fn identity_of(source: &Source, alias: &str) -> String {
    let values: Vec<String> = PAGE_COLUMNS
        .iter()
        .map(|c| match source.column(c) {
            Some(real) => format!("{alias}.{}", quote_ident(&real)),
            None => "NULL".into(),
        })
        .collect();
    format!("{ROW_DIGEST}({})", values.join(", "))
}
