//! What `dedup_plan` saw of the table, so that `dedup_apply` refuses a plan
//! whose rows have changed since (another connection's edit, an insert, a
//! delete): a hash of every row's values, by rowid, in
//! `temp._dedup_snapshot` (the incremental index's fingerprint,
//! `dedup_fingerprint`). `dedup_run` plans and applies in one
//! transaction and needs none.

use crate::sqlite::ground::error::Code;
use rusqlite::{Connection, OptionalExtension};

use super::index_functions::fingerprint_of;
use crate::sqlite::ground::error::{fail, DedupError};
use crate::sqlite::tables::schema::{quote_ident, Source};

/// Records every row's hash (after a plan, in its transaction).
pub fn take(db: &Connection, source: &Source) -> Result<(), DedupError> {
    db.execute_batch(&format!(
        "DROP TABLE IF EXISTS temp._dedup_snapshot;
         CREATE TEMP TABLE _dedup_snapshot (r INTEGER PRIMARY KEY, h INTEGER);
         INSERT INTO temp._dedup_snapshot SELECT g.{rowid}, {hash} FROM {table} AS g;",
        rowid = source.rowid,
        hash = fingerprint_of(source, "g"),
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
                hash = fingerprint_of(source, "g"),
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
    fail(Code::Stale, format!(
        "dedup_apply: the table {} changed since dedup_plan ({what}), got a stale plan; nothing was changed (plan again: SELECT dedup_plan(), or SELECT dedup_run() for both in one transaction)",
        quote_ident(&source.table)
    ))
}
