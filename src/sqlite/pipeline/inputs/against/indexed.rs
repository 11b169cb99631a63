//! A run `against` another database that keeps an incremental index: the
//! plan is made there, as that database's next run would make it with
//! this table's rows added as new ones, and read back here as a plan made
//! elsewhere. Its index stands for its pages: they are neither read again
//! nor prepared again, and only the rows the new ones can meet are
//! compared (docs/incremental.md), so the cost is the new crawl's, not
//! the other database's.
//!
//! On a connection of its own to the other file (read-only, SQLite's
//! functions and this extension's, [`super::other::Other::open`]), this table's
//! rows are copied into `temp._dedup_extra` with rids above every rowid
//! there (so the election's last rule still keeps the page that was there
//! first), the table's view there takes them in ([`extend_source`]), and
//! the run plans them as new rows (`run::plan::plan` with
//! `RunMode::There`). Its removals of these rows, and the pages among them it
//! keeps apart, come back with their rids here ([`write_plan`]); a
//! survivor there is named in a note (`survivor in last-month.db, rowid
//! 17`), as a plan of `against` without the index names it.
//!
//! The same plan as `against` without the index (every page of both
//! compared as one table, the other database's window slots included), row
//! for row; so it is used only when that database's next run would be
//! incremental with these settings (its index of its latest run, the same
//! settings, nothing edited), and, in window mode, when this table has no
//! window slots of its own (rows earlier runs here removed in phases 4-5,
//! which that database's index does not hold). Otherwise the pages are
//! copied ([`super::copied`]).
//!
//! Cost: a copy of this table's rows to the other connection, and an
//! incremental plan there of as many new rows.

use rusqlite::types::Value;
use rusqlite::Connection;

use super::other::Other;
use crate::sqlite::ground::error::{Code, DedupError};
use crate::sqlite::pipeline::incremental::run_kind::why_full;
use crate::sqlite::pipeline::mode::{Made, PlanRow, RunMode};
use crate::sqlite::settings::choices::NearMode;
use crate::sqlite::settings::values::{Origin, Settings};
use crate::sqlite::tables::schema::{self, Source, PAGE_COLUMNS};

/// The plan of this table's rows made on the other database against its
/// index, or `None` when that database's next run would not be
/// incremental with these settings, or in window mode this table has
/// window slots of its own (then the pages are copied: [`super::decide`]).
/// `plan` is the runner ([`crate::sqlite::pipeline::run::plan::plan`]), run
/// on the other connection: whether it planned incrementally, and the rows
/// it planned for. `temp._dedup_source` is this table's view. On `None`
/// the other connection is as [`super::other::Other::open`] left it.
pub fn plan_there(
    db: &Connection,
    s: &Settings,
    other: &Other,
    plan: impl Fn(&Connection, &Settings) -> Result<(bool, i64), DedupError>,
) -> Result<Option<Made>, DedupError> {
    if s.near_mode == NearMode::Window && has_window_slots(db)? {
        return Ok(None);
    }
    let theirs = &other.conn;
    let their_settings = Settings {
        against: String::new(),
        against_from: Origin::Caller,
        ..s.clone()
    };
    let json = their_settings.to_json(theirs)?;
    if schema::object_type(theirs, "dedup_index_state")?.as_deref() != Some("table")
        || why_full(theirs, &their_settings, &RunMode::There, &json)?.is_some()
    {
        return Ok(None);
    }
    // (The file stays read-only, opened so; the plan writes temp tables,
    // in one transaction there, as a run's here: the plan's temp writes
    // are not each a transaction of their own, and it reads one state.)
    theirs.execute_batch("PRAGMA query_only = 0;")?;
    crate::sqlite::ground::registrar::register(theirs)?;
    theirs.execute_batch("BEGIN")?;
    let made = made_there(db, other, &their_settings, plan);
    if !matches!(made, Ok(Some(_))) {
        // (Back as opened, for the copy: its temp writes undone.)
        let back = if theirs.is_autocommit() {
            Ok(())
        } else {
            theirs.execute_batch("ROLLBACK")
        }
        .and_then(|()| theirs.execute_batch("PRAGMA query_only = 1;"));
        if made.is_ok() {
            back?;
        }
    }
    made
}

