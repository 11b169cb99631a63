//! The keys an incremental run looks the last run's rows up by: each kept
//! row's canonical URL and content hash as 8-byte keys (`dedup_index.url_key`
//! and `hash_key`, `dedup_fingerprint` of the text), read through the view
//! `temp._dedup_index_keys(key, rid)` ([`VIEW`]; `sql/incremental/`).
//!
//! The keys hash the texts, so a batch's rows land on random pages of any
//! b-tree of them: as SQLite indexes on `dedup_index`, a 1% batch at 1M
//! pages rewrote nearly every page of both, and journalled them (measured:
//! benches/results/design-measurements.md, "Index keys in tables of their own"). Here they live in two tables of
//! `(key, rid)`: `main.dedup_index_keys`, written whole and in order, and
//! `main.dedup_index_keys_new`, the entries added since (few pages). A
//! row that leaves the index (deleted or edited by the user, removed, or
//! its keys rewritten) keeps its entries: an entry counts only while
//! `dedup_index` holds its rowid with its key, which every look-up checks
//! (`x.url_key = k.key`, `x.hash_key = k.key`). Once the entries added and
//! the rows that left number a quarter of the written entries, the run
//! writes the table whole again from `dedup_index`.
//!
//! `dedup_index_state` keeps `keys_written` (the entries written whole)
//! and `keys_left` (the rows that left since).

use rusqlite::Connection;

use super::index_state::state_number;
use crate::sqlite::ground::error::DedupError;

/// The view of every entry, written or added (as `temp.<name>`).
pub const VIEW: &str = "_dedup_index_keys";

/// Creates [`VIEW`]: the two tables' entries. (A compound view, which
/// SQLite flattens into each join that reads it: each table is searched
/// by its key.)
pub fn create_view(db: &Connection) -> Result<(), DedupError> {
    db.execute_batch(&format!(
        "DROP VIEW IF EXISTS temp.{VIEW};
         CREATE TEMP VIEW {VIEW} AS
         SELECT key, rid FROM main.dedup_index_keys
         UNION ALL SELECT key, rid FROM main.dedup_index_keys_new;"
    ))?;
    Ok(())
}

/// Brings the keys up to date once `dedup_index` is (with the rows of
/// `temp._dedup_index_new` written now): a full run writes them whole; an
/// incremental one, in which `left` rows left the index or were written
/// again, adds the entries of the rows written that the tables lack, and
/// writes them whole once those and the rows that left since are many.
pub fn write(db: &Connection, incremental: bool, left: i64) -> Result<(), DedupError> {
    if !incremental {
        return write_whole(db);
    }
    db.execute_batch(
        "INSERT OR IGNORE INTO main.dedup_index_keys_new (key, rid)
         SELECT key, rid FROM (
           SELECT url_key AS key, rid FROM temp._dedup_index_new WHERE url_key IS NOT NULL
           UNION ALL SELECT hash_key, rid FROM temp._dedup_index_new WHERE hash_key IS NOT NULL
         ) AS n
         WHERE NOT EXISTS (SELECT 1 FROM main.dedup_index_keys AS k WHERE k.key = n.key AND k.rid = n.rid)
         ORDER BY 1, 2;",
    )?;
    let number = |key: &str| Ok::<_, DedupError>(state_number(db, key)?.unwrap_or(0));
    let written = number("keys_written")?;
    let left = number("keys_left")? + left;
    let added: i64 = db.query_row("SELECT count(*) FROM main.dedup_index_keys_new", [], |r| {
        r.get(0)
    })?;
    // (A row that left had up to two entries.)
    if (added + 2 * left) * 4 > written {
        return write_whole(db);
    }
    db.execute(
        "INSERT OR REPLACE INTO main.dedup_index_state (key, value) VALUES ('keys_left', ?1)",
        [left],
    )?;
    Ok(())
}

/// Writes the keys of every row of `dedup_index` into `dedup_index_keys`,
/// in its order, and empties `dedup_index_keys_new`.
fn write_whole(db: &Connection) -> Result<(), DedupError> {
    db.execute_batch(
        "DELETE FROM main.dedup_index_keys;
         DELETE FROM main.dedup_index_keys_new;
         INSERT OR IGNORE INTO main.dedup_index_keys (key, rid)
         SELECT url_key, rid FROM main.dedup_index WHERE url_key IS NOT NULL
         UNION ALL SELECT hash_key, rid FROM main.dedup_index WHERE hash_key IS NOT NULL
         ORDER BY 1, 2;",
    )?;
    let written = db.changes() as i64;
    db.execute(
        "INSERT OR REPLACE INTO main.dedup_index_state (key, value)
         VALUES ('keys_written', ?1), ('keys_left', 0)",
        [written],
    )?;
    Ok(())
}
