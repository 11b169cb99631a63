//! The table-valued function shape shared by `dedup_elected`,
//! `dedup_band_entries` and `dedup_similar`: hidden arguments in (a table
//! to read among them), every row computed from the connection when the
//! call starts ([`RowsCursor`]), marked DIRECTONLY since it reads the
//! database.

use std::ffi::c_int;
use std::marker::PhantomData;

use rusqlite::types::ValueRef;
use rusqlite::vtab::{
    eponymous_only_module, Context, Filters, IndexInfo, VTab, VTabConfig, VTabConnection,
};
use rusqlite::{ffi, Connection, Result};

use super::arguments::{plan_arguments, planned_arguments, unwind_safe};
use super::rows_cursor::{RowSource, RowsCursor};

/// A table-valued function that reads the database.
pub trait ReadsTables: Sized + 'static {
    /// The function's name.
    const NAME: &'static str;
    /// Its output columns, as `CREATE TABLE` lists them.
    const COLUMNS: &'static str;
    /// How many output columns [`COLUMNS`](Self::COLUMNS) lists.
    const OUTPUT_COLUMNS: c_int;
    /// Names of its hidden arguments.
    const ARGUMENTS: &'static [&'static str];
    /// Mask of the arguments that must be given.
    const REQUIRED: c_int;
    /// One output row.
    type Row;

    /// Every row of a call with the given arguments (by position), read
    /// from `db`.
    fn rows(db: &Connection, args: &[Option<ValueRef<'_>>]) -> Result<Vec<Self::Row>>;

    /// Sets column `i` of `row`.
    fn column(row: &Self::Row, ctx: &mut Context, i: c_int) -> Result<()>;
}

/// Registers `T` as an eponymous table-valued function.
pub fn register<T: ReadsTables>(db: &Connection) -> Result<()> {
    db.create_module(T::NAME, eponymous_only_module::<Tab<T>>(), None)
}

#[repr(C)]
struct Tab<T> {
    base: ffi::sqlite3_vtab,
    db: *mut ffi::sqlite3,
    function: PhantomData<T>,
}

unsafe impl<'vtab, T: ReadsTables> VTab<'vtab> for Tab<T> {
    type Aux = ();
    type Cursor = RowsCursor<'vtab, Source<T>>;

    fn connect(
        db: &mut VTabConnection,
        _aux: Option<&()>,
        _args: &[&[u8]],
    ) -> Result<(String, Self)> {
        // Reads other tables of the database: not innocuous.
        db.config(VTabConfig::DirectOnly)?;
        let handle = unsafe { db.handle() };
        let hidden: Vec<String> = T::ARGUMENTS.iter().map(|a| format!("{a} HIDDEN")).collect();
        Ok((
            format!("CREATE TABLE x({}, {})", T::COLUMNS, hidden.join(", ")),
            Tab {
                base: ffi::sqlite3_vtab::default(),
                db: handle,
                function: PhantomData,
            },
        ))
    }

    fn best_index(&self, info: &mut IndexInfo) -> Result<()> {
        unwind_safe(T::NAME, || {
            plan_arguments(
                info,
                T::OUTPUT_COLUMNS,
                T::ARGUMENTS.len(),
                T::REQUIRED,
                1e6,
            )
        })
    }

    fn open(&mut self) -> Result<RowsCursor<'_, Source<T>>> {
        Ok(RowsCursor::new(Source {
            db: self.db,
            function: PhantomData,
        }))
    }
}

/// A cursor's source: the connection whose query calls the function.
struct Source<T> {
    db: *mut ffi::sqlite3,
    function: PhantomData<T>,
}

impl<T: ReadsTables> RowSource for Source<T> {
    const NAME: &'static str = T::NAME;
    type Row = T::Row;

    fn rows(&mut self, idx_num: c_int, args: &Filters<'_>) -> Result<Vec<T::Row>> {
        let given = planned_arguments(idx_num, args, T::ARGUMENTS.len());
        // A non-owning handle on the connection that runs this query.
        let db = unsafe { Connection::from_handle(self.db) }?;
        T::rows(&db, &given)
    }

    fn column(row: &T::Row, _position: usize, ctx: &mut Context, i: c_int) -> Result<()> {
        if i < T::OUTPUT_COLUMNS {
            T::column(row, ctx, i)
        } else {
            ctx.set_result(&rusqlite::types::Null)
        }
    }
}
