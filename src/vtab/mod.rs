//! Table-valued functions.

pub mod lsh_bands;
pub mod near_dups;

use std::ffi::c_int;

use rusqlite::types::ValueRef;
use rusqlite::vtab::{Filters, IndexConstraintOp, IndexInfo};
use rusqlite::{Connection, Result};

/// Plans a table-valued function whose `count` hidden argument columns
/// start at column `first`: each `=` constraint on argument `k` is passed to
/// `filter` (bit `k` of `idx_num`). Plans that lack an argument of
/// `required` (a mask), or constrain one otherwise, cost 1e18 so SQLite
/// picks another; the rest cost `cost`.
pub(crate) fn plan_arguments(
    info: &mut IndexInfo,
    first: c_int,
    count: usize,
    required: c_int,
    cost: f64,
) -> Result<()> {
    let mut argv: Vec<Option<usize>> = vec![None; count];
    for (i, c) in info.constraints().enumerate() {
        let Some(slot) = c
            .column()
            .checked_sub(first)
            .and_then(|k| usize::try_from(k).ok())
            .filter(|&k| k < count)
        else {
            continue;
        };
        if !c.is_usable() || c.operator() != IndexConstraintOp::SQLITE_INDEX_CONSTRAINT_EQ {
            info.set_estimated_cost(1e18);
            return Ok(());
        }
        argv[slot] = Some(i);
    }
    let (mut mask, mut n) = (0, 0);
    for (slot, c) in argv.iter().enumerate() {
        if let Some(i) = c {
            n += 1;
            mask |= 1 << slot;
            let mut usage = info.constraint_usage(*i);
            usage.set_argv_index(n);
            usage.set_omit(true);
        }
    }
    info.set_idx_num(mask);
    info.set_estimated_cost(if mask & required == required {
        cost
    } else {
        1e18
    });
    Ok(())
}

/// The arguments [`plan_arguments`] passed, by position; `None` for those
/// not given.
pub(crate) fn planned_arguments<'a>(
    idx_num: c_int,
    args: &'a Filters<'_>,
    count: usize,
) -> Vec<Option<ValueRef<'a>>> {
    let mut values = args.iter();
    (0..count)
        .map(|k| {
            if idx_num & (1 << k) != 0 {
                values.next()
            } else {
                None
            }
        })
        .collect()
}

/// Registers the extension's table-valued functions on `db`.
pub fn register(db: &Connection) -> Result<()> {
    near_dups::register(db)?;
    lsh_bands::register(db)
}
