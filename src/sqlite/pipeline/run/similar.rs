//! `dedup_similar(text [, url [, settings [, page]]])`: the stored rows that
//! decide a fetched page's fate in the next run, before the page is stored
//! (Text::DeDuper's `find_similar`, answered by the pipeline itself).
//!
//! The page is added to the table, the next run is planned (incremental:
//! only the page and the rows it can meet are compared) and its plan read,
//! then everything is taken back ([`super::atomic::tentatively`]): the
//! answer is the next run's, with its phases, rules and election, by
//! construction. Two forms, one answer: the table-valued function
//! `SELECT * FROM dedup_similar(?1, ?2)`, a row per stored row the page
//! meets ([`similar_rows`]), and the scalar `SELECT dedup_similar(?1, ?2)`,
//! the same rows as a JSON array of objects ([`similar`]). Each [`Match`]:
//!
//! | column | what |
//! |---|---|
//! | `rowid` | the stored row (null: the page is removed by a rule, phase 1 or 5, no row of the table) |
//! | `url` | its URL as the table holds it now |
//! | `phase` | 2 (same canonical URL), 3 (same content), 4 (near duplicate), 1 or 5 (a rule) |
//! | `reason` | the run's reason, as `dedup_removed.dedup_reason` would hold it |
//! | `ratio` | phase 4's ratio; 1.0 in phase 3 |
//! | `survivor` | `'kept'`: the stored row survives and the page would be removed; `'new'`: the page would remove the stored row (in phase 5: by removing a page of its domain, which falls below `n_min`); null for a rule that removes the page |
//!
//! The call's statement may read or write no table besides (a subquery, a
//! join, `INSERT ... SELECT`): taking the plan back undoes its temp
//! tables, which aborts every other read of the statement (SQLite's rule
//! for a rollback that changes the schema), so such a call is refused
//! first. Arguments: `text`, the page's content (HTML or text, as the
//! `content` column holds it; `parsed` when the table has no `content`);
//! `url`; the settings as a JSON object, on top of those the incremental
//! index was written with (the last run's; NULL or absent: those alone);
//! `page`, a JSON object of the page's other columns (`{"title": "...",
//! "datetime": "..."}`; the pipeline's names or the table's). A `crawled`
//! column not given is now (`YYYY-MM-DD HH:MM:SS`, UTC): the page was just
//! fetched.
//!
//! Nothing of the page reaches the database's file or its `-wal`: the
//! cache does not spill during the call, so the page's pages stay in
//! memory until the rollback drops them (temp tables live in SQLite's
//! temporary storage, deleted when done).
//!
//! Cost: one incremental plan of a one-page batch. Errors: no index yet
//! (run `dedup_run()` once; settings whose runs are always full, such as
//! `prefer`, keep none), a connection that cannot write (the page is
//! added inside a transaction that is always rolled back), a page the
//! table's constraints refuse, a statement that uses a table besides;
//! each leaves the database as it was.

use crate::sqlite::ground::error::Code;
use crate::sqlite::pipeline::mode::RunMode;
use rusqlite::types::{Value, ValueRef};
use rusqlite::{params_from_iter, Connection, Result};

use super::plan;
use crate::sqlite::ground::arguments::{check_arity, describe, user_error, WRITES};
use crate::sqlite::ground::atomic::{caller_uses_tables, tentatively};
use crate::sqlite::ground::error::{fail, DedupError};
use crate::sqlite::ground::shown::excerpt;
use crate::sqlite::pipeline::incremental::index_state;
use crate::sqlite::pipeline::incremental::run_kind::always_full;
use crate::sqlite::settings::read::{self as settings_read, read_recorded};
use crate::sqlite::tables::schema::{self, quote_ident, Source};

const NAME: &str = "dedup_similar";

/// The page as the caller gave it.
#[derive(Debug, Clone, Default)]
pub struct Page {
    /// Its content.
    pub text: Option<String>,
    /// Its URL.
    pub url: Option<String>,
    /// Its other columns, as a JSON object.
    pub columns: Option<String>,
}

