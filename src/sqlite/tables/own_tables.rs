//! The extension's own tables in the user's database (`dedup_runs`,
//! `dedup_removed`, `dedup_rewritten`, `dedup_notes`, `dedup_index`,
//! `dedup_index_order`, `dedup_index_keys`, `dedup_index_keys_new`,
//! `dedup_index_bands`, `dedup_index_bands_left`, `dedup_index_state`, `dedup_changes`,
//! `dedup_domains`, `dedup_domains_before`): created on first
//! use, and used only when nothing of the user's could change what a run or
//! a restore writes into them. A table of that name must have exactly the
//! shape this extension creates (its `CREATE TABLE` text, types and
//! constraints included; `dedup_removed` may carry the untyped page columns
//! runs add), no trigger may be on them or write to them (but the change
//! log's own, [`crate::sqlite::pipeline::incremental::changes`]), and no foreign
//! key (with `PRAGMA foreign_keys` on) may point at them.

use crate::sqlite::ground::error::Code;
use rusqlite::Connection;

use crate::sqlite::ground::error::{fail, DedupError};
use crate::sqlite::tables::own_schema::{is_own, OWN};
use crate::sqlite::tables::schema::{self, quote_ident, Source};

/// `dedup_index` in its earlier formats (dropped and made again: an index
/// of those is rebuilt by a full run anyway).
const INDEX_OLD: [&str; 4] = [
    "CREATE TABLE main.dedup_index (rid INTEGER PRIMARY KEY, fp INTEGER NOT NULL, pos_url TEXT)",
    "CREATE TABLE main.dedup_index (rid INTEGER PRIMARY KEY, fp INTEGER NOT NULL, pos_url TEXT, skip_reason TEXT, canonical_url TEXT, strict_url TEXT, domain TEXT, content_hash TEXT, datetime TEXT, crawled TEXT, length INTEGER, category TEXT, has_text INTEGER, https INTEGER, tlen INTEGER)",
    "CREATE TABLE main.dedup_index (rid INTEGER PRIMARY KEY, fp INTEGER NOT NULL, pos_url TEXT, skip_reason TEXT, canonical_url TEXT, strict_url TEXT, domain TEXT, content_hash TEXT, datetime TEXT, crawled TEXT, length INTEGER, category TEXT, has_text INTEGER, https INTEGER, tlen INTEGER, hist BLOB)",
    "CREATE TABLE main.dedup_index (rid INTEGER PRIMARY KEY, fp INTEGER NOT NULL, pos_url TEXT, skip_reason TEXT, canonical_url TEXT, strict_url TEXT, domain TEXT, content_hash TEXT, datetime TEXT, crawled TEXT, length INTEGER, category TEXT, has_text INTEGER, https INTEGER, tlen INTEGER, hist BLOB, bands BLOB)",
];

/// `dedup_index_order` in its earlier format (dropped and made again).
const ORDER_OLD: &str = "CREATE TABLE main.dedup_index_order (url TEXT NOT NULL, id INTEGER NOT NULL, placeholder INTEGER NOT NULL, PRIMARY KEY (url, id, placeholder)) WITHOUT ROWID";

/// The secondary indexes of `dedup_index` (what an incremental run looks
/// rows up by, besides `dedup_index_keys`), as (name, what follows `ON
/// dedup_index`). A row's URL key (`coalesce(strict_url, canonical_url)`)
/// is its canonical URL but where its strict URL differs: only those rows
/// are in `dedup_index_strict`. (The canonical URLs and content hashes are
/// looked up by their 8-byte keys in `dedup_index_keys`, written whole and
/// appended to: as indexes here a 1% batch rewrote nearly every page of
/// them, see crate::sqlite::pipeline::incremental::index_keys.)
pub const INDEX_KEYS: [(&str, &str); 1] = [(
    "dedup_index_strict",
    "(strict_url) WHERE strict_url IS NOT canonical_url",
)];

/// The index of `dedup_index` by domain: only phase 5's `n_min` reads
/// rows by domain, so a full run makes it only when `n_min` is above 0 (a
/// run with another `n_min` is full, and makes it or drops it).
pub const DOMAIN_KEY: (&str, &str) = ("dedup_index_domain", "(domain)");

/// Secondary indexes of `dedup_index` in earlier formats (dropped).
const INDEX_KEYS_OLD: [&str; 3] = [
    "dedup_index_key",
    "dedup_index_canonical",
    "dedup_index_hash",
];