/// [`plan_there`]'s plan, in the transaction there.
fn made_there(
    db: &Connection,
    other: &Other,
    their_settings: &Settings,
    plan: impl Fn(&Connection, &Settings) -> Result<(bool, i64), DedupError>,
) -> Result<Option<Made>, DedupError> {
    let (theirs, name) = (&other.conn, &other.name);
    let offset = copy_rows(db, theirs, &other.source, name)?;
    let (incremental, rows_before) = match plan(theirs, their_settings) {
        Ok(planned) => planned,
        // (Its index holds what its runs never write: its pages are
        // compared by copy instead, which reads no index.)
        Err(e) if e.is_wrong_type() => return Ok(None),
        Err(e) => {
            return Err(DedupError::new(
                Code::Against,
                format!("dedup: against {name}: {}", e.words()),
            ))
        }
    };
    if !incremental {
        return Ok(None);
    }
    let added: i64 =
        theirs.query_row("SELECT count(*) FROM temp._dedup_extra", [], |r| r.get(0))?;
    let first: i64 = theirs.query_row(
        "SELECT coalesce(min(rid), 0) FROM temp._dedup_extra",
        [],
        |r| r.get(0),
    )?;
    let rows = plan_rows(theirs, offset, first, name)?;
    Ok(Some(Made {
        rows,
        there: name.clone(),
        compared: rows_before - added,
    }))
}

/// Whether this table has window slots of its own: rows earlier runs here
/// removed in phases 4-5.
fn has_window_slots(db: &Connection) -> Result<bool, DedupError> {
    if schema::object_type(db, "dedup_removed")?.as_deref() != Some("table") {
        return Ok(false);
    }
    Ok(db.query_row(
        "SELECT EXISTS (SELECT 1 FROM main.dedup_removed WHERE dedup_phase IN (4, 5))",
        [],
        |r| r.get(0),
    )?)
}

/// Copies this table's rows (its view, `temp._dedup_source`) into
/// `temp._dedup_extra` on the other connection, each rid shifted above
/// every rowid there (its table's, its archive's, its index's); the shift.
fn copy_rows(
    db: &Connection,
    theirs: &Connection,
    their: &Source,
    name: &str,
) -> Result<i64, DedupError> {
    let archive = if schema::object_type(theirs, "dedup_removed")?.as_deref() == Some("table") {
        "coalesce((SELECT max(dedup_rowid) FROM main.dedup_removed), 0)"
    } else {
        "0"
    };
    let high: i64 = theirs.query_row(
        &format!(
            "SELECT max(coalesce((SELECT max({rowid}) FROM {table}), 0),
                        coalesce((SELECT max(rid) FROM main.dedup_index), 0), {archive})",
            rowid = their.rowid,
            table = their.qualified()
        ),
        [],
        |r| r.get(0),
    )?;
    let (low, _): (Option<i64>, Option<i64>) = db.query_row(
        "SELECT min(rid), max(rid) FROM temp._dedup_source",
        [],
        |r| Ok((r.get(0)?, r.get(1)?)),
    )?;
    let offset = match low {
        None => 0,
        Some(low) => high
            .checked_add(1)
            .and_then(|a| a.checked_sub(low))
            .map(|o| o.max(0))
            .ok_or_else(|| {
                DedupError::new(
                    Code::Against,
                    format!(
                    "dedup: against {name}: no rids are left above its rowids; nothing was changed"
                ),
                )
            })?,
    };
    let columns = PAGE_COLUMNS.join(", ");
    theirs.execute_batch(&format!(
        "DROP TABLE IF EXISTS temp._dedup_extra;
         CREATE TEMP TABLE _dedup_extra (rid INTEGER PRIMARY KEY, {columns});"
    ))?;
    let marks = vec!["?"; PAGE_COLUMNS.len() + 1].join(", ");
    let mut write = theirs.prepare(&format!("INSERT INTO temp._dedup_extra VALUES ({marks})"))?;
    let mut read = db.prepare(&format!("SELECT rid, {columns} FROM temp._dedup_source"))?;
    let mut rows = read.query([])?;
    while let Some(row) = rows.next()? {
        let mut values: Vec<Value> = Vec::with_capacity(PAGE_COLUMNS.len() + 1);
        let rid: i64 = row.get(0)?;
        values.push(Value::Integer(rid.checked_add(offset).ok_or_else(
            || {
                DedupError::new(
                    Code::Against,
                    format!(
                    "dedup: against {name}: no rids are left above its rowids; nothing was changed"
                ),
                )
            },
        )?));
        for i in 1..=PAGE_COLUMNS.len() {
            values.push(row.get(i)?);
        }
        write.execute(rusqlite::params_from_iter(values))?;
    }
    Ok(offset)
}

