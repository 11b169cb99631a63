//! The URL learner's tables and state: the model's tables and triggers,
//! made when missing (and the indexes of earlier versions that no query
//! read, dropped); the schema a batch reads (the pages table, its temp
//! views), checked only when it may have changed since the connection's
//! last batch; and where the last batch ended (`dedup_url_state`), so that
//! a batch reads only the rows added since.

use std::collections::HashMap;

use rusqlite::types::Value;
use rusqlite::{Connection, Result};

use super::memory::MemoryCache;
use super::model::EDIT_TRIGGERS;
use crate::sqlite::ground::error::DedupError;
use crate::sqlite::tables::schema::{self, Source};

/// The model's tables (the chrome segments' are `url_chrome`'s).
const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS main.dedup_url_rules (
  domain TEXT NOT NULL, path TEXT, param TEXT, value TEXT,
  observations INTEGER NOT NULL DEFAULT 0, duplicates INTEGER NOT NULL DEFAULT 0,
  probability REAL NOT NULL DEFAULT 0);
CREATE INDEX IF NOT EXISTS main.dedup_url_rules_key ON dedup_url_rules (domain, path, param, value);
CREATE TABLE IF NOT EXISTS main.dedup_url_seen (
  url TEXT PRIMARY KEY, domain TEXT NOT NULL, path TEXT NOT NULL, query TEXT NOT NULL,
  content_hash TEXT, grp INTEGER, signature BLOB, seen INTEGER NOT NULL, raw TEXT);
