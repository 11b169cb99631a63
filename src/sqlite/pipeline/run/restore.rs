//! Undoes the latest run: every archived row back into the table (under a
//! new rowid when a later crawl took its old one), the survivors' rewritten
//! columns back to their old values, then the run forgotten. Runs inside
//! [`crate::sqlite::ground::atomic::atomically`]: all of it or nothing.

use crate::sqlite::ground::error::Code;
use rusqlite::{params, Connection, OptionalExtension};

use crate::sqlite::ground::error::{fail, DedupError};
use crate::sqlite::ground::shown::truncate;
use crate::sqlite::pipeline::run::locate::{first_refused, refused};
use crate::sqlite::pipeline::run::plan::next_run;
use crate::sqlite::tables::own_tables::{self, upgrade_rewritten};
use crate::sqlite::tables::schema::{self, quote_ident, Source, ARCHIVE_META};

/// Rowid changes named one by one in the message; the rest are counted.
const MOVED_LISTED: usize = 20;

/// Restores the latest run; returns what was done, in words: the steps
/// in the order they run.
pub fn restore(db: &Connection) -> Result<String, DedupError> {
    let _whole = crate::sqlite::ground::trace::Trace("restore".into(), std::time::Instant::now());
    let (run, table, columns) = latest_run(db)?;
    let source = Source::inspect_mapped(db, &table, &columns)?;
    own_tables::check(db, "dedup_restore")?;
    // (The index is forgotten below: its triggers need not log the rows
    // put back nor, row by row, the archive's deletes.)
    crate::sqlite::pipeline::incremental::changes::untrack(db)?;
    check_archive(db)?;
    let (common, notes) = archived_columns(db, &source, run)?;
    let (survivors, left) = restore_survivors(db, &source, run)?;
    restore_domains(db, run)?;
    let (back, moved) = put_rows_back(db, &source, run, &common)?;
    let emptied = forget(db, run)?;
    Ok(said(
        &source,
        run,
        &Done {
            back,
            survivors,
            moved,
            left,
            notes,
            emptied,
        },
    ))
}

/// The `columns` setting: (the pipeline's name, the table's column).
type Columns = Vec<(String, String)>;

/// Rows put back under a new rowid: (the old rowid, when an integer; the new).
type Moved = Vec<(Option<i64>, i64)>;

/// The latest run: its number, its table and its `columns` setting.
fn latest_run(db: &Connection) -> Result<(i64, String, Columns), DedupError> {
    if schema::object_type(db, "dedup_runs")?.is_none() {
        return fail(Code::State, "dedup_restore: nothing to undo, got no dedup_runs table (no run was applied to this database, or every run was undone)".into());
    }
    let last = next_run(db)? - 1;
    let Some((run, settings)) = db
        .query_row(
            "SELECT run, settings FROM main.dedup_runs WHERE run = ?1",
            [last],
            |r| Ok((r.get::<_, i64>(0)?, r.get::<_, rusqlite::types::Value>(1)?)),
        )
        .optional()?
    else {
        return fail(
            Code::State,
            "dedup_restore: nothing to undo, got no run in dedup_runs".into(),
        );
    };
    let columns = match &settings {
        rusqlite::types::Value::Text(json) => {
            crate::sqlite::pipeline::run::plan::columns_of(db, json)?
        }
        _ => Vec::new(),
    };
    let table = match settings {
        rusqlite::types::Value::Text(json) => db
            .query_row(
                "SELECT CASE WHEN json_valid(?1) THEN json_extract(?1, '$.table') END",
                [json],
                |r| r.get::<_, Option<rusqlite::types::Value>>(0),
            )?
            .map(|v| match v {
                rusqlite::types::Value::Text(t) => Ok(t),
                _ => fail(Code::Own, format!(
                    "dedup_restore: the table of run {run} must be a name, got a value of another type in dedup_runs.settings"
                )),
            })
            .transpose()?
            .unwrap_or_else(|| "pages".into()),
        _ => "pages".into(),
    };
    Ok((run, table, columns))
}

