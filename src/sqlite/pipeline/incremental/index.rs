//! The persistent index that makes runs incremental ([`super::run_kind`]
//! decides when a run is). `dedup_index` keeps,
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
//! The index keeps phase 1's values of a row as it is after the run (a run
//! rewrites survivors' URLs and fills their columns: such rows go through
//! phase 1 again once applied). A row whose values that changes is marked
//! unsettled (fingerprint 0): the next run takes it as dirty.

use rusqlite::Connection;

use super::index_functions::{fingerprint_of, FINGERPRINT};
use super::index_state::{comparable, version};
use super::run_kind::RunKind;
use crate::sqlite::ground::error::DedupError;
use crate::sqlite::ground::trace::lap;
use crate::sqlite::pipeline::scripts;
use crate::sqlite::tables::own_tables::{DOMAIN_KEY, INDEX_KEYS};
use crate::sqlite::tables::schema::Source;

/// The last rowids of the archive and of `dedup_rewritten` before a run
/// wrote to them: the run's own rows there are the ones after (found by a
/// seek, not a scan of every run's rows); `i64::MIN` when a table held
/// the largest rowid (its new rows are numbered at random).
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
    kind: &RunKind,
) -> Result<(), DedupError> {
    if !kind.keep {
        return forget(db);
    }
    let incremental = kind.incremental;
    let mut step = std::time::Instant::now();
    super::index_bands::collect(db, incremental)?;
    let bands = super::index_bands::column(incremental, source.rowid);
    lap("index: band keys", &mut step);
    rewritten_rows(db, run, after.rewritten, &mut step)?;
    new_rows(db, source, &bands, incremental, &mut step)?;
    super::index_bands::write(db, incremental)?;
    lap("index: band keys written", &mut step);
    if incremental {
        update_order(db, source, run, after.archive, &mut step)?;
        update_rows(db, &mut step)?;
    } else {
        write_order_whole(db, &mut step)?;
        write_rows_whole(db, &mut step)?;
    }
    lap("index: keys", &mut step);
    record(db, source, run, settings_json, &mut step)
}

/// Step 1: phase 1's values of the rows this run rewrote, as they now are (the
/// old ones kept in `_dedup_before`).
fn rewritten_rows(
    db: &Connection,
    run: i64,
    rewritten_after: i64,
    step: &mut std::time::Instant,
) -> Result<(), DedupError> {
    // (Nothing looks rows up by URL from here on: the URL index of
    // _dedup_prepared goes first, so that the rows deleted and written
    // again here do not update it.)
    // (A text the paragraph step edited: phase 1 whole, as a fill.)
    let edited = if crate::sqlite::tables::schema::temp_table_exists(db, "_dedup_paragraph_texts")?
    {
        "AND source_rowid NOT IN (SELECT rid FROM temp._dedup_paragraph_texts)"
    } else {
        ""
    };
    db.execute_batch(&format!(
        "DROP INDEX IF EXISTS temp._dedup_prepared_url;
         DROP TABLE IF EXISTS temp._dedup_before;
         CREATE TEMP TABLE _dedup_before AS SELECT * FROM temp._dedup_prepared
         WHERE source_rowid IN (SELECT dedup_rowid FROM main.dedup_rewritten
                                WHERE rowid > {rewritten_after} AND dedup_run = {run});
         DELETE FROM temp._dedup_prepared WHERE source_rowid IN (SELECT source_rowid FROM temp._dedup_before);
         DROP TABLE IF EXISTS temp._dedup_url_only;
         CREATE TEMP TABLE _dedup_url_only AS SELECT * FROM temp._dedup_before
         WHERE skip_reason IS NULL AND fill_parsed IS NULL {edited};
         DROP VIEW IF EXISTS temp._dedup_todo;
         CREATE TEMP VIEW _dedup_todo AS SELECT * FROM temp._dedup_source
         WHERE rid IN (SELECT source_rowid FROM temp._dedup_before
                       WHERE source_rowid NOT IN (SELECT source_rowid FROM temp._dedup_url_only));"
    ))?;
    lap("index: rewritten rows", step);
    // (Rows whose rewrite filled a text column: phase 1 whole; the others'
    // texts are as they were: their URLs' functions only.)
    db.execute_batch(scripts::prepare_rows_sql())?;
    db.execute_batch(scripts::REWRITTEN_URLS)?;
    db.execute_batch("DROP TABLE temp._dedup_url_only;")?;
    lap("index: rewritten rows prepared", step);
    Ok(())
}

