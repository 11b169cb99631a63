//! `segments(text)`: the segments of a page (its non-empty trimmed lines),
//! one row each: `position` (from 1), `segment` (the line), `hash` (the
//! integer that counts it across pages; see [`crate::core::segments`]).

use std::ffi::c_int;

use rusqlite::types::ValueRef;
use rusqlite::vtab::{eponymous_only_module, Context, Filters, IndexInfo, VTab, VTabConnection};
use rusqlite::{ffi, Connection, Result};

use super::arguments::{plan_arguments, planned_arguments, unwind_safe};
use super::rows_cursor::{RowSource, RowsCursor};
use crate::core::segments::segments;
use crate::sqlite::ground::arguments::describe;
use crate::sqlite::ground::arguments::module_error;

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
    type Cursor = RowsCursor<'vtab, Segments>;

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

    fn open(&mut self) -> Result<RowsCursor<'_, Segments>> {
        Ok(RowsCursor::new(Segments))
    }
}

/// The segments of the constraint value, checked.
fn split(idx_num: c_int, args: &Filters<'_>) -> Result<Vec<(String, i64)>> {
    let given = planned_arguments(idx_num, args, 1);
    match given[0] {
        None | Some(ValueRef::Null) => Ok(Vec::new()),
        Some(ValueRef::Text(t)) => {
            let text = std::str::from_utf8(t).map_err(|e| {
                module_error(
                    NAME,
                    &format!("text is not valid UTF-8 (byte {})", e.valid_up_to()),
                    &format!("text of {} bytes", t.len()),
                )
            })?;
            Ok(segments(text)
                .map(|s| (s.text.to_string(), s.hash))
                .collect())
        }
        Some(other) => Err(module_error(NAME, "text must be TEXT", &describe(other))),
    }
}

/// A cursor's source: (segment, hash) in text order.
struct Segments;

impl RowSource for Segments {
    const NAME: &'static str = NAME;
    type Row = (String, i64);

    fn rows(&mut self, idx_num: c_int, args: &Filters<'_>) -> Result<Vec<(String, i64)>> {
        split(idx_num, args)
    }

    fn column(row: &(String, i64), position: usize, ctx: &mut Context, i: c_int) -> Result<()> {
        match i {
            0 => ctx.set_result(&(position as i64 + 1)),
            1 => ctx.set_result(&row.0),
            2 => ctx.set_result(&row.1),
            _ => ctx.set_result(&rusqlite::types::Null),
        }
    }
}
