//! The change log that spares an incremental run reading every row: three
//! triggers on the pages table (`dedup_track_insert`, `_update`, `_delete`)
//! write the rowid of every row inserted, updated or deleted since the
//! last run into `dedup_changes`. A run trusts the log only when the
//! triggers are still the ones it created, the table's schema is the one
//! it saw, and the rows the log does not name are exactly the rows the
//! index holds (a digest of their rowids; this catches what triggers do
//! not see, such as a row `INSERT OR REPLACE` deletes for a conflict on
//! another column, or rowids renumbered by `VACUUM`). A table without an
//! index, whose schema cookie is the one the last run left, needs no
//! digest: neither can happen to it. Otherwise the run reads every row's
//! fingerprint, as without a log, and says why.
//!
//! The triggers are dropped while a run writes (its own deletes and
//! rewrites are not changes for the next run) and created again with an
//! empty log when the run's index is written, in the run's transaction.

use rusqlite::{Connection, OptionalExtension};

use crate::sqlite::ground::error::DedupError;
use crate::sqlite::tables::schema::{self, quote_ident, Source};
use crate::sqlite::tables::trackers::{own_tracker_sql, tracker_sql, OWN_TRACKERS, TRACKERS};

/// Why the extension's own tables no longer hold what the index was
/// written with, or `None`: their trackers are missing or not as created,
/// or one of them fired.
pub fn own_tables_edited(db: &Connection) -> Result<Option<String>, DedupError> {
    for (name, _, when, key) in OWN_TRACKERS {
        if trigger_sql(db, name)? != Some(own_tracker_sql(name, when, key)) {
            return Ok(Some(
                "the triggers on the extension's own tables (dedup_track_archive_*, _domains_*, _changes_*, _index_*, _order_*) were dropped or changed".into(),
            ));
        }
    }
    if super::index_state::state_value(db, "archive")?.is_some() {
        return Ok(Some(
            "rows of dedup_removed that keep a window slot (phases 4-5) were deleted, changed or added"
                .into(),
        ));
    }
    if super::index_state::state_value(db, "domains")?.is_some() {
        return Ok(Some(
            "dedup_domains (the counts phase 5 starts from) was edited".into(),
        ));
    }
    if super::index_state::state_value(db, "index")?.is_some() {
        return Ok(Some(
            "the incremental index was edited (rows of dedup_changes deleted or changed, or dedup_index or dedup_index_order written)"
                .into(),
        ));
    }
    Ok(None)
}

/// The stored statement of the main schema's trigger `name`, if there is one.
fn trigger_sql(db: &Connection, name: &str) -> Result<Option<String>, DedupError> {
    Ok(db
        .query_row(
            "SELECT sql FROM main.sqlite_schema WHERE type = 'trigger' AND name = ?1",
            [name],
            |r| r.get(0),
        )
        .optional()?)
}

/// The trackers' stored statements, in order (`None` where one is missing).
fn stored(db: &Connection) -> Result<Vec<Option<String>>, DedupError> {
    TRACKERS
        .iter()
        .map(|(name, _, _)| trigger_sql(db, name))
        .collect()
}

/// The table's `CREATE TABLE` statement.
fn table_sql(db: &Connection, source: &Source) -> Result<Option<String>, DedupError> {
    Ok(db
        .query_row(
            "SELECT sql FROM main.sqlite_schema WHERE type = 'table' AND name = ?1",
            [&source.table],
            |r| r.get(0),
        )
        .optional()?
        .flatten())
}

/// Drops the trackers (on whatever table they are), the archive's too.
pub fn untrack(db: &Connection) -> Result<(), DedupError> {
    let names = TRACKERS
        .iter()
        .map(|(name, _, _)| *name)
        .chain(OWN_TRACKERS.iter().map(|(name, _, _, _)| *name));
    for name in names {
        db.execute_batch(&format!("DROP TRIGGER IF EXISTS main.{name}"))?;
    }
    Ok(())
}

