//! The learned URL model held per connection for `dupe_probability`
//! ([`crate::core::url_model`]): read from the model's tables on the first
//! call, then kept current by this connection's learning batches, and read
//! again whole when the tables' stamp says someone else changed them.
//!
//! The stamp is `dedup_url_state`'s `version`: a random number every batch
//! writes, and that triggers rewrite when anyone edits `dedup_url_rules`.
//! One indexed read of it per call is the cost of knowing that another
//! connection or process learned or edited meanwhile; its statement is
//! kept prepared across calls by `dedup_held_statements`
//! ([`crate::sqlite::ground::held`]). A model learned
//! before versions were kept (no `version`) is read for each call, only the
//! rows of the URL's domain and path.

use std::ffi::CStr;
use std::sync::{Arc, Mutex};

use rusqlite::types::Value;
use rusqlite::{Connection, Result};

use crate::core::url_model::{Change, UrlModel};
use crate::core::url_rules::{RuleKey, UrlParts};
use crate::sqlite::ground::held::Held;

/// What identifies one state of the model's tables: `dedup_url_state`'s
/// `version` (NULL when the model predates versions).
pub type Stamp = Value;

/// The triggers that give `dedup_url_rules` a new version when a rule is
/// edited by hand (plain SQL: they work in hosts without the extension).
pub const EDIT_TRIGGERS: &str = "
CREATE TRIGGER IF NOT EXISTS main.dedup_url_rules_inserted AFTER INSERT ON dedup_url_rules BEGIN
  UPDATE dedup_url_state SET value = random() WHERE key = 'version'; END;
CREATE TRIGGER IF NOT EXISTS main.dedup_url_rules_updated AFTER UPDATE ON dedup_url_rules BEGIN
  UPDATE dedup_url_state SET value = random() WHERE key = 'version'; END;
CREATE TRIGGER IF NOT EXISTS main.dedup_url_rules_deleted AFTER DELETE ON dedup_url_rules BEGIN
  UPDATE dedup_url_state SET value = random() WHERE key = 'version'; END;
";

/// A connection's model, shared by its `dupe_probability` and its
/// `dedup_learn_url_rules`, and where the stamp's statement is held.
#[derive(Clone)]
pub struct ModelCache {
    model: Arc<Mutex<Option<(Stamp, UrlModel)>>>,
    held: Held,
}

/// The statement that reads the stamp (its comment makes it the only one
/// with this text: see [`Held::value`]).
const STAMP: &CStr =
    c"SELECT value FROM main.dedup_url_state WHERE key = 'version' -- dupe_probability's stamp";

/// The tables' stamp now; an error when nothing was learned.
fn stamp(db: &Connection, held: &Held) -> Result<Stamp> {
    use rusqlite::OptionalExtension;
    if let Some(found) = held.value(db, STAMP) {
        return Ok(found?.unwrap_or(Value::Null));
    }
    let sql = STAMP.to_str().expect("ASCII");
    Ok(db
        .query_row(sql, [], |r| r.get(0))
        .optional()?
        .unwrap_or(Value::Null))
}

/// A text column, or `None` for NULL and for a value no lookup can match.
fn text(v: Value) -> Option<String> {
    match v {
        Value::Text(t) => Some(t),
        _ => None,
    }
}

/// The first `N` columns of a row as texts; `None` when one is not text.
fn texts<const N: usize>(r: &rusqlite::Row<'_>) -> Result<Option<[String; N]>> {
    let mut out: [String; N] = std::array::from_fn(|_| String::new());
    for (i, slot) in out.iter_mut().enumerate() {
        match text(r.get(i)?) {
            Some(t) => *slot = t,
            None => return Ok(None),
        }
    }
    Ok(Some(out))
}

