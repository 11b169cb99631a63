//! Whether a run is incremental or full, and which rows an incremental run
//! takes as new or changed (see [`super::index`] for what the index keeps).
//!
//! A run whose table and settings the index describes is *incremental*: the
//! rows that are new or changed since (a fingerprint differs, a rowid is
//! new or reused; only rows the change log names are looked at, see
//! [`super::changes`]) are *dirty*; only they go through phase 1. Phases 2–3
//! see them with the last run's rows they can meet (the same URL key or
//! content hash, looked up by their keys: the last run left one row of
//! each); phase 4 scans the dirty rows with the last run's rows and
//! placeholders within `distance` of a place where the order changed (a
//! dirty row, or a row that left it: deleted, changed, or removed now in
//! phases 2–3), and compares two of the last run's rows only if they were
//! further apart than the window in its order and came closer (it compared
//! every closer pair and left none near: `crate::core::window_prune`); in
//! lsh mode it scans the dirty rows with the last run's rows that share a
//! band key with one; phase 5 counts again only the domains whose count
//! can change. That is a full run's result, row for row, at the cost of the
//! batch.
//!
//! Any other case is a *full* run, and the report says why: no index (the
//! first run, or a restore since), other settings, another version of the
//! index, `boilerplate = 'strip'`, `url_rules` or `prefer`
//! (their inputs change with every row), an archive whose phase-4/5 rows
//! (their window slots) or a `dedup_domains` (phase 5's counts) was
//! edited outside a run, or `{"full": true}`.

use rusqlite::Connection;

use super::index_functions::fingerprint_of;
use super::index_state::{comparable, state_value, version};
use crate::sqlite::ground::error::DedupError;
use crate::sqlite::ground::trace::lap;
use crate::sqlite::pipeline::mode::RunMode;
use crate::sqlite::settings::values::Settings;
use crate::sqlite::tables::schema::Source;

/// Why runs of these settings are always full (they keep no index).
pub fn always_full(s: &Settings, mode: &RunMode) -> Option<&'static str> {
    if !s.against.is_empty() {
        // (Before the plan made elsewhere: a run against another database's
        // index is read back as one, `inputs/against/indexed.rs`.)
        Some("against (another database's pages are compared too)")
    } else if s.action == crate::sqlite::settings::choices::Action::Label {
        Some("action = 'label' (every row is labelled)")
    } else if *mode != RunMode::All && *mode != RunMode::There {
        Some("a plan made elsewhere (dedup_apply_plan)")
    } else if s.boilerplate == crate::sqlite::settings::choices::Boilerplate::Strip {
        Some("boilerplate = 'strip' (the chrome is counted over every row)")
    } else if s.url_rules > 0.0 {
        Some("url_rules (the learned rules change between runs)")
    } else if !s.prefer.is_empty() {
        Some("prefer (its order is ranked over every row)")
    } else if s.fix_urls {
        Some("fix_urls (the probed answers may change between runs)")
    } else {
        None
    }
}

/// Why a run is full when the index, or one of its tables, is missing.
const NO_INDEX_YET: &str = "no index yet (the first run, or a restore since the last)";

