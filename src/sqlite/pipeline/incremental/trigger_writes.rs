//! What the user's own triggers write to the pages table while a run
//! deletes and rewrites rows.
//!
//! What: the change log's trackers ([`super::changes`]) are off while the
//! run writes (its own writes are no changes for the next run), so a write
//! that a user's trigger makes then (an `AFTER UPDATE OF url` that stamps
//! the row, an `AFTER DELETE` that edits or inserts other rows) would be
//! missed by the next incremental run. For those statements, temporary
//! triggers note every rowid written ([`watch`]); every row the run's own
//! delete and rewrite do not account for, once each, is a row some trigger
//! wrote ([`settle`]); after the index is written they go into the change
//! log, so the next run takes them as changed ([`log`]).
//!
//! Its temporary objects (`_dedup_seen*`, `_dedup_triggered`) are among
//! [`crate::sqlite::pipeline::run::plan::TEMP_OBJECTS`].
//!
//! Cost: one row in a temporary table per row the run deletes or rewrites.

use rusqlite::Connection;

use crate::sqlite::ground::error::DedupError;
use crate::sqlite::tables::schema::Source;

/// Starts noting the rowids written to the table (`temp._dedup_seen(rid,
/// kind)`: `i`, `u` or `d`).
pub fn watch(db: &Connection, source: &Source) -> Result<(), DedupError> {
    let (table, rowid) = (source.qualified(), source.rowid);
    db.execute_batch(&format!(
        "CREATE TEMP TABLE _dedup_seen (rid INTEGER, kind TEXT);
         CREATE TEMP TRIGGER _dedup_seen_insert AFTER INSERT ON {table} BEGIN
           INSERT INTO _dedup_seen VALUES (new.{rowid}, 'i'); END;
         CREATE TEMP TRIGGER _dedup_seen_update AFTER UPDATE ON {table} BEGIN
           INSERT INTO _dedup_seen SELECT old.{rowid}, 'u'
           UNION ALL SELECT new.{rowid}, 'u' WHERE new.{rowid} IS NOT old.{rowid}; END;
         CREATE TEMP TRIGGER _dedup_seen_delete AFTER DELETE ON {table} BEGIN
           INSERT INTO _dedup_seen VALUES (old.{rowid}, 'd'); END;"
    ))?;
    Ok(())
}

/// Stops noting and keeps the rows a trigger wrote in
/// `temp._dedup_triggered(rid)`: all noted rows but those the run's delete
/// (`temp._dedup_removal`) or its rewrite (run `run`'s rows of
/// `dedup_rewritten` after rowid `rewritten_after`) wrote once and nothing
/// else did. Returns their number.
pub fn settle(db: &Connection, run: i64, rewritten_after: i64) -> Result<i64, DedupError> {
    db.execute_batch(
        "DROP TRIGGER temp._dedup_seen_insert;
         DROP TRIGGER temp._dedup_seen_update;
         DROP TRIGGER temp._dedup_seen_delete;",
    )?;
    db.execute(
        "CREATE TEMP TABLE _dedup_triggered AS
         SELECT rid FROM temp._dedup_seen GROUP BY rid
         HAVING NOT (count(*) = 1 AND (
           (min(kind) = 'd' AND rid IN (SELECT source_rowid FROM temp._dedup_removal))
           OR (min(kind) = 'u' AND rid IN (SELECT dedup_rowid FROM main.dedup_rewritten
                                           WHERE dedup_run = ?1 AND rowid > ?2))))",
        [run, rewritten_after],
    )?;
    db.execute_batch("DROP TABLE temp._dedup_seen;")?;
    Ok(
        db.query_row("SELECT count(*) FROM temp._dedup_triggered", [], |r| {
            r.get(0)
        })?,
    )
}

/// Puts the rows a trigger wrote into the change log, when the run kept an
/// index (after [`super::changes::track`] reset the log).
pub fn log(db: &Connection, keep: bool) -> Result<(), DedupError> {
    if keep {
        db.execute_batch(
            "INSERT OR IGNORE INTO main.dedup_changes (rid) SELECT rid FROM temp._dedup_triggered;",
        )?;
    }
    db.execute_batch("DROP TABLE temp._dedup_triggered;")?;
    Ok(())
}