/// The archive tables are the extension's own (`dedup_rewritten` made
/// when an old database lacks it, and brought up to date).
fn check_archive(db: &Connection) -> Result<(), DedupError> {
    for name in ["dedup_removed", "dedup_rewritten"] {
        match schema::object_type(db, name)?.as_deref() {
            Some("table") => {}
            None if name == "dedup_rewritten" => {
                let create = crate::sqlite::tables::own_schema::OWN
                    .iter()
                    .find(|(n, _)| *n == "dedup_rewritten")
                    .map_or("", |(_, c)| c);
                db.execute_batch(create)?;
            }
            other => {
                return fail(
                    Code::Own,
                    format!(
                "dedup_restore: {name} must be the archive table this extension created, got {}",
                other.map_or("none".to_string(), |k| format!("a {k}"))
            ),
                )
            }
        }
    }
    let archive_cols = schema::columns(db, "dedup_removed")?;
    if let Some(m) = ARCHIVE_META
        .iter()
        .find(|m| !archive_cols.iter().any(|c| c.name.eq_ignore_ascii_case(m)))
    {
        return fail(Code::Own, format!(
            "dedup_restore: dedup_removed lacks its column {m}, got a table this extension did not create"
        ));
    }
    upgrade_rewritten(db)?;

    Ok(())
}

/// The archived columns the table still has, and a note for each one it
/// lost whose values this run archived (they are not restored).
fn archived_columns(
    db: &Connection,
    source: &Source,
    run: i64,
) -> Result<(Vec<String>, Vec<String>), DedupError> {
    let archive_cols = schema::columns(db, "dedup_removed")?;
    // Columns: archived ∩ table; archived-only ones are reported.
    let data_cols: Vec<&str> = archive_cols
        .iter()
        .map(|c| c.name.as_str())
        .filter(|n| !ARCHIVE_META.iter().any(|m| n.eq_ignore_ascii_case(m)))
        .collect();
    let (common, lost): (Vec<&str>, Vec<&str>) = data_cols.iter().partition(|c| source.has(c));
    let mut notes = Vec::new();
    for c in &lost {
        let values: i64 = db.query_row(
            &format!(
                "SELECT count({}) FROM main.dedup_removed WHERE dedup_run = ?1",
                quote_ident(c)
            ),
            [run],
            |r| r.get(0),
        )?;
        if values > 0 {
            notes.push(format!(
                "column {} is no longer in {}: its {values} archived value(s) were not restored",
                quote_ident(c),
                quote_ident(&source.table)
            ));
        }
    }

    Ok((common.iter().map(|c| c.to_string()).collect(), notes))
}

/// Step 1: the survivors' rewritten columns back to their old values, on
/// the rows they still are; the number given back, and those left.
fn restore_survivors(
    db: &Connection,
    source: &Source,
    run: i64,
) -> Result<(i64, Vec<Left>), DedupError> {
    let t = source.qualified();
    // 1. Survivors' rewritten columns back to their old values.
    let names: Vec<String> = db
        .prepare("SELECT DISTINCT name FROM main.dedup_rewritten WHERE dedup_run = ?1 AND typeof(name) = 'text'")?
        .query_map([run], |r| r.get(0))?
        .collect::<Result<_, _>>()?;
    let mut step = std::time::Instant::now();
    let left = locate_survivors(db, source, run, &names)?;
    crate::sqlite::ground::trace::lap("restore: locate survivors", &mut step);
    for name in &names {
        let Some(col) = source
            .columns
            .iter()
            .find(|c| c.name.eq_ignore_ascii_case(name))
        else {
            continue;
        };
        let q = quote_ident(&col.name);
        let update = format!(
            "UPDATE {t} AS g SET {q} = w.value FROM main.dedup_rewritten AS w
             JOIN temp._dedup_restore_to AS m ON m.src = w.dedup_rowid
             WHERE w.dedup_run = ?1 AND w.name = ?2 AND m.dst = g.{rowid}",
            rowid = source.rowid
        );
        if let Err(e) = db.execute(&update, params![run, name]) {
            if !refused(&e) {
                return fail(Code::of(&e), format!(
                    "dedup_restore: restoring column {q} of the survivors failed, nothing was changed: {e}"
                ));
            }
            // (Which survivor: each tried alone, then undone.)
            let ids: Vec<i64> = db
                .prepare(
                    "SELECT dedup_rowid FROM main.dedup_rewritten
                     WHERE dedup_run = ?1 AND name = ?2 AND typeof(dedup_rowid) = 'integer' ORDER BY dedup_rowid",
                )?
                .query_map(params![run, name], |r| r.get(0))?
                .collect::<Result<_, _>>()?;
            let one = format!("{update} AND w.dedup_rowid = ?3");
            let first = first_refused(db, &ids, |id| db.execute(&one, params![run, name, id]))
                .map(|(id, _)| id);
            return fail(Code::of(&e), format!(
                "dedup_restore: restoring column {q} of the survivors failed, nothing was changed: {e}{}",
                first.map_or(String::new(), |id| format!(
                    " (the first survivor refused: rowid {id}, its old value {})",
                    archived_value(db, "SELECT value FROM main.dedup_rewritten WHERE dedup_run = ?1 AND name = ?2 AND dedup_rowid = ?3", params![run, name, id])
                ))
            ));
        }
    }
    let survivors: i64 = db.query_row("SELECT count(*) FROM temp._dedup_restore_to", [], |r| {
        r.get(0)
    })?;
    // (The old values of the survivors left stay kept, under the run's
    // number negated: no later run takes it.)
    db.execute(
        "UPDATE main.dedup_rewritten SET dedup_run = -dedup_run
         WHERE dedup_run = ?1 AND dedup_rowid NOT IN (SELECT src FROM temp._dedup_restore_to)",
        [run],
    )?;
    db.execute_batch("DROP TABLE temp._dedup_restore_to")?;
    Ok((survivors, left))
}

