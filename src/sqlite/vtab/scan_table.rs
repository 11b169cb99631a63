//! The table-valued function shape shared by `near_dups` and
//! `near_dups_among`: hidden arguments in, one row per removed input row out
//! (`id`, `survivor`, `anchor`, `ratio`), the scan's counters kept for
//! `near_dups_stats()`.

use std::ffi::c_int;
use std::marker::PhantomData;
use std::sync::{Arc, Mutex};

use rusqlite::types::ValueRef;
use rusqlite::vtab::{
    eponymous_only_module, Context, Filters, IndexInfo, VTab, VTabConfig, VTabConnection,
};
use rusqlite::{ffi, Connection, Result};

use super::arguments::{plan_arguments, planned_arguments, unwind_safe};
use super::rows_cursor::{RowSource, RowsCursor};
use crate::core::near_dups::{Removal, ScanStats};

/// The counters of the last scan on a connection.
pub type LastScan = Arc<Mutex<Option<ScanStats>>>;

/// Hidden argument columns start after the four output columns.
const FIRST_ARGUMENT: c_int = 4;

/// One scan exposed as a table-valued function.
pub(crate) trait Scan: Sized + 'static {
    /// The function's name.
    const NAME: &'static str;
    /// Names of its hidden arguments.
    const ARGUMENTS: &'static [&'static str];
    /// Mask of the arguments that must be given.
    const REQUIRED: c_int;
    /// Runs the scan on `db` with the given arguments (by position).
    fn run(db: &Connection, args: &[Option<ValueRef<'_>>]) -> Result<(Vec<Removal>, ScanStats)>;
}

/// Registers `S` as an eponymous table-valued function whose counters go to
/// `last`.
pub(crate) fn register<S: Scan>(db: &Connection, last: LastScan) -> Result<()> {
    db.create_module(S::NAME, eponymous_only_module::<ScanTab<S>>(), Some(last))
}

#[repr(C)]
struct ScanTab<S> {
    base: ffi::sqlite3_vtab,
    db: *mut ffi::sqlite3,
    last: LastScan,
    scan: PhantomData<S>,
}

unsafe impl<'vtab, S: Scan> VTab<'vtab> for ScanTab<S> {
    type Aux = LastScan;
    type Cursor = RowsCursor<'vtab, Scanned<S>>;

    fn connect(
        db: &mut VTabConnection,
        aux: Option<&LastScan>,
        _args: &[&[u8]],
    ) -> Result<(String, Self)> {
        // Reads other tables of the database: not innocuous.
        db.config(VTabConfig::DirectOnly)?;
        let handle = unsafe { db.handle() };
        let hidden: Vec<String> = S::ARGUMENTS.iter().map(|a| format!("{a} HIDDEN")).collect();
        Ok((
            format!(
                "CREATE TABLE x(id INTEGER, survivor INTEGER, anchor INTEGER, ratio REAL, {})",
                hidden.join(", ")
            ),
            ScanTab {
                base: ffi::sqlite3_vtab::default(),
                db: handle,
                last: aux.cloned().unwrap_or_default(),
                scan: PhantomData,
            },
        ))
    }

    fn best_index(&self, info: &mut IndexInfo) -> Result<()> {
        unwind_safe(S::NAME, || {
            plan_arguments(info, FIRST_ARGUMENT, S::ARGUMENTS.len(), S::REQUIRED, 1e6)
        })
    }

    fn open(&mut self) -> Result<RowsCursor<'_, Scanned<S>>> {
        Ok(RowsCursor::new(Scanned {
            db: self.db,
            last: self.last.clone(),
            scan: PhantomData,
        }))
    }
}

/// A cursor's source: the connection whose query calls the scan, and
/// where its counters go.
struct Scanned<S> {
    db: *mut ffi::sqlite3,
    last: LastScan,
    scan: PhantomData<S>,
}

impl<S: Scan> RowSource for Scanned<S> {
    const NAME: &'static str = S::NAME;
    type Row = Removal;

    fn rows(&mut self, idx_num: c_int, args: &Filters<'_>) -> Result<Vec<Removal>> {
        let given = planned_arguments(idx_num, args, S::ARGUMENTS.len());
        // A non-owning handle on the connection that runs this query.
        let db = unsafe { Connection::from_handle(self.db) }?;
        let (removed, stats) = S::run(&db, &given)?;
        if let Ok(mut last) = self.last.lock() {
            *last = Some(stats);
        }
        Ok(removed)
    }

    fn column(r: &Removal, _position: usize, ctx: &mut Context, i: c_int) -> Result<()> {
        match i {
            0 => ctx.set_result(&r.id),
            1 => ctx.set_result(&r.survivor),
            2 => ctx.set_result(&r.anchor),
            3 => ctx.set_result(&r.ratio),
            _ => ctx.set_result(&rusqlite::types::Null),
        }
    }
}
