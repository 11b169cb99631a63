//! `dedup_held_statements`: the statements the extension keeps prepared
//! across calls of a function, one row each (`sql`); the eponymous table
//! that owns them ([`crate::sqlite::ground::held`] says why a table).

use std::ffi::c_int;

use rusqlite::vtab::{eponymous_only_module, Context, Filters, IndexInfo, VTab, VTabConnection};
use rusqlite::{ffi, Connection, Result};

use super::rows_cursor::{RowSource, RowsCursor};
use crate::sqlite::ground::held::{Held, NAME, SINCE};

/// Registers `dedup_held_statements` on `db`, so that `held` keeps
/// statements (on SQLite 3.40 and later; otherwise `held` never does).
pub fn register(db: &Connection, held: Held) -> Result<()> {
    // Safety: a plain library call.
    if unsafe { ffi::sqlite3_libversion_number() } < SINCE {
        return Ok(());
    }
    db.create_module(NAME, eponymous_only_module::<HeldTab>(), Some(held.clone()))?;
    held.registered();
    Ok(())
}

#[repr(C)]
struct HeldTab {
    base: ffi::sqlite3_vtab,
    held: Held,
}

unsafe impl<'vtab> VTab<'vtab> for HeldTab {
    type Aux = Held;
    type Cursor = RowsCursor<'vtab, HeldTexts>;

    fn connect(
        db: &mut VTabConnection,
        aux: Option<&Held>,
        _args: &[&[u8]],
    ) -> Result<(String, Self)> {
        let held = aux.cloned().unwrap_or_default();
        // Safety: the handle of the connection being connected to.
        held.connected(unsafe { db.handle() } as usize);
        Ok((
            "CREATE TABLE x(sql TEXT)".to_owned(),
            HeldTab {
                base: ffi::sqlite3_vtab::default(),
                held,
            },
        ))
    }

    fn best_index(&self, info: &mut IndexInfo) -> Result<()> {
        info.set_estimated_cost(1.0);
        Ok(())
    }

    fn open(&mut self) -> Result<RowsCursor<'_, HeldTexts>> {
        Ok(RowsCursor::new(HeldTexts(self.held.clone())))
    }
}

impl Drop for HeldTab {
    /// The disconnect (at close, before SQLite checks for unfinalized
    /// statements): the held statements that are still the connection's
    /// are finalized, and nothing is held from now on.
    fn drop(&mut self) {
        self.held.disconnected();
    }
}

/// A cursor's source: the statements held, as their SQL texts.
struct HeldTexts(Held);

impl RowSource for HeldTexts {
    const NAME: &'static str = NAME;
    type Row = String;

    fn rows(&mut self, _idx_num: c_int, _args: &Filters<'_>) -> Result<Vec<String>> {
        Ok(self.0.texts())
    }

    fn column(sql: &String, _position: usize, ctx: &mut Context, _i: c_int) -> Result<()> {
        ctx.set_result(sql)
    }
}