/// Step 2: the domain counts as they were before the run (kept since this
/// version: an older run's record has none, and its counts stay).
fn restore_domains(db: &Connection, run: i64) -> Result<(), DedupError> {
    let kept: bool = schema::object_type(db, "dedup_domains_before")?.as_deref() == Some("table")
        && db.query_row(
            "SELECT EXISTS (SELECT 1 FROM main.dedup_domains_before WHERE dedup_run = ?1)",
            [run],
            |r| r.get(0),
        )?;
    if kept && schema::object_type(db, "dedup_domains")?.as_deref() == Some("table") {
        db.execute("DELETE FROM main.dedup_domains", [])?;
        db.execute(
            "INSERT INTO main.dedup_domains (rowid, domain, pages)
             SELECT dedup_rowid, domain, pages FROM main.dedup_domains_before
             WHERE dedup_run = ?1 AND dedup_rowid IS NOT NULL",
            [run],
        )?;
    }
    if kept {
        db.execute(
            "DELETE FROM main.dedup_domains_before WHERE dedup_run = ?1",
            [run],
        )?;
    }

    Ok(())
}

/// Step 3: the archived rows back, on their own rowid when it is free,
/// else on a new one (a later crawl took it): how many went back on their
/// own, and the (old, new) rowids of the others.
fn put_rows_back(
    db: &Connection,
    source: &Source,
    run: i64,
    common: &[String],
) -> Result<(usize, Moved), DedupError> {
    let t = source.qualified();
    let rowid = source.rowid;
    let taken: Vec<(i64, Option<i64>)> = db
        .prepare(&format!(
            "SELECT rowid, CASE WHEN typeof(dedup_rowid) = 'integer' THEN dedup_rowid END FROM main.dedup_removed
             WHERE dedup_run = ?1 AND NOT (typeof(dedup_rowid) = 'integer' AND dedup_rowid NOT IN (SELECT {rowid} FROM {t}))
             ORDER BY rowid"
        ))?
        .query_map([run], |r| Ok((r.get(0)?, r.get(1)?)))?
        .collect::<Result<_, _>>()?;
    let quoted: Vec<String> = common.iter().map(|c| quote_ident(c)).collect();
    let ipk = source.rowid_column.as_deref();
    // With an INTEGER PRIMARY KEY column, the archived column is the rowid.
    let ipk_archived = ipk.filter(|k| common.iter().any(|c| c.eq_ignore_ascii_case(k)));
    let (free_target, free_values) = match ipk_archived {
        Some(_) => (quoted.join(", "), quoted.join(", ")),
        None => {
            let mut target = vec![rowid.to_string()];
            let mut values = vec!["dedup_rowid".to_string()];
            target.extend(quoted.iter().cloned());
            values.extend(quoted.iter().cloned());
            (target.join(", "), values.join(", "))
        }
    };
    let free = "FROM main.dedup_removed
                WHERE dedup_run = ?1 AND typeof(dedup_rowid) = 'integer'";
    let back = match db.execute(
        &format!(
            "INSERT INTO {t} ({free_target}) SELECT {free_values} {free}
             AND dedup_rowid NOT IN (SELECT {rowid} FROM {t}) ORDER BY dedup_rowid"
        ),
        [run],
    ) {
        Ok(n) => n,
        Err(e) if !refused(&e) => {
            return fail(
                Code::of(&e),
                format!(
                "dedup_restore: putting the rows of run {run} back failed, nothing was changed: {e}"
            ),
            )
        }
        Err(e) => {
            // (Which row: each tried alone, in the same order, then undone.)
            let ids: Vec<i64> = db
                .prepare(&format!(
                    "SELECT dedup_rowid {free} AND dedup_rowid NOT IN (SELECT {rowid} FROM {t}) ORDER BY dedup_rowid"
                ))?
                .query_map([run], |r| r.get(0))?
                .collect::<Result<_, _>>()?;
            let one = format!(
                "INSERT INTO {t} ({free_target}) SELECT {free_values} {free} AND dedup_rowid = ?2"
            );
            let first =
                first_refused(db, &ids, |id| db.execute(&one, params![run, id])).map(|(id, _)| id);
            let url = source.column("url").map(|c| quote_ident(&c));
            return fail(Code::of(&e), format!(
                "dedup_restore: putting the rows of run {run} back failed, nothing was changed: {e}{}",
                first.map_or(String::new(), |id| format!(
                    " (the first row refused: rowid {id}{})",
                    url.as_ref().map_or(String::new(), |u| format!(
                        ", {u} {}",
                        archived_value(db, &format!("SELECT {u} {free} AND dedup_rowid = ?2"), params![run, id])
                    ))
                ))
            ));
        }
    };
    let movable: Vec<String> = common
        .iter()
        .filter(|c| ipk_archived.is_none_or(|k| !c.eq_ignore_ascii_case(k)))
        .map(|c| quote_ident(c))
        .collect();
    let mut moved = Vec::new();
    for (archive_row, old) in &taken {
        let sql = if movable.is_empty() {
            format!("INSERT INTO {t} DEFAULT VALUES")
        } else {
            format!(
                "INSERT INTO {t} ({cols}) SELECT {cols} FROM main.dedup_removed WHERE rowid = ?1",
                cols = movable.join(", ")
            )
        };
        let result = if movable.is_empty() {
            db.execute(&sql, [])
        } else {
            db.execute(&sql, [archive_row])
        };
        result.map_err(|e| {
            DedupError::new(
                Code::of(&e),
                format!(
                    "dedup_restore: putting back rowid {} failed, nothing was changed: {e}",
                    old.map_or("(not an integer)".to_string(), |o| o.to_string())
                ),
            )
        })?;
        moved.push((*old, db.last_insert_rowid()));
    }

    Ok((back, moved))
}

