//! The paragraph step of a run with `paragraphs = 'dedup'`, after phase 6:
//! each kept page's paragraphs against those of the kept pages before it
//! in the election order ([`crate::core::paragraphs`]). It writes temp
//! tables only; apply rewrites the texts (archived in `dedup_rewritten`)
//! and keeps the cuts in `dedup_paragraphs`.
//!
//! Writes `temp._dedup_paragraph_texts` (rid, parsed: each edited page's
//! new text), `temp._dedup_paragraph_cuts` (rid, position, length, owner,
//! owner_url, paragraph) and, for each page left whole because the cuts
//! would leave it fewer than `paragraph_min` characters, a note in
//! `temp._dedup_notes` (kind `paragraphs held`).

use std::collections::HashMap;

use rusqlite::{params, Connection, OptionalExtension};

use crate::sqlite::ground::error::{fail, Code};

use crate::core::halt::never;
use crate::core::paragraphs::{edit, same_paragraph, Edit, Found, Ledger, Split};
use crate::sqlite::ground::error::DedupError;

/// The kept pages with text, best first: the election order of phases
/// 2-4 (`sql/04a_near_input.sql`'s rank): `prefer`, not external, newer
/// datetime, newer crawled, longer, https, URL, rowid. With each page:
/// whether its text is made from HTML (a fill), its URL after the run, and
/// whether this run prepared it. An incremental run prepared only the new
/// and changed rows: the other kept rows come from the index, as the last
/// run left them (no fill: a fill was written to `parsed`; no `prefer`,
/// whose runs are full).
fn kept_in_order(incremental: bool) -> String {
    let from_index = if incremental {
        "UNION ALL
      SELECT i.rid, 0, coalesce(i.strict_url, i.canonical_url), 0, i.category, i.datetime, i.crawled,
             i.length, i.https, i.canonical_url, 0
      FROM main.dedup_index AS i
      WHERE i.skip_reason IS NULL AND i.has_text
        AND i.rid NOT IN (SELECT source_rowid FROM temp._dedup_prepared)
        AND i.rid IN (SELECT rid FROM temp._dedup_source)"
    } else {
        ""
    };
    let in_scope = if incremental {
        "AND rid IN (SELECT rid FROM temp._dedup_paragraph_scope)"
    } else {
        ""
    };
    format!(
        "WITH kept AS (
      SELECT p.source_rowid AS rid, p.fill_parsed IS NOT NULL AS filled,
             coalesce(p.rewrite_url, p.strict_url, p.canonical_url) AS url, p.prefer_rank AS prefer_rank,
             p.category AS category, p.datetime AS datetime, p.crawled AS crawled, p.length AS length,
             p.https AS https, p.canonical_url AS canonical_url, 1 AS prepared
      FROM temp._dedup_prepared AS p WHERE p.skip_reason IS NULL AND p.has_text
      {from_index}
    )
    SELECT rid, filled, url, prepared FROM kept
    WHERE rid NOT IN (SELECT source_rowid FROM temp._dedup_removal) {in_scope}
    ORDER BY prefer_rank ASC, CASE WHEN category = 'external' THEN 1 ELSE 0 END ASC,
             NULLIF(datetime, '') DESC NULLS LAST, NULLIF(crawled, '') DESC NULLS LAST,
             coalesce(length, 0) DESC, https DESC, canonical_url ASC, rid ASC"
    )
}

/// One page's text as the run leaves it before this step: its fill, or
/// its `parsed`.
const TEXT_OF: &str = "
    SELECT coalesce((SELECT p.fill_parsed FROM temp._dedup_prepared AS p WHERE p.source_rowid = ?1), s.parsed)
    FROM temp._dedup_source AS s WHERE s.rid = ?1";

/// A kept row this run did not prepare (an incremental run's) whose text
/// it edits: its phase-1 values from the index, into `_dedup_prepared`,
/// so that apply rewrites it as it rewrites the others (its URL, domain,
/// hash and length are what the index says the table holds: only its text
/// changes).
const PREPARED_FROM_INDEX: &str = "
    INSERT INTO temp._dedup_prepared (source_rowid, skip_reason, canonical_url, domain, wayback,
      discard_reason, content_hash, datetime, crawled, length, category, fill_parsed, has_text,
      strict_url, https, prefer_rank, rewrite_url)
    SELECT i.rid, NULL, i.canonical_url, i.domain, NULL, NULL, i.content_hash, i.datetime, i.crawled,
           i.length, i.category, NULL, i.has_text, i.strict_url, i.https, 0, NULL
    FROM main.dedup_index AS i WHERE i.rid = ?1";