/// One stored row the page meets in the next run (see the module's doc).
#[derive(Debug, Clone, PartialEq)]
pub struct Match {
    /// The stored row; `None` for a rule (phase 1 or 5).
    pub rowid: Option<i64>,
    /// Its URL as the table holds it now.
    pub url: Option<String>,
    /// The phase that decides: 1 to 5.
    pub phase: i64,
    /// The run's reason, as the archive would hold it.
    pub reason: String,
    /// Phase 4's ratio; 1.0 in phase 3.
    pub ratio: Option<f64>,
    /// `"kept"` (the page would be removed), `"new"` (the page would
    /// remove the stored row); `None` for a rule.
    pub survivor: Option<String>,
}

/// The rows of the page's plan that involve it (`?1`, its rid): its own
/// removal (its survivor, the stored row that keeps it out), those of the
/// stored rows it would remove, and phase 5's removals of stored rows
/// whose domain falls below `n_min` because the page removes one of its
/// pages.
const MATCHES: &str =
    "SELECT r.survivor AS rowid, s.url AS url, r.phase AS phase, r.reason AS reason,
              coalesce(r.ratio, CASE WHEN r.phase = 3 THEN 1.0 END) AS ratio,
              CASE WHEN r.survivor IS NOT NULL THEN 'kept' END AS survivor
       FROM temp._dedup_removal AS r LEFT JOIN temp._dedup_source AS s ON s.rid = r.survivor
       WHERE r.source_rowid = ?1
       UNION ALL
       SELECT r.source_rowid, g.url, r.phase, r.reason,
              coalesce(r.ratio, CASE WHEN r.phase = 3 THEN 1.0 END), 'new'
       FROM temp._dedup_removal AS r JOIN temp._dedup_source AS g ON g.rid = r.source_rowid
       WHERE r.survivor = ?1
       UNION ALL
       SELECT d.source_rowid, g.url, r.phase, r.reason, NULL, 'new'
       FROM temp._dedup_domain_removed AS d
       JOIN temp._dedup_removal AS r ON r.source_rowid = d.source_rowid
       JOIN temp._dedup_source AS g ON g.rid = d.source_rowid
       WHERE d.source_rowid <> ?1 AND d.domain IN (
         SELECT coalesce(p.domain, x.domain) FROM temp._dedup_removal AS o
         LEFT JOIN temp._dedup_prepared AS p ON p.source_rowid = o.source_rowid
         LEFT JOIN main.dedup_index AS x ON x.rid = o.source_rowid
         WHERE o.survivor = ?1)
       ORDER BY 3, 1";

/// The stored rows the next run would weigh `page` against, and how, as
/// a JSON array (the scalar form), with the database as before afterwards.
pub fn similar(
    db: &Connection,
    page: &Page,
    settings: Option<&str>,
) -> std::result::Result<String, DedupError> {
    ask(db, page, settings, |db, rid| {
        Ok(db.query_row(
            &format!(
                "SELECT json_group_array(json_object('rowid', m.rowid, 'url', m.url, 'phase', m.phase,
                        'reason', m.reason, 'ratio', m.ratio, 'survivor', m.survivor))
                 FROM ({MATCHES}) AS m"
            ),
            [rid],
            |r| r.get(0),
        )?)
    })
}

/// The same answer as [`similar`], a [`Match`] a row (the table-valued
/// form).
pub fn similar_rows(
    db: &Connection,
    page: &Page,
    settings: Option<&str>,
) -> std::result::Result<Vec<Match>, DedupError> {
    ask(db, page, settings, |db, rid| {
        let mut stmt = db.prepare(MATCHES)?;
        let rows = stmt.query_map([rid], |r| {
            Ok(Match {
                rowid: r.get(0)?,
                url: r.get(1)?,
                phase: r.get(2)?,
                reason: r.get(3)?,
                ratio: r.get(4)?,
                survivor: r.get(5)?,
            })
        })?;
        Ok(rows.collect::<Result<Vec<_>>>()?)
    })
}