/// The plan's rows for this table's rows (rids from `first` up, this
/// table's rowid plus `offset`), with their rids here: removals, and the
/// pages it keeps apart.
fn plan_rows(
    theirs: &Connection,
    offset: i64,
    first: i64,
    name: &str,
) -> Result<Vec<PlanRow>, DedupError> {
    let mut stmt = theirs.prepare(
        "SELECT r.source_rowid - ?1, r.phase, r.reason,
                CASE WHEN r.survivor >= ?3 THEN r.survivor - ?1 END, r.ratio, NULL,
                CASE WHEN r.survivor < ?3 THEN 'survivor in ' || ?2 || ', rowid ' || r.survivor
                  || coalesce(' (' || (SELECT s.url FROM temp._dedup_source AS s WHERE s.rid = r.survivor) || ')', '') END
         FROM temp._dedup_removal AS r WHERE r.source_rowid >= ?3
         UNION ALL
         SELECT p.source_rowid - ?1, NULL, NULL, NULL, NULL, p.rewrite_url,
                (SELECT n.note FROM temp._dedup_notes AS n WHERE n.rowid_ = p.source_rowid AND n.kind = 'kept apart')
         FROM temp._dedup_prepared AS p
         WHERE p.source_rowid >= ?3 AND p.rewrite_url IS NOT NULL
           AND p.source_rowid NOT IN (SELECT source_rowid FROM temp._dedup_removal)
         ORDER BY 1",
    )?;
    let rows = stmt
        .query_map(rusqlite::params![offset, name, first], |r| {
            Ok(PlanRow {
                rid: r.get(0)?,
                phase: r.get(1)?,
                reason: r.get(2)?,
                survivor: r.get(3)?,
                ratio: r.get(4)?,
                rewrite_url: r.get(5)?,
                note: r.get(6)?,
            })
        })?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    Ok(rows)
}

/// `temp._dedup_source` on the other connection with the rows of
/// `temp._dedup_extra` added (a plan of `RunMode::There`). Every column but
/// the rid comes without affinity in both arms (`+column`): SQLite looks a
/// row of a compound view up by its rid only when the arms' columns agree
/// in affinity, else it reads the whole table for each lookup.
pub fn extend_source(db: &Connection, source: &Source) -> Result<(), DedupError> {
    let theirs: Vec<String> = PAGE_COLUMNS
        .iter()
        .map(|c| match source.column(c) {
            Some(real) => format!("+{} AS {c}", schema::quote_ident(&real)),
            None => format!("NULL AS {c}"),
        })
        .collect();
    let extra: Vec<String> = PAGE_COLUMNS.iter().map(|c| format!("+{c}")).collect();
    db.execute_batch(&format!(
        "DROP VIEW IF EXISTS temp._dedup_source;
         CREATE TEMP VIEW _dedup_source AS SELECT {} AS rid, {} FROM {}
         UNION ALL SELECT rid, {} FROM temp._dedup_extra;",
        source.rowid,
        theirs.join(", "),
        source.qualified(),
        extra.join(", ")
    ))?;
    Ok(())
}
