//! The settings as the user writes them: the pairs of `dedup_settings(key,
//! value)` (when that table exists), then the JSON object passed to the
//! call on top, each pair named where it came from, then checked.

use crate::sqlite::ground::error::Code;
use crate::sqlite::ground::error::{fail, DedupError};
use crate::sqlite::ground::shown::{describe_value, excerpt};
use crate::sqlite::settings::check::{parse, unknown_keys};
use crate::sqlite::settings::declared::{setting, Kind, SETTINGS};
use crate::sqlite::settings::values::{Origin, Settings};
use crate::sqlite::tables::schema::{self, quote_ident};
use rusqlite::types::Value;
use rusqlite::Connection;

/// The settings that JSON's `true` and `false` may give (as 1 and 0).
fn flag_settings() -> Vec<&'static str> {
    SETTINGS
        .iter()
        .filter(|s| matches!(s.kind, Kind::Flag { .. }))
        .map(|s| s.name)
        .collect()
}

/// Reads the settings: `dedup_settings` first, then `overrides` (a JSON
/// object or NULL, the argument of the SQL function `function`, which the
/// errors about it name) on top; every value checked.
pub fn read(
    db: &Connection,
    function: &str,
    overrides: Option<&str>,
) -> std::result::Result<Settings, DedupError> {
    let mut pairs: Vec<(String, Value)> = Vec::new();
    if let Some(kind) = schema::object_type(db, "dedup_settings")? {
        if kind != "table" && kind != "view" {
            return fail(
                Code::Setting,
                format!("dedup: dedup_settings must be a table, got a {kind}"),
            );
        }
        let sql = format!(
            "SELECT key, value FROM main.{}",
            quote_ident("dedup_settings")
        );
        let mut stmt = db.prepare(&sql).map_err(|e| {
            DedupError::new(
                Code::Setting,
                format!("dedup: dedup_settings must have columns key and value, got {e}"),
            )
        })?;
        let rows = stmt.query_map([], |r| Ok((r.get::<_, Value>(0)?, r.get::<_, Value>(1)?)))?;
        for row in rows {
            let (key, value) = row?;
            match key {
                Value::Text(k) if pairs.iter().any(|(seen, _)| *seen == k) => {
                    return fail(Code::Setting, format!(
                        "dedup: dedup_settings must hold each key once, got '{}' twice (delete one; key TEXT PRIMARY KEY keeps it so)",
                        k.replace('\'', "''")
                    ))
                }
                Value::Text(k) => pairs.push((k, value)),
                other => {
                    return fail(Code::Setting, format!(
                        "dedup: unknown setting in dedup_settings, got {}",
                        describe_value(&other)
                    ))
                }
            }
        }
        if let Some(unknown) = unknown_keys(&pairs) {
            return fail(
                Code::Setting,
                format!("dedup: unknown setting in dedup_settings, got {unknown}"),
            );
        }
    }
    let from_database = pairs.len();
    if let Some(json) = overrides {
        pairs.extend(json_pairs(db, function, json)?);
    }
    parsed(&pairs, from_database)
}

/// The settings of the run an index was written by (`recorded`, the JSON
/// `dedup_index_state.settings` holds), then `overrides` on top: what
/// `dedup_similar` compares with. The recorded pairs are the database's
/// (a `prefer` among them is held to a schema's rules, as one read from
/// `dedup_settings`); `dedup_settings` itself is not read (the recorded
/// settings already hold what it gave that run).
pub fn read_recorded(
    db: &Connection,
    function: &str,
    recorded: &str,
    overrides: Option<&str>,
) -> std::result::Result<Settings, DedupError> {
    let mut pairs =
        json_pairs(db, "the recorded settings of the index", recorded).map_err(|e| {
            DedupError::new(
                Code::Own,
                format!(
                    "{function}: {} (dedup_index_state was edited by hand)",
                    e.words()
                ),
            )
        })?;
    let from_database = pairs.len();
    if let Some(json) = overrides {
        pairs.extend(json_pairs(db, function, json)?);
    }
    parsed(&pairs, from_database)
}

/// The settings of `pairs`, checked; the first `from_database` came from
/// the database (a `prefer` among them, when the last, is held to a
/// schema's rules).
fn parsed(
    pairs: &[(String, Value)],
    from_database: usize,
) -> std::result::Result<Settings, DedupError> {
    let mut s = parse(pairs)?;
    // (The JSON argument's pairs come last: the last `prefer` is the one
    // parse kept.)
    if let Some(at) = pairs.iter().rposition(|(k, _)| k == "prefer") {
        if at < from_database {
            s.prefer_from = Origin::Database;
        }
    }
    if let Some(at) = pairs.iter().rposition(|(k, _)| k == "against") {
        if at < from_database {
            s.against_from = Origin::Database;
        }
    }
    Ok(s)
}

/// The pairs of `json`, a JSON object of settings (the argument of the SQL
/// function `function`, which the errors name), each key once and known.
fn json_pairs(
    db: &Connection,
    function: &str,
    json: &str,
) -> std::result::Result<Vec<(String, Value)>, DedupError> {
    // (json_type raises "malformed JSON" on text that is not JSON,
    // which would not say what was wrong: asked only of valid JSON.)
    let (valid, object): (bool, bool) = db.query_row(
        "SELECT json_valid(?1), CASE WHEN json_valid(?1) THEN json_type(?1) = 'object' ELSE 0 END",
        [json],
        |r| Ok((r.get(0)?, r.get(1)?)),
    )?;
    if !object {
        return fail(
            Code::Setting,
            format!(
                "{function}: settings must be a JSON object, got {}{}",
                excerpt(json),
                if valid { "" } else { " (not valid JSON)" }
            ),
        );
    }
    let mut stmt = db.prepare("SELECT key, value, type IN ('true', 'false') FROM json_each(?1)")?;
    let rows = stmt.query_map([json], |r| {
        Ok((
            r.get::<_, String>(0)?,
            r.get::<_, Value>(1)?,
            r.get::<_, bool>(2)?,
        ))
    })?;
    let mut given: Vec<(String, Value)> = Vec::new();
    for row in rows {
        let (key, value, yes_or_no) = row?;
        // (JSON's true and false reach SQL as 1 and 0, which a number
        // setting would take: `"distance": true` would compare nothing.)
        let flags = flag_settings();
        if yes_or_no && setting(&key).is_some() && !flags.contains(&key.as_str()) {
            return fail(Code::Setting, format!(
                "{function}: {key} is not a true-or-false setting (only {} and {} are), got {} in {}",
                flags[..flags.len() - 1].join(", "),
                flags[flags.len() - 1],
                if value == Value::Integer(1) {
                    "true"
                } else {
                    "false"
                },
                excerpt(json)
            ));
        }
        // (JSON allows a name twice; which one would win is no reader's
        // guess, so neither does.)
        if given.iter().any(|(k, _)| *k == key) {
            return fail(
                Code::Setting,
                format!(
                    "{function}: settings must name each setting once, got '{}' twice in {}",
                    key.replace('\'', "''"),
                    excerpt(json)
                ),
            );
        }
        given.push((key, value));
    }
    if let Some(unknown) = unknown_keys(&given) {
        return fail(
            Code::Setting,
            format!("{function}: unknown setting in the settings argument, got {unknown}"),
        );
    }
    Ok(given)
}