/// Step 2: the rows to (re)write, into `temp._dedup_index_new`: every row of a
/// full run; the dirty and rewritten rows of an incremental one.
fn new_rows(
    db: &Connection,
    source: &Source,
    bands: &str,
    incremental: bool,
    step: &mut std::time::Instant,
) -> Result<(), DedupError> {
    let table = source.qualified();
    let rowid = source.rowid;
    let fp = fingerprint_of(source, "g");
    // (A rewritten row whose phase-1 values changed, or that a run would
    // rewrite again, is unsettled: fp 0.)
    let mut pending = crate::sqlite::tables::rewrites::pending_besides_url(source);
    // (A text the paragraph step cut was compared before the cut: the next
    // run compares it again, as a full run would.)
    if crate::sqlite::tables::schema::temp_table_exists(db, "_dedup_paragraph_texts")? {
        pending =
            format!("({pending} OR g.{rowid} IN (SELECT rid FROM temp._dedup_paragraph_texts))");
    }
    // (tlen: the length of the text phase 4 compares, when it is known
    // without reading it again.)
    let parsed = source.column("parsed").map_or("NULL".to_string(), |c| {
        format!("g.{}", crate::sqlite::tables::schema::quote_ident(&c))
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
    let create_new = crate::sqlite::tables::own_schema::OWN
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
                     THEN 0
                     WHEN g.{rowid} IN (SELECT rid FROM temp._dedup_triggered) THEN 0
                     ELSE {fp} END AS fp,
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
    lap("index: rows", step);
    Ok(())
}

/// The scan order's placeholders, for a full run: the rows it removes in
/// phases 4-5 that the next run's placeholders take, as
/// sql/04_placeholders.sql chooses them from the archive (a valid text,
/// parsed or filled from content, and a canonical URL). A full run
/// prepared every row it removes, so their phase-1 values say it without
/// reading the archive (whose rows of the run, all of them, a scan would
/// read whole): no skip reason, and a text filled (fill_parsed) or a
/// parsed one not empty (has_text without a fill). An incremental run
/// reads the few rows it archived instead ([`update_order`]), since the
/// settled ones it removes were not prepared.
const PLACEHOLDERS_PREPARED: &str = "SELECT p.canonical_url, x.source_rowid, 1, NULL
         FROM temp._dedup_removal AS x
         JOIN temp._dedup_prepared AS p ON p.source_rowid = x.source_rowid
         CROSS JOIN temp._dedup_run AS r
         WHERE x.phase IN (4, 5) AND r.threshold < 1.0
           AND p.skip_reason IS NULL AND (p.fill_parsed IS NOT NULL OR p.has_text)
           AND p.canonical_url IS NOT NULL";

/// Step 3, incremental: the scan order (this run's rows kept with text, and
/// placeholders): the rows that left it deleted, the new ones and
/// the placeholders of the rows removed now inserted.
fn update_order(
    db: &Connection,
    source: &Source,
    run: i64,
    archived_after: i64,
    step: &mut std::time::Instant,
) -> Result<(), DedupError> {
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
    lap("index: order's deletes", step);
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
    lap("index: order's new rows", step);
    let archive = crate::sqlite::tables::schema::archive_view_body(db, source, Some(run))?;
    // (Numbered after the slots an earlier run's removal of the same rowid
    // keeps at the same URL: each removal is a slot of its own.)
    let placeholders = format!(
        "INSERT OR IGNORE INTO main.dedup_index_order
         SELECT coalesce(p.canonical_url, x.canonical_url), a.dedup_rowid,
                1 + coalesce((SELECT max(o.placeholder) FROM main.dedup_index_order AS o
                              WHERE o.url = coalesce(p.canonical_url, x.canonical_url) AND o.id = a.dedup_rowid), 0),
                NULL
         FROM ({archive}) AS a
         LEFT JOIN temp._dedup_prepared AS p ON p.source_rowid = a.dedup_rowid
         LEFT JOIN main.dedup_index AS x ON x.rid = a.dedup_rowid AND p.source_rowid IS NULL
         CROSS JOIN temp._dedup_run AS r
         WHERE a.archive_rowid > {archived_after} AND a.dedup_run = {run} AND a.dedup_phase IN {slot} AND r.threshold < 1.0
           AND dedup_invalid_text(a.url, a.content, a.parsed) IS NULL
           AND (a.parsed <> '' OR (a.parsed IS NULL AND a.content <> ''))
           AND coalesce(p.canonical_url, x.canonical_url) IS NOT NULL;",
        slot = crate::core::phase::Phase::sql_list(&crate::core::phase::Phase::KEEP_SLOT)
    );
    db.execute_batch(&placeholders)?;
    lap("index: order's placeholders", step);
    Ok(())
}

/// Step 4, incremental: the rows that left deleted, those written replaced, the
/// count of rows and the keys brought up to date.
fn update_rows(db: &Connection, step: &mut std::time::Instant) -> Result<(), DedupError> {
    let deleted = db.execute(
        "DELETE FROM main.dedup_index WHERE rid IN (SELECT rid FROM temp._dedup_gone)",
        [],
    )? + db.execute(
        "DELETE FROM main.dedup_index WHERE rid IN (SELECT source_rowid FROM temp._dedup_removal)",
        [],
    )?;
    lap("index: deletes", step);
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
    lap("index: written", step);
    super::index_state::set_kept_rows(db, rows)?;
    super::index_keys::write(db, true, deleted as i64 + rekeyed)?;
    Ok(())
}

/// Step 3, full: the scan order (this run's rows kept with text, and
/// placeholders) written whole, in its key's order.
fn write_order_whole(db: &Connection, step: &mut std::time::Instant) -> Result<(), DedupError> {
    // (The order written whole in its key's order: appended, its
    // pages filled, rather than the placeholders inserted between.)
    // (A rowid removed in phases 4-5 by two runs has two slots, as in a
    // full run's input: its placeholders are numbered 1, 2, ... within
    // their (url, id).)
    db.execute_batch(&format!(
        "DELETE FROM main.dedup_index_order;
         INSERT OR IGNORE INTO main.dedup_index_order
         SELECT url, id,
                CASE WHEN placeholder = 0 THEN 0
                     ELSE row_number() OVER (PARTITION BY url, id, placeholder) END,
                tlen FROM (
           SELECT i.url AS url, i.id AS id, 1 - i.own AS placeholder,
                  CASE WHEN i.own = 1 THEN n.tlen END AS tlen
           FROM temp._dedup_near_input AS i
           LEFT JOIN temp._dedup_index_new AS n ON n.rid = i.id
           WHERE i.own = 0 OR i.id NOT IN (SELECT source_rowid FROM temp._dedup_removal)
           UNION ALL
           {PLACEHOLDERS_PREPARED}
         ) ORDER BY url, id, placeholder;"
    ))?;
    lap("index: order written", step);
    Ok(())
}

/// Step 4, full: the rows written whole, their indexes dropped before and made
/// again after (the domain's only with `n_min`).
fn write_rows_whole(db: &Connection, step: &mut std::time::Instant) -> Result<(), DedupError> {
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
    db.execute_batch(&format!(
        "{drop}
         DELETE FROM main.dedup_index;"
    ))?;
    let rows = db.execute(
        "INSERT INTO main.dedup_index SELECT * FROM temp._dedup_index_new",
        [],
    )?;
    db.execute_batch(&create)?;
    lap("index: written", step);
    super::index_state::set_kept_rows(db, rows as i64)?;
    super::index_keys::write(db, false, 0)?;
    Ok(())
}

/// Step 5: the state the next run checks (the run, the version, the settings),
/// and the change log started anew.
fn record(
    db: &Connection,
    source: &Source,
    run: i64,
    settings_json: &str,
    step: &mut std::time::Instant,
) -> Result<(), DedupError> {
    db.execute(
        "INSERT OR REPLACE INTO main.dedup_index_state (key, value)
         VALUES ('run', ?1), ('version', ?2), ('settings', ?3)",
        rusqlite::params![run, version(), comparable(db, settings_json)?],
    )?;
    // (The unsettled rows are among those written now: an unsettled row
    // of the last run was logged, so dirty now, and written again.)
    super::changes::track(db, source, "temp._dedup_index_new")?;
    db.execute_batch("DROP TABLE temp._dedup_index_new;")?;
    lap("index: change log", step);
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
        "dedup_index_paragraphs",
        "dedup_index_state",
    ] {
        if crate::sqlite::tables::schema::object_type(db, name)?.as_deref() == Some("table") {
            db.execute_batch(&format!("DELETE FROM main.{name}"))?;
        }
    }
    Ok(())
}
