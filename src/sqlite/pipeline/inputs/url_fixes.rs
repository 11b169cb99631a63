//! The hosts' answers a `fix_urls` probe recorded, as a run's phase 1 reads
//! them: `main.dedup_url_fixes(host, https, drop_www, checked, note)`,
//! written by the probe (`sqlite_dedup.fix_urls` in Python, `sqlite-dedup
//! fix-urls` on the command line; never an SQL function: it fetches), read
//! here into `temp._dedup_url_fixes(host, options)`. With the `fix_urls`
//! setting, each URL's canonical URL takes its host's options: `https`
//! where https answered, `strip_www` where the bare host served what the
//! `www.` one did. Hosts are keyed by `url_host` ([`crate::core::url_host`]).
//!
//! Cost: one read of the answers, one lookup a row in phase 1 (none without
//! the setting). A run with `fix_urls` is always full: the answers may
//! change between runs.
//!
//! Errors: the setting without the table (probe first), a table that is not
//! one, a row whose `https` or `drop_www` is not 0, 1 or NULL.

use crate::sqlite::ground::error::Code;
use rusqlite::{Connection, OptionalExtension};

use crate::sqlite::ground::error::{fail, DedupError};
use crate::sqlite::ground::shown::truncate;
use crate::sqlite::settings::values::Settings;
use crate::sqlite::tables::schema::object_type;

/// The table the probe writes.
pub const TABLE: &str = "dedup_url_fixes";

/// Writes `temp._dedup_url_fixes`: the hosts whose answers change their
/// URLs, with the `canonical_url` options they add (empty without the
/// setting).
pub fn load(db: &Connection, s: &Settings) -> Result<(), DedupError> {
    db.execute_batch(
        "DROP TABLE IF EXISTS temp._dedup_url_fixes;
         CREATE TEMP TABLE _dedup_url_fixes (host TEXT PRIMARY KEY, options TEXT NOT NULL);",
    )?;
    if !s.fix_urls {
        return Ok(());
    }
    match object_type(db, TABLE)?.as_deref() {
        Some("table") => {}
        None => {
            return fail(Code::State, format!(
                "dedup: fix_urls uses the hosts' answers in {TABLE}, got no such table (probe them first: sqlite-dedup fix-urls DB, or sqlite_dedup.fix_urls(conn) in Python); nothing was changed"
            ))
        }
        Some(other) => return fail(Code::Own, format!("dedup: {TABLE} must be a table, got a {other}")),
    }
    let bad: Option<String> = db
        .query_row(
            &format!(
                "SELECT quote(host) FROM main.{TABLE}
                 WHERE typeof(host) <> 'text' OR coalesce(https, 0) NOT IN (0, 1)
                    OR coalesce(drop_www, 0) NOT IN (0, 1) LIMIT 1"
            ),
            [],
            |r| r.get(0),
        )
        .optional()
        .map_err(|e| {
            DedupError::new(
                Code::Own,
                format!(
                    "dedup: {TABLE} must have columns host, https and drop_www, got {}",
                    DedupError::from(e).words()
                ),
            )
        })?;
    if let Some(host) = bad {
        return fail(Code::Own, format!(
            "dedup: {TABLE}'s row for host {} is wrong: host must be text, https and drop_www 0, 1 or NULL; nothing was changed",
            truncate(&host, 100)
        ));
    }
    db.execute_batch(&format!(
        "INSERT INTO temp._dedup_url_fixes
         SELECT lower(host), CASE WHEN max(https = 1) THEN ',https' ELSE '' END
                             || CASE WHEN max(drop_www = 1) THEN ',strip_www' ELSE '' END
         FROM main.{TABLE} WHERE https = 1 OR drop_www = 1 GROUP BY lower(host);"
    ))?;
    Ok(())
}