CREATE INDEX IF NOT EXISTS main.dedup_url_seen_path ON dedup_url_seen (domain, path, seen);
CREATE TABLE IF NOT EXISTS main.dedup_url_params (
  domain TEXT NOT NULL, path TEXT NOT NULL, rest TEXT NOT NULL, param TEXT NOT NULL, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS main.dedup_url_state (key TEXT PRIMARY KEY, value);
";

/// The learner's state (`dedup_url_state`), by key.
pub(super) fn read_state(db: &Connection) -> Result<HashMap<String, Value>> {
    db.prepare("SELECT key, value FROM main.dedup_url_state")?
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
        .collect()
}

/// Indexes of the model's tables that no query reads (each was written
/// with every URL learned; the model's reads take the tables whole, or a
/// seen URL by its key): dropped where an earlier version made them.
const UNUSED_INDEXES: [&str; 2] = ["dedup_url_seen_query", "dedup_url_params_rest"];

/// The tables of the model and its edit triggers, created when missing.
fn ensure_schema(db: &Connection) -> Result<()> {
    for index in UNUSED_INDEXES {
        let made: bool = db.query_row(
            "SELECT count(*) FROM main.sqlite_schema WHERE type = 'index' AND name = ?1",
            [index],
            |r| r.get(0),
        )?;
        if made {
            db.execute_batch(&format!("DROP INDEX main.{index}"))?;
        }
    }
    let present: i64 = db.query_row(
        "SELECT count(*) FROM main.sqlite_schema WHERE type IN ('table', 'trigger') AND name IN
           ('dedup_url_rules', 'dedup_url_seen', 'dedup_url_params', 'dedup_url_state',
            'dedup_url_segments', 'dedup_url_rules_inserted', 'dedup_url_rules_updated',
            'dedup_url_rules_deleted')",
        [],
        |r| r.get(0),
    )?;
    if present < 8 {
        db.execute_batch(SCHEMA)?;
        db.execute_batch(super::chrome::SCHEMA)?;
        db.execute_batch(EDIT_TRIGGERS)?;
    }
    Ok(())
}

/// The schema versions of `main` and `temp` (each changes whenever
/// anything of its schema does).
fn schema_versions(db: &Connection) -> Result<(i64, i64)> {
    Ok((
        db.query_row("PRAGMA main.schema_version", [], |r| r.get(0))?,
        db.query_row("PRAGMA temp.schema_version", [], |r| r.get(0))?,
    ))
}

/// The pages table `table`, with the model's tables and the temp views
/// over the table and the archive made when missing, and the learner's
/// state; the schema is checked only when it changed since the batch that
/// left `memories`'s, or that batch is not known to have committed.
pub(super) fn checked_schema(
    db: &Connection,
    table: &str,
    memories: &MemoryCache,
) -> std::result::Result<Checked, DedupError> {
    let versions = schema_versions(db)?;
    if let Some(seen) = memories.schema(versions, table) {
        // (The tables carry the stamp that batch wrote: it committed, so
        // the schema at these versions is the one it left. Without the
        // state's table the read fails, and the schema is checked.)
        if let Ok(state) = read_state(db) {
            if state.get("version") == Some(&seen.stamp) {
                return Ok(Checked {
                    source: seen.source,
                    versions,
                    state,
                });
            }
        }
    }
    ensure_schema(db)?;
    let source = Source::inspect(db, table)?;
    schema::ensure_temp_view(db, "_dedup_source", &source.view_body())?;
    schema::ensure_temp_view(
        db,
        "_dedup_archive",
        &schema::archive_view_body(db, &source, None)?,
    )?;
    Ok(Checked {
        source,
        versions: schema_versions(db)?,
        state: read_state(db)?,
    })
}

/// What [`checked_schema`] found: the pages table, the schema versions
/// and the learner's state.
pub(super) struct Checked {
    pub(super) source: Source,
    pub(super) versions: (i64, i64),
    pub(super) state: HashMap<String, Value>,
}

/// The rowids after which the new rows of the table and of the archive
/// start: where the last batch ended when the table is the same and its
/// last learned row is still there unchanged (rows were only added), else
/// from the start (every row is then checked against the seen URLs).
pub(super) fn watermarks(
    db: &Connection,
    source: &Source,
    state: &HashMap<String, Value>,
) -> Result<(i64, i64)> {
    let from_start = (i64::MIN, i64::MIN);
    let same_table = matches!(state.get("table"), Some(Value::Text(t)) if *t == source.table);
    let (Some(Value::Integer(rowid)), Some(Value::Integer(archive)), true) =
        (state.get("rowid"), state.get("archive_rowid"), same_table)
    else {
        return Ok(from_start);
    };
    let (current, archive_max): (Option<Value>, i64) = db.query_row(
        "SELECT (SELECT url FROM temp._dedup_source WHERE rid = ?1),
                (SELECT coalesce(max(archive_rowid), 0) FROM temp._dedup_archive)",
        [rowid],
        |r| Ok((r.get(0)?, r.get(1)?)),
    )?;
    let intact = match (current.as_ref(), state.get("url")) {
        (Some(a), Some(b)) => a == b,
        _ => false,
    };
    Ok(if intact && archive_max >= *archive {
        (*rowid, *archive)
    } else {
        from_start
    })
}

/// Where a batch ends: the table's last rowid (`None`: the table is empty)
/// and that row's URL, and the archive's last rowid (0: none).
pub(super) struct Watermarks {
    pub(super) rowid: Option<i64>,
    pub(super) url: Value,
    pub(super) archive: i64,
}

impl Watermarks {
    /// Before the batch's rows are read: where the last batch ended, when
    /// the rows are read from there ([`watermarks`] found its last row
    /// intact), else nothing yet (every row is read).
    pub(super) fn after(
        from_rowid: i64,
        from_archive: i64,
        state: &HashMap<String, Value>,
    ) -> Self {
        let from_start = from_rowid == i64::MIN;
        Watermarks {
            rowid: (!from_start).then_some(from_rowid),
            url: match (from_start, state.get("url")) {
                (false, Some(url)) => url.clone(),
                _ => Value::Null,
            },
            archive: if from_archive == i64::MIN {
                0
            } else {
                from_archive
            },
        }
    }

    /// One row read (`kind` 0: the table's, `id` its rowid; 1: the
    /// archive's); `url` reads its URL, when it is the last so far.
    pub(super) fn note(
        &mut self,
        kind: i64,
        id: i64,
        url: impl FnOnce() -> Result<Value>,
    ) -> Result<()> {
        if kind == 0 {
            if !matches!(self.rowid, Some(r) if id <= r) {
                self.rowid = Some(id);
                self.url = url()?;
            }
        } else {
            self.archive = self.archive.max(id);
        }
        Ok(())
    }
}
