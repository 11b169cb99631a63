//! Learned URL rules in SQL (see [`crate::core::url_rules`]):
//! `dedup_learn_url_rules()` learns from the pages table and the archive of
//! earlier runs into `dedup_url_rules` ([`super::learn`]);
//! `dupe_probability(url)` and `url_rule_params(url [, min_probability])`
//! read what was learned.

use rusqlite::functions::FunctionFlags;
use rusqlite::{Connection, Result};

use super::drop_rules::learned_params;
use super::learn::{learn, rule_options, rule_parts};
use super::memory::MemoryCache;
use super::model::ModelCache;
use crate::sqlite::ground::arguments::{check_arity, text_arg, user_error};
use crate::sqlite::ground::atomic::{atomically, Lock};
use crate::sqlite::ground::held::Held;
use crate::sqlite::settings;

/// The probability `url_rule_params` requires by default (MaybeDont's
/// `AVOID_DUP_CONTENT_THRESHOLD`).
pub const DEFAULT_MIN_PROBABILITY: f64 = 0.98;

/// `None` for an error that says the model's tables do not exist yet
/// (nothing was learned in this database): then nothing is known.
fn unless_no_model<T>(result: Result<Option<T>>) -> Result<Option<T>> {
    match result {
        Err(rusqlite::Error::SqliteFailure(_, Some(m)))
            if m.starts_with("no such table: main.dedup_url_") =>
        {
            Ok(None)
        }
        other => other,
    }
}

/// The probability that fetching `url` brings no new content
/// ([`crate::core::url_model::UrlModel::dupe_probability`]), from the
/// connection's model; `None` when no rule applies or nothing was learned.
fn dupe_probability(
    db: &Connection,
    cache: &ModelCache,
    url: &str,
    refetches: bool,
) -> Result<Option<f64>> {
    let Some((key, parts, _)) = rule_parts(url, rule_options()) else {
        return Ok(None);
    };
    unless_no_model(cache.dupe_probability(db, url, &key, &parts, refetches))
}

/// The query parameters of `url` that the rules say never change content on
/// its domain (a rule of the whole domain, or of its path) with at least
/// `min_probability`, joined by `|` for `canonical_url`'s `tracking+=`
/// option; `None` when there are none.
pub(crate) fn rule_params(
    db: &Connection,
    url: &str,
    min_probability: f64,
) -> Result<Option<String>> {
    let Some((_, parts, canonical)) = rule_parts(url, rule_options()) else {
        return Ok(None);
    };
    let present: Vec<String> = canonical
        .split_once('?')
        .map(|(_, q)| {
            q.split('&')
                .map(|p| p.split('=').next().unwrap_or("").to_ascii_lowercase())
                .collect()
        })
        .unwrap_or_default();
    if present.is_empty() {
        return Ok(None);
    }
    unless_no_model(learned_params(db, &parts, &present, min_probability))
}

/// Registers `dedup_learn_url_rules`, `dupe_probability` and
/// `url_rule_params` (`held`: where `dupe_probability` keeps its stamp
/// statement prepared).
pub fn register(db: &Connection, held: Held) -> Result<()> {
    let writes = FunctionFlags::SQLITE_UTF8 | FunctionFlags::SQLITE_DIRECTONLY;
    let cache = ModelCache::new(held);
    let learner_cache = cache.clone();
    let memories = MemoryCache::default();
    db.create_scalar_function("dedup_learn_url_rules", 0, writes, move |ctx| {
        // Safety: the handle is the connection running this function, used
        // on this thread for the duration of the call.
        let db = unsafe { ctx.get_connection()? };
        let s = settings::read::read(&db, "dedup_learn_url_rules", None)?;
        let mut batch = None;
        let report = atomically(
            &db,
            Lock::Write,
            s.busy_timeout,
            "dedup_learn_url_rules",
            |db| learn(db, &s.table, &memories, &mut batch),
        )?;
        if let Some(b) = batch {
            memories.keep(b.after.clone(), b.memory);
            memories.keep_schema(b.schema);
            learner_cache.learned(&b.before, b.after, b.changes);
        }
        Ok(report)
    })?;
    let reads = FunctionFlags::SQLITE_UTF8 | FunctionFlags::SQLITE_DIRECTONLY;
    db.create_scalar_function("dupe_probability", -1, reads, move |ctx| {
        check_arity(ctx, "dupe_probability", 1, 2)?;
        // (A URL fetched before as this very URL: its domain's refetch
        // rule, or with refetches 0 none, as a re-crawl wants.)
        let refetches = match (ctx.len() > 1).then(|| ctx.get_raw(1)) {
            None | Some(rusqlite::types::ValueRef::Null) => true,
            Some(rusqlite::types::ValueRef::Integer(i)) if (0..=1).contains(&i) => i == 1,
            Some(other) => {
                return Err(user_error(
                    "dupe_probability",
                    "refetches must be 0 or 1",
                    &crate::sqlite::ground::arguments::describe(other),
                ))
            }
        };
        let Some(url) = text_arg(ctx, 0, "dupe_probability", "url")? else {
            return Ok(None);
        };
        // Safety: as above.
        let db = unsafe { ctx.get_connection()? };
        dupe_probability(&db, &cache, url, refetches)
    })?;
    db.create_scalar_function("url_rule_params", -1, reads, |ctx| {
        check_arity(ctx, "url_rule_params", 1, 2)?;
        let min = if ctx.len() > 1 {
            match ctx.get_raw(1) {
                rusqlite::types::ValueRef::Null => DEFAULT_MIN_PROBABILITY,
                rusqlite::types::ValueRef::Integer(i) if (0..=1).contains(&i) => i as f64,
                rusqlite::types::ValueRef::Real(r) if (0.0..=1.0).contains(&r) => r,
                other => {
                    return Err(user_error(
                        "url_rule_params",
                        "min_probability must be in [0.0, 1.0]",
                        &crate::sqlite::ground::arguments::describe(other),
                    ))
                }
            }
        } else {
            DEFAULT_MIN_PROBABILITY
        };
        let Some(url) = text_arg(ctx, 0, "url_rule_params", "url")? else {
            return Ok(None);
        };
        // Safety: as above.
        let db = unsafe { ctx.get_connection()? };
        rule_params(&db, url, min)
    })?;
    Ok(())
}