/// A kept page with copies found in it.
struct Page {
    id: i64,
    text: String,
    split: Split,
    found: Vec<Found>,
    keys: Vec<(u32, i64)>,
}

/// An incremental run's scope, in `temp._dedup_paragraph_scope` (rid,
/// affected): the pages whose cuts may change (affected: the new and
/// changed kept pages, and the kept pages that share a paragraph with
/// them or with a page that leaves the kept ones now), and the other
/// holders of those pages' paragraphs (which decide who owns them). Every
/// other kept page's cuts are as the last run left them: no paragraph of
/// it gained or lost a holder. The index of paragraphs
/// (`dedup_index_paragraphs`) holds each kept page's paragraphs as its
/// text now is.
fn scope(db: &Connection, min: usize) -> Result<(), DedupError> {
    db.execute_batch(
        "DROP TABLE IF EXISTS temp._dedup_paragraph_scope;
         CREATE TEMP TABLE _dedup_paragraph_scope (rid INTEGER PRIMARY KEY, affected INTEGER);
         DROP TABLE IF EXISTS temp._dedup_paragraph_leaving;
         CREATE TEMP TABLE _dedup_paragraph_leaving (rid INTEGER PRIMARY KEY);
         INSERT OR IGNORE INTO temp._dedup_paragraph_leaving
           SELECT rid FROM temp._dedup_gone UNION SELECT source_rowid FROM temp._dedup_prepared
           UNION SELECT source_rowid FROM temp._dedup_removal;
         DROP TABLE IF EXISTS temp._dedup_paragraph_new;
         CREATE TEMP TABLE _dedup_paragraph_new (key INTEGER PRIMARY KEY);",
    )?;
    // The new and changed kept pages, and their paragraphs' keys.
    let new: Vec<(i64, bool)> = db
        .prepare(
            "SELECT p.source_rowid, p.fill_parsed IS NOT NULL FROM temp._dedup_prepared AS p
             WHERE p.skip_reason IS NULL AND p.has_text
               AND p.source_rowid NOT IN (SELECT source_rowid FROM temp._dedup_removal)",
        )?
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
        .collect::<rusqlite::Result<_>>()?;
    let mut text_of = db.prepare(TEXT_OF)?;
    let mut put_key = db.prepare("INSERT OR IGNORE INTO temp._dedup_paragraph_new VALUES (?1)")?;
    let mut put_page =
        db.prepare("INSERT OR IGNORE INTO temp._dedup_paragraph_scope VALUES (?1, 1)")?;
    for (id, filled) in new {
        let text: Option<String> = text_of.query_row([id], |r| r.get(0))?;
        let mut alone = Ledger::new(min);
        let (_, keys) = alone
            .page_keyed(id, &text.unwrap_or_default(), split_of(filled), &never)
            .map_err(rusqlite::Error::from)?;
        for (_, key) in keys {
            put_key.execute([key])?;
        }
        put_page.execute([id])?;
    }
    db.execute_batch(
        "INSERT OR IGNORE INTO temp._dedup_paragraph_new
           SELECT key FROM main.dedup_index_paragraphs
           WHERE rid IN (SELECT rid FROM temp._dedup_paragraph_leaving);
         INSERT OR IGNORE INTO temp._dedup_paragraph_scope
           SELECT DISTINCT rid, 1 FROM main.dedup_index_paragraphs
           WHERE key IN (SELECT key FROM temp._dedup_paragraph_new)
             AND rid NOT IN (SELECT rid FROM temp._dedup_paragraph_leaving);
         INSERT OR IGNORE INTO temp._dedup_paragraph_new
           SELECT key FROM main.dedup_index_paragraphs
           WHERE rid IN (SELECT rid FROM temp._dedup_paragraph_scope);
         INSERT OR IGNORE INTO temp._dedup_paragraph_scope
           SELECT DISTINCT rid, 0 FROM main.dedup_index_paragraphs
           WHERE key IN (SELECT key FROM temp._dedup_paragraph_new)
             AND rid NOT IN (SELECT rid FROM temp._dedup_paragraph_leaving);",
    )?;
    Ok(())
}

/// How a page's text splits: by lines when it is made from HTML.
fn split_of(filled: bool) -> Split {
    if filled {
        Split::Lines
    } else {
        Split::BlankLines
    }
}

