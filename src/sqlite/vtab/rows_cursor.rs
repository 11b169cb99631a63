//! The cursor of a table-valued function that computes all of a call's
//! rows when the call starts (`filter`) and hands them out in order: the
//! shape `dedup_elected`, `lsh_bands`, `segments`, the scans and
//! `dedup_held_statements` share. Each supplies a [`RowSource`].

use std::ffi::c_int;
use std::marker::PhantomData;

use rusqlite::vtab::{Context, Filters, VTabCursor};
use rusqlite::{ffi, Result};

use super::arguments::unwind_safe;

/// What one table-valued function supplies to [`RowsCursor`].
pub trait RowSource {
    /// The function's name, in its errors.
    const NAME: &'static str;
    /// One output row.
    type Row;

    /// Every row of the call with these arguments (a panic in it is an
    /// error naming the function: [`unwind_safe`]).
    fn rows(&mut self, idx_num: c_int, args: &Filters<'_>) -> Result<Vec<Self::Row>>;

    /// Sets column `i` of `row`, the call's row number `position` (from 0).
    fn column(row: &Self::Row, position: usize, ctx: &mut Context, i: c_int) -> Result<()>;
}

/// A cursor over the rows a [`RowSource`] computed; rowids count from 1.
#[repr(C)]
pub struct RowsCursor<'vtab, S: RowSource> {
    /// (First: SQLite sees a cursor as this struct.)
    base: ffi::sqlite3_vtab_cursor,
    source: S,
    rows: Vec<S::Row>,
    next: usize,
    phantom: PhantomData<&'vtab ()>,
}

impl<S: RowSource> RowsCursor<'_, S> {
    /// A cursor of `source`, before its first call.
    pub fn new(source: S) -> Self {
        RowsCursor {
            base: ffi::sqlite3_vtab_cursor::default(),
            source,
            rows: Vec::new(),
            next: 0,
            phantom: PhantomData,
        }
    }
}

unsafe impl<S: RowSource> VTabCursor for RowsCursor<'_, S> {
    fn filter(&mut self, idx_num: c_int, _idx_str: Option<&str>, args: &Filters<'_>) -> Result<()> {
        let source = &mut self.source;
        self.rows = unwind_safe(S::NAME, || source.rows(idx_num, args))?;
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
        match self.rows.get(self.next) {
            Some(row) => S::column(row, self.next, ctx, i),
            None => ctx.set_result(&rusqlite::types::Null),
        }
    }

    fn rowid(&self) -> Result<i64> {
        Ok(self.next as i64 + 1)
    }
}
