//! `near_dups(input, threshold, distance)`: the window scan as a
//! table-valued function.
//!
//! `input` names a table or view with columns `pos`, `id`, `text`, `rank`;
//! rows are scanned in `pos` order; a NULL `text` is a placeholder that
//! occupies its window slot but is never compared. Each output row is one removed input
//! row: `id`, `survivor`, `anchor`, `ratio` (see [`crate::near_dups`]).

use std::ffi::c_int;
use std::marker::PhantomData;
use std::sync::{Arc, Mutex};

use rusqlite::functions::FunctionFlags;
use rusqlite::types::ValueRef;
use rusqlite::vtab::{
    eponymous_only_module, Context, Filters, IndexInfo, VTab, VTabConfig, VTabConnection,
    VTabCursor,
};
use rusqlite::{ffi, Connection, Error, Result};

use super::{
    error, plan_arguments, planned_arguments, quote_identifier, require_columns, table_argument,
    text_value, threshold_argument,
};
use crate::near_dups::{scan, validate, Removal, ScanRow, ScanStats};
use crate::sql::describe;

const NAME: &str = "near_dups";
/// Columns the input table or view must have.
pub const INPUT_COLUMNS: [&str; 4] = ["pos", "id", "text", "rank"];
/// First of the hidden argument columns (input, threshold, distance).
const COL_INPUT: c_int = 4;

/// The counters of the last `near_dups` scan on a connection.
pub type LastScan = Arc<Mutex<Option<ScanStats>>>;

/// Registers the eponymous table-valued function `near_dups`, and
/// `near_dups_stats()`: the counters of the last scan on this connection as
/// JSON, or NULL before the first scan.
pub fn register(db: &Connection, last: LastScan) -> Result<()> {
    db.create_module(
        NAME,
        eponymous_only_module::<NearDupsTab>(),
        Some(last.clone()),
    )?;
    db.create_scalar_function(
        "near_dups_stats",
        0,
        FunctionFlags::SQLITE_UTF8 | FunctionFlags::SQLITE_DIRECTONLY,
        move |_ctx| {
            let stats = last
                .lock()
                .map_err(|_| error(NAME, "stats unavailable", "a poisoned lock"))?;
            Ok(stats.as_ref().map(ScanStats::to_json))
        },
    )
}

#[repr(C)]
struct NearDupsTab {
    base: ffi::sqlite3_vtab,
    db: *mut ffi::sqlite3,
    last: LastScan,
}

unsafe impl<'vtab> VTab<'vtab> for NearDupsTab {
    type Aux = LastScan;
    type Cursor = NearDupsCursor<'vtab>;

    fn connect(
        db: &mut VTabConnection,
        aux: Option<&LastScan>,
        _args: &[&[u8]],
    ) -> Result<(String, Self)> {
        // Reads other tables of the database: not innocuous.
        db.config(VTabConfig::DirectOnly)?;
        let handle = unsafe { db.handle() };
        Ok((
            "CREATE TABLE x(id INTEGER, survivor INTEGER, anchor INTEGER, ratio REAL, \
             input HIDDEN, threshold HIDDEN, distance HIDDEN)"
                .to_owned(),
            NearDupsTab {
                base: ffi::sqlite3_vtab::default(),
                db: handle,
                last: aux.cloned().unwrap_or_default(),
            },
        ))
    }

    fn best_index(&self, info: &mut IndexInfo) -> Result<()> {
        plan_arguments(info, COL_INPUT, 3, 1, 1e6)
    }

    fn open(&mut self) -> Result<NearDupsCursor<'_>> {
        Ok(NearDupsCursor {
            base: ffi::sqlite3_vtab_cursor::default(),
            db: self.db,
            last: self.last.clone(),
            rows: Vec::new(),
            next: 0,
            phantom: PhantomData,
        })
    }
}

#[repr(C)]
struct NearDupsCursor<'vtab> {
    base: ffi::sqlite3_vtab_cursor,
    db: *mut ffi::sqlite3,
    last: LastScan,
    rows: Vec<Removal>,
    next: usize,
    phantom: PhantomData<&'vtab NearDupsTab>,
}

/// The three arguments, checked, from the constraint values.
fn arguments(idx_num: c_int, args: &Filters<'_>) -> Result<(String, f64, i64)> {
    let given = planned_arguments(idx_num, args, 3);
    let input = table_argument(NAME, "input", given[0])?;
    let threshold = threshold_argument(NAME, given[1])?;
    let distance = match given[2] {
        None => 49,
        Some(ValueRef::Integer(i)) => i,
        Some(other) => {
            return Err(error(
                NAME,
                "distance must be a non-negative integer",
                &describe(other),
            ))
        }
    };
    validate(threshold, distance).map_err(|e| Error::ModuleError(format!("{NAME}: {e}")))?;
    Ok((input, threshold, distance))
}

fn read_row(row: &rusqlite::Row<'_>) -> Result<ScanRow> {
    let id: i64 = row.get(0)?;
    Ok(ScanRow {
        id,
        rank: row.get(2)?,
        text: text_value(NAME, row.get_ref(1)?, id)?,
    })
}

unsafe impl VTabCursor for NearDupsCursor<'_> {
    fn filter(&mut self, idx_num: c_int, _idx_str: Option<&str>, args: &Filters<'_>) -> Result<()> {
        let (input, threshold, distance) = arguments(idx_num, args)?;
        // A non-owning handle on the connection that runs this query.
        let db = unsafe { Connection::from_handle(self.db) }?;
        require_columns(&db, NAME, "input", &input, &INPUT_COLUMNS)?;
        let sql = format!(
            "SELECT id, text, rank FROM {} ORDER BY pos",
            quote_identifier(&input)
        );
        let mut stmt = db.prepare(&sql)?;
        let rows = stmt.query_map([], read_row)?;
        let (removed, stats) = scan(
            rows,
            threshold,
            usize::try_from(distance).unwrap_or(usize::MAX),
        )?;
        if let Ok(mut last) = self.last.lock() {
            *last = Some(stats);
        }
        self.rows = removed;
        self.next = 0;
        Ok(())
    }

    fn next(&mut self) -> Result<()> {
        self.next += 1;
        Ok(())
    }

    fn eof(&self) -> bool {
        self.next >= self.rows.len()
    }

    fn column(&self, ctx: &mut Context, i: c_int) -> Result<()> {
        let r = &self.rows[self.next];
        match i {
            0 => ctx.set_result(&r.id),
            1 => ctx.set_result(&r.survivor),
            2 => ctx.set_result(&r.anchor),
            3 => ctx.set_result(&r.ratio),
            _ => ctx.set_result(&rusqlite::types::Null),
        }
    }

    fn rowid(&self) -> Result<i64> {
        Ok(self.next as i64 + 1)
    }
}