/// Creates the trackers on the table with an empty log but for the rows
/// the next run must take as changed anyway (the index's unsettled rows,
/// fingerprint 0, read from `written`: the index rows this run wrote),
/// and records what a later run checks them against in
/// `dedup_index_state` (keys `tracked` and `schema`).
pub fn track(db: &Connection, source: &Source, written: &str) -> Result<(), DedupError> {
    untrack(db)?;
    for (name, event, rows) in TRACKERS {
        let sql = tracker_sql(name, event, rows, &source.table, source.rowid);
        db.execute_batch(&sql.replacen("TRIGGER ", "TRIGGER main.", 1))?;
    }
    db.execute_batch(&format!(
        "DELETE FROM main.dedup_changes;
         INSERT INTO main.dedup_changes SELECT rid FROM {written} WHERE fp = 0;"
    ))?;
    // (After the log's reset, which its own trackers would note.)
    for (name, _, when, key) in OWN_TRACKERS {
        let sql = own_tracker_sql(name, when, key);
        db.execute_batch(&sql.replacen("TRIGGER ", "TRIGGER main.", 1))?;
    }
    db.execute(
        "DELETE FROM main.dedup_index_state WHERE key IN ('archive', 'domains', 'index')",
        [],
    )?;
    let tracked = stored(db)?.into_iter().flatten().collect::<Vec<_>>();
    db.execute(
        "INSERT OR REPLACE INTO main.dedup_index_state (key, value) VALUES ('tracked', ?1), ('schema', ?2)",
        rusqlite::params![tracked.join("\n"), table_sql(db, source)?],
    )?;
    Ok(())
}

/// Records the schema cookie as the run leaves it (key `cookie` of
/// `dedup_index_state`), when the run kept an index: the next run checks
/// that no VACUUM (which adds one to it, and may renumber rowids) or
/// other schema change came between. Called last in the run's
/// transaction, after its own schema changes.
pub fn seal(db: &Connection) -> Result<(), DedupError> {
    if schema::object_type(db, "dedup_index_state")?.as_deref() == Some("table")
        && super::index_state::state_value(db, "tracked")?.is_some()
    {
        db.execute(
            "INSERT OR REPLACE INTO main.dedup_index_state (key, value) VALUES ('cookie', ?1)",
            [schema_cookie(db)?.to_string()],
        )?;
    }
    Ok(())
}

/// `PRAGMA main.schema_version`: SQLite adds to it at every schema change
/// and at every VACUUM.
fn schema_cookie(db: &Connection) -> Result<i64, DedupError> {
    Ok(db.query_row("PRAGMA main.schema_version", [], |r| r.get(0))?)
}

/// Whether the table has an index (a UNIQUE or PRIMARY KEY constraint
/// other than INTEGER PRIMARY KEY has one).
fn has_index(db: &Connection, source: &Source) -> Result<bool, DedupError> {
    Ok(db.query_row(
        "SELECT EXISTS (SELECT 1 FROM pragma_index_list(?1, 'main'))",
        [&source.table],
        |r| r.get(0),
    )?)
}

/// Forgets the log: no trackers, no logged rows, nothing recorded.
pub fn forget(db: &Connection) -> Result<(), DedupError> {
    untrack(db)?;
    if schema::object_type(db, "dedup_changes")?.as_deref() == Some("table") {
        db.execute_batch("DELETE FROM main.dedup_changes")?;
    }
    Ok(())
}

/// The count of a set of rowids and a wrapping sum of a mix of each: equal
/// digests mean equal sets (but with odds of about 2^-64).
fn digest(db: &Connection, sql: &str) -> Result<(u64, u64), DedupError> {
    let mut stmt = db.prepare(sql)?;
    let mut rows = stmt.query([])?;
    let (mut n, mut sum) = (0u64, 0u64);
    while let Some(row) = rows.next()? {
        let id: i64 = row.get(0)?;
        n += 1;
        sum = sum.wrapping_add(mix(id as u64));
    }
    Ok((n, sum))
}

