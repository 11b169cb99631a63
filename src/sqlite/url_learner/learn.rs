//! The URL rules' learner: `dedup_learn_url_rules()` reads the rows of the
//! pages table and of the archive added since its last batch, compares each
//! new URL with the URLs seen on its domain and path (content hash,
//! duplicate group, MinHash of the text), and adds what it saw to
//! `dedup_url_rules` (see [`crate::core::url_rules`]).
//!
//! What the learner remembers of the URLs it has seen (their path, query and
//! a MinHash of their text) lives in `dedup_url_seen` and
//! `dedup_url_params`; `dedup_url_state` says where the last batch ended, so
//! a new batch reads only the rows added since (the tables and the
//! state: [`super::state`]).

use std::collections::HashMap;

use rusqlite::types::Value;
use rusqlite::{params, Connection, OptionalExtension, Result, Statement};

use super::chrome::ChromeMemory;
use super::memory::{LearnerMemory, MemoryCache, RuleRow, SchemaSeen, Seen};
use super::model::Stamp;
use super::state::{checked_schema, watermarks, Checked, Watermarks};
use crate::core::hash::sha1_hex;
use crate::core::sketch::{MinHasher, Shingling};
use crate::core::url::{canonicalize, UrlOptions};
use crate::core::url_model::Change;
use crate::core::url_rules::{
    only_difference, param_rules, probability, refetch_rule, variant_rule, RuleKey, UrlParts,
};
use crate::sqlite::ground::error::DedupError;
use crate::sqlite::ground::interrupt::{halt_error, InterruptPoll};

/// Pairs of one path compared per new URL: the most recent ones.
pub const MAX_COMPARED: i64 = 200;
/// MinHash values kept per URL (the low 16 bits of each: two texts'
/// values collide by chance once in 65,536, and 256 values estimate a
/// Jaccard near 0.9 within about 0.02).
const NUM_PERM: usize = 256;
/// How the rules see a URL: canonicalized with every parameter kept except
/// the tracking ones, and nothing ignored (made once: its lists are
/// owned strings).
pub(super) fn rule_options() -> &'static UrlOptions {
    static OPTIONS: std::sync::OnceLock<UrlOptions> = std::sync::OnceLock::new();
    OPTIONS.get_or_init(|| UrlOptions {
        keep_params: true,
        ignore: Vec::new(),
        ..UrlOptions::default()
    })
}

/// `url` canonicalized and split as the rules see it, with its key
/// ([`UrlParts::key`]) and the canonical URL.
pub(super) fn rule_parts(url: &str, opts: &UrlOptions) -> Option<(String, UrlParts, String)> {
    let canonical = canonicalize(url, opts).ok()?.url;
    let parts = UrlParts::parse(&canonical)?;
    Some((parts.key(), parts, canonical))
}

/// A signature as kept: the low 16 bits of each MinHash value.
fn short_signature(sig: &[u32]) -> Vec<u16> {
    sig.iter().map(|v| *v as u16).collect()
}

/// A kept signature as a BLOB of little-endian `u16`s.
fn signature_blob(sig: &[u16]) -> Vec<u8> {
    sig.iter().flat_map(|v| v.to_le_bytes()).collect()
}

fn signature_values(blob: &[u8]) -> Vec<u16> {
    blob.chunks_exact(2)
        .map(|c| u16::from_le_bytes([c[0], c[1]]))
        .collect()
}

/// A statement prepared at its first use (most batches of one row need
/// few of the learner's statements).
struct Lazy<'c> {
    db: &'c Connection,
    sql: &'static str,
    stmt: Option<Statement<'c>>,
}

impl<'c> Lazy<'c> {
    fn new(db: &'c Connection, sql: &'static str) -> Self {
        Lazy {
            db,
            sql,
            stmt: None,
        }
    }

    /// The statement, prepared now if it was not yet.
    fn get(&mut self) -> Result<&mut Statement<'c>> {
        if self.stmt.is_none() {
            self.stmt = Some(self.db.prepare(self.sql)?);
        }
        Ok(self.stmt.as_mut().expect("just prepared"))
    }
}

/// What one learning batch did.
#[derive(Debug, Default)]
struct Learned {
    new_urls: i64,
    already_seen: i64,
    unparseable: i64,
    rules_updated: usize,
}

/// What a learning batch changed: the model's stamp before and after, the
/// changes (for the connection's [`super::model::ModelCache`]) and
/// what the learner remembers for the next batch (stamped `after`).
pub(super) struct Batch {
    pub(super) before: Stamp,
    pub(super) after: Stamp,
    pub(super) changes: Vec<Change>,
    pub(super) memory: LearnerMemory,
    pub(super) schema: SchemaSeen,
}