/// Why this run must be full, or `None` when it can be incremental.
pub fn why_full(
    db: &Connection,
    s: &Settings,
    mode: &RunMode,
    settings_json: &str,
) -> Result<Option<String>, DedupError> {
    if s.full {
        return Ok(Some("asked for (full: true)".into()));
    }
    if let Some(why) = always_full(s, mode) {
        return Ok(Some(why.into()));
    }
    let exists = |name: &str| -> Result<bool, DedupError> {
        Ok(crate::sqlite::tables::schema::object_type(db, name)?.as_deref() == Some("table"))
    };
    if !exists("dedup_index")?
        || !exists("dedup_index_order")?
        || !exists("dedup_index_state")?
        || !exists("dedup_runs")?
    {
        return Ok(Some(NO_INDEX_YET.into()));
    }
    let state = |key: &str| state_value(db, key);
    let Some(run) = state("run")? else {
        return Ok(Some(NO_INDEX_YET.into()));
    };
    if state("version")? != Some(version()) {
        return Ok(Some("the index is from another version".into()));
    }
    // (Formats 6, 7 and 9's tables: after the version, which an older
    // index fails.)
    if !exists("dedup_index_bands")?
        || !exists("dedup_index_bands_left")?
        || !exists("dedup_index_keys")?
        || !exists("dedup_index_keys_new")?
        || !exists("dedup_index_paragraphs")?
    {
        return Ok(Some(NO_INDEX_YET.into()));
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
    if let Some(why) = super::changes::own_tables_edited(db)? {
        return Ok(Some(format!("{why} since run {run}")));
    }
    Ok(None)
}

/// Decides the kind of run and, for an incremental one, writes the dirty
/// rows (`temp._dedup_dirty(rid)`) and the rows gone from phase 4's order
/// (`temp._dedup_gone(rid, pos_url)`). `temp._dedup_incremental(kind, why,
/// since, dirty, gone)` records the decision for the phases and the report.
/// `temp._dedup_todo` holds the rows phase 1 prepares: every row, or the
/// dirty ones. An incremental run fingerprints (`temp._dedup_fingerprint`)
/// the rows the change log names ([`super::changes`]), or every row when
/// the log cannot be trusted.
pub fn prepare(
    db: &Connection,
    source: &Source,
    s: &Settings,
    mode: &RunMode,
    settings_json: &str,
) -> Result<RunKind, DedupError> {
    let mut step = std::time::Instant::now();
    let why = why_full(db, s, mode, settings_json)?;
    lap("changes: why full", &mut step);
    let since: Option<i64> = match why {
        None => db.query_row("SELECT max(run) FROM main.dedup_runs", [], |r| r.get(0))?,
        Some(_) => None,
    };
    // (Which rows to fingerprint: none for a full run; those the change
    // log names when it can be trusted; else every row.)
    let scanned = match why {
        None => super::changes::untrusted(db, source)?,
        Some(_) => None,
    };
    lap("changes: trust", &mut step);
    let (which, among) = match (&why, &scanned) {
        (Some(_), _) => ("0".to_string(), ""),
        (None, None) => (
            format!("g.{} IN (SELECT rid FROM main.dedup_changes)", source.rowid),
            "WHERE x.rid IN (SELECT rid FROM main.dedup_changes)",
        ),
        (None, Some(_)) => ("1".to_string(), ""),
    };
    db.execute_batch(&format!(
        "DROP TABLE IF EXISTS temp._dedup_incremental;
         CREATE TEMP TABLE _dedup_incremental (kind TEXT, why TEXT, since INTEGER, dirty INTEGER, gone INTEGER, recheck INTEGER, keep INTEGER, scanned TEXT);
         DROP TABLE IF EXISTS temp._dedup_fingerprint;
         CREATE TEMP TABLE _dedup_fingerprint (rid INTEGER PRIMARY KEY, fp INTEGER);
         INSERT INTO temp._dedup_fingerprint SELECT g.{rowid}, {fp} FROM {table} AS g WHERE {which};
         DROP TABLE IF EXISTS temp._dedup_dirty;
         CREATE TEMP TABLE _dedup_dirty (rid INTEGER PRIMARY KEY);
         DROP TABLE IF EXISTS temp._dedup_gone;
         CREATE TEMP TABLE _dedup_gone (rid INTEGER PRIMARY KEY, pos_url TEXT);",
        rowid = source.rowid,
        fp = fingerprint_of(source, "g"),
        table = source.qualified(),
    ))?;
    if *mode == RunMode::There && why.is_none() {
        // (Rows added for this plan, `inputs/against/indexed.rs`: new, so dirty,
        // whatever their fingerprint.)
        db.execute_batch(
            "INSERT INTO temp._dedup_fingerprint SELECT rid, 1 FROM temp._dedup_extra;",
        )?;
    }
    lap("changes: fingerprints", &mut step);
    if why.is_none() {
        super::index_keys::create_view(db)?;
        db.execute_batch(&format!(
            "INSERT INTO temp._dedup_dirty
             SELECT f.rid FROM temp._dedup_fingerprint AS f
             LEFT JOIN main.dedup_index AS x ON x.rid = f.rid
             WHERE x.fp IS NOT f.fp;
             INSERT INTO temp._dedup_gone
             SELECT x.rid, x.pos_url FROM main.dedup_index AS x
             LEFT JOIN temp._dedup_fingerprint AS f ON f.rid = x.rid
             {among} {and} f.fp IS NOT x.fp;",
            and = if among.is_empty() { "WHERE" } else { "AND" }
        ))?;
    }
    lap("changes: dirty and gone", &mut step);
    db.execute_batch(&format!(
        "DROP VIEW IF EXISTS temp._dedup_todo;
         CREATE TEMP VIEW _dedup_todo AS {};",
        if why.is_none() {
            "SELECT * FROM temp._dedup_source WHERE rid IN (SELECT rid FROM temp._dedup_dirty)"
        } else {
            // (With `against`, the other database's rows too.)
            "SELECT * FROM temp._dedup_pages"
        }
    ))?;
    // Phase 6's kept-apart groups among the kept rows this run does not
    // prepare (sql/06_removals.sql): in an incremental run, the index's
    // rows whose canonical URL another kept row's strict URL drops
    // parameters from (its partial index `dedup_index_strict`, and the
    // order's key by URL); none in a full run.
    db.execute_batch(&format!(
        "DROP VIEW IF EXISTS temp._dedup_index_apart;
         CREATE TEMP VIEW _dedup_index_apart AS {};",
        if why.is_none() {
            "WITH c AS (SELECT DISTINCT canonical_url FROM main.dedup_index
                        WHERE strict_url IS NOT canonical_url AND strict_url IS NOT NULL
                          AND canonical_url IS NOT NULL AND skip_reason IS NULL),
                  m AS (SELECT rid FROM main.dedup_index
                        WHERE strict_url IS NOT canonical_url AND canonical_url IN (SELECT canonical_url FROM c)
                        UNION SELECT o.id FROM main.dedup_index_order AS o
                        WHERE o.url IN (SELECT canonical_url FROM c) AND o.placeholder = 0)
             SELECT x.rid AS source_rowid, x.domain, x.canonical_url, x.strict_url FROM main.dedup_index AS x
             WHERE x.rid IN (SELECT rid FROM m) AND x.strict_url IS NOT NULL AND x.skip_reason IS NULL
               AND x.canonical_url IS NOT NULL
               AND x.rid NOT IN (SELECT rid FROM temp._dedup_dirty)
               AND x.rid NOT IN (SELECT rid FROM temp._dedup_gone)"
        } else {
            "SELECT NULL AS source_rowid, NULL AS domain, NULL AS canonical_url, NULL AS strict_url WHERE 0"
        }
    ))?;
    // (Unsettled rows, fingerprint 0, are counted apart: see RunKind.)
    let counts = if why.is_none() {
        "(SELECT count(*) FROM temp._dedup_dirty AS d WHERE NOT EXISTS (SELECT 1 FROM main.dedup_index AS x WHERE x.rid = d.rid AND x.fp = 0)),
         (SELECT count(*) FROM temp._dedup_gone AS g WHERE NOT EXISTS (SELECT 1 FROM main.dedup_index AS x WHERE x.rid = g.rid AND x.fp = 0)),
         (SELECT count(*) FROM temp._dedup_gone AS g WHERE EXISTS (SELECT 1 FROM main.dedup_index AS x WHERE x.rid = g.rid AND x.fp = 0))"
    } else {
        "0, 0, 0"
    };
    db.execute(
        &format!("INSERT INTO temp._dedup_incremental VALUES (?1, ?2, ?3, {counts}, ?4, ?5)"),
        rusqlite::params![
            if why.is_none() { "incremental" } else { "full" },
            why,
            since,
            always_full(s, mode).is_none(),
            scanned
        ],
    )?;
    decision(db)
}