/// Runs the step (see the module's documentation).
pub fn plan(db: &Connection) -> Result<(), DedupError> {
    db.execute_batch(
        "DROP TABLE IF EXISTS temp._dedup_paragraph_texts;
         CREATE TEMP TABLE _dedup_paragraph_texts (rid INTEGER PRIMARY KEY, parsed TEXT NOT NULL);
         DROP TABLE IF EXISTS temp._dedup_paragraph_cuts;
         CREATE TEMP TABLE _dedup_paragraph_cuts (rid INTEGER, position INTEGER, length INTEGER,
                                                  owner INTEGER, owner_url TEXT, paragraph TEXT);
         DROP TABLE IF EXISTS temp._dedup_paragraph_keys;
         CREATE TEMP TABLE _dedup_paragraph_keys (rid INTEGER, key INTEGER, PRIMARY KEY (rid, key)) WITHOUT ROWID;",
    )?;
    let min: i64 = db.query_row("SELECT paragraph_min FROM temp._dedup_run", [], |r| {
        r.get(0)
    })?;
    let min = min.max(1) as usize;
    if crate::sqlite::tables::schema::temp_table_exists(db, "_dedup_paragraphs_decided")? {
        return decided(db, min);
    }
    let incremental: bool = db.query_row(
        "SELECT kind = 'incremental' FROM temp._dedup_incremental",
        [],
        |r| r.get(0),
    )?;
    if incremental {
        scope(db, min)?;
    }
    let order: Vec<(i64, bool, Option<String>, bool)> = db
        .prepare(&kept_in_order(incremental))?
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))?
        .collect::<rusqlite::Result<_>>()?;
    let affected: std::collections::HashSet<i64> = if incremental {
        db.prepare("SELECT rid FROM temp._dedup_paragraph_scope WHERE affected")?
            .query_map([], |r| r.get(0))?
            .collect::<rusqlite::Result<_>>()?
    } else {
        order.iter().map(|(id, ..)| *id).collect()
    };
    let mut text_of = db.prepare(TEXT_OF)?;
    let mut read = |id: i64| -> Result<String, DedupError> {
        Ok(text_of
            .query_row([id], |r| r.get::<_, Option<String>>(0))?
            .unwrap_or_default())
    };
    let mut ledger = Ledger::new(min);
    let mut pages: Vec<Page> = Vec::new();
    let mut urls: HashMap<i64, Option<String>> = HashMap::new();
    let mut unprepared = std::collections::HashSet::new();
    for (id, filled, url, prepared) in order {
        if !prepared {
            unprepared.insert(id);
        }
        let split = split_of(filled);
        let text = read(id)?;
        let (found, keys) = ledger
            .page_keyed(id, &text, split, &never)
            .map_err(rusqlite::Error::from)?;
        urls.insert(id, url);
        // (A page outside the scope's affected ones only decides owners.)
        if affected.contains(&id) {
            pages.push(Page {
                id,
                text,
                split,
                found,
                keys,
            });
        }
    }
    // Each match confirmed against its owner's text, then the cuts.
    let mut owners: HashMap<i64, String> = HashMap::new();
    let mut writer = Writer::new(db, min)?;
    let mut put_key =
        db.prepare("INSERT OR IGNORE INTO temp._dedup_paragraph_keys VALUES (?1, ?2)")?;
    for page in pages {
        let mut confirmed = Vec::with_capacity(page.found.len());
        for f in page.found {
            let owner = f.owner.page;
            if let std::collections::hash_map::Entry::Vacant(e) = owners.entry(owner) {
                e.insert(read(owner)?);
            }
            if same_paragraph(&owners[&owner], &f, &never).map_err(rusqlite::Error::from)? {
                let url = urls.get(&owner).cloned().flatten();
                confirmed.push((f, Some(owner), url));
            }
        }
        let cut = writer.page(
            page.id,
            &page.text,
            page.split,
            &confirmed,
            unprepared.contains(&page.id),
        )?;
        // (The index keeps the paragraphs the page holds after the run.)
        for (position, key) in &page.keys {
            if !cut.contains(position) {
                put_key.execute(params![page.id, key])?;
            }
        }
    }
    Ok(())
}

/// A confirmed copy: the paragraph found, its owner's rowid here (`None`:
/// in another shard) and the owner's URL.
type Confirmed = (Found, Option<i64>, Option<String>);

/// Writes a page's edit into the step's temp tables.
struct Writer<'a> {
    db: &'a Connection,
    min: usize,
    put_text: rusqlite::Statement<'a>,
    put_cut: rusqlite::Statement<'a>,
    put_note: rusqlite::Statement<'a>,
}

