//! What `dedup_plan` saw of the table, so that `dedup_apply` refuses a plan
//! whose rows have changed since (another connection's edit, an insert, a
//! delete): a hash of every row's values, by rowid, in
//! `temp._dedup_snapshot`. `dedup_run` plans and applies in one
//! transaction and needs none.

use std::hash::{Hash, Hasher};

use rusqlite::functions::FunctionFlags;
use rusqlite::types::ValueRef;
use rusqlite::{Connection, OptionalExtension};

use super::schema::{quote_ident, Source};
use super::{fail, DedupError};

/// The SQL function that hashes a row's values (pipeline-internal).
const ROW_HASH: &str = "dedup_row_hash";

/// Registers `dedup_row_hash(value, ...)`: a 64-bit hash of the values and
/// their types (the same in one process, which is all a snapshot needs).
pub fn register(db: &Connection) -> rusqlite::Result<()> {
    let flags = FunctionFlags::SQLITE_UTF8 | FunctionFlags::SQLITE_DETERMINISTIC;
    db.create_scalar_function(ROW_HASH, -1, flags, |ctx| {
        let mut h = std::collections::hash_map::DefaultHasher::new();
        for i in 0..ctx.len() {
            match ctx.get_raw(i) {
                ValueRef::Null => 0u8.hash(&mut h),
                ValueRef::Integer(v) => (1u8, v).hash(&mut h),
                ValueRef::Real(v) => (2u8, v.to_bits()).hash(&mut h),
                ValueRef::Text(t) => (3u8, t).hash(&mut h),
                ValueRef::Blob(b) => (4u8, b).hash(&mut h),
            }
        }
        Ok(h.finish() as i64)
    })
}

/// `dedup_row_hash(every column)` of the table's row `alias`.
fn row_hash(source: &Source, alias: &str) -> String {
    let cols: Vec<String> = source
        .columns
        .iter()
        .map(|c| format!("{alias}.{}", quote_ident(&c.name)))
        .collect();
    format!("{ROW_HASH}({})", cols.join(", "))
}

/// Records every row's hash (after a plan, in its transaction).
pub fn take(db: &Connection, source: &Source) -> Result<(), DedupError> {
    db.execute_batch(&format!(
        "DROP TABLE IF EXISTS temp._dedup_snapshot;
         CREATE TEMP TABLE _dedup_snapshot (r INTEGER PRIMARY KEY, h INTEGER);
         INSERT INTO temp._dedup_snapshot SELECT g.{rowid}, {hash} FROM {table} AS g;",
        rowid = source.rowid,
        hash = row_hash(source, "g"),
        table = source.qualified(),
    ))?;
    Ok(())
}

/// Refuses the plan when a row was edited, deleted or inserted since
/// [`take`], naming one; passes when no snapshot was taken.
pub fn check(db: &Connection, source: &Source) -> Result<(), DedupError> {
    let taken: bool = db.query_row(
        "SELECT EXISTS (SELECT 1 FROM temp.sqlite_schema WHERE name = '_dedup_snapshot')",
        [],
        |r| r.get(0),
    )?;
    if !taken {
        return Ok(());
    }
    let table = source.qualified();
    let rowid = source.rowid;
    let changed: Option<(i64, bool)> = db
        .query_row(
            &format!(
                "SELECT s.r, g.{rowid} IS NULL FROM temp._dedup_snapshot AS s
                 LEFT JOIN {table} AS g ON g.{rowid} = s.r
                 WHERE g.{rowid} IS NULL OR {hash} IS NOT s.h LIMIT 1",
                hash = row_hash(source, "g"),
            ),
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .optional()?;
    let inserted: Option<i64> = db
        .query_row(
            &format!(
                "SELECT {rowid} FROM {table} WHERE {rowid} NOT IN (SELECT r FROM temp._dedup_snapshot) LIMIT 1"
            ),
            [],
            |r| r.get(0),
        )
        .optional()?;
    let what = match (changed, inserted) {
        (Some((id, true)), _) => format!("rowid {id} was deleted"),
        (Some((id, false)), _) => format!("rowid {id} was edited"),
        (None, Some(id)) => format!("rowid {id} was inserted"),
        (None, None) => return Ok(()),
    };
    fail(format!(
        "dedup_apply: the table {} changed since dedup_plan ({what}), got a stale plan; nothing was changed (plan again: SELECT dedup_plan(), or SELECT dedup_run() for both in one transaction)",
        quote_ident(&source.table)
    ))
}
