//! The persistent index that makes runs incremental: `dedup_index` keeps,
//! for every row the last run left in the table, a fingerprint of its
//! values and the canonical URL that placed it in phase 4's scan order;
//! `dedup_index_state` the run that wrote it, its settings and the index's
//! version.
//!
//! A run whose table and settings the index describes is *incremental*: the
//! rows that are new or changed since (a fingerprint differs, a rowid is
//! new or reused) are *dirty*, and so is the row that follows a row gone
//! from phase 4's scan order (deleted by the user, changed, or removed in
//! phases 2–3 by a new copy). Phases 1–3 and 5 still read every row (SQL
//! over the whole table); phase 4, the costly one, compares only the rows
//! within `distance` of a dirty row: the others become placeholders (a
//! window slot, never compared). That is exact: the last run left no two
//! rows near each other within a window (a second run removes nothing), so
//! a window without a dirty row finds nothing, and a row at least
//! `distance` from every dirty row is never in a group.
//!
//! Any other case is a *full* run, and the report says why: no index (the
//! first run, or a restore since), other settings, another version of the
//! index, `lsh` mode, `boilerplate = 'strip'` or `url_rules` (their inputs
//! change with every row), or `{"full": true}`.

use rusqlite::functions::FunctionFlags;
use rusqlite::types::ValueRef;
use rusqlite::{Connection, OptionalExtension};

use super::schema::Source;
use super::settings::Settings;
use super::DedupError;
use crate::core::hash::Fingerprint;

/// The index's format; an index of another is rebuilt by a full run.
pub const FORMAT: &str = "1";

/// What `dedup_index_state.version` holds: the format and the extension's
/// version (another version may canonicalize or compare differently, so
/// its index describes another run: the first run after an upgrade is full).
fn version() -> String {
    format!("{FORMAT} {}", env!("CARGO_PKG_VERSION"))
}

/// The SQL function that fingerprints a row's values.
const FINGERPRINT: &str = "dedup_fingerprint";

/// Registers `dedup_fingerprint(value, ...)` ([`Fingerprint`]).
pub fn register(db: &Connection) -> rusqlite::Result<()> {
    let flags = FunctionFlags::SQLITE_UTF8 | FunctionFlags::SQLITE_DETERMINISTIC;
    db.create_scalar_function(FINGERPRINT, -1, flags, |ctx| {
        let mut f = Fingerprint::new();
        for i in 0..ctx.len() {
            match ctx.get_raw(i) {
                ValueRef::Null => f.null(),
                ValueRef::Integer(v) => f.integer(v),
                ValueRef::Real(v) => f.real(v),
                ValueRef::Text(t) => f.text(t),
                ValueRef::Blob(b) => f.blob(b),
            }
        }
        Ok(f.finish())
    })
}

/// `dedup_fingerprint(every column)` of the table's row `alias` (also what
/// a plan's snapshot keeps, [`super::snapshot`]).
pub fn fingerprint_of(source: &Source, alias: &str) -> String {
    format!("{FINGERPRINT}({})", source.every_column(alias))
}

/// The settings as the index compares them: the JSON without `full`.
fn comparable(db: &Connection, settings_json: &str) -> Result<String, DedupError> {
    Ok(
        db.query_row("SELECT json_remove(?1, '$.full')", [settings_json], |r| {
            r.get(0)
        })?,
    )
}

/// Why this run must be full, or `None` when it can be incremental.
fn why_full(
    db: &Connection,
    s: &Settings,
    settings_json: &str,
) -> Result<Option<String>, DedupError> {
    if s.full {
        return Ok(Some("asked for (full: true)".into()));
    }
    if s.near_mode == "lsh" && s.threshold < 1.0 {
        return Ok(Some("lsh mode (incremental runs are window mode's)".into()));
    }
    if s.boilerplate == "strip" {
        return Ok(Some(
            "boilerplate = 'strip' (the chrome is counted over every row)".into(),
        ));
    }
    if s.url_rules > 0.0 {
        return Ok(Some(
            "url_rules (the learned rules change between runs)".into(),
        ));
    }
    let exists = |name: &str| -> Result<bool, DedupError> {
        Ok(super::schema::object_type(db, name)?.as_deref() == Some("table"))
    };
    if !exists("dedup_index")? || !exists("dedup_index_state")? || !exists("dedup_runs")? {
        return Ok(Some(
            "no index yet (the first run, or a restore since the last)".into(),
        ));
    }
    let state = |key: &str| -> Result<Option<String>, DedupError> {
        Ok(db
            .query_row(
                "SELECT CAST(value AS TEXT) FROM main.dedup_index_state WHERE key = ?1",
                [key],
                |r| r.get(0),
            )
            .optional()?
            .flatten())
    };
    let Some(run) = state("run")? else {
        return Ok(Some(
            "no index yet (the first run, or a restore since the last)".into(),
        ));
    };
    if state("version")? != Some(version()) {
        return Ok(Some("the index is from another version".into()));
    }
    let last: Option<i64> =
        db.query_row("SELECT max(run) FROM main.dedup_runs", [], |r| r.get(0))?;
    if last.map(|l| l.to_string()) != Some(run.clone()) {
        return Ok(Some(format!(
            "the index is of run {run}, not of the latest run"
        )));
    }
    if state("settings")? != Some(comparable(db, settings_json)?) {
        return Ok(Some(format!("the settings differ from run {run}'s")));
    }
    Ok(None)
}

