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
use rusqlite::vtab::{
    eponymous_only_module, Context, Filters, IndexInfo, VTab, VTabConfig, VTabConnection,
};
use rusqlite::{ffi, Connection, Result};

use super::index_bands::unpack;
use crate::sqlite::ground::arguments::{describe, module_error};
use crate::sqlite::ground::quote::quote_ident;
use crate::sqlite::vtab::arguments::{
    plan_arguments, planned_arguments, table_argument, unwind_safe,
};
use crate::sqlite::vtab::rows_cursor::{RowSource, RowsCursor};

const NAME: &str = "dedup_band_entries";
/// The hidden argument column (`input`), after the three output columns.
const FIRST_ARGUMENT: c_int = 3;

/// Registers the eponymous table-valued function `dedup_band_entries`.
pub fn register(db: &Connection) -> Result<()> {
    db.create_module(NAME, eponymous_only_module::<EntriesTab>(), None)
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

#[repr(C)]
struct EntriesTab {
    base: ffi::sqlite3_vtab,
    db: *mut ffi::sqlite3,
}

unsafe impl<'vtab> VTab<'vtab> for EntriesTab {
    type Aux = ();
    type Cursor = RowsCursor<'vtab, Entries>;

    fn connect(
        db: &mut VTabConnection,
        _aux: Option<&()>,
        _args: &[&[u8]],
    ) -> Result<(String, Self)> {
        // Reads another table of the database: not innocuous.
        db.config(VTabConfig::DirectOnly)?;
        let handle = unsafe { db.handle() };
        Ok((
            "CREATE TABLE x(band INTEGER, key INTEGER, rid INTEGER, input HIDDEN)".to_owned(),
            EntriesTab {
                base: ffi::sqlite3_vtab::default(),
                db: handle,
            },
        ))
    }

    fn best_index(&self, info: &mut IndexInfo) -> Result<()> {
        unwind_safe(NAME, || plan_arguments(info, FIRST_ARGUMENT, 1, 0b1, 1e6))
    }

    fn open(&mut self) -> Result<RowsCursor<'_, Entries>> {
        Ok(RowsCursor::new(Entries { db: self.db }))
    }
}

/// A cursor's source: the connection whose query calls the function.
struct Entries {
    db: *mut ffi::sqlite3,
}

impl RowSource for Entries {
    const NAME: &'static str = NAME;
    /// (band, key, rid)
    type Row = (i64, i64, i64);

    fn rows(&mut self, idx_num: c_int, args: &Filters<'_>) -> Result<Vec<(i64, i64, i64)>> {
        let given = planned_arguments(idx_num, args, 1);
        let input = table_argument(NAME, "input", given[0])?;
        // A non-owning handle on the connection that runs this query.
        let db = unsafe { Connection::from_handle(self.db) }?;
        entries(&db, &input)
    }

    fn column(row: &(i64, i64, i64), _position: usize, ctx: &mut Context, i: c_int) -> Result<()> {
        match i {
            0 => ctx.set_result(&row.0),
            1 => ctx.set_result(&row.1),
            2 => ctx.set_result(&row.2),
            _ => ctx.set_result(&rusqlite::types::Null),
        }
    }
}
