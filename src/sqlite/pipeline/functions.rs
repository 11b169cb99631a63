//! The pipeline's SQL entry points (`dedup_run`, `dedup_plan`,
//! `dedup_apply`, `dedup_apply_plan`, `dedup_prepare`, `dedup_restore`) and
//! the helper functions its SQL phases call, and `dedup_settings_table()`
//! (every setting, as declared), registered on a connection;
//! each is a thin binding over the modules beside this one.

use rusqlite::functions::Context;
use rusqlite::types::ValueRef;
use rusqlite::{Connection, Result};

use super::external::{phase1_arrow, rows_arrow};
use super::mode::RunMode;
use super::run::{apply, kept_apart, label, plan, progress, report, restore, similar};
use super::scripts;
use crate::sqlite::ground::atomic::{atomically, Lock};
use crate::sqlite::ground::error::{fail, Code, DedupError};
use crate::sqlite::pipeline::incremental::{band_entries, index_bands, index_functions, snapshot};
use crate::sqlite::settings::choices::Action;
use crate::sqlite::settings::{self, values::Settings};
use crate::sqlite::tables::schema;

use crate::sqlite::ground::arguments::{
    check_arity, coded_error, describe, int_arg, text_arg, user_error, PURE, WRITES,
};

/// The settings JSON of argument 0, if given and not NULL.
fn settings_arg(ctx: &Context<'_>, function: &str) -> Result<Option<String>> {
    check_arity(ctx, function, 0, 1)?;
    if ctx.is_empty() {
        return Ok(None);
    }
    match ctx.get_raw(0) {
        ValueRef::Null => Ok(None),
        ValueRef::Text(t) => std::str::from_utf8(t)
            .map(|s| Some(s.to_owned()))
            .map_err(|_| {
                coded_error(
                    function,
                    Code::Setting,
                    "settings are not valid UTF-8",
                    &describe(ctx.get_raw(0)),
                )
            }),
        other => Err(coded_error(
            function,
            Code::Setting,
            "settings must be a JSON object as TEXT",
            &describe(other),
        )),
    }
}

/// Reads the settings (outside any transaction: only the busy timeout is
/// needed before it starts; the plan reads them again inside).
fn read_settings(
    db: &Connection,
    function: &str,
    json: Option<&str>,
) -> std::result::Result<Settings, DedupError> {
    settings::read::read(db, function, json)
}

/// Registers the pipeline's SQL functions: the entry points, in the order
/// a user meets them, then the helpers the phases call.
pub fn register(db: &Connection) -> Result<()> {
    progress::register(db)?;
    index_functions::register(db)?;
    crate::sqlite::tables::identity::register(db)?;
    super::run::similar_table::register(db)?;
    index_bands::register(db)?;
    band_entries::register(db)?;
    kept_apart::register(db)?;
    similar::register(db)?;
    phase1_arrow::register(db)?;
    rows_arrow::register(db)?;
    dedup_run(db)?;
    dedup_plan(db)?;
    dedup_prepare(db)?;
    dedup_apply_plan(db)?;
    dedup_apply(db)?;
    dedup_restore(db)?;
    dedup_extra_params(db)?;
    dedup_invalid_text(db)?;
    db.create_scalar_function("dedup_settings_table", 0, PURE, |_| {
        Ok(settings::declared::table_json())
    })?;
    dedup_settings_checked(db)?;
    Ok(())
}

/// `dedup_settings_checked([settings])`: every setting as a run with these
/// settings would use it (`dedup_settings`, then the argument on top,
/// checked, defaults and rules across settings applied), as JSON, with
/// `measure_spec`. Reads `dedup_settings`, so it is `DIRECTONLY`.
fn dedup_settings_checked(db: &Connection) -> Result<()> {
    let flags = rusqlite::functions::FunctionFlags::SQLITE_UTF8
        | rusqlite::functions::FunctionFlags::SQLITE_DIRECTONLY;
    db.create_scalar_function("dedup_settings_checked", -1, flags, |ctx| {
        let json = settings_arg(ctx, "dedup_settings_checked")?;
        // Safety: as in dedup_run.
        let db = unsafe { ctx.get_connection()? };
        let s = read_settings(&db, "dedup_settings_checked", json.as_deref())?;
        s.to_checked_json(&db)
    })
}