/// SplitMix64's finalizer: a bijection that spreads each bit over all.
fn mix(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// `None` when the log names every row changed since the index was
/// written; otherwise why it cannot be trusted (the run then reads every
/// row). Reads the table's rowids once (not its values).
pub fn untrusted(db: &Connection, source: &Source) -> Result<Option<String>, DedupError> {
    if schema::object_type(db, "dedup_changes")?.as_deref() != Some("table") {
        return Ok(Some("no change log".into()));
    }
    let state = |key: &str| super::index_state::state_value(db, key);
    let now = stored(db)?;
    let Some(tracked) = state("tracked")? else {
        return Ok(Some("no change log".into()));
    };
    if now.iter().any(Option::is_none)
        || now.into_iter().flatten().collect::<Vec<_>>().join("\n") != tracked
    {
        return Ok(Some(
            "the change log's triggers were dropped or changed".into(),
        ));
    }
    if state("schema")? != table_sql(db, source)? {
        return Ok(Some(format!(
            "the schema of {} changed",
            quote_ident(&source.table)
        )));
    }
    // Without an index on the table, only the rowid can conflict, and an
    // INSERT OR REPLACE that replaces a row by its rowid is logged by the
    // insert tracker; only VACUUM renumbers rowids, and it changes the
    // schema cookie. So when the table has no index and the cookie is the
    // one the last run left, the rows the log does not name are the
    // index's, and the rowids need not be read (which, without an index,
    // reads the table's every leaf page).
    if !has_index(db, source)? && state("cookie")? == Some(schema_cookie(db)?.to_string()) {
        return Ok(None);
    }
    let table = digest(
        db,
        &format!(
            "SELECT {rowid} FROM {table} WHERE {rowid} NOT IN (SELECT rid FROM main.dedup_changes)",
            rowid = source.rowid,
            table = source.qualified()
        ),
    )?;
    let index = digest(
        db,
        "SELECT rid FROM main.dedup_index WHERE rid NOT IN (SELECT rid FROM main.dedup_changes)",
    )?;
    if table != index {
        return Ok(Some(
            "rows changed that the change log does not name (INSERT OR REPLACE deleting another row, VACUUM)"
                .into(),
        ));
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_table_has_an_index_when_a_constraint_or_an_index_makes_one() {
        let db = Connection::open_in_memory().unwrap();
        db.execute_batch(
            "CREATE TABLE pages (id INTEGER PRIMARY KEY, url TEXT, parsed TEXT);
             CREATE TABLE keyed (url TEXT UNIQUE, parsed TEXT);
             CREATE TABLE other (url TEXT, parsed TEXT); CREATE INDEX other_url ON other (url);",
        )
        .unwrap();
        let has = |t: &str| has_index(&db, &Source::inspect(&db, t).unwrap()).unwrap();
        // (INTEGER PRIMARY KEY is the rowid: no index.)
        assert!(!has("pages"));
        assert!(has("keyed"));
        assert!(!has("pages") && has("other"));
        let cookie = schema_cookie(&db).unwrap();
        db.execute_batch("CREATE INDEX pages_url ON pages (url)")
            .unwrap();
        assert!(has("pages"));
        assert!(schema_cookie(&db).unwrap() > cookie);
    }

    #[test]
    fn the_digest_tells_sets_apart() {
        let db = Connection::open_in_memory().unwrap();
        db.execute_batch(
            "CREATE TABLE a (x INTEGER PRIMARY KEY); INSERT INTO a VALUES (1), (2), (5);",
        )
        .unwrap();
        let d = |sql: &str| digest(&db, sql).unwrap();
        assert_eq!(d("SELECT x FROM a"), d("VALUES (5), (1), (2)"));
        // Same count and same sum of rowids, another set.
        assert_ne!(d("SELECT x FROM a"), d("VALUES (1), (3), (4)"));
        assert_eq!(d("SELECT x FROM a WHERE 0"), (0, 0));
    }
}