/// Decides the kind of run and, for an incremental one, writes the dirty
/// rows (`temp._dedup_dirty(rid)`) and the rows gone from phase 4's order
/// (`temp._dedup_gone(rid, pos_url)`). `temp._dedup_incremental(kind, why,
/// since, dirty, gone)` records the decision for the phases and the report.
/// An incremental run reads every row once here (its fingerprint, in
/// `temp._dedup_fingerprint`).
pub fn prepare(
    db: &Connection,
    source: &Source,
    s: &Settings,
    settings_json: &str,
) -> Result<(), DedupError> {
    let why = why_full(db, s, settings_json)?;
    let since: Option<i64> = match why {
        None => db.query_row("SELECT max(run) FROM main.dedup_runs", [], |r| r.get(0))?,
        Some(_) => None,
    };
    db.execute_batch(&format!(
        "DROP TABLE IF EXISTS temp._dedup_incremental;
         CREATE TEMP TABLE _dedup_incremental (kind TEXT, why TEXT, since INTEGER, dirty INTEGER, gone INTEGER);
         DROP TABLE IF EXISTS temp._dedup_fingerprint;
         CREATE TEMP TABLE _dedup_fingerprint (rid INTEGER PRIMARY KEY, fp INTEGER);
         INSERT INTO temp._dedup_fingerprint SELECT g.{rowid}, {fp} FROM {table} AS g WHERE {incremental};
         DROP TABLE IF EXISTS temp._dedup_dirty;
         CREATE TEMP TABLE _dedup_dirty (rid INTEGER PRIMARY KEY);
         DROP TABLE IF EXISTS temp._dedup_gone;
         CREATE TEMP TABLE _dedup_gone (rid INTEGER PRIMARY KEY, pos_url TEXT);",
        rowid = source.rowid,
        fp = fingerprint_of(source, "g"),
        table = source.qualified(),
        incremental = why.is_none() as i64,
    ))?;
    if why.is_none() {
        db.execute_batch(
            "INSERT INTO temp._dedup_dirty
             SELECT f.rid FROM temp._dedup_fingerprint AS f
             LEFT JOIN main.dedup_index AS x ON x.rid = f.rid
             WHERE x.fp IS NOT f.fp;
             INSERT INTO temp._dedup_gone
             SELECT x.rid, x.pos_url FROM main.dedup_index AS x
             LEFT JOIN temp._dedup_fingerprint AS f ON f.rid = x.rid
             WHERE f.fp IS NOT x.fp;",
        )?;
    }
    db.execute(
        "INSERT INTO temp._dedup_incremental
         VALUES (?1, ?2, ?3, (SELECT count(*) FROM temp._dedup_dirty), (SELECT count(*) FROM temp._dedup_gone))",
        rusqlite::params![
            if why.is_none() { "incremental" } else { "full" },
            why,
            since
        ],
    )?;
    Ok(())
}

/// How a run was done, as [`prepare`] decided.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunKind {
    /// Whether only what the new and changed rows affect was compared.
    pub incremental: bool,
    /// Why the run was full.
    pub why: Option<String>,
    /// The run the index was written by (incremental runs).
    pub since: Option<i64>,
    /// Rows new or changed since that run.
    pub dirty: i64,
    /// Rows of that run's table gone or changed since.
    pub gone: i64,
}

/// The decision [`prepare`] recorded.
pub fn decision(db: &Connection) -> Result<RunKind, DedupError> {
    Ok(db.query_row(
        "SELECT kind = 'incremental', why, since, dirty, gone FROM temp._dedup_incremental",
        [],
        |r| {
            Ok(RunKind {
                incremental: r.get(0)?,
                why: r.get(1)?,
                since: r.get(2)?,
                dirty: r.get(3)?,
                gone: r.get(4)?,
            })
        },
    )?)
}

/// After the run is applied: the index describes the table as it now is.
/// A full run rewrites it whole; an incremental one only the rows that are
/// dirty, rewritten or gone.
pub fn write(
    db: &Connection,
    source: &Source,
    run: i64,
    settings_json: &str,
) -> Result<(), DedupError> {
    let incremental = decision(db)?.incremental;
    let table = source.qualified();
    let rowid = source.rowid;
    let fp = fingerprint_of(source, "g");
    // The URL each row had in phase 4's order (rows without text have none).
    let pos_url =
        "(SELECT i.url FROM temp._dedup_near_input AS i WHERE i.id = g.{rowid} AND i.own = 1)";
    let pos_url = pos_url.replace("{rowid}", rowid);
    if !incremental {
        db.execute_batch(&format!(
            "DELETE FROM main.dedup_index;
             INSERT INTO main.dedup_index (rid, fp, pos_url)
             SELECT g.{rowid}, {fp}, {pos_url} FROM {table} AS g;"
        ))?;
    } else {
        db.execute_batch(&format!(
            "DELETE FROM main.dedup_index WHERE rid IN (SELECT rid FROM temp._dedup_gone)
               OR rid IN (SELECT source_rowid FROM temp._dedup_removal);
             INSERT OR REPLACE INTO main.dedup_index (rid, fp, pos_url)
             SELECT g.{rowid}, {fp}, {pos_url} FROM {table} AS g
             WHERE g.{rowid} IN (SELECT rid FROM temp._dedup_dirty
                                 UNION SELECT dedup_rowid FROM main.dedup_rewritten WHERE dedup_run = {run});"
        ))?;
    }
    db.execute(
        "INSERT OR REPLACE INTO main.dedup_index_state (key, value)
         VALUES ('run', ?1), ('version', ?2), ('settings', ?3)",
        rusqlite::params![run, version(), comparable(db, settings_json)?],
    )?;
    Ok(())
}

/// Forgets the index (a restore changes the table behind it): the next run
/// is full.
pub fn forget(db: &Connection) -> Result<(), DedupError> {
    for name in ["dedup_index", "dedup_index_state"] {
        if super::schema::object_type(db, name)?.as_deref() == Some("table") {
            db.execute_batch(&format!("DELETE FROM main.{name}"))?;
        }
    }
    Ok(())
}
