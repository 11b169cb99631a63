//! The names and `CREATE` statements of the extension's own tables, and
//! which names are the extension's (data only, so that the modules that
//! check a user's table and the ones that make the extension's can both
//! read it: [`crate::sqlite::tables::own_tables`], [`crate::sqlite::tables::schema`]).

/// Each table and the statement that creates it.
pub const OWN: [(&str, &str); 16] = [
    (
        "dedup_runs",
        "CREATE TABLE main.dedup_runs (run INTEGER PRIMARY KEY, finished TEXT, rows_before INTEGER, rows_after INTEGER, settings TEXT, report TEXT)",
    ),
    (
        "dedup_removed",
        "CREATE TABLE main.dedup_removed (dedup_rowid INTEGER, dedup_run INTEGER, dedup_phase INTEGER, dedup_reason TEXT, dedup_survivor INTEGER, dedup_ratio REAL)",
    ),
    // A survivor's rewritten column: its old value, the value the run left
    // in it, and the survivor's identity as the run left it (restore gives
    // the old value back only to the row that still has that identity:
    // crate::sqlite::tables::identity).
    (
        "dedup_rewritten",
        "CREATE TABLE main.dedup_rewritten (dedup_run INTEGER, dedup_rowid INTEGER, name TEXT, value, written, identity BLOB)",
    ),
    // What explain says beyond dedup_removed: a phase-4 removal's final
    // survivor in its run and the ratio to it ('final'), why a kept page
    // was kept apart from pages sharing its URL ('kept apart').
    (
        "dedup_notes",
        "CREATE TABLE main.dedup_notes (dedup_run INTEGER, dedup_rowid INTEGER, kind TEXT, other INTEGER, ratio REAL, note TEXT)",
    ),
    // Each paragraph a run with paragraphs = 'dedup' cut from a kept page's
    // text: its position among the page's paragraphs (from 1), its length
    // in characters, the page before it that holds it (owner, and its URL
    // after the run) and its text (crate::sqlite::pipeline::run::paragraphs).
    (
        "dedup_paragraphs",
        "CREATE TABLE main.dedup_paragraphs (dedup_run INTEGER, dedup_rowid INTEGER, position INTEGER, length INTEGER, owner INTEGER, owner_url TEXT, paragraph TEXT)",
    ),
    // The paragraphs (their keys: crate::core::paragraphs::key_of) each kept
    // page holds after a run with paragraphs = 'dedup', for the next
    // incremental run (crate::sqlite::pipeline::incremental::index_paragraphs).
    (
        "dedup_index_paragraphs",
        "CREATE TABLE main.dedup_index_paragraphs (rid INTEGER NOT NULL, key INTEGER NOT NULL, PRIMARY KEY (rid, key)) WITHOUT ROWID",
    ),
    // The index of incremental runs (see crate::sqlite::pipeline::incremental::index).
    // Per kept row: its fingerprint, its place in phase 4's order, what
    // phase 1 made of it, (lsh mode) its band keys, and the 8-byte keys its
    // canonical URL and content hash are looked up by (`url_key`,
    // `hash_key`: see `dedup_index_keys`).
    (
        "dedup_index",
        "CREATE TABLE main.dedup_index (rid INTEGER PRIMARY KEY, fp INTEGER NOT NULL, pos_url TEXT, skip_reason TEXT, canonical_url TEXT, strict_url TEXT, domain TEXT, content_hash TEXT, datetime TEXT, crawled TEXT, length INTEGER, category TEXT, has_text INTEGER, https INTEGER, tlen INTEGER, hist BLOB, bands BLOB, url_key INTEGER, hash_key INTEGER)",
    ),
    // Phase 4's scan order: the kept rows (with their texts' lengths, as
    // in dedup_index: the pass reads them in order) and the placeholders
    // (`placeholder` 0 for a kept row; 1, 2, ... for each archived removal
    // of that rowid at that URL: each keeps a slot, as in a full run).
    (
        "dedup_index_order",
        "CREATE TABLE main.dedup_index_order (url TEXT NOT NULL, id INTEGER NOT NULL, placeholder INTEGER NOT NULL, tlen INTEGER, PRIMARY KEY (url, id, placeholder)) WITHOUT ROWID",
    ),
    // The kept rows by their `url_key` and `hash_key`, written whole, and
    // the entries added since (crate::sqlite::pipeline::incremental::index_keys).
    (
        "dedup_index_keys",
        "CREATE TABLE main.dedup_index_keys (key INTEGER NOT NULL, rid INTEGER NOT NULL, PRIMARY KEY (key, rid)) WITHOUT ROWID",
    ),
    (
        "dedup_index_keys_new",
        "CREATE TABLE main.dedup_index_keys_new (key INTEGER NOT NULL, rid INTEGER NOT NULL, PRIMARY KEY (key, rid)) WITHOUT ROWID",
    ),
    // lsh mode: each kept row's band keys, to look up the rows a new row
    // shares a band and key with (crate::sqlite::pipeline::incremental::index_bands).
    (
        "dedup_index_bands",
        "CREATE TABLE main.dedup_index_bands (band INTEGER NOT NULL, key INTEGER NOT NULL, rid INTEGER NOT NULL, PRIMARY KEY (band, key, rid)) WITHOUT ROWID",
    ),
    // lsh mode: the packed band keys of rows that left the index and whose
    // entries in dedup_index_bands are not deleted yet (crate::sqlite::pipeline::incremental::index_bands).
    (
        "dedup_index_bands_left",
        "CREATE TABLE main.dedup_index_bands_left (rid INTEGER NOT NULL, bands BLOB NOT NULL)",
    ),
    (
        "dedup_index_state",
        "CREATE TABLE main.dedup_index_state (key TEXT PRIMARY KEY, value)",
    ),
    // The rowids written since the last run (crate::sqlite::pipeline::incremental::changes).
    (
        "dedup_changes",
        "CREATE TABLE main.dedup_changes (rid INTEGER PRIMARY KEY)",
    ),
    (
        "dedup_domains",
        "CREATE TABLE main.dedup_domains (domain TEXT PRIMARY KEY, pages INTEGER)",
    ),
    // `dedup_domains` as it was before each run (its rows, by rowid; one
    // row with a NULL `dedup_rowid` per run), for restore.
    (
        "dedup_domains_before",
        "CREATE TABLE main.dedup_domains_before (dedup_run INTEGER, dedup_rowid INTEGER, domain, pages)",
    ),
];

/// The table a run with `{"action": "label"}` writes (its only one): every
/// row's cluster, nothing deleted (crate::sqlite::pipeline::run::label).
pub const CLUSTERS: (&str, &str) = (
    "dedup_clusters",
    "CREATE TABLE main.dedup_clusters (dedup_rowid INTEGER PRIMARY KEY, cluster INTEGER, kept INTEGER NOT NULL, phase INTEGER, reason TEXT, survivor INTEGER, ratio REAL)",
);

/// Whether `name` is one of this extension's tables: the runs' ([`OWN`]),
/// the labels' ([`CLUSTERS`]), `dedup_settings`, the view `dedup_why`, or
/// URL learning's (`dedup_url_*`).
pub fn is_own(name: &str) -> bool {
    OWN.iter()
        .map(|(own, _)| *own)
        .chain([CLUSTERS.0, "dedup_settings", "dedup_why"])
        .any(|own| own.eq_ignore_ascii_case(name))
        || name
            .as_bytes()
            .get(..10)
            .is_some_and(|p| p.eq_ignore_ascii_case(b"dedup_url_"))
}