/// Adds the page, plans the next run, reads the plan with `read` (given
/// the page's rid) and takes everything back.
fn ask<T>(
    db: &Connection,
    page: &Page,
    settings: Option<&str>,
    read: impl FnOnce(&Connection, i64) -> std::result::Result<T, DedupError>,
) -> std::result::Result<T, DedupError> {
    let Some(recorded) = recorded_settings(db)? else {
        // (Running once helps only when the settings' runs keep an index.)
        if let Some(why) = always_full(&settings_read::read(db, NAME, settings)?, &RunMode::All) {
            return fail(Code::State, format!(
                "{NAME}: no incremental index, got settings whose runs keep none: {why} makes every run full \
                 (docs/incremental.md); a run without it leaves the index this answers from"
            ));
        }
        return fail(Code::State, format!(
            "{NAME}: no incremental index yet, got a database no run has left one in: run SELECT dedup_run() once, then ask again"
        ));
    };
    let s = read_recorded(db, NAME, &recorded, settings)?;
    if caller_uses_tables(db)? {
        return Err(in_a_read());
    }
    // (The page is never written to the file: with the cache's spill off,
    // its pages stay in memory until the rollback drops them. Spilled, a
    // large page reached free pages of the file, which the rollback does
    // not restore, or the -wal.)
    let spill: i64 = db.query_row("PRAGMA cache_spill", [], |r| r.get(0))?;
    db.execute_batch("PRAGMA cache_spill = 0")?;
    let answer = tentatively(db, s.busy_timeout, NAME, |db| {
        let s = read_recorded(db, NAME, &recorded, settings)?;
        let source = Source::inspect_mapped(db, &s.table, &s.columns)?;
        let rid = add(db, &source, page)?;
        plan::plan(db, &s, &RunMode::All).map_err(|e| {
            if e.to_string().contains("database table is locked") {
                in_a_read()
            } else {
                e
            }
        })?;
        read(db, rid)
    });
    if spill > 0 {
        db.execute_batch(&format!(
            "PRAGMA cache_spill = 1; PRAGMA main.cache_spill = {spill}"
        ))?;
    }
    answer
}

/// The error of a call whose statement uses a table besides (or of a plan
/// refused because one of `dedup_plan()` is pending on the connection).
fn in_a_read() -> DedupError {
    DedupError::new(Code::State, format!(
        "{NAME}: must be a statement of its own with its arguments as values (SELECT * FROM {NAME}(?1, ?2), or SELECT {NAME}(?1, ?2) for JSON), \
         got a statement that also reads or writes a table (a subquery, a join, INSERT ... SELECT) or a plan of dedup_plan() still pending on \
         the connection: taking the page back would abort the statement's other reads; read the page first, store the answer afterwards; \
         nothing was changed"
    ))
}

/// The settings the index was written with, when there is one.
fn recorded_settings(db: &Connection) -> std::result::Result<Option<String>, DedupError> {
    if schema::object_type(db, "dedup_index_state")?.as_deref() != Some("table") {
        return Ok(None);
    }
    index_state::state_value(db, "settings")
}