/// The rows of the model that a URL of `only`'s (domain, path) can read;
/// every row for `None`.
fn load(db: &Connection, only: Option<&UrlParts>) -> Result<UrlModel> {
    let (d, p) = only.map_or(("", ""), |o| (o.domain.as_str(), o.path.as_str()));
    let all = only.is_none();
    let mut model = UrlModel::new();
    let mut seen = db.prepare(
        "SELECT url, domain, path, query, raw FROM main.dedup_url_seen
         WHERE ?1 OR (domain = ?2 AND path = ?3)",
    )?;
    let mut rows = seen.query(rusqlite::params![all, d, p])?;
    while let Some(r) = rows.next()? {
        if let Some([key, domain, path, query]) = texts::<4>(r)? {
            let raw = text(r.get(4)?).unwrap_or_default();
            model.apply(Change::Seen {
                key,
                domain,
                path,
                query,
                raw,
            });
        }
    }
    let mut params = db.prepare(
        "SELECT domain, path, rest, param, value FROM main.dedup_url_params
         WHERE ?1 OR (domain = ?2 AND path = ?3)",
    )?;
    let mut rows = params.query(rusqlite::params![all, d, p])?;
    while let Some(r) = rows.next()? {
        if let Some([domain, path, rest, param, value]) = texts::<5>(r)? {
            model.apply(Change::Param {
                domain,
                path,
                rest,
                param,
                value,
            });
        }
    }
    // (Of two rows with one key, SQL lookups found the first by rowid: it
    // is applied last.)
    let mut rules = db.prepare(
        "SELECT domain, path, param, value, probability FROM main.dedup_url_rules
         WHERE ?1 OR domain IN (?2, '*') ORDER BY rowid DESC",
    )?;
    let mut rows = rules.query(rusqlite::params![all, d])?;
    while let Some(r) = rows.next()? {
        let (domain, path, param, value): (Value, Value, Value, Value) =
            (r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?);
        let nullable = |v: Value| match v {
            Value::Null => Some(None),
            Value::Text(t) => Some(Some(t)),
            _ => None,
        };
        let probability = match r.get::<_, Value>(4)? {
            Value::Real(p) => p,
            Value::Integer(p) => p as f64,
            _ => continue,
        };
        if let (Some(domain), Some(path), Some(param), Some(value)) = (
            text(domain),
            nullable(path),
            nullable(param),
            nullable(value),
        ) {
            model.apply(Change::Rule {
                key: RuleKey {
                    domain,
                    path,
                    param,
                    value,
                },
                probability,
            });
        }
    }
    Ok(model)
}

impl ModelCache {
    /// An empty cache whose stamp statement `held` keeps.
    pub fn new(held: Held) -> Self {
        ModelCache {
            model: Arc::default(),
            held,
        }
    }

    /// The probability that fetching `url` brings no new content
    /// ([`UrlModel::dupe_probability`]), from the model as its tables are
    /// now (an error when they do not exist).
    pub fn dupe_probability(
        &self,
        db: &Connection,
        url: &str,
        key: &str,
        parts: &UrlParts,
        refetches: bool,
    ) -> Result<Option<f64>> {
        let now = stamp(db, &self.held)?;
        let unversioned = now == Value::Null;
        // (A call from inside a call on this connection cannot happen
        // through our SQL, but would read the tables rather than wait.)
        let locked = self.model.try_lock();
        let (false, Ok(mut cached)) = (unversioned, locked) else {
            return Ok(load(db, Some(parts))?.dupe_probability(url, key, parts, refetches));
        };
        if cached.as_ref().map(|(s, _)| s) != Some(&now) {
            *cached = None;
            let model = load(db, None)?;
            *cached = Some((now, model));
        }
        let (_, model) = cached.as_ref().expect("just loaded");
        Ok(model.dupe_probability(url, key, parts, refetches))
    }

    /// After this connection's learning batch committed: the batch's
    /// changes applied when the model held was the one it started from,
    /// else the model is dropped (read again at the next call).
    pub fn learned(&self, before: &Stamp, after: Stamp, changes: Vec<Change>) {
        let Ok(mut cached) = self.model.lock() else {
            return;
        };
        match cached.as_mut() {
            Some((stamp, model)) if stamp == before => {
                for c in changes {
                    model.apply(c);
                }
                *stamp = after;
            }
            _ => *cached = None,
        }
    }
}