/// `dedup_run([settings])`: plan and apply, in one transaction.
fn dedup_run(db: &Connection) -> Result<()> {
    db.create_scalar_function("dedup_run", -1, WRITES, |ctx| {
        let json = settings_arg(ctx, "dedup_run")?;
        // Safety: the handle is the connection running this function, used
        // on this thread for the duration of the call.
        let db = unsafe { ctx.get_connection()? };
        let timeout = read_settings(&db, "dedup_run", json.as_deref())?.busy_timeout;
        let report = atomically(&db, Lock::Write, timeout, "dedup_run", |db| {
            let s = read_settings(db, "dedup_run", json.as_deref())?;
            let planned = plan::plan(db, &s, &RunMode::All)?;
            if s.action == Action::Label {
                let labelled = label::write(db)?;
                let report = report::Report::read(db, &planned)?;
                return Ok(format!(
                    "{}\n(labelled, not applied: {labelled} rows in dedup_clusters, nothing deleted)",
                    report.to_text().replacen("run ", "labels of run ", 1)
                ));
            }
            progress::phase(
                "apply",
                scripts::PHASES.len() + 1,
                scripts::PHASES.len() + 1,
            );
            // (The text before the commit: the commit is the call's last work.)
            apply::apply(db).map(|r| r.to_text())
        });
        crate::sqlite::ground::progress::end();
        Ok(report?)
    })
}

/// `dedup_plan([settings])`: the plan and its report, nothing changed;
/// the plan stays for `dedup_apply`.
fn dedup_plan(db: &Connection) -> Result<()> {
    db.create_scalar_function("dedup_plan", -1, WRITES, |ctx| {
        let json = settings_arg(ctx, "dedup_plan")?;
        // Safety: as above.
        let db = unsafe { ctx.get_connection()? };
        let timeout = read_settings(&db, "dedup_plan", json.as_deref())?.busy_timeout;
        let report = atomically(&db, Lock::Read, timeout, "dedup_plan", |db| {
            let s = read_settings(db, "dedup_plan", json.as_deref())?;
            if s.action == Action::Label {
                return fail(Code::Setting, "dedup_plan: action 'label' works with dedup_run only (a label run deletes nothing: it has no plan to apply)".into());
            }
            let planned = plan::plan(db, &s, &RunMode::All)?;
            let columns = planned.columns()?;
            snapshot::take(
                db,
                &schema::Source::inspect_mapped(db, &planned.table, &columns)?,
            )?;
            report::Report::read(db, &planned)
        })?;
        Ok(format!(
            "{}\n(planned, not applied: SELECT dedup_apply() applies it)",
            report.to_text().replacen("run ", "plan for run ", 1)
        ))
    })
}

/// `dedup_prepare([settings [, from [, below]]])`: phase 1 only, for a run
/// that elects elsewhere: its rows are left in the view
/// temp._dedup_rows (see sql/external/01_rows.sql); returns the table's
/// rows. Arguments 1 and 2 (optional, NULL: unbounded): the
/// rowids from and below which to prepare.
fn dedup_prepare(db: &Connection) -> Result<()> {
    db.create_scalar_function("dedup_prepare", -1, WRITES, |ctx| {
        check_arity(ctx, "dedup_prepare", 0, 3)?;
        let bound = |i: usize| -> Result<Option<i64>> {
            match ctx.len() > i {
                false => Ok(None),
                true => int_arg(
                    ctx,
                    i,
                    "dedup_prepare",
                    "rowid bounds must be integers or NULL",
                ),
            }
        };
        let (lo, hi) = (bound(1)?, bound(2)?);
        let json = match ctx.len() {
            0 => None,
            _ => match ctx.get_raw(0) {
                ValueRef::Null => None,
                ValueRef::Text(t) => Some(String::from_utf8_lossy(t).into_owned()),
                other => {
                    return Err(coded_error(
                        "dedup_prepare",
                        Code::Setting,
                        "settings must be a JSON object as TEXT",
                        &describe(other),
                    ))
                }
            },
        };
        // Safety: as above.
        let db = unsafe { ctx.get_connection()? };
        let timeout = read_settings(&db, "dedup_prepare", json.as_deref())?.busy_timeout;
        let rows = atomically(&db, Lock::Read, timeout, "dedup_prepare", |db| {
            let s = read_settings(db, "dedup_prepare", json.as_deref())?;
            let planned = plan::plan(db, &s, &RunMode::PrepareOnly(lo, hi))?;
            Ok::<i64, DedupError>(planned.rows_before)
        });
        crate::sqlite::ground::progress::end();
        Ok(rows?)
    })
}