/// `dedup_runs` as version 0.1 created it (a `report` column is added).
const RUNS_V01: &str = "CREATE TABLE main.dedup_runs (run INTEGER PRIMARY KEY, finished TEXT, rows_before INTEGER, rows_after INTEGER, settings TEXT)";

/// The text SQLite keeps of a `CREATE TABLE`, compared loosely: lower case,
/// no `main.`, no white space but one space between words.
fn normalized(sql: &str) -> String {
    let sql = sql.to_ascii_lowercase().replace("main.", "");
    let mut out = String::with_capacity(sql.len());
    let mut space = false;
    for c in sql.chars() {
        if c.is_whitespace() {
            space = true;
            continue;
        }
        let word = |c: char| c.is_alphanumeric() || c == '_' || c == '"';
        if space && out.chars().last().is_some_and(word) && word(c) {
            out.push(' ');
        }
        space = false;
        out.push(c);
    }
    out
}

/// Whether `rest` is a run of `, "name"` column additions then `)`.
fn only_untyped_columns(rest: &str) -> bool {
    let mut rest = rest;
    loop {
        if rest == ")" {
            return true;
        }
        let Some(after) = rest.strip_prefix(",\"") else {
            return false;
        };
        // The quoted name: up to a quote not doubled.
        let bytes = after.as_bytes();
        let mut i = 0;
        loop {
            match bytes.get(i) {
                None => return false,
                Some(b'"') if bytes.get(i + 1) == Some(&b'"') => i += 2,
                Some(b'"') => break,
                Some(_) => i += 1,
            }
        }
        rest = &after[i + 1..];
    }
}

/// Whether the stored `sql` of table `name` is this extension's shape.
fn has_own_shape(name: &str, sql: &str) -> bool {
    let got = normalized(sql);
    let create = OWN.iter().find(|(n, _)| *n == name).map(|(_, c)| *c);
    let Some(create) = create else { return false };
    let want = normalized(create);
    match name {
        "dedup_runs" => got == want || got == normalized(RUNS_V01),
        "dedup_index" => got == want || INDEX_OLD.iter().any(|old| got == normalized(old)),
        "dedup_index_order" => got == want || got == normalized(ORDER_OLD),
        "dedup_removed" => {
            let base = want.trim_end_matches(')');
            got.strip_prefix(base).is_some_and(only_untyped_columns)
        }
        // Version 0.1's wide form, converted by `upgrade_rewritten`.
        "dedup_rewritten" => {
            got == want
                || got == normalized(REWRITTEN_V3)
                || got == normalized(REWRITTEN_V2)
                || got.contains("parsed_was_null")
        }
        _ => got == want,
    }
}

/// Refuses `table` as the table of pages when it is one of this
/// extension's own: a run would archive its records into themselves.
pub fn refuse_as_pages(table: &str) -> Result<(), DedupError> {
    if is_own(table) {
        return fail(Code::Table, format!(
            "dedup: table '{table}' is one of this extension's own (it keeps the runs' settings, records or index, or learned URL rules), got no table of pages (set the table setting to the table that holds them)"
        ));
    }
    Ok(())
}