/// Adds the page to the table; its rowid.
fn add(db: &Connection, source: &Source, page: &Page) -> std::result::Result<i64, DedupError> {
    let mut columns: Vec<(String, Value)> = Vec::new();
    let mut set = |name: String, value: Value| {
        if !columns.iter().any(|(c, _)| c.eq_ignore_ascii_case(&name)) {
            columns.push((name, value));
        }
    };
    let text_column = source.column("content").or_else(|| source.column("parsed"));
    if let (Some(column), Some(text)) = (text_column, &page.text) {
        set(column, Value::Text(text.clone()));
    }
    if let (Some(column), Some(url)) = (source.column("url"), &page.url) {
        set(column, Value::Text(url.clone()));
    }
    for (name, value) in given_columns(db, source, page.columns.as_deref())? {
        set(name, value);
    }
    if let Some(column) = source.column("crawled") {
        let now: String = db.query_row("SELECT strftime('%Y-%m-%d %H:%M:%S', 'now')", [], |r| {
            r.get(0)
        })?;
        set(column, Value::Text(now));
    }
    let names: Vec<String> = columns.iter().map(|(c, _)| quote_ident(c)).collect();
    let marks: Vec<String> = (1..=columns.len()).map(|i| format!("?{i}")).collect();
    let sql = format!(
        "INSERT INTO {} ({}) VALUES ({})",
        source.qualified(),
        names.join(", "),
        marks.join(", ")
    );
    db.execute(&sql, params_from_iter(columns.iter().map(|(_, v)| v)))
        .map_err(|e| {
            DedupError::new(
                Code::Blocked,
                format!(
                    "{NAME}: the table {} refuses the page ({}); nothing was changed",
                    quote_ident(&source.table),
                    DedupError::from(e).words()
                ),
            )
        })?;
    Ok(db.last_insert_rowid())
}

/// The `page` argument's columns, each the table's (by the pipeline's name
/// or its own).
fn given_columns(
    db: &Connection,
    source: &Source,
    json: Option<&str>,
) -> std::result::Result<Vec<(String, Value)>, DedupError> {
    let Some(json) = json else {
        return Ok(Vec::new());
    };
    let object: bool = db.query_row(
        "SELECT json_valid(?1) AND json_type(?1) = 'object'",
        [json],
        |r| r.get(0),
    )?;
    if !object {
        return fail(
            Code::Argument,
            format!(
                "{NAME}: page must be a JSON object of the page's columns, got {}",
                excerpt(json)
            ),
        );
    }
    let mut stmt = db.prepare("SELECT key, value, type FROM json_each(?1)")?;
    let pairs = stmt
        .query_map([json], |r| {
            Ok((
                r.get::<_, String>(0)?,
                r.get::<_, Value>(1)?,
                r.get::<_, String>(2)?,
            ))
        })?
        .collect::<Result<Vec<_>>>()?;
    let mut out = Vec::new();
    for (key, value, kind) in pairs {
        let Some(column) = source.column(&key) else {
            return fail(
                Code::Argument,
                format!(
                    "{NAME}: page names a column {} does not have, got '{}'",
                    quote_ident(&source.table),
                    key.replace('\'', "''")
                ),
            );
        };
        if kind == "object" || kind == "array" {
            return fail(
                Code::Argument,
                format!("{NAME}: page's {key} must be a text, a number or null, got a JSON {kind}"),
            );
        }
        out.push((column, value));
    }
    Ok(out)
}

/// Registers the SQL function `dedup_similar`.
pub fn register(db: &Connection) -> Result<()> {
    db.create_scalar_function(NAME, -1, WRITES, |ctx| {
        check_arity(ctx, NAME, 1, 4)?;
        let arg =
            |i: usize, what: &str| -> Result<Option<String>> {
                if i >= ctx.len() {
                    return Ok(None);
                }
                match ctx.get_raw(i) {
                    ValueRef::Null => Ok(None),
                    ValueRef::Text(t) => std::str::from_utf8(t)
                        .map(|s| Some(s.to_owned()))
                        .map_err(|_| {
                            user_error(
                                NAME,
                                &format!("{what} is not valid UTF-8"),
                                &describe(ctx.get_raw(i)),
                            )
                        }),
                    other => Err(user_error(
                        NAME,
                        &format!("{what} must be TEXT"),
                        &describe(other),
                    )),
                }
            };
        let page = Page {
            text: arg(0, "text")?,
            url: arg(1, "url")?,
            columns: arg(3, "page")?,
        };
        let settings = arg(2, "settings")?;
        // Safety: the handle is the connection running this function, used
        // on this thread for the duration of the call.
        let db = unsafe { ctx.get_connection()? };
        Ok(similar(&db, &page, settings.as_deref())?)
    })
}