/// `dedup_apply_plan(plan [, settings [, paragraphs]])`: a run whose
/// decisions were made elsewhere (the plan: a table named by argument 0
/// with the columns of plan_in::PLAN_COLUMNS; with `paragraphs = 'dedup'`,
/// its paragraph cuts, a table of plan_in::PARAGRAPH_COLUMNS), applied as
/// dedup_run applies its own, in one transaction.
fn dedup_apply_plan(db: &Connection) -> Result<()> {
    db.create_scalar_function("dedup_apply_plan", -1, WRITES, |ctx| {
        check_arity(ctx, "dedup_apply_plan", 1, 3)?;
        let table = match ctx.get_raw(0) {
            ValueRef::Text(t) => String::from_utf8_lossy(t).into_owned(),
            other => {
                return Err(user_error(
                    "dedup_apply_plan",
                    "the plan must be named by a table name as TEXT",
                    &describe(other),
                ))
            }
        };
        let paragraphs = match ctx.len() {
            3 => match ctx.get_raw(2) {
                ValueRef::Null => None,
                ValueRef::Text(t) => Some(String::from_utf8_lossy(t).into_owned()),
                other => {
                    return Err(user_error(
                        "dedup_apply_plan",
                        "the paragraph cuts must be named by a table name as TEXT",
                        &describe(other),
                    ))
                }
            },
            _ => None,
        };
        let json = match ctx.len() {
            2 | 3 => match ctx.get_raw(1) {
                ValueRef::Null => None,
                ValueRef::Text(t) => Some(String::from_utf8_lossy(t).into_owned()),
                other => {
                    return Err(coded_error(
                        "dedup_apply_plan",
                        Code::Setting,
                        "settings must be a JSON object as TEXT",
                        &describe(other),
                    ))
                }
            },
            _ => None,
        };
        // Safety: as above.
        let db = unsafe { ctx.get_connection()? };
        let timeout = read_settings(&db, "dedup_apply_plan", json.as_deref())?.busy_timeout;
        let report = atomically(&db, Lock::Write, timeout, "dedup_apply_plan", |db| {
            let s = read_settings(db, "dedup_apply_plan", json.as_deref())?;
            plan::plan(
                db,
                &s,
                &RunMode::FromPlan(table.clone(), paragraphs.clone()),
            )?;
            apply::apply(db).map(|r| r.to_text())
        });
        crate::sqlite::ground::progress::end();
        Ok(report?)
    })
}

/// `dedup_apply()`: applies the plan `dedup_plan` left.
fn dedup_apply(db: &Connection) -> Result<()> {
    db.create_scalar_function("dedup_apply", 0, WRITES, |ctx| {
        // Safety: as above.
        let db = unsafe { ctx.get_connection()? };
        let timeout = read_settings(&db, "dedup_apply", None)?.busy_timeout;
        Ok(atomically(
            &db,
            Lock::Write,
            timeout,
            "dedup_apply",
            |db| apply::apply(db).map(|r| r.to_text()),
        )?)
    })
}

/// `dedup_restore()`: undoes the latest run.
fn dedup_restore(db: &Connection) -> Result<()> {
    db.create_scalar_function("dedup_restore", 0, WRITES, |ctx| {
        // Safety: as above.
        let db = unsafe { ctx.get_connection()? };
        let timeout = read_settings(&db, "dedup_restore", None).map_or(5000, |s| s.busy_timeout);
        Ok(atomically(
            &db,
            Lock::Write,
            timeout,
            "dedup_restore",
            restore::restore,
        )?)
    })
}

/// `dedup_extra_params(strict, canonical)`: the query parameters of a strict URL that its canonical URL dropped,
/// as `name=value` joined by `&` (a run made elsewhere finds from them
/// which parameters tell the pages kept apart in phase 6 apart).
fn dedup_extra_params(db: &Connection) -> Result<()> {
    db.create_scalar_function("dedup_extra_params", 2, PURE, |ctx| {
        let (Some(strict), Some(canonical)) = (
            text_arg(ctx, 0, "dedup_extra_params", "strict")?,
            text_arg(ctx, 1, "dedup_extra_params", "canonical")?,
        ) else {
            return Ok(None);
        };
        let extra: Vec<String> = crate::core::url::dropped_params(strict, canonical)
            .into_iter()
            .map(|(name, value)| format!("{name}={value}"))
            .collect();
        Ok(Some(extra.join("&")))
    })
}

/// `dedup_invalid_text(url, content, parsed)`: phase 1's check of a
/// row's types.
fn dedup_invalid_text(db: &Connection) -> Result<()> {
    db.create_scalar_function("dedup_invalid_text", 3, PURE, |ctx| {
        // Phase 1 calls it once a row: its progress.
        crate::sqlite::ground::progress::tick();
        for (i, name) in ["url", "content", "parsed"].into_iter().enumerate() {
            match ctx.get_raw(i) {
                ValueRef::Blob(_) => return Ok(Some(format!("{name} is a BLOB"))),
                ValueRef::Text(t) => {
                    if let Err(e) = std::str::from_utf8(t) {
                        return Ok(Some(format!(
                            "{name} is not valid UTF-8 (byte {})",
                            e.valid_up_to()
                        )));
                    }
                }
                ValueRef::Integer(_) => return Ok(Some(format!("{name} is an integer, not TEXT"))),
                ValueRef::Real(_) => return Ok(Some(format!("{name} is a real, not TEXT"))),
                ValueRef::Null => {}
            }
        }
        Ok(None)
    })
}
