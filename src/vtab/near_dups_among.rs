//! `near_dups_among(input, pairs [, threshold])`: the window scan's election
//! over candidate pairs (e.g. rows sharing an LSH band key) instead of a
//! window, so near-duplicates are found however far apart they sort.
//!
//! `input` has the columns of `near_dups`' input (`pos`, `id`, `text`,
//! `rank`; `pos` and `id` unique integers); `pairs` has columns `a` and `b`,
//! ids of `input` rows. Rows are scanned in `pos` order and each live row is
//! compared with the later live rows a pair joins it to; texts are read one
//! group at a time (`WHERE pos = ?`, so index `pos`). Output columns are
//! `near_dups`' (see [`crate::near_dups::scan_pairs`]).

use std::collections::HashMap;
use std::ffi::c_int;
use std::marker::PhantomData;

use rusqlite::types::ValueRef;
use rusqlite::vtab::{
    eponymous_only_module, Context, Filters, IndexInfo, VTab, VTabConfig, VTabConnection,
    VTabCursor,
};
use rusqlite::{ffi, Connection, Error, Result};

use super::near_dups::{LastScan, INPUT_COLUMNS};
use super::{
    error, plan_arguments, planned_arguments, quote_identifier, require_columns, table_argument,
    text_value, threshold_argument,
};
use crate::near_dups::{scan_pairs, validate, Removal};
use crate::sql::describe;

const NAME: &str = "near_dups_among";
/// Columns the pairs table or view must have.
const PAIR_COLUMNS: [&str; 2] = ["a", "b"];
/// First of the hidden argument columns (input, pairs, threshold).
const COL_INPUT: c_int = 4;

/// Registers the eponymous table-valued function `near_dups_among`; its
/// counters go to `last` (read by `near_dups_stats()`).
pub fn register(db: &Connection, last: LastScan) -> Result<()> {
    db.create_module(NAME, eponymous_only_module::<AmongTab>(), Some(last))
}

#[repr(C)]
struct AmongTab {
    base: ffi::sqlite3_vtab,
    db: *mut ffi::sqlite3,
    last: LastScan,
}

unsafe impl<'vtab> VTab<'vtab> for AmongTab {
    type Aux = LastScan;
    type Cursor = AmongCursor<'vtab>;

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
             input HIDDEN, pairs HIDDEN, threshold HIDDEN)"
                .to_owned(),
            AmongTab {
                base: ffi::sqlite3_vtab::default(),
                db: handle,
                last: aux.cloned().unwrap_or_default(),
            },
        ))
    }

    fn best_index(&self, info: &mut IndexInfo) -> Result<()> {
        plan_arguments(info, COL_INPUT, 3, 0b11, 1e6)
    }

    fn open(&mut self) -> Result<AmongCursor<'_>> {
        Ok(AmongCursor {
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
struct AmongCursor<'vtab> {
    base: ffi::sqlite3_vtab_cursor,
    db: *mut ffi::sqlite3,
    last: LastScan,
    rows: Vec<Removal>,
    next: usize,
    phantom: PhantomData<&'vtab AmongTab>,
}

/// The three arguments, checked, from the constraint values.
fn arguments(idx_num: c_int, args: &Filters<'_>) -> Result<(String, String, f64)> {
    let given = planned_arguments(idx_num, args, 3);
    let input = table_argument(NAME, "input", given[0])?;
    let pairs = table_argument(NAME, "pairs", given[1])?;
    let threshold = threshold_argument(NAME, given[2])?;
    validate(threshold, 0).map_err(|e| Error::ModuleError(format!("{NAME}: {e}")))?;
    Ok((input, pairs, threshold))
}

/// An integer column, or an error naming the column and what it held.
fn integer(row: &rusqlite::Row<'_>, i: usize, column: &str, table: &str) -> Result<i64> {
    match row.get_ref(i)? {
        ValueRef::Integer(v) => Ok(v),
        other => Err(error(
            NAME,
            &format!("{column} in '{table}' must be an integer"),
            &describe(other),
        )),
    }
}

/// The input rows (`id`, `rank`) in `pos` order, their positions, and the
/// index of each id.
type Rows = (Vec<(i64, i64)>, Vec<i64>, HashMap<i64, usize>);

fn read_rows(db: &Connection, input: &str) -> Result<Rows> {
    let sql = format!(
        "SELECT pos, id, rank FROM {} ORDER BY pos",
        quote_identifier(input)
    );
    let mut stmt = db.prepare(&sql)?;
    let mut query = stmt.query([])?;
    let (mut rows, mut positions, mut index) = (Vec::new(), Vec::new(), HashMap::new());
    while let Some(row) = query.next()? {
        let pos = integer(row, 0, "pos", input)?;
        let id = integer(row, 1, "id", input)?;
        let rank = integer(row, 2, "rank", input)?;
        if positions.last() == Some(&pos) {
            return Err(error(
                NAME,
                &format!("pos in '{input}' must be unique"),
                &format!("pos {pos} twice"),
            ));
        }
        if index.insert(id, rows.len()).is_some() {
            return Err(error(
                NAME,
                &format!("id in '{input}' must be unique"),
                &format!("id {id} twice"),
            ));
        }
        rows.push((id, rank));
        positions.push(pos);
    }
    Ok((rows, positions, index))
}

fn read_pairs(
    db: &Connection,
    pairs: &str,
    input: &str,
    index: &HashMap<i64, usize>,
) -> Result<Vec<(usize, usize)>> {
    let sql = format!("SELECT a, b FROM {}", quote_identifier(pairs));
    let mut stmt = db.prepare(&sql)?;
    let mut query = stmt.query([])?;
    let mut out = Vec::new();
    let find = |id: i64| {
        index.get(&id).copied().ok_or_else(|| {
            error(
                NAME,
                &format!("pairs in '{pairs}' must join ids of '{input}'"),
                &format!("id {id}"),
            )
        })
    };
    while let Some(row) = query.next()? {
        let a = integer(row, 0, "a", pairs)?;
        let b = integer(row, 1, "b", pairs)?;
        out.push((find(a)?, find(b)?));
    }
    Ok(out)
}

unsafe impl VTabCursor for AmongCursor<'_> {
    fn filter(&mut self, idx_num: c_int, _idx_str: Option<&str>, args: &Filters<'_>) -> Result<()> {
        let (input, pairs, threshold) = arguments(idx_num, args)?;
        // A non-owning handle on the connection that runs this query.
        let db = unsafe { Connection::from_handle(self.db) }?;
        require_columns(&db, NAME, "input", &input, &INPUT_COLUMNS)?;
        require_columns(&db, NAME, "pairs", &pairs, &PAIR_COLUMNS)?;
        let (rows, positions, index) = read_rows(&db, &input)?;
        let pairs = read_pairs(&db, &pairs, &input, &index)?;
        let sql = format!(
            "SELECT text FROM {} WHERE pos = ?1",
            quote_identifier(&input)
        );
        let mut text = db.prepare(&sql)?;
        let (removed, stats) = scan_pairs(&rows, &pairs, threshold, |k| {
            let mut found = text.query([positions[k]])?;
            match found.next()? {
                Some(row) => text_value(NAME, row.get_ref(0)?, rows[k].0),
                // The row left the input since it was listed: nothing to compare.
                None => Ok(None),
            }
        })?;
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
