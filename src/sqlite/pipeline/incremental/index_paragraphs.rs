//! The index of paragraphs (`dedup_index_paragraphs`): each kept page's
//! paragraphs of `paragraph_min` characters as its text is after a run
//! with `paragraphs = 'dedup'`, by key
//! ([`crate::core::paragraphs::key_of`]), for the next incremental run's
//! scope ([`crate::sqlite::pipeline::run::paragraphs`]). A run without
//! the setting empties it (the next run with it is full: its settings
//! differ).

use rusqlite::Connection;

use crate::sqlite::ground::error::DedupError;

/// Writes the index after apply: all of it in a full run; in an
/// incremental run, the rows of the pages the step examined and of those
/// that left the kept pages replaced (from `temp._dedup_paragraph_keys`).
pub fn write(db: &Connection, incremental: bool, paragraphs: bool) -> Result<(), DedupError> {
    if !paragraphs || !incremental {
        db.execute_batch("DELETE FROM main.dedup_index_paragraphs;")?;
    } else {
        db.execute_batch(
            "DELETE FROM main.dedup_index_paragraphs
             WHERE rid IN (SELECT rid FROM temp._dedup_paragraph_leaving)
                OR rid IN (SELECT rid FROM temp._dedup_paragraph_scope WHERE affected);",
        )?;
    }
    if paragraphs {
        db.execute_batch(
            "INSERT INTO main.dedup_index_paragraphs (rid, key)
             SELECT rid, key FROM temp._dedup_paragraph_keys ORDER BY rid, key;",
        )?;
    }
    Ok(())
}
