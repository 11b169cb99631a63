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