/// The table's rows. When the change log was trusted, from the index (the
/// rows the log does not name are the index's) and the rows it names;
/// else counted, which without an index on the table reads its every leaf
/// page.
pub fn rows(db: &Connection, source: &Source, kind: &RunKind) -> Result<i64, DedupError> {
    let sql = if kind.incremental && kind.scanned.is_none() {
        // (The index's rows as its run counted them: see
        // index_state::kept_rows.)
        format!(
            "SELECT {}
              - (SELECT count(*) FROM main.dedup_index WHERE rid IN (SELECT rid FROM main.dedup_changes))
              + (SELECT count(*) FROM temp._dedup_fingerprint)",
            super::index_state::kept_rows(db)?
        )
    } else {
        format!("SELECT count(*) FROM {}", source.qualified())
    };
    Ok(db.query_row(&sql, [], |r| r.get(0))?)
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
    /// Rows that run rewrote in a way that changed what phase 1 makes of
    /// them (unsettled): taken as changed, but not counted in `dirty` and
    /// `gone`.
    pub recheck: i64,
    /// Why an incremental run read every row's fingerprint rather than the
    /// change log ([`super::changes`]); `None` when it read the log.
    pub scanned: Option<String>,
    /// Whether the run keeps an index for the next (runs that are always
    /// full keep none).
    pub keep: bool,
}

/// The decision [`prepare`] recorded, read from `temp._dedup_incremental`
/// (which the phase scripts read, and which carries it from `dedup_plan` to
/// `dedup_apply`): once by [`prepare`], once by a plan read back.
pub fn decision(db: &Connection) -> Result<RunKind, DedupError> {
    Ok(db.query_row(
        "SELECT kind = 'incremental', why, since, dirty, gone, recheck, scanned, keep FROM temp._dedup_incremental",
        [],
        |r| {
            Ok(RunKind {
                incremental: r.get(0)?,
                why: r.get(1)?,
                since: r.get(2)?,
                dirty: r.get(3)?,
                gone: r.get(4)?,
                recheck: r.get(5)?,
                scanned: r.get(6)?,
                keep: r.get(7)?,
            })
        },
    )?)
}