/// Learns from the rows added since the last batch (all rows the first
/// time), in `crawled` order, starting from what `memories` holds when the
/// tables are as the connection's last batch left them; returns the
/// report.
pub(super) fn learn(
    db: &Connection,
    table: &str,
    memories: &MemoryCache,
    batch: &mut Option<Batch>,
) -> std::result::Result<String, DedupError> {
    let Checked {
        source,
        versions,
        state,
    } = checked_schema(db, table, memories)?;
    let source = &source;
    let state_value = |k: &str| state.get(k).cloned().unwrap_or(Value::Null);
    let before: Stamp = state_value("version");
    let LearnerMemory {
        mut paths,
        segments,
        rules: mut rule_rows,
    } = memories.take(&before);
    let mut changes: Vec<Change> = Vec::new();
    let (from_rowid, from_archive) = watermarks(db, source, &state)?;
    let opts = rule_options();
    let shingling = Shingling::new("word", 4).expect("a valid shingling");
    let hasher = MinHasher::new(NUM_PERM);
    let mut counts: HashMap<RuleKey, (i64, i64)> = HashMap::new();
    let mut learned = Learned::default();
    // Safety: the handle is this call's connection, used on this thread.
    let poll = std::cell::RefCell::new(unsafe { InterruptPoll::new(db.handle()) });
    let stop = || poll.borrow_mut().interrupted();
    let mut next_seen: i64 = match state.get("seen") {
        Some(Value::Integer(i)) => *i,
        _ => db.query_row(
            "SELECT coalesce(max(seen), 0) + 1 FROM main.dedup_url_seen",
            [],
            |r| r.get(0),
        )?,
    };
    let mut rows = db.prepare(
        "SELECT url, title, content, parsed, content_hash, grp, kind, id FROM (
           SELECT 0 AS kind, rid AS id, url, title, content, parsed, content_hash, crawled, rid AS grp
           FROM temp._dedup_source WHERE rid > ?1
           UNION ALL
           SELECT 1, archive_rowid, url, title, content, parsed, content_hash, crawled,
                  CASE WHEN dedup_phase IN (3, 4) THEN dedup_survivor END
           FROM temp._dedup_archive WHERE archive_rowid > ?2)
         ORDER BY crawled IS NULL, crawled, kind, id",
    )?;
    let mut is_seen = db.prepare(
        "SELECT content_hash, grp, signature, raw FROM main.dedup_url_seen WHERE url = ?1",
    )?;
    let mut refetched = Lazy::new(
        db,
        "UPDATE main.dedup_url_seen SET content_hash = ?2, grp = ?3, signature = ?4, raw = ?5 WHERE url = ?1",
    );
    let mut same_path = Lazy::new(
        db,
        "SELECT query, content_hash, grp, signature FROM main.dedup_url_seen
         WHERE domain = ?1 AND path = ?2 ORDER BY seen DESC LIMIT ?3",
    );
    let mut add_seen = db.prepare(
        "INSERT INTO main.dedup_url_seen (url, domain, path, query, content_hash, grp, signature, seen, raw)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
    )?;
    let mut add_param = Lazy::new(
        db,
        "INSERT INTO main.dedup_url_params (domain, path, rest, param, value) VALUES (?1, ?2, ?3, ?4, ?5)",
    );
    let mut chrome = ChromeMemory::new(db, segments)?;
    let mut cursor = rows.query(params![from_rowid, from_archive])?;
    // Where this batch ends: the table's last row (and its URL) and the
    // archive's, as the rows read show them (every row past the
    // watermarks is read).
    let mut last = Watermarks::after(from_rowid, from_archive, &state);
    while let Some(row) = cursor.next()? {
        last.note(row.get(6)?, row.get(7)?, || row.get(0))?;
        let text_of = |i: usize| -> Result<Option<String>> {
            Ok(match row.get::<_, Value>(i)? {
                Value::Text(t) => Some(t),
                _ => None,
            })
        };
        let Some(url) = text_of(0)? else {
            learned.unparseable += 1;
            continue;
        };
        let Some((canonical, parts, _)) = rule_parts(&url, opts) else {
            learned.unparseable += 1;
            continue;
        };
        let before: Option<(Seen, Option<String>)> = is_seen
            .query_row([&canonical], |r| {
                let seen = Seen {
                    parts: parts.clone(),
                    content_hash: r.get(0)?,
                    grp: r.get(1)?,
                    signature: r
                        .get::<_, Option<Vec<u8>>>(2)?
                        .map(|b| signature_values(&b)),
                };
                Ok((seen, r.get(3)?))
            })
            .optional()?;
        // The text compared: parsed, else title and content as they are (the
        // word shingles lowercase and split on non-alphanumerics anyway).
        let text = match text_of(3)?.filter(|p| !p.is_empty()) {
            Some(parsed) => Some(parsed),
            None => text_of(2)?.filter(|c| !c.is_empty()).map(|content| {
                format!(
                    "{}\n\n{content}",
                    text_of(1).ok().flatten().unwrap_or_default()
                )
            }),
        };
        let content_hash = text_of(4)?.or_else(|| text.as_deref().map(|t| sha1_hex(t.as_bytes())));
        // The signature is of the text without the site's chrome: on a site
        // whose pages are mostly chrome, distinct pages are not the same.
        let compared = match text.as_deref() {
            Some(t) => {
                let title = text_of(1)?.unwrap_or_default();
                chrome.strip(&parts.domain, &title, t)?
            }
            None => None,
        };
        let signature = match compared.as_deref().or(text.as_deref()) {
            Some(t) => {
                let hashes = shingling.hashes_or_halt(t, &stop).map_err(halt_error)?;
                hasher
                    .signature_or_halt(&hashes, &stop)
                    .map_err(halt_error)?
                    .map(|sig| short_signature(&sig))
            }
            None => None,
        };
        let grp = match row.get::<_, Value>(5)? {
            Value::Integer(i) => Some(i),
            _ => None,
        };
        let item = Seen {
            parts: parts.clone(),
            content_hash,
            grp,
            signature,
        };
        let key = (parts.domain.clone(), parts.path.clone());
        if let Some((earlier, raw)) = before {
            // Fetched again: the same URL (the refetch rule) or another
            // form of it (the variant rule); its content is now the latest.
            let dup = item.same_content(&earlier) as i64;
            let rule = if raw.as_deref() == Some(url.as_str()) {
                refetch_rule(&parts.domain)
            } else {
                variant_rule(&parts.domain)
            };
            let c = counts.entry(rule).or_insert((0, 0));
            c.0 += 1;
            c.1 += dup;
            refetched.get()?.execute(params![
                canonical,
                item.content_hash,
                item.grp,
                item.signature.as_deref().map(signature_blob),
                url
            ])?;
            changes.push(Change::Refetched {
                key: canonical.clone(),
                raw: url.clone(),
            });
            if let Some(cached) = paths
                .get_mut(&key)
                .and_then(|v| v.iter_mut().find(|s| s.parts.query == parts.query))
            {
                *cached = item;
            }
            learned.already_seen += 1;
            continue;
        }
        if !paths.contains_key(&key) {
            let mut earlier = same_path
                .get()?
                .query_map(params![parts.domain, parts.path, MAX_COMPARED], |r| {
                    Ok(Seen {
                        parts: UrlParts::from_key(
                            &parts.domain,
                            &parts.path,
                            &r.get::<_, String>(0)?,
                        ),
                        content_hash: r.get(1)?,
                        grp: r.get(2)?,
                        signature: r
                            .get::<_, Option<Vec<u8>>>(3)?
                            .map(|b| signature_values(&b)),
                    })
                })?
                .collect::<Result<Vec<Seen>>>()?;
            earlier.reverse();
            paths.insert(key.clone(), earlier);
        }
        let earlier = paths.get_mut(&key).expect("just inserted");
        // The pairs with the earlier URLs of the path, counted per rule
        // (as core::url_rules::evidence defines them, aggregated).
        let (mut path_pairs, mut path_dups) = (0i64, 0i64);
        let mut by_param: HashMap<(String, Option<String>), (i64, i64)> = HashMap::new();
        for other in earlier.iter().rev().take(MAX_COMPARED as usize) {
            // (No earlier URL has this query: that would be a refetch.)
            let dup = item.same_content(other) as i64;
            path_pairs += 1;
            path_dups += dup;
            if let Some(diff) = only_difference(&parts, &other.parts) {
                let c = by_param.entry(diff).or_insert((0, 0));
                c.0 += 1;
                c.1 += dup;
            }
        }
        let mut add = |key: RuleKey, n: i64, d: i64| {
            let c = counts.entry(key).or_insert((0, 0));
            c.0 += n;
            c.1 += d;
        };
        if path_pairs > 0 {
            add(
                RuleKey::new(&parts.domain, Some(&parts.path), None, None),
                path_pairs,
                path_dups,
            );
        }
        for ((param, added), (n, d)) in by_param {
            for key in param_rules(&parts, &param, added.as_deref()) {
                add(key, n, d);
            }
        }
        add_seen.execute(params![
            canonical,
            parts.domain,
            parts.path,
            parts.query_key(),
            item.content_hash,
            item.grp,
            item.signature.as_deref().map(signature_blob),
            next_seen,
            url
        ])?;
        next_seen += 1;
        changes.push(Change::Seen {
            key: canonical.clone(),
            domain: parts.domain.clone(),
            path: parts.path.clone(),
            query: parts.query_key(),
            raw: url.clone(),
        });
        for (param, value) in &parts.query {
            let rest = parts.query_key_without(param);
            add_param
                .get()?
                .execute(params![parts.domain, parts.path, rest, param, value])?;
            changes.push(Change::Param {
                domain: parts.domain.clone(),
                path: parts.path.clone(),
                rest,
                param: param.clone(),
                value: value.clone(),
            });
        }
        earlier.push(item);
        if earlier.len() > 2 * MAX_COMPARED as usize {
            earlier.drain(..earlier.len() - MAX_COMPARED as usize);
        }
        learned.new_urls += 1;
    }
    drop(cursor);
    let segments = chrome.into_cache()?;
    learned.rules_updated = counts.len();
    save_counts(db, counts, &mut rule_rows, &mut changes)?;
    let Watermarks {
        rowid: last_rowid,
        url: last_url,
        archive: archive_max,
    } = last;
    // (A new random version every batch: the stamp of what it learned.)
    let version: i64 = db.query_row("SELECT random()", [], |r| r.get(0))?;
    db.execute(
        // (An upsert changes the rows in place: the key's index is not
        // written, where a replace would delete and insert each row.)
        "INSERT INTO main.dedup_url_state (key, value)
         VALUES ('table', ?1), ('rowid', ?2), ('url', ?3), ('archive_rowid', ?4), ('seen', ?5),
                ('version', ?6)
         ON CONFLICT (key) DO UPDATE SET value = excluded.value",
        params![
            source.table,
            last_rowid.unwrap_or(i64::MIN),
            last_url,
            archive_max,
            next_seen,
            version
        ],
    )?;
    *batch = Some(Batch {
        before,
        after: Value::Integer(version),
        changes,
        memory: LearnerMemory {
            paths,
            segments,
            rules: rule_rows,
        },
        schema: SchemaSeen {
            versions,
            stamp: Value::Integer(version),
            table: table.to_string(),
            source: source.clone(),
        },
    });
    Ok(format!(
        "learned from {} new URL(s) ({} already seen, {} without an http(s) URL); {} rule(s) updated",
        learned.new_urls, learned.already_seen, learned.unparseable, learned.rules_updated
    ))
}

