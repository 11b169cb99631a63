//! The persistent index that makes runs incremental. `dedup_index` keeps,
//! for every row the last run left in the table, a fingerprint of its
//! values, what phase 1 made of it (canonical and strict URL, domain,
//! content hash, the election's keys) and the canonical URL that placed it
//! in phase 4's scan order; `dedup_index_order` keeps that order (the kept
//! rows and the placeholders, by `(url, id, placeholder)`);
//! `dedup_index_keys` and `dedup_index_keys_new` the kept rows by the keys
//! of their canonical URL and content hash ([`super::index_keys`]);
//! `dedup_index_bands` the kept rows' band keys in lsh mode, and entries of
//! rows that left it not yet deleted, listed in `dedup_index_bands_left`
//! ([`super::index_bands`]);
//! `dedup_index_state` the run that wrote it, its settings and the index's
//! version.
//!
//! A run whose table and settings the index describes is *incremental*: the
//! rows that are new or changed since (a fingerprint differs, a rowid is
//! new or reused; only rows the change log names are looked at, see
//! [`super::changes`]) are *dirty*; only they go through phase 1. Phases 2–3
//! see them with the last run's rows they can meet (the same URL key or
//! content hash, read from the index: the last run left one row of each);
//! phase 4 scans the dirty rows with the last run's rows and placeholders
//! within `distance` of a place where the order changed (a dirty row, or a
//! row that left it: deleted, changed, or removed now in phases 2–3), and
//! does not compare two of the last run's rows unless a row that left lay
//! between them (the last run left no two rows near within a window); in
//! lsh mode it scans the dirty rows with the last run's rows that share a
//! band key with one;
//! phase 5 counts again only the domains whose count can change. That is a
//! full run's result, row for row, at the cost of the batch.
//!
//! The index keeps phase 1's values of a row as it is after the run (a run
//! rewrites survivors' URLs and fills their columns: such rows go through
//! phase 1 again once applied). A row whose values that changes is marked
//! unsettled (fingerprint 0): the next run takes it as dirty.
//!
//! Any other case is a *full* run, and the report says why: no index (the
//! first run, or a restore since), other settings, another version of the
//! index, `boilerplate = 'strip'`, `url_rules` or `prefer`
//! (their inputs change with every row), or `{"full": true}`.

use rusqlite::functions::FunctionFlags;
use rusqlite::types::ValueRef;
use rusqlite::Connection;

use super::index_state::state_value;
use super::own_tables::{DOMAIN_KEY, INDEX_KEYS};
use super::schema::Source;
use super::scripts;
use super::settings::Settings;
use super::trace::lap;
use super::DedupError;
use crate::core::hash::Fingerprint;
use crate::core::similarity::CharHistogram;

/// The index's format; an index of another is rebuilt by a full run.
pub const FORMAT: &str = "9";

/// What `dedup_index_state.version` holds: the format and the extension's
/// version (another version may canonicalize or compare differently, so
/// its index describes another run: the first run after an upgrade is full).
fn version() -> String {
    format!("{FORMAT} {}", env!("CARGO_PKG_VERSION"))
}

/// The SQL function that fingerprints a row's values.
const FINGERPRINT: &str = "dedup_fingerprint";