impl<'a> Writer<'a> {
    fn new(db: &'a Connection, min: usize) -> Result<Self, DedupError> {
        Ok(Writer {
            db,
            min,
            put_text: db.prepare("INSERT INTO temp._dedup_paragraph_texts VALUES (?1, ?2)")?,
            put_cut: db.prepare(
                "INSERT INTO temp._dedup_paragraph_cuts VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            )?,
            put_note: db.prepare(
                "INSERT INTO temp._dedup_notes VALUES (?1, 'paragraphs held', ?2, NULL, ?3)",
            )?,
        })
    }

    /// The page's text without its confirmed copies (or the page kept
    /// whole, noted); `from_index`: a row this run did not prepare. The
    /// positions cut.
    fn page(
        &mut self,
        id: i64,
        text: &str,
        split: Split,
        confirmed: &[Confirmed],
        from_index: bool,
    ) -> Result<std::collections::HashSet<u32>, DedupError> {
        let min = self.min;
        let found: Vec<Found> = confirmed.iter().map(|(f, _, _)| f.clone()).collect();
        let mut cut = std::collections::HashSet::new();
        match edit(text, split, &found, min) {
            Edit::Unchanged => {}
            Edit::KeptWhole => {
                let (_, owner, url) = &confirmed[0];
                let first = match owner {
                    Some(rowid) => format!("rowid {rowid}"),
                    None => format!("{} in another shard", url.as_deref().unwrap_or("a page")),
                };
                self.put_note.execute(params![
                    id,
                    owner,
                    format!(
                        "kept whole: cutting the {} paragraph(s) pages before it hold (the first by {first}) would leave it fewer than {min} characters",
                        confirmed.len()
                    )
                ])?;
            }
            Edit::Cut(new) => {
                if from_index {
                    self.db.execute(PREPARED_FROM_INDEX, [id])?;
                }
                self.put_text.execute(params![id, new])?;
                for (f, owner, url) in confirmed {
                    cut.insert(f.position);
                    self.put_cut.execute(params![
                        id,
                        f.position,
                        f.chars as i64,
                        owner,
                        url,
                        &text[f.span.start..f.span.end],
                    ])?;
                }
            }
        }
        Ok(cut)
    }
}

/// A plan made elsewhere (`dedup_apply_plan` with paragraph cuts): each
/// cut of `temp._dedup_paragraphs_decided` confirmed on this page's text
/// (its paragraph at the position, of `paragraph_min` characters, equal
/// to the owner's once normalized; one that is not stays), then the same
/// edit as a run's own.
fn decided(db: &Connection, min: usize) -> Result<(), DedupError> {
    type Cut = (i64, i64, Option<i64>, Option<String>, String);
    let cuts: Vec<Cut> = db
        .prepare(
            "SELECT rid, position, owner, owner_url, owner_paragraph
             FROM temp._dedup_paragraphs_decided ORDER BY rid, position",
        )?
        .query_map([], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?))
        })?
        .collect::<rusqlite::Result<_>>()?;
    let mut kept = db.prepare(
        "SELECT p.fill_parsed IS NOT NULL FROM temp._dedup_prepared AS p
         WHERE p.source_rowid = ?1 AND p.skip_reason IS NULL AND p.has_text
           AND p.source_rowid NOT IN (SELECT source_rowid FROM temp._dedup_removal)",
    )?;
    let mut text_of = db.prepare(TEXT_OF)?;
    let mut writer = Writer::new(db, min)?;
    let mut at = 0;
    while at < cuts.len() {
        let id = cuts[at].0;
        let mine = cuts[at..].iter().take_while(|c| c.0 == id).count();
        let filled: Option<bool> = kept.query_row([id], |r| r.get(0)).optional()?;
        let Some(filled) = filled else {
            return fail(Code::Plan, format!(
                "dedup_apply_plan: the paragraph cut for rid {id} is wrong: the run keeps no text of that row; nothing was changed"
            ));
        };
        let split = split_of(filled);
        let text: String = text_of
            .query_row([id], |r| r.get::<_, Option<String>>(0))?
            .unwrap_or_default();
        let spans = crate::core::paragraphs::spans(&text, split);
        let mut confirmed = Vec::new();
        for (_, position, owner, url, theirs) in &cuts[at..at + mine] {
            let Some(span) = spans.get((*position as usize).saturating_sub(1)) else {
                continue;
            };
            let paragraph = &text[span.start..span.end];
            let chars = paragraph.trim().chars().count();
            let norm = |t: &str| crate::core::text::normalize_ascii_or_halt(t, &never);
            let mine_norm = norm(paragraph).map_err(rusqlite::Error::from)?;
            if chars >= min
                && !mine_norm.is_empty()
                && mine_norm == norm(theirs).map_err(rusqlite::Error::from)?
            {
                let found = Found {
                    position: *position as u32,
                    span: *span,
                    chars,
                    owner: crate::core::paragraphs::Holder {
                        page: owner.unwrap_or(0),
                        position: 0,
                        split,
                    },
                    normalized: mine_norm,
                };
                confirmed.push((found, *owner, url.clone()));
            }
        }
        writer.page(id, &text, split, &confirmed, false)?;
        at += mine;
    }
    Ok(())
}
