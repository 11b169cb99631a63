//! `dedup_index_state`: the key–value table in which the incremental
//! runs' index ([`super::index`]) and change log ([`super::changes`]) keep
//! what the next run checks (the run that wrote them, the settings, the
//! format, the triggers and the schema they saw).

use rusqlite::{Connection, OptionalExtension};

use super::DedupError;

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

/// The rows of `dedup_index`, as the run that wrote it counted them
/// (`rows`; counted when absent: a count reads the whole table, which has
/// no small index to count by).
pub fn kept_rows(db: &Connection) -> Result<i64, DedupError> {
    match state_value(db, "rows")?.and_then(|v| v.parse().ok()) {
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
