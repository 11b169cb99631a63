//! The rules that drop URL parameters (`dedup_url_rules` rows of a parameter
//! on a domain or path), as the `url_rules` setting applies them: read once
//! per run ([`with_rules_snapshot`], used by the pipeline while its phases
//! run; a connection's `temp.dedup_url_rules`, counts of many databases
//! summed, takes the place of the database's own then) or per call. A
//! module of its own: the pipeline and the learner
//! (`super::functions`) both use it, and neither imports the other.

use std::collections::HashMap;

use rusqlite::{Connection, Result};

use crate::core::url_rules::{probability, UrlParts};

/// The rules that drop parameters, by domain: (path or none for the whole
/// domain, lowercase parameter, probability).
type DropRules = HashMap<String, Vec<(Option<String>, String, f64)>>;

thread_local! {
    /// A run's copy of the rules (connection handle, rules), set by
    /// [`with_rules_snapshot`] while its phases run.
    static SNAPSHOT: std::cell::RefCell<Option<(usize, std::rc::Rc<DropRules>)>> =
        const { std::cell::RefCell::new(None) };
}

/// The connection's handle as a number: which connection a snapshot is of.
fn connection_id(db: &Connection) -> usize {
    // Safety: the pointer is only compared, never dereferenced.
    unsafe { db.handle() as usize }
}

fn load_drop_rules(db: &Connection) -> Result<DropRules> {
    let mut rules: DropRules = HashMap::new();
    // (A connection may bring the rules of many databases, their counts
    // summed, as temp.dedup_url_rules: a Spark task gives each shard those
    // of every shard so. Their probability is computed here from the counts.)
    let merged: bool = db.query_row(
        "SELECT count(*) FROM temp.sqlite_master WHERE name = 'dedup_url_rules' AND type = 'table'",
        [],
        |r| r.get::<_, i64>(0).map(|n| n > 0),
    )?;
    let sql = if merged {
        "SELECT domain, path, lower(param), observations, duplicates FROM temp.dedup_url_rules
         WHERE param IS NOT NULL AND value IS NULL AND (path IS NULL OR instr(path, '?') = 0)"
    } else {
        "SELECT domain, path, lower(param), probability, NULL FROM main.dedup_url_rules
         WHERE param IS NOT NULL AND value IS NULL AND (path IS NULL OR instr(path, '?') = 0)"
    };
    let rows = db
        .prepare(sql)?
        .query_map([], |r| {
            let p = match merged {
                true => probability(r.get(3)?, r.get(4)?),
                false => r.get(3)?,
            };
            Ok((r.get(0)?, r.get(1)?, r.get(2)?, p))
        })?
        .collect::<Result<Vec<(String, Option<String>, String, f64)>>>()?;
    for (domain, path, param, p) in rows {
        rules.entry(domain).or_default().push((path, param, p));
    }
    Ok(rules)
}

/// Runs `work` with the rules read once, for every `url_rule_params` call
/// it makes on this connection and thread (a run's phases do not change
/// the rules, and one query per URL would cost more than the rest of phase
/// 1). Without a `dedup_url_rules` table there is nothing to read.
pub fn with_rules_snapshot<T>(db: &Connection, work: impl FnOnce() -> T) -> Result<T> {
    let rules = match load_drop_rules(db) {
        Err(rusqlite::Error::SqliteFailure(_, Some(m))) if m.starts_with("no such table") => {
            DropRules::new()
        }
        other => other?,
    };
    struct Clear;
    impl Drop for Clear {
        fn drop(&mut self) {
            SNAPSHOT.with(|s| *s.borrow_mut() = None);
        }
    }
    let handle = connection_id(db);
    SNAPSHOT.with(|s| *s.borrow_mut() = Some((handle, std::rc::Rc::new(rules))));
    let _clear = Clear;
    Ok(work())
}

/// The learned parameters of `parts`' domain (and path) among `present`
/// whose rules reach `min_probability`, joined by `|`: from the run's
/// snapshot when one is set, else read now.
pub fn learned_params(
    db: &Connection,
    parts: &UrlParts,
    present: &[String],
    min_probability: f64,
) -> Result<Option<String>> {
    let handle = connection_id(db);
    let snapshot = SNAPSHOT.with(|s| {
        s.borrow()
            .as_ref()
            .filter(|(h, _)| *h == handle)
            .map(|(_, r)| r.clone())
    });
    let rules = match snapshot {
        Some(rules) => rules,
        None => std::rc::Rc::new(load_domain_rules(db, &parts.domain)?),
    };
    let mut names: Vec<&str> = rules
        .get(&parts.domain)
        .map(|list| {
            list.iter()
                .filter(|(path, param, p)| {
                    *p >= min_probability
                        && path.as_deref().is_none_or(|path| path == parts.path)
                        && !param.is_empty()
                        && present.contains(param)
                        && !param.contains([',', '|', '='])
                        && !param.contains(char::is_whitespace)
                })
                .map(|(_, param, _)| param.as_str())
                .collect()
        })
        .unwrap_or_default();
    names.sort_unstable();
    names.dedup();
    Ok((!names.is_empty()).then(|| names.join("|")))
}

/// The drop rules of one domain (outside a run's snapshot).
fn load_domain_rules(db: &Connection, domain: &str) -> Result<DropRules> {
    let list = db
        .prepare(
            "SELECT path, lower(param), probability FROM main.dedup_url_rules
             WHERE domain = ?1 AND param IS NOT NULL AND value IS NULL AND (path IS NULL OR instr(path, '?') = 0)",
        )?
        .query_map([domain], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?
        .collect::<Result<Vec<(Option<String>, String, f64)>>>()?;
    Ok(HashMap::from([(domain.to_string(), list)]))
}