/// Step 4: the run forgotten (its archive, old values, notes, record and
/// the index); whether no run is left (then the extension's tables are
/// dropped).
fn forget(db: &Connection, run: i64) -> Result<bool, DedupError> {
    db.execute("DELETE FROM main.dedup_removed WHERE dedup_run = ?1", [run])?;
    db.execute(
        "DELETE FROM main.dedup_rewritten WHERE dedup_run = ?1",
        [run],
    )?;
    crate::sqlite::pipeline::incremental::index::forget(db)?;
    if schema::object_type(db, "dedup_notes")?.as_deref() == Some("table") {
        db.execute("DELETE FROM main.dedup_notes WHERE dedup_run = ?1", [run])?;
    }
    if schema::object_type(db, "dedup_paragraphs")?.as_deref() == Some("table") {
        db.execute(
            "DELETE FROM main.dedup_paragraphs WHERE dedup_run = ?1",
            [run],
        )?;
    }
    db.execute("DELETE FROM main.dedup_runs WHERE run = ?1", [run])?;
    let emptied = drop_when_no_run_is_left(db)?;

    Ok(emptied)
}

/// What the steps did.
struct Done {
    /// Rows back on their own rowid.
    back: usize,
    /// Survivors given back their old values.
    survivors: i64,
    /// Rows back under a new rowid.
    moved: Moved,
    /// Survivors left as they are.
    left: Vec<Left>,
    /// Archived columns the table lost.
    notes: Vec<String>,
    /// No run is left.
    emptied: bool,
}

