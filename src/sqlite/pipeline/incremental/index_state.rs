//! `dedup_index_state`: the key–value table in which the incremental
//! runs' index ([`super::index`]) and change log ([`super::changes`]) keep
//! what the next run checks (the run that wrote them, the settings, the
//! format, the triggers and the schema they saw), and the index's format.

use rusqlite::{Connection, OptionalExtension};

use crate::sqlite::ground::error::DedupError;

/// The index's format; an index of another is rebuilt by a full run.
pub const FORMAT: &str = "13";

/// What `dedup_index_state.version` holds: the format and the extension's
/// version (another version may canonicalize or compare differently, so
/// its index describes another run: the first run after an upgrade is full).
pub fn version() -> String {
    format!("{FORMAT} {}", env!("CARGO_PKG_VERSION"))
}

/// The settings as the index compares them: the JSON without `full`.
pub fn comparable(db: &Connection, settings_json: &str) -> Result<String, DedupError> {
    Ok(
        db.query_row("SELECT json_remove(?1, '$.full')", [settings_json], |r| {
            r.get(0)
        })?,
    )
}

/// The value of `key` in `dedup_index_state`, as text (`None` when absent).
pub fn state_value(db: &Connection, key: &str) -> Result<Option<String>, DedupError> {
    Ok(db
        .query_row(
            "SELECT CAST(value AS TEXT) FROM main.dedup_index_state WHERE key = ?1",
            [key],
            |r| r.get(0),
        )
        .optional()?
        .flatten())
}

/// The value of `key` in `dedup_index_state` as an integer (`None` when
/// absent or not one).
pub fn state_number(db: &Connection, key: &str) -> Result<Option<i64>, DedupError> {
    Ok(state_value(db, key)?.and_then(|v| v.parse().ok()))
}

/// The rows of `dedup_index`, as the run that wrote it counted them
/// (`rows`; counted when absent: a count reads the whole table, which has
/// no small index to count by).
pub fn kept_rows(db: &Connection) -> Result<i64, DedupError> {
    match state_number(db, "rows")? {
        Some(rows) => Ok(rows),
        None => Ok(db.query_row("SELECT count(*) FROM main.dedup_index", [], |r| r.get(0))?),
    }
}

/// Records the rows of `dedup_index` (see [`kept_rows`]).
pub fn set_kept_rows(db: &Connection, rows: i64) -> Result<(), DedupError> {
    db.execute(
        "INSERT OR REPLACE INTO main.dedup_index_state (key, value) VALUES ('rows', ?1)",
        [rows],
    )?;
    Ok(())
}
