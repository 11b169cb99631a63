//! `segments(text)`: the segments of a page (its non-empty trimmed lines),
//! one row each: `position` (from 1), `segment` (the line), `hash` (the
//! integer that counts it across pages; see [`crate::core::segments`]).

use std::ffi::c_int;
use std::marker::PhantomData;

use rusqlite::types::ValueRef;
use rusqlite::vtab::{
    eponymous_only_module, Context, Filters, IndexInfo, VTab, VTabConnection, VTabCursor,
};
use rusqlite::{ffi, Connection, Result};

use super::{error, plan_arguments, planned_arguments, unwind_safe};
use crate::core::segments::segments;
use crate::sqlite::scalars::describe;

const NAME: &str = "segments";
/// The hidden argument column (text).
const COL_TEXT: c_int = 3;

/// Registers the eponymous table-valued function `segments`.
pub fn register(db: &Connection) -> Result<()> {
    db.create_module(NAME, eponymous_only_module::<SegmentsTab>(), None)
}

#[repr(C)]
struct SegmentsTab {
    base: ffi::sqlite3_vtab,
}

unsafe impl<'vtab> VTab<'vtab> for SegmentsTab {
    type Aux = ();
    type Cursor = SegmentsCursor<'vtab>;

    fn connect(
        _db: &mut VTabConnection,
        _aux: Option<&()>,
        _args: &[&[u8]],
    ) -> Result<(String, Self)> {
        Ok((
            "CREATE TABLE x(position INTEGER, segment TEXT, hash INTEGER, text HIDDEN)".to_owned(),
            SegmentsTab {
                base: ffi::sqlite3_vtab::default(),
            },
        ))
    }

    fn best_index(&self, info: &mut IndexInfo) -> Result<()> {
        unwind_safe(NAME, || plan_arguments(info, COL_TEXT, 1, 1, 10.0))
    }

    fn open(&mut self) -> Result<SegmentsCursor<'_>> {
        Ok(SegmentsCursor {
            base: ffi::sqlite3_vtab_cursor::default(),
            rows: Vec::new(),
            next: 0,
            phantom: PhantomData,
        })
    }
}

#[repr(C)]
struct SegmentsCursor<'vtab> {
    base: ffi::sqlite3_vtab_cursor,
    /// (segment, hash) in text order.
    rows: Vec<(String, i64)>,
    next: usize,
    phantom: PhantomData<&'vtab SegmentsTab>,
}

/// The segments of the constraint value, checked.
fn split(idx_num: c_int, args: &Filters<'_>) -> Result<Vec<(String, i64)>> {
    let given = planned_arguments(idx_num, args, 1);
    match given[0] {
        None | Some(ValueRef::Null) => Ok(Vec::new()),
        Some(ValueRef::Text(t)) => {
            let text = std::str::from_utf8(t).map_err(|e| {
                error(
                    NAME,
                    &format!("text is not valid UTF-8 (byte {})", e.valid_up_to()),
                    &format!("text of {} bytes", t.len()),
                )
            })?;
            Ok(segments(text)
                .map(|s| (s.text.to_string(), s.hash))
                .collect())
        }
        Some(other) => Err(error(NAME, "text must be TEXT", &describe(other))),
    }
}

unsafe impl VTabCursor for SegmentsCursor<'_> {
    fn filter(&mut self, idx_num: c_int, _idx_str: Option<&str>, args: &Filters<'_>) -> Result<()> {
        self.rows = unwind_safe(NAME, || split(idx_num, args))?;
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
        let Some((segment, hash)) = self.rows.get(self.next) else {
            return ctx.set_result(&rusqlite::types::Null);
        };
        match i {
            0 => ctx.set_result(&(self.next as i64 + 1)),
            1 => ctx.set_result(segment),
            2 => ctx.set_result(hash),
            _ => ctx.set_result(&rusqlite::types::Null),
        }
    }

    fn rowid(&self) -> Result<i64> {
        Ok(self.next as i64 + 1)
    }
}
