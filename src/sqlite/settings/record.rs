//! The run's settings written to `temp._dedup_run`, the one row every
//! phase script reads.

use crate::sqlite::settings::values::Settings;
use rusqlite::{params, Connection, Result};

/// Writes `temp._dedup_run`, the one row every phase script reads.
pub fn write_run_row(db: &Connection, s: &Settings, run: i64, rows_before: i64) -> Result<()> {
    db.execute_batch(
        "DROP TABLE IF EXISTS temp._dedup_run;
         CREATE TEMP TABLE _dedup_run (run INTEGER, rows_before INTEGER, threshold REAL,
           distance INTEGER, discard_params INTEGER, n_min INTEGER, url_options TEXT,
           near_mode TEXT, lsh_bands INTEGER, lsh_rows INTEGER, boilerplate TEXT,
           boilerplate_min_pages INTEGER, url_rules REAL, compat TEXT, strict_options TEXT,
           lsh_election TEXT, fix_urls INTEGER);",
    )?;
    db.execute(
        "INSERT INTO temp._dedup_run VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17)",
        params![
            run,
            rows_before,
            s.threshold,
            s.distance,
            s.discard_params as i64,
            s.n_min,
            s.canonical_options(),
            s.near_mode.as_str(),
            s.lsh_bands,
            s.lsh_rows,
            s.boilerplate.as_str(),
            s.boilerplate_min_pages,
            s.url_rules,
            s.compat.as_str(),
            s.strict_options(),
            s.lsh_election.as_str(),
            s.fix_urls as i64
        ],
    )?;
    Ok(())
}