/// Adds the batch's counts to `dedup_url_rules` and recomputes the
/// probability of every rule it touched; `known` holds rules' rows as the
/// table does (read from it when missing) and is kept current.
fn save_counts(
    db: &Connection,
    counts: HashMap<RuleKey, (i64, i64)>,
    known: &mut HashMap<RuleKey, RuleRow>,
    changes: &mut Vec<Change>,
) -> Result<()> {
    let mut find = Lazy::new(
        db,
        "SELECT rowid, observations, duplicates FROM main.dedup_url_rules
         WHERE domain = ?1 AND path IS ?2 AND param IS ?3 AND value IS ?4",
    );
    let mut update = Lazy::new(
        db,
        "UPDATE main.dedup_url_rules SET observations = ?2, duplicates = ?3, probability = ?4 WHERE rowid = ?1",
    );
    let mut insert = Lazy::new(
        db,
        "INSERT INTO main.dedup_url_rules (domain, path, param, value, observations, duplicates, probability)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
    );
    let mut keys: Vec<(RuleKey, (i64, i64))> = counts.into_iter().collect();
    keys.sort();
    for (k, (obs, dups)) in keys {
        let found = match known.get(&k) {
            Some(row) => Some(*row),
            None => find
                .get()?
                .query_row(params![k.domain, k.path, k.param, k.value], |r| {
                    Ok((r.get(0)?, r.get(1)?, r.get(2)?))
                })
                .optional()?,
        };
        let row = match found {
            Some((rowid, o, d)) => {
                let (o, d) = (o.saturating_add(obs), d.saturating_add(dups));
                update
                    .get()?
                    .execute(params![rowid, o, d, probability(o, d)])?;
                (rowid, o, d)
            }
            None => {
                insert.get()?.execute(params![
                    k.domain,
                    k.path,
                    k.param,
                    k.value,
                    obs,
                    dups,
                    probability(obs, dups)
                ])?;
                (db.last_insert_rowid(), obs, dups)
            }
        };
        changes.push(Change::Rule {
            probability: probability(row.1, row.2),
            key: k.clone(),
        });
        known.insert(k, row);
    }
    Ok(())
}