/// What restore did, in words.
fn said(source: &Source, run: i64, done: &Done) -> String {
    let Done {
        back,
        survivors,
        moved,
        left,
        notes,
        emptied,
    } = done;
    let mut out = format!(
        "restored run {run}: {} row(s) back in {}, {survivors} survivor(s) given back their old values",
        back + moved.len(),
        quote_ident(&source.table)
    );
    if !moved.is_empty() {
        let listed: Vec<String> = moved
            .iter()
            .take(MOVED_LISTED)
            .map(|(old, new)| {
                format!(
                    "{} -> {new}",
                    old.map_or("?".to_string(), |o| o.to_string())
                )
            })
            .collect();
        let more = if moved.len() > MOVED_LISTED {
            format!(" and {} more", moved.len() - MOVED_LISTED)
        } else {
            String::new()
        };
        out.push_str(&format!(
            "\n  {} row(s) under new rowids (later rows took their old ones): {}{more}",
            moved.len(),
            listed.join(", ")
        ));
    }
    if let Some(first) = left.first() {
        out.push_str(&format!(
            "\n  {} survivor(s) no longer hold what run {run} wrote (the first: rowid {}), and no row does: left as they are, their old values kept in dedup_rewritten under run -{run}:",
            left.len(),
            first.rowid
        ));
        for l in left.iter().take(MOVED_LISTED) {
            out.push_str(&format!("\n    rowid {}: {}", l.rowid, l.why));
        }
        if left.len() > MOVED_LISTED {
            out.push_str(&format!("\n    and {} more", left.len() - MOVED_LISTED));
        }
    }
    for n in notes {
        out.push_str(&format!("\n  {}", truncate(n, 300)));
    }
    if *emptied {
        out.push_str("\n  no run is left: the extension's tables are dropped (VACUUM gives their space back to the file)");
    }
    out
}

/// A survivor restore leaves as it is, and why.
struct Left {
    rowid: i64,
    why: String,
}

/// `temp._dedup_restore_to(src, dst)`: each survivor of `run` on the row
/// it still is: the row with its rowid (`src`) when that row holds every
/// value the run wrote and the survivor's identity as the run left it
/// ([`crate::sqlite::tables::identity`]); else, when a `VACUUM`
/// renumbered the rows, the one row that has that identity. Never the row
/// that merely holds the URL the run wrote: a page crawled since at that
/// URL is another page. The survivors left out, each with why. (A run
/// recorded before `identity` was kept restores by rowid and the values
/// written; one recorded before `written`, by rowid.)
fn locate_survivors(
    db: &Connection,
    source: &Source,
    run: i64,
    names: &[String],
) -> Result<Vec<Left>, DedupError> {
    let t = source.qualified();
    let rowid = source.rowid;
    let identity = crate::sqlite::tables::identity::identity_of(source, "g");
    let mut now = String::new();
    for name in names {
        if let Some(col) = source
            .columns
            .iter()
            .find(|c| c.name.eq_ignore_ascii_case(name))
        {
            now += &format!(
                " WHEN {} THEN g.{}",
                schema::quote_literal(name),
                quote_ident(&col.name)
            );
        }
    }
    let holds = if now.is_empty() {
        "1".to_string()
    } else {
        format!("(w.written IS NULL OR CASE w.name{now} END IS w.written)")
    };
    // Per survivor: whether the row with its rowid exists and holds every
    // value the run wrote, and its identity.
    db.execute_batch(
        "DROP TABLE IF EXISTS temp._dedup_restore_to;
         CREATE TEMP TABLE _dedup_restore_to (src INTEGER PRIMARY KEY, dst INTEGER UNIQUE);
         DROP TABLE IF EXISTS temp._dedup_restore_ids;
         CREATE TEMP TABLE _dedup_restore_ids (src INTEGER PRIMARY KEY, there INTEGER, holds INTEGER,
                                               identity BLOB, candidates INTEGER, dst INTEGER);",
    )?;
    db.execute(
        &format!(
            "INSERT INTO temp._dedup_restore_ids (src, there, holds, identity)
             SELECT w.dedup_rowid, g.{rowid} IS NOT NULL,
                    min(CASE WHEN w.written IS NULL THEN 1 WHEN g.{rowid} IS NULL THEN 0 ELSE {holds} END),
                    max(w.identity)
             FROM main.dedup_rewritten AS w
             LEFT JOIN {t} AS g ON g.{rowid} = w.dedup_rowid
             WHERE w.dedup_run = ?1 AND typeof(w.dedup_rowid) = 'integer'
             GROUP BY w.dedup_rowid"
        ),
        [run],
    )?;
    db.execute_batch(&format!(
        "INSERT INTO temp._dedup_restore_to
         SELECT s.src, s.src FROM temp._dedup_restore_ids AS s
         LEFT JOIN {t} AS g ON g.{rowid} = s.src
         WHERE s.holds = 1 AND (s.identity IS NULL OR {identity} IS s.identity)"
    ))?;
    // The rest by their identity, where one row has it (its values hashed
    // only when some survivor is not found on its rowid: after a VACUUM,
    // every row's).
    let missing: bool = db.query_row(
        "SELECT EXISTS (SELECT 1 FROM temp._dedup_restore_ids
                        WHERE identity IS NOT NULL AND src NOT IN (SELECT src FROM temp._dedup_restore_to))",
        [],
        |r| r.get(0),
    )?;
    if missing {
        db.execute_batch(&format!(
            "UPDATE temp._dedup_restore_ids AS u SET candidates = c.n, dst = c.rid
             FROM (SELECT {identity} AS identity, count(*) AS n, min(g.{rowid}) AS rid FROM {t} AS g
                   WHERE g.{rowid} NOT IN (SELECT dst FROM temp._dedup_restore_to)
                   GROUP BY 1) AS c
             WHERE c.identity = u.identity AND u.src NOT IN (SELECT src FROM temp._dedup_restore_to);
             -- (Two survivors left with one identity: neither is sure.)
             UPDATE temp._dedup_restore_ids SET candidates = candidates + 1
             WHERE identity IN (SELECT identity FROM temp._dedup_restore_ids
                                WHERE src NOT IN (SELECT src FROM temp._dedup_restore_to)
                                GROUP BY identity HAVING count(*) > 1)
               AND src NOT IN (SELECT src FROM temp._dedup_restore_to);
             INSERT OR IGNORE INTO temp._dedup_restore_to
             SELECT src, dst FROM temp._dedup_restore_ids
             WHERE candidates = 1 AND src NOT IN (SELECT src FROM temp._dedup_restore_to);"
        ))?;
    }
    let left = db
        .prepare(
            "SELECT src, there, holds, identity IS NOT NULL, coalesce(candidates, 0)
             FROM temp._dedup_restore_ids
             WHERE src NOT IN (SELECT src FROM temp._dedup_restore_to) ORDER BY src",
        )?
        .query_map([], |r| {
            let (rowid, there, holds, known, candidates): (i64, bool, bool, bool, i64) =
                (r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?);
            let why = if candidates > 1 {
                format!("{candidates} rows have what the run left in it (copies of it)")
            } else if !there {
                "no row has its rowid (deleted), and no other row what the run left in it".into()
            } else if !holds {
                "the row with its rowid holds other values than the run wrote (a later write, or another page after a VACUUM)".into()
            } else if known {
                "the row with its rowid holds the values the run wrote but not the rest of the page it left (a re-crawl, or a new page on its freed rowid)".into()
            } else {
                "the row with its rowid holds other values than the run wrote".into()
            };
            Ok(Left { rowid, why })
        })?
        .collect::<Result<Vec<_>, _>>()?;
    db.execute_batch("DROP TABLE temp._dedup_restore_ids;")?;
    Ok(left)
}