/// Refuses the run (or restore) when a table of the extension's is not its
/// own shape, when a trigger is on one or writes to one, or when a foreign
/// key points at one: each would change what is written, or lose rows.
pub fn check(db: &Connection, function: &str) -> Result<(), DedupError> {
    for (name, _) in OWN {
        let found: Option<(String, Option<String>)> = rusqlite::OptionalExtension::optional(
            db.query_row(
                "SELECT type, sql FROM main.sqlite_schema WHERE lower(name) = ?1 ORDER BY type = 'table' DESC LIMIT 1",
                [name],
                |r| Ok((r.get(0)?, r.get(1)?)),
            ),
        )?;
        match found {
            None => {}
            Some((kind, _)) if kind != "table" => {
                return fail(
                    Code::Own,
                    format!(
                        "{function}: {name} must be a table this extension created, got a {kind}"
                    ),
                )
            }
            Some((_, sql)) => {
                let sql = sql.unwrap_or_default();
                if !has_own_shape(name, &sql) {
                    return fail(Code::Own, format!(
                        "{function}: {name} is not the table this extension creates, got {}; nothing was changed (rename it: the extension creates its own)",
                        crate::sqlite::ground::shown::truncate(&sql, 200)
                    ));
                }
            }
        }
    }
    // Triggers on the tables, or whose body names one (but the change
    // log's, as it creates them).
    let names: Vec<String> = OWN.iter().map(|(n, _)| format!("'{n}'")).collect();
    let triggers: Vec<(String, String, String)> = db
        .prepare(&format!(
            "SELECT name, tbl_name, coalesce(sql, '') FROM main.sqlite_schema WHERE type = 'trigger'
             AND (lower(tbl_name) IN ({list}) OR {mentions}) ORDER BY name",
            list = names.join(", "),
            mentions = OWN
                .iter()
                .map(|(n, _)| format!("instr(lower(sql), '{n}') > 0"))
                .collect::<Vec<_>>()
                .join(" OR ")
        ))?
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?
        .collect::<Result<_, _>>()?;
    let foreign = triggers
        .into_iter()
        .find(|(name, on, sql)| !super::trackers::is_tracker(name, on, sql));
    if let Some((trigger, on, _)) = foreign {
        return fail(Code::Own, format!(
            "{function}: trigger {} (on {}) is on or writes to this extension's tables ({}), which would change what is archived; nothing was changed (drop the trigger)",
            quote_ident(&trigger),
            quote_ident(&on),
            OWN.map(|(n, _)| n).join(", ")
        ));
    }
    let fk_on: bool = db.query_row("PRAGMA foreign_keys", [], |r| r.get(0))?;
    if fk_on {
        let key: Option<(String, String)> =
            rusqlite::OptionalExtension::optional(db.query_row(
                &format!(
                    "SELECT m.name, f.\"table\" FROM main.sqlite_schema AS m, pragma_foreign_key_list(m.name, 'main') AS f
                     WHERE m.type = 'table' AND lower(f.\"table\") IN ({}) LIMIT 1",
                    names.join(", ")
                ),
                [],
                |r| Ok((r.get(0)?, r.get(1)?)),
            ))?;
        if let Some((child, parent)) = key {
            return fail(Code::Own, format!(
                "{function}: table {} has a foreign key to this extension's {}, which would change what a run or restore writes; nothing was changed (drop the key, or run with PRAGMA foreign_keys = OFF)",
                quote_ident(&child),
                quote_ident(&parent)
            ));
        }
    }
    Ok(())
}

/// Creates the tables on first use and brings them up to date: a column of
/// the pages table gained since is added to `dedup_removed` (untyped, so
/// values are kept exactly); an old `dedup_rewritten` is converted.
pub fn ensure(db: &Connection, source: &Source) -> Result<(), DedupError> {
    check(db, "dedup")?;
    let index = schema::columns(db, "dedup_index")?;
    let has = |columns: &[schema::Column], name: &str| columns.iter().any(|c| c.name == name);
    if !index.is_empty() && !has(&index, "hash_key") {
        db.execute_batch("DROP TABLE main.dedup_index")?;
    }
    let order = schema::columns(db, "dedup_index_order")?;
    if !order.is_empty() && !has(&order, "tlen") {
        db.execute_batch("DROP TABLE main.dedup_index_order")?;
    }
    for (name, create) in OWN {
        if schema::object_type(db, name)?.is_none() {
            db.execute_batch(create)?;
        }
    }
    for name in INDEX_KEYS_OLD {
        db.execute_batch(&format!("DROP INDEX IF EXISTS main.{name}"))?;
    }
    db.execute_batch(
        "CREATE INDEX IF NOT EXISTS main.dedup_index_paragraphs_key ON dedup_index_paragraphs (key)",
    )?;
    for (name, on) in INDEX_KEYS {
        db.execute_batch(&format!(
            "CREATE INDEX IF NOT EXISTS main.{name} ON dedup_index {on}"
        ))?;
    }
    upgrade_rewritten(db)?;
    let runs = schema::columns(db, "dedup_runs")?;
    if !runs.iter().any(|c| c.name.eq_ignore_ascii_case("report")) {
        db.execute_batch("ALTER TABLE main.dedup_runs ADD COLUMN report TEXT")?;
    }
    let archived = schema::columns(db, "dedup_removed")?;
    for c in &source.columns {
        if !archived
            .iter()
            .any(|a| a.name.eq_ignore_ascii_case(&c.name))
        {
            db.execute_batch(&format!(
                "ALTER TABLE main.dedup_removed ADD COLUMN {}",
                quote_ident(&c.name)
            ))?;
        }
    }
    Ok(())
}

/// `dedup_rewritten` before it kept the value each run wrote (`written`).
const REWRITTEN_V2: &str =
    "CREATE TABLE main.dedup_rewritten (dedup_run INTEGER, dedup_rowid INTEGER, name TEXT, value)";

/// `dedup_rewritten` before it kept each survivor's identity (`identity`).
const REWRITTEN_V3: &str =
    "CREATE TABLE main.dedup_rewritten (dedup_run INTEGER, dedup_rowid INTEGER, name TEXT, value, written)";

/// Version 0.1 kept one wide row per survivor in `dedup_rewritten`; this
/// version keeps one row per rewritten column, with the value written and
/// the survivor's identity. Converts the old forms (a run recorded before
/// `written` or `identity` has it NULL).
pub fn upgrade_rewritten(db: &Connection) -> Result<(), DedupError> {
    let cols = schema::columns(db, "dedup_rewritten")?;
    if cols.is_empty() {
        return Ok(());
    }
    if !cols.iter().any(|c| c.name == "parsed_was_null") {
        if !cols.iter().any(|c| c.name == "written") {
            db.execute_batch("ALTER TABLE main.dedup_rewritten ADD COLUMN written")?;
        }
        if !cols.iter().any(|c| c.name == "identity") {
            db.execute_batch("ALTER TABLE main.dedup_rewritten ADD COLUMN identity BLOB")?;
        }
        return Ok(());
    }
    db.execute_batch(
        "ALTER TABLE main.dedup_rewritten RENAME TO _dedup_rewritten_v1;
         CREATE TABLE main.dedup_rewritten (dedup_run INTEGER, dedup_rowid INTEGER, name TEXT, value, written, identity BLOB);
         INSERT INTO main.dedup_rewritten (dedup_run, dedup_rowid, name, value)
           SELECT dedup_run, dedup_rowid, 'url', url FROM main._dedup_rewritten_v1
           UNION ALL SELECT dedup_run, dedup_rowid, 'domain', domain FROM main._dedup_rewritten_v1
           UNION ALL SELECT dedup_run, dedup_rowid, 'wayback', wayback FROM main._dedup_rewritten_v1
           UNION ALL SELECT dedup_run, dedup_rowid, 'parsed', NULL FROM main._dedup_rewritten_v1 WHERE parsed_was_null
           UNION ALL SELECT dedup_run, dedup_rowid, 'content_hash', content_hash FROM main._dedup_rewritten_v1
           UNION ALL SELECT dedup_run, dedup_rowid, 'length', length FROM main._dedup_rewritten_v1;
         DROP TABLE main._dedup_rewritten_v1;",
    )?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_extensions_own_statements_have_its_shape() {
        for (name, create) in OWN {
            let stored = create.replace("main.", "");
            assert!(has_own_shape(name, &stored), "{name}");
        }
        assert!(has_own_shape("dedup_runs", RUNS_V01));
        for old in INDEX_OLD {
            assert!(has_own_shape("dedup_index", old));
        }
        assert!(has_own_shape("dedup_index_order", ORDER_OLD));
    }

    #[test]
    fn added_page_columns_are_accepted_only_untyped() {
        let base = "CREATE TABLE dedup_removed (dedup_rowid INTEGER, dedup_run INTEGER, dedup_phase INTEGER, dedup_reason TEXT, dedup_survivor INTEGER, dedup_ratio REAL";
        assert!(has_own_shape(
            "dedup_removed",
            &format!("{base}, \"url\", \"a\"\"b\")")
        ));
        assert!(!has_own_shape(
            "dedup_removed",
            &format!("{base}, \"url\" TEXT)")
        ));
        assert!(!has_own_shape(
            "dedup_removed",
            &format!("{base}, \"url\", UNIQUE(dedup_rowid) ON CONFLICT REPLACE)")
        ));
    }

    #[test]
    fn other_types_and_constraints_are_refused() {
        for (name, sql) in [
            ("dedup_removed", "CREATE TABLE dedup_removed (dedup_rowid TEXT, dedup_run INTEGER, dedup_phase INTEGER, dedup_reason TEXT, dedup_survivor INTEGER, dedup_ratio REAL)"),
            ("dedup_runs", "CREATE TABLE dedup_runs (run INTEGER PRIMARY KEY ON CONFLICT REPLACE, finished TEXT, rows_before INTEGER, rows_after INTEGER, settings TEXT, report TEXT)"),
            ("dedup_domains", "CREATE TABLE dedup_domains (domain TEXT PRIMARY KEY, pages INTEGER) STRICT"),
            ("dedup_rewritten", "CREATE TABLE dedup_rewritten (dedup_run INTEGER, dedup_rowid INTEGER, name TEXT, value TEXT)"),
        ] {
            assert!(!has_own_shape(name, sql), "{sql}");
        }
    }

    #[test]
    fn white_space_and_case_do_not_count() {
        assert!(has_own_shape(
            "dedup_domains",
            "create table DEDUP_DOMAINS(\n  domain text primary key,\n  pages integer\n)"
        ));
    }
}