/// Registers `dedup_fingerprint(value, ...)` ([`Fingerprint`]),
/// `dedup_chars(text)`: the text's length in code points, as phase 4's
/// bounds count it (SQLite's `length` stops at a NUL), NULL for another
/// type, and `dedup_histogram(text)`: its character histogram as phase 4's
/// bounds count it ([`CharHistogram::to_bytes`]), NULL for another type.
pub fn register(db: &Connection) -> rusqlite::Result<()> {
    let flags = FunctionFlags::SQLITE_UTF8 | FunctionFlags::SQLITE_DETERMINISTIC;
    db.create_scalar_function("dedup_chars", 1, flags, |ctx| {
        Ok(match ctx.get_raw(0) {
            ValueRef::Text(t) => std::str::from_utf8(t)
                .ok()
                .map(|s| s.chars().count() as i64),
            _ => None,
        })
    })?;
    db.create_scalar_function("dedup_histogram", 1, flags, |ctx| {
        Ok(match ctx.get_raw(0) {
            ValueRef::Text(t) => std::str::from_utf8(t)
                .ok()
                .map(|s| CharHistogram::new(s).to_bytes()),
            _ => None,
        })
    })?;
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

/// Why runs of these settings are always full (they keep no index).
fn always_full(s: &Settings) -> Option<&'static str> {
    if s.phases != super::settings::Phases::All {
        Some("a plan made elsewhere (dedup_apply_plan)")
    } else if s.boilerplate == "strip" {
        Some("boilerplate = 'strip' (the chrome is counted over every row)")
    } else if s.url_rules > 0.0 {
        Some("url_rules (the learned rules change between runs)")
    } else if !s.prefer.is_empty() {
        Some("prefer (its order is ranked over every row)")
    } else {
        None
    }
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
    if let Some(why) = always_full(s) {
        return Ok(Some(why.into()));
    }
    let exists = |name: &str| -> Result<bool, DedupError> {
        Ok(super::schema::object_type(db, name)?.as_deref() == Some("table"))
    };
    if !exists("dedup_index")?
        || !exists("dedup_index_order")?
        || !exists("dedup_index_state")?
        || !exists("dedup_runs")?
    {
        return Ok(Some(
            "no index yet (the first run, or a restore since the last)".into(),
        ));
    }
    let state = |key: &str| state_value(db, key);
    let Some(run) = state("run")? else {
        return Ok(Some(
            "no index yet (the first run, or a restore since the last)".into(),
        ));
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
    {
        return Ok(Some(
            "no index yet (the first run, or a restore since the last)".into(),
        ));
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
/// `temp._dedup_todo` holds the rows phase 1 prepares: every row, or the
/// dirty ones. An incremental run fingerprints (`temp._dedup_fingerprint`)
/// the rows the change log names ([`super::changes`]), or every row when
/// the log cannot be trusted.
pub fn prepare(
    db: &Connection,
    source: &Source,
    s: &Settings,
    settings_json: &str,
) -> Result<(), DedupError> {
    let mut step = std::time::Instant::now();
    let why = why_full(db, s, settings_json)?;
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
         CREATE TEMP VIEW _dedup_todo AS SELECT * FROM temp._dedup_source {};",
        if why.is_none() {
            "WHERE rid IN (SELECT rid FROM temp._dedup_dirty)"
        } else {
            ""
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
            always_full(s).is_none(),
            scanned
        ],
    )?;
    Ok(())
}

/// The table's rows. When the change log was trusted, from the index (the
/// rows the log does not name are the index's) and the rows it names;
/// else counted, which without an index on the table reads its every leaf
/// page.
pub fn rows(db: &Connection, source: &Source) -> Result<i64, DedupError> {
    let kind = decision(db)?;
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
}

/// The decision [`prepare`] recorded.
pub fn decision(db: &Connection) -> Result<RunKind, DedupError> {
    Ok(db.query_row(
        "SELECT kind = 'incremental', why, since, dirty, gone, recheck, scanned FROM temp._dedup_incremental",
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
            })
        },
    )?)
}

/// The last rowids of the archive and of `dedup_rewritten` before a run
/// wrote to them: the run's own rows there are the ones after (found by a
/// seek, not a scan of every run's rows).
pub struct WrittenAfter {
    /// `dedup_removed`'s last rowid.
    pub archive: i64,
    /// `dedup_rewritten`'s last rowid.
    pub rewritten: i64,
}