/// One archived value for an error: quoted and cut short, or its type.
fn archived_value(db: &Connection, sql: &str, params: impl rusqlite::Params) -> String {
    match db.query_row(sql, params, |r| r.get::<_, rusqlite::types::Value>(0)) {
        Ok(rusqlite::types::Value::Text(t)) => crate::sqlite::ground::shown::excerpt(&t),
        Ok(other) => crate::sqlite::ground::shown::describe_value(&other),
        Err(_) => "(unread)".to_string(),
    }
}

/// After the first run is undone, the extension's tables hold nothing: they
/// are dropped (with the `dedup_why` view), so the database is as before
/// its first run; `dedup_domains` stays if it holds rows (a user's, put
/// back). Returns whether they were dropped.
fn drop_when_no_run_is_left(db: &Connection) -> Result<bool, DedupError> {
    let left: i64 = db.query_row("SELECT count(*) FROM main.dedup_runs", [], |r| r.get(0))?;
    if left > 0 {
        return Ok(false);
    }
    for (table, _) in crate::sqlite::tables::own_schema::OWN {
        if schema::object_type(db, table)?.as_deref() != Some("table") {
            continue;
        }
        let rows: i64 = db.query_row(
            &format!("SELECT count(*) FROM main.{}", quote_ident(table)),
            [],
            |r| r.get(0),
        )?;
        if rows == 0 {
            db.execute_batch(&format!("DROP TABLE main.{}", quote_ident(table)))?;
        }
    }
    if schema::object_type(db, "dedup_why")?.as_deref() == Some("view") {
        db.execute_batch("DROP VIEW main.dedup_why")?;
    }
    Ok(true)
}
