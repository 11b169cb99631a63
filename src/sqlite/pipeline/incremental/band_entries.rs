//! `dedup_band_entries(input)`: the entries of `main.dedup_index_bands`
//! that the packed keys of `input`'s rows make, one row per (`band`,
//! `key`, `rid`), ascending: the b-tree's order, so that one
//! `INSERT ... SELECT` appends them ([`super::index_bands::write`]) where a
//! statement a row sought the b-tree's leaf each time.
//!
//! `input` names a table or view with the columns `rid` (an integer) and
//! `bands` (keys packed as `dedup_pack_keys` packs them; a row whose
//! `bands` is not a BLOB has none). The entries are held in memory for the
//! sort: 24 bytes each.

use std::ffi::c_int;

use rusqlite::types::ValueRef;
use rusqlite::vtab::Context;
use rusqlite::{Connection, Result};

use super::index_bands::unpack;
use crate::sqlite::ground::arguments::{describe, module_error};
use crate::sqlite::ground::quote::quote_ident;
use crate::sqlite::vtab::arguments::table_argument;
use crate::sqlite::vtab::reads_tables::ReadsTables;

const NAME: &str = "dedup_band_entries";

/// Registers the eponymous table-valued function `dedup_band_entries`.
pub fn register(db: &Connection) -> Result<()> {
    crate::sqlite::vtab::reads_tables::register::<BandEntries>(db)
}

/// `input`'s entries (band, key, rid), sorted.
fn entries(db: &Connection, input: &str) -> Result<Vec<(i64, i64, i64)>> {
    let mut stmt = db
        .prepare(&format!("SELECT rid, bands FROM {}", quote_ident(input)))
        .map_err(|e| {
            module_error(
                NAME,
                "input must name a table or view with the columns rid and bands",
                &format!("'{input}' ({e})"),
            )
        })?;
    let mut rows = stmt.query([])?;
    let mut out = Vec::new();
    while let Some(row) = rows.next()? {
        let rid = match row.get_ref(0)? {
            ValueRef::Integer(i) => i,
            other => {
                return Err(module_error(
                    NAME,
                    &format!("rid in '{input}' must be an integer"),
                    &describe(other),
                ))
            }
        };
        if let ValueRef::Blob(blob) = row.get_ref(1)? {
            out.extend(unpack(blob).map(|(band, key)| (band, key, rid)));
        }
    }
    out.sort_unstable();
    Ok(out)
}

/// `dedup_band_entries`' shape: reads `input`.
pub struct BandEntries;

impl ReadsTables for BandEntries {
    const NAME: &'static str = NAME;
    const COLUMNS: &'static str = "band INTEGER, key INTEGER, rid INTEGER";
    const OUTPUT_COLUMNS: c_int = 3;
    const ARGUMENTS: &'static [&'static str] = &["input"];
    const REQUIRED: c_int = 0b1;
    /// (band, key, rid)
    type Row = (i64, i64, i64);

    fn rows(db: &Connection, args: &[Option<ValueRef<'_>>]) -> Result<Vec<(i64, i64, i64)>> {
        let input = table_argument(NAME, "input", args[0])?;
        entries(db, &input)
    }

    fn column(row: &(i64, i64, i64), ctx: &mut Context, i: c_int) -> Result<()> {
        match i {
            0 => ctx.set_result(&row.0),
            1 => ctx.set_result(&row.1),
            _ => ctx.set_result(&row.2),
        }
    }
}