/// After the run is applied: the index describes the table as it now is.
/// A full run rewrites it whole; an incremental one only the rows that are
/// dirty, rewritten, removed or gone. Runs that are always full (see
/// `why_full`) keep no index.
pub fn write(
    db: &Connection,
    source: &Source,
    run: i64,
    after: &WrittenAfter,
    settings_json: &str,
) -> Result<(), DedupError> {
    let archived_after = after.archive;
    let keep: bool = db.query_row("SELECT keep FROM temp._dedup_incremental", [], |r| r.get(0))?;
    if !keep {
        return forget(db);
    }
    let incremental = decision(db)?.incremental;
    let table = source.qualified();
    let rowid = source.rowid;
    let fp = fingerprint_of(source, "g");
    let rewritten_after = after.rewritten;
    let mut step = std::time::Instant::now();
    super::index_bands::collect(db, incremental)?;
    let bands = super::index_bands::column(incremental, rowid);
    lap("index: band keys", &mut step);
    // 1. Phase 1's values of the rows this run rewrote, as they now are
    //    (the old ones kept in _dedup_before). Nothing looks rows up by
    //    URL from here on: the URL index of _dedup_prepared goes first, so
    //    that the rows deleted and written again here do not update it.
    db.execute_batch(&format!(
        "DROP INDEX IF EXISTS temp._dedup_prepared_url;
         DROP TABLE IF EXISTS temp._dedup_before;
         CREATE TEMP TABLE _dedup_before AS SELECT * FROM temp._dedup_prepared
         WHERE source_rowid IN (SELECT dedup_rowid FROM main.dedup_rewritten
                                WHERE rowid > {rewritten_after} AND dedup_run = {run});
         DELETE FROM temp._dedup_prepared WHERE source_rowid IN (SELECT source_rowid FROM temp._dedup_before);
         DROP TABLE IF EXISTS temp._dedup_url_only;
         CREATE TEMP TABLE _dedup_url_only AS SELECT * FROM temp._dedup_before
         WHERE skip_reason IS NULL AND fill_parsed IS NULL;
         DROP VIEW IF EXISTS temp._dedup_todo;
         CREATE TEMP VIEW _dedup_todo AS SELECT * FROM temp._dedup_source
         WHERE rid IN (SELECT source_rowid FROM temp._dedup_before
                       WHERE source_rowid NOT IN (SELECT source_rowid FROM temp._dedup_url_only));"
    ))?;
    lap("index: rewritten rows", &mut step);
    // (Rows whose rewrite filled a text column: phase 1 whole; the others'
    // texts are as they were: their URLs' functions only.)
    db.execute_batch(scripts::prepare_rows_sql())?;
    db.execute_batch(scripts::REWRITTEN_URLS)?;
    db.execute_batch("DROP TABLE temp._dedup_url_only;")?;
    lap("index: rewritten rows prepared", &mut step);
    // 2. The rows to (re)write. A rewritten row whose phase-1 values
    //    changed, or that a run would rewrite again, is unsettled (fp 0).
    let pending = super::rewrites::pending_besides_url(source);
    // (tlen: the length of the text phase 4 compares, when it is known
    // without reading it again.)
    let parsed = source.column("parsed").map_or("NULL".to_string(), |c| {
        format!("g.{}", super::schema::quote_ident(&c))
    });
    let which = if incremental {
        format!(
            "WHERE g.{rowid} IN (SELECT rid FROM temp._dedup_dirty)
                OR g.{rowid} IN (SELECT source_rowid FROM temp._dedup_before)"
        )
    } else {
        String::new()
    };
    // Each row's place in this run's order; an incremental run keeps the
    // old place of a row it did not place (a full run does not read the
    // old index).
    let placed = format!(
        "(SELECT i.url FROM temp._dedup_near_input AS i WHERE i.id = g.{rowid} AND i.own = 1)"
    );
    let (pos_url, last) = if incremental {
        (
            format!(
                "CASE WHEN g.{rowid} IN (SELECT rid FROM temp._dedup_dirty) THEN {placed} ELSE x.pos_url END"
            ),
            format!("LEFT JOIN main.dedup_index AS x ON x.rid = g.{rowid}"),
        )
    } else {
        (placed, String::new())
    };
    // (Keyed by rid: the order's rows take their lengths from it.)
    let create_new = super::own_tables::OWN
        .iter()
        .find(|(name, _)| *name == "dedup_index")
        .map(|(_, create)| {
            create.replace(
                "CREATE TABLE main.dedup_index",
                "CREATE TEMP TABLE _dedup_index_new",
            )
        })
        .expect("dedup_index is one of the extension's tables");
    db.execute_batch(&format!(
        "DROP TABLE IF EXISTS temp._dedup_index_new;
         {create_new};
         INSERT INTO temp._dedup_index_new
         SELECT g.{rowid} AS rid,
                CASE WHEN b.source_rowid IS NOT NULL
                          AND (b.canonical_url IS NOT p.canonical_url OR b.strict_url IS NOT p.strict_url
                               OR b.domain IS NOT p.domain OR b.content_hash IS NOT p.content_hash
                               OR b.length IS NOT p.length OR b.has_text IS NOT p.has_text
                               OR b.https IS NOT p.https OR {pending})
                     THEN 0 ELSE {fp} END AS fp,
                {pos_url} AS pos_url,
                p.skip_reason, p.canonical_url, p.strict_url, p.domain, p.content_hash, p.datetime,
                p.crawled, p.length, p.category, p.has_text, p.https,
                CASE WHEN p.has_text THEN dedup_chars(coalesce(p.fill_parsed, {parsed})) END AS tlen,
                CASE WHEN p.has_text THEN dedup_histogram(coalesce(p.fill_parsed, {parsed})) END AS hist,
                {bands} AS bands,
                CASE WHEN p.canonical_url IS NOT NULL THEN {FINGERPRINT}(p.canonical_url) END AS url_key,
                CASE WHEN p.content_hash IS NOT NULL THEN {FINGERPRINT}(p.content_hash) END AS hash_key
         FROM {table} AS g
         JOIN temp._dedup_prepared AS p ON p.source_rowid = g.{rowid}
         LEFT JOIN temp._dedup_before AS b ON b.source_rowid = g.{rowid}
         {last}
         {which};"
    ))?;
    lap("index: rows", &mut step);
    // 3. The scan order: this run's rows kept with text, and placeholders
    //    (a full run's, and the rows removed now in phases 4-5 that the next
    //    run's placeholders take, as sql/04_placeholders.sql chooses them
    //    from the archive: a valid text, parsed or filled from content, and
    //    a canonical URL). A full run prepared every row it removes, so
    //    their phase-1 values say it without reading the archive (whose
    //    rows of the run, all of them, a scan would read whole): no skip
    //    reason, and a text filled (fill_parsed) or a parsed one not empty
    //    (has_text without a fill). An incremental run reads the few rows
    //    it archived, since the settled ones it removes were not prepared.
    let placeholders_prepared = "SELECT p.canonical_url, x.source_rowid, 1, NULL
         FROM temp._dedup_removal AS x
         JOIN temp._dedup_prepared AS p ON p.source_rowid = x.source_rowid
         CROSS JOIN temp._dedup_run AS r
         WHERE x.phase IN (4, 5) AND r.threshold < 1.0
           AND p.skip_reason IS NULL AND (p.fill_parsed IS NOT NULL OR p.has_text)
           AND p.canonical_url IS NOT NULL";
    super::index_bands::write(db, incremental)?;
    lap("index: band keys written", &mut step);
    if incremental {
        // (The rows that left the order, deleted one by one by its key:
        // as one statement SQLite scans the whole order.)
        let left: Vec<(String, i64)> = db
            .prepare(
                "SELECT url, id FROM temp._dedup_ghosts
                 UNION ALL
                 SELECT x.pos_url, x.rid FROM main.dedup_index AS x
                 WHERE x.rid IN (SELECT source_rowid FROM temp._dedup_removal) AND x.pos_url IS NOT NULL",
            )?
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
            .collect::<Result<_, _>>()?;
        let mut delete = db.prepare(
            "DELETE FROM main.dedup_index_order WHERE url = ?1 AND id = ?2 AND placeholder = 0",
        )?;
        for (url, id) in left {
            delete.execute(rusqlite::params![url, id])?;
        }
        lap("index: order's deletes", &mut step);
        // (The rows rewritten now keep their places; their lengths are
        // brought up to date.)
        db.execute_batch(
            "INSERT OR IGNORE INTO main.dedup_index_order
             SELECT i.url, i.id, 0, n.tlen FROM temp._dedup_near_input AS i
             LEFT JOIN temp._dedup_index_new AS n ON n.rid = i.id
             WHERE i.own = 1 AND i.settled IS NULL
               AND i.id NOT IN (SELECT source_rowid FROM temp._dedup_removal);
             UPDATE main.dedup_index_order
             SET tlen = (SELECT n.tlen FROM temp._dedup_index_new AS n WHERE n.rid = dedup_index_order.id)
             WHERE placeholder = 0
               AND (url, id) IN (SELECT n.pos_url, n.rid FROM temp._dedup_index_new AS n
                                 WHERE n.rid IN (SELECT source_rowid FROM temp._dedup_before));",
        )?;
        lap("index: order's new rows", &mut step);
        let archive = super::schema::archive_view_body(db, source, Some(run))?;
        let placeholders = format!(
            "INSERT OR IGNORE INTO main.dedup_index_order
             SELECT coalesce(p.canonical_url, x.canonical_url), a.dedup_rowid, 1, NULL
             FROM ({archive}) AS a
             LEFT JOIN temp._dedup_prepared AS p ON p.source_rowid = a.dedup_rowid
             LEFT JOIN main.dedup_index AS x ON x.rid = a.dedup_rowid AND p.source_rowid IS NULL
             CROSS JOIN temp._dedup_run AS r
             WHERE a.archive_rowid > {archived_after} AND a.dedup_run = {run} AND a.dedup_phase IN (4, 5) AND r.threshold < 1.0
               AND dedup_invalid_text(a.url, a.content, a.parsed) IS NULL
               AND (a.parsed <> '' OR (a.parsed IS NULL AND a.content <> ''))
               AND coalesce(p.canonical_url, x.canonical_url) IS NOT NULL;"
        );
        db.execute_batch(&placeholders)?;
        lap("index: order's placeholders", &mut step);
        let deleted = db.execute(
            "DELETE FROM main.dedup_index WHERE rid IN (SELECT rid FROM temp._dedup_gone)",
            [],
        )? + db.execute(
            "DELETE FROM main.dedup_index WHERE rid IN (SELECT source_rowid FROM temp._dedup_removal)",
            [],
        )?;
        lap("index: deletes", &mut step);
        // (The rows written again with other keys leave their old entries
        // behind, as the rows deleted do: see super::index_keys.)
        // (And the rows written that the index holds: the count of its
        // rows, kept in the state, is brought up to date.)
        let (written, kept, rekeyed): (i64, i64, i64) = db.query_row(
            "SELECT count(*), count(x.rid),
                    count(CASE WHEN x.rid IS NOT NULL
                               AND (x.url_key IS NOT n.url_key OR x.hash_key IS NOT n.hash_key) THEN 1 END)
             FROM temp._dedup_index_new AS n LEFT JOIN main.dedup_index AS x ON x.rid = n.rid",
            [],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )?;
        let rows = super::index_state::kept_rows(db)? - deleted as i64 + written - kept;
        db.execute_batch(
            "INSERT OR REPLACE INTO main.dedup_index SELECT * FROM temp._dedup_index_new;",
        )?;
        lap("index: written", &mut step);
        super::index_state::set_kept_rows(db, rows)?;
        super::index_keys::write(db, true, deleted as i64 + rekeyed)?;
    } else {
        let n_min: i64 = db.query_row("SELECT n_min FROM temp._dedup_run", [], |r| r.get(0))?;
        let drop: String = INDEX_KEYS
            .iter()
            .chain([&DOMAIN_KEY])
            .map(|(name, _)| format!("DROP INDEX IF EXISTS main.{name};"))
            .collect();
        let create: String = INDEX_KEYS
            .iter()
            .chain((n_min > 0).then_some(&DOMAIN_KEY))
            .map(|(name, on)| format!("CREATE INDEX main.{name} ON dedup_index {on};"))
            .collect();
        // (The order written whole in its key's order: appended, its
        // pages filled, rather than the placeholders inserted between.)
        db.execute_batch(&format!(
            "DELETE FROM main.dedup_index_order;
             INSERT OR IGNORE INTO main.dedup_index_order
             SELECT url, id, placeholder, tlen FROM (
               SELECT i.url AS url, i.id AS id, 1 - i.own AS placeholder,
                      CASE WHEN i.own = 1 THEN n.tlen END AS tlen
               FROM temp._dedup_near_input AS i
               LEFT JOIN temp._dedup_index_new AS n ON n.rid = i.id
               WHERE i.own = 0 OR i.id NOT IN (SELECT source_rowid FROM temp._dedup_removal)
               UNION ALL
               {placeholders_prepared}
             ) ORDER BY url, id, placeholder;"
        ))?;
        lap("index: order written", &mut step);
        db.execute_batch(&format!(
            "{drop}
             DELETE FROM main.dedup_index;"
        ))?;
        let rows = db.execute(
            "INSERT INTO main.dedup_index SELECT * FROM temp._dedup_index_new",
            [],
        )?;
        db.execute_batch(&create)?;
        lap("index: written", &mut step);
        super::index_state::set_kept_rows(db, rows as i64)?;
        super::index_keys::write(db, false, 0)?;
    }
    lap("index: keys", &mut step);
    db.execute(
        "INSERT OR REPLACE INTO main.dedup_index_state (key, value)
         VALUES ('run', ?1), ('version', ?2), ('settings', ?3)",
        rusqlite::params![run, version(), comparable(db, settings_json)?],
    )?;
    // (The unsettled rows are among those written now: an unsettled row
    // of the last run was logged, so dirty now, and written again.)
    super::changes::track(db, source, "temp._dedup_index_new")?;
    db.execute_batch("DROP TABLE temp._dedup_index_new;")?;
    lap("index: change log", &mut step);
    Ok(())
}

/// Forgets the index and the change log (a restore changes the table
/// behind it): the next run is full.
pub fn forget(db: &Connection) -> Result<(), DedupError> {
    super::changes::forget(db)?;
    for name in [
        "dedup_index",
        "dedup_index_order",
        "dedup_index_keys",
        "dedup_index_keys_new",
        "dedup_index_bands",
        "dedup_index_bands_left",
        "dedup_index_state",
    ] {
        if super::schema::object_type(db, name)?.as_deref() == Some("table") {
            db.execute_batch(&format!("DELETE FROM main.{name}"))?;
        }
    }
    Ok(())
}
