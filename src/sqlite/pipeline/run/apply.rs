//! Applies a plan to the user's table: archive the removed rows whole,
//! delete them, rewrite the survivors' changed columns, record the run.
//! Runs inside [`crate::sqlite::ground::atomic::atomically`]: any failure here leaves the
//! database as it was.

use crate::sqlite::ground::error::Code;
use rusqlite::{params, Connection, OptionalExtension};

use crate::sqlite::ground::error::{fail, DedupError};
use crate::sqlite::ground::trace::lap;
use crate::sqlite::pipeline::run::plan::{drop_temp, planned, Planned};
use crate::sqlite::pipeline::run::report::Report;
use crate::sqlite::tables::rewrites::{paragraph_rewrite, REWRITES};
use crate::sqlite::tables::schema::{self, quote_ident, quote_literal, Source, ARCHIVE_META};

/// Applies the plan `temp._dedup_planned` describes and drops the plan:
/// checks, then the steps in the order they run.
pub fn apply(db: &Connection) -> Result<Report, DedupError> {
    let start = std::time::Instant::now();
    let mut step = start;
    let Some(plan) = planned(db)? else {
        return fail(Code::State, "dedup_apply: no plan to apply, got none in this connection (run SELECT dedup_plan() first, or SELECT dedup_run() for both)".into());
    };
    let source = Source::inspect_mapped(db, &plan.table, &plan.columns()?)?;
    crate::sqlite::pipeline::incremental::snapshot::check(db, &source)?;
    crate::sqlite::tables::own_tables::ensure(db, &source)?;
    check_foreign_keys(db, &source)?;
    lap("apply: checks", &mut step);
    // (The run's own writes are not changes for the next run.)
    crate::sqlite::pipeline::incremental::changes::untrack(db)?;
    let removals: i64 =
        db.query_row("SELECT count(*) FROM temp._dedup_removal", [], |r| r.get(0))?;
    let written_after = archive(db, &source, &plan, removals)?;
    lap("apply: archive", &mut step);
    let paragraphs = schema::temp_table_exists(db, "_dedup_paragraph_texts")?;
    let rewrites = rewrites(&source, paragraphs);
    keep_old_values(db, &source, &plan, &rewrites)?;
    lap("apply: old values", &mut step);
    delete(db, &source, removals)?;
    lap("apply: delete", &mut step);
    if !rewrites.is_empty() {
        rewrite(db, &source, &rewrites)?;
        lap("apply: rewrite", &mut step);
        record_written(db, &source, plan.run, written_after.rewritten, &rewrites)?;
        lap("apply: written", &mut step);
    }
    if paragraphs {
        db.execute(
            "INSERT INTO main.dedup_paragraphs (dedup_run, dedup_rowid, position, length, owner, owner_url, paragraph)
             SELECT ?1, rid, position, length, owner, owner_url, paragraph
             FROM temp._dedup_paragraph_cuts ORDER BY rid, position",
            [plan.run],
        )?;
        lap("apply: paragraphs", &mut step);
    }
    crate::sqlite::pipeline::incremental::trigger_writes::settle(
        db,
        plan.run,
        written_after.rewritten,
    )?;
    lap("apply: trigger writes", &mut step);
    count_domains(db, &plan)?;
    lap("apply: domains", &mut step);
    // (Before the index, whose end puts the trackers of its tables back.)
    crate::sqlite::pipeline::incremental::index_paragraphs::write(
        db,
        plan.kind.incremental,
        paragraphs,
    )?;
    crate::sqlite::pipeline::incremental::index::write(
        db,
        &source,
        plan.run,
        &written_after,
        &plan.settings,
        &plan.kind,
    )?;
    crate::sqlite::pipeline::incremental::trigger_writes::log(db, plan.kind.keep)?;
    lap("apply: index", &mut step);
    let mut report = Report::read(db, &plan)?;
    report
        .seconds
        .push(("apply".into(), start.elapsed().as_secs_f64()));
    record(db, &source, &plan, &report)?;
    lap("apply: record", &mut step);
    Ok(report)
}

/// A survivor's column the run may change: (the table's column, the SQL
/// that says it changes, its new value).
type Rewrite = (String, String, String);

/// Step 1: archives the removed rows whole, after the archive's last
/// rowid (the index finds this run's rows by it, and its rewritten rows by
/// `dedup_rewritten`'s, both returned).
fn archive(
    db: &Connection,
    source: &Source,
    plan: &Planned,
    removals: i64,
) -> Result<crate::sqlite::pipeline::incremental::index::WrittenAfter, DedupError> {
    let table = source.qualified();
    // (Past a table's largest possible rowid SQLite numbers new rows at
    // random: then the run's rows are found by their run alone.)
    let last_rowid = |t: &str| -> Result<i64, DedupError> {
        let last: i64 = db.query_row(
            &format!("SELECT coalesce(max(rowid), 0) FROM main.{t}"),
            [],
            |r| r.get(0),
        )?;
        Ok(if last == i64::MAX { i64::MIN } else { last })
    };
    let written_after = crate::sqlite::pipeline::incremental::index::WrittenAfter {
        archive: last_rowid("dedup_removed")?,
        rewritten: last_rowid("dedup_rewritten")?,
    };
    let page_cols: Vec<String> = source
        .columns
        .iter()
        .map(|c| quote_ident(&c.name))
        .collect();
    let archive_sql = |only: &str| {
        format!(
            "INSERT INTO main.dedup_removed ({meta}, {cols})
         SELECT g.{rowid}, ?1, x.phase, x.reason, x.survivor, x.ratio, {gcols}
         FROM temp._dedup_removal AS x JOIN {table} AS g ON g.{rowid} = x.source_rowid {only}",
            meta = ARCHIVE_META.join(", "),
            cols = page_cols.join(", "),
            rowid = source.rowid,
            gcols = page_cols
                .iter()
                .map(|c| format!("g.{c}"))
                .collect::<Vec<_>>()
                .join(", "),
        )
    };
    let archived = db.execute(&archive_sql(""), [plan.run]).map_err(|e| {
        let one = archive_sql("WHERE x.source_rowid = ?2");
        located(db, e, "archiving", REMOVED, |id| {
            db.execute(&one, params![plan.run, id])
        })
    })?;
    if archived as i64 != removals {
        return fail(Code::Stale, format!(
            "dedup: the table changed since the run was planned, got {archived} of {removals} removed rows to archive; nothing was changed"
        ));
    }
    Ok(written_after)
}

/// The columns of the table the run may rewrite (by the table's own
/// names: restore reads them back so); with `paragraphs`, `parsed` is
/// also the text the paragraph step left.
fn rewrites(source: &Source, paragraphs: bool) -> Vec<Rewrite> {
    REWRITES
        .iter()
        .filter_map(|(c, changed, new)| {
            let real = source.column(c)?;
            let (changed, new) = match (*c, paragraphs) {
                ("parsed", true) => paragraph_rewrite(changed, new),
                _ => (changed.to_string(), new.to_string()),
            };
            let changed = changed.replace("{c}", &quote_ident(&real));
            Some((real, changed, new))
        })
        .collect()
}

/// Step 2: keeps the survivors' old values of the columns about to change,
/// in one pass over the survivors for all columns (a pass per column read
/// every survivor's row again: benches/results/design-measurements.md,
/// "One pass over the survivors").
fn keep_old_values(
    db: &Connection,
    source: &Source,
    plan: &Planned,
    rewrites: &[Rewrite],
) -> Result<(), DedupError> {
    if rewrites.is_empty() {
        return Ok(());
    }
    // Per column name (c.column1): its old value and whether it changes.
    let (mut names, mut old, mut changed) = (Vec::new(), String::new(), String::new());
    for (c, change, _) in rewrites {
        let name = quote_literal(c);
        old += &format!(" WHEN {name} THEN g.{}", quote_ident(c));
        changed += &format!(" WHEN {name} THEN ({change})");
        names.push(format!("({name})"));
    }
    db.execute(
        &format!(
            "INSERT INTO main.dedup_rewritten (dedup_run, dedup_rowid, name, value)
             SELECT ?1, p.source_rowid, c.column1, CASE c.column1{old} END
             FROM temp._dedup_prepared AS p JOIN {table} AS g ON g.{rowid} = p.source_rowid
             CROSS JOIN (VALUES {names}) AS c
             WHERE p.skip_reason IS NULL
               AND p.source_rowid NOT IN (SELECT source_rowid FROM temp._dedup_removal)
               AND CASE c.column1{changed} END",
            names = names.join(", "),
            table = source.qualified(),
            rowid = source.rowid,
        ),
        [plan.run],
    )?;
    Ok(())
}

/// Step 3: deletes the removed rows (before the rewrite: a survivor's new
/// URL may be a removed row's old one under UNIQUE(url)). What the user's
/// triggers write meanwhile is noted (the trackers are off).
fn delete(db: &Connection, source: &Source, removals: i64) -> Result<(), DedupError> {
    crate::sqlite::pipeline::incremental::trigger_writes::watch(db, source)?;
    let table = source.qualified();
    let delete_sql = format!(
        "DELETE FROM {table} WHERE {rowid} IN (SELECT source_rowid FROM temp._dedup_removal)",
        rowid = source.rowid
    );
    let deleted = db.execute(&delete_sql, []).map_err(|e| {
        let one = format!("DELETE FROM {table} WHERE {} = ?1", source.rowid);
        located(db, e, "deleting", REMOVED, |id| db.execute(&one, [id]))
    })?;
    if deleted as i64 != removals {
        return fail(Code::Blocked, format!(
            "dedup: deleted {deleted} rows of {removals} planned (a trigger deleted or kept rows); nothing was changed"
        ));
    }
    Ok(())
}

/// Step 4: rewrites the survivors' changed columns.
fn rewrite(db: &Connection, source: &Source, rewrites: &[Rewrite]) -> Result<(), DedupError> {
    let set: Vec<String> = rewrites
        .iter()
        .map(|(c, changed, new)| {
            let q = quote_ident(c);
            format!("{q} = CASE WHEN {changed} THEN {new} ELSE g.{q} END")
        })
        .collect();
    let any: Vec<&str> = rewrites
        .iter()
        .map(|(_, changed, _)| changed.as_str())
        .collect();
    let update = |only: &str| {
        format!(
            "UPDATE {table} AS g SET {set}
             FROM temp._dedup_prepared AS p
             WHERE p.source_rowid = g.{rowid} AND p.skip_reason IS NULL {only}
               AND p.source_rowid NOT IN (SELECT source_rowid FROM temp._dedup_removal)
               AND ({any})",
            table = source.qualified(),
            set = set.join(", "),
            rowid = source.rowid,
            any = any.join(" OR ")
        )
    };
    db.execute(&update(""), []).map_err(|e| {
        let one = update("AND p.source_rowid = ?1");
        located(db, e, "rewriting", KEPT, |id| db.execute(&one, [id]))
    })?;
    Ok(())
}

/// Step 5: the domain counts after the run, the counts before it kept with
/// it for restore (a row with a NULL dedup_rowid marks a run that kept
/// them, even none). An incremental run counted only the domains it
/// touched.
fn count_domains(db: &Connection, plan: &Planned) -> Result<(), DedupError> {
    db.execute(
        "INSERT INTO main.dedup_domains_before (dedup_run, dedup_rowid, domain, pages)
         SELECT ?1, rowid, domain, pages FROM main.dedup_domains
         UNION ALL SELECT ?1, NULL, NULL, NULL",
        [plan.run],
    )?;
    let touched = if plan.kind.incremental {
        "WHERE domain IN (SELECT domain FROM temp._dedup_domains_touched)
            OR (domain IS NULL AND EXISTS (SELECT 1 FROM temp._dedup_domains_touched WHERE domain IS NULL))"
    } else {
        ""
    };
    db.execute_batch(&format!(
        "DELETE FROM main.dedup_domains {touched};
         INSERT INTO main.dedup_domains
         SELECT c.domain, c.pages FROM temp._dedup_domain_counts AS c CROSS JOIN temp._dedup_run AS r
         WHERE (c.pages >= r.n_min OR c.domain IS NULL) AND c.pages > 0;"
    ))?;
    Ok(())
}

/// Step 7 (after the index, step 6): the run's record, its notes, the
/// explanation view; the change log sealed and the plan dropped.
fn record(
    db: &Connection,
    source: &Source,
    plan: &Planned,
    report: &Report,
) -> Result<(), DedupError> {
    record_run(db, plan, report)?;
    db.execute(
        "INSERT INTO main.dedup_notes (dedup_run, dedup_rowid, kind, other, ratio, note)
         SELECT ?1, rowid_, kind, other, ratio, note FROM temp._dedup_notes ORDER BY rowid_",
        [plan.run],
    )?;
    create_why_view(db, source)?;
    crate::sqlite::pipeline::incremental::changes::seal(db)?;
    drop_temp(db)?;
    Ok(())
}

/// A foreign key into the pages table: (child table, key id, [(child
/// column, parent column or NULL for the primary key)]).
type ForeignKey = (String, i64, Vec<(String, Option<String>)>);

/// With `PRAGMA foreign_keys` on, a removed row that another table
/// references (or a rewritten column it references) would fail the run or
/// cascade into that table: refused first, naming the row and the table.
fn check_foreign_keys(db: &Connection, source: &Source) -> Result<(), DedupError> {
    let on: bool = db.query_row("PRAGMA foreign_keys", [], |r| r.get(0))?;
    if !on {
        return Ok(());
    }
    let mut stmt = db.prepare(
        "SELECT m.name, f.id, f.\"from\", f.\"to\" FROM main.sqlite_schema AS m, pragma_foreign_key_list(m.name, 'main') AS f
         WHERE m.type = 'table' AND lower(f.\"table\") = lower(?1) ORDER BY m.name, f.id, f.seq",
    )?;
    // (child table, key id, [(child column, parent column or NULL)])
    let mut keys: Vec<ForeignKey> = Vec::new();
    for row in stmt.query_map([&source.table], |r| {
        Ok((
            r.get::<_, String>(0)?,
            r.get::<_, i64>(1)?,
            r.get::<_, String>(2)?,
            r.get::<_, Option<String>>(3)?,
        ))
    })? {
        let (child, id, from, to) = row?;
        match keys.last_mut() {
            Some((c, i, cols)) if *c == child && *i == id => cols.push((from, to)),
            _ => keys.push((child, id, vec![(from, to)])),
        }
    }
    let pk: Vec<String> = {
        let mut pk: Vec<_> = source.columns.iter().filter(|c| c.pk > 0).collect();
        pk.sort_by_key(|c| c.pk);
        pk.into_iter().map(|c| c.name.clone()).collect()
    };
    for (child, _, cols) in keys {
        let pairs: Vec<(String, String)> = cols
            .iter()
            .enumerate()
            .map(|(i, (from, to))| {
                let parent = to
                    .clone()
                    .or_else(|| pk.get(i).cloned())
                    .unwrap_or_default();
                (from.clone(), parent)
            })
            .collect();
        let on = pairs
            .iter()
            .map(|(f, t)| format!("c.{} = g.{}", quote_ident(f), quote_ident(t)))
            .collect::<Vec<_>>()
            .join(" AND ");
        let found: Option<i64> = rusqlite::OptionalExtension::optional(db.query_row(
            &format!(
                "SELECT g.{rowid} FROM main.{child} AS c JOIN {table} AS g ON {on}
                 WHERE g.{rowid} IN (SELECT source_rowid FROM temp._dedup_removal) LIMIT 1",
                rowid = source.rowid,
                child = quote_ident(&child),
                table = source.qualified(),
            ),
            [],
            |r| r.get(0),
        ))?;
        if let Some(rowid) = found {
            let cols: Vec<&str> = pairs.iter().map(|(f, _)| f.as_str()).collect();
            return fail(Code::Blocked, format!(
                "dedup: rowid {rowid} of {} is a duplicate to remove, but {}.{} references it (foreign key); nothing was changed (re-point or delete the referencing rows, or run with PRAGMA foreign_keys = OFF)",
                quote_ident(&source.table),
                quote_ident(&child),
                cols.join(",")
            ));
        }
    }
    Ok(())
}

/// Records the run in `dedup_runs`.
fn record_run(db: &Connection, plan: &Planned, report: &Report) -> Result<(), DedupError> {
    db.execute(
        "INSERT INTO main.dedup_runs (run, finished, rows_before, rows_after, settings, report)
         VALUES (?1, datetime('now'), ?2, ?3, ?4, ?5)",
        params![
            plan.run,
            plan.rows_before,
            report.rows_after,
            plan.settings,
            report.to_json()
        ],
    )?;
    Ok(())
}

/// Keeps in `dedup_rewritten.written` what each rewritten column holds
/// after the rewrite, and in `identity` the survivor's identity then (its
/// user's triggers' writes included: restore gives the old value back only
/// to the row that still has it,
/// [`crate::sqlite::tables::identity`]), and refuses a rewrite a
/// trigger cancelled or undid: its row would be recorded as rewritten
/// while the table holds the old value. The run's rows of
/// `dedup_rewritten` are those after rowid `rewritten_after`: found by a
/// seek, not a scan of every earlier run's rows.
fn record_written(
    db: &Connection,
    source: &Source,
    run: i64,
    rewritten_after: i64,
    rewrites: &[(String, String, String)],
) -> Result<(), DedupError> {
    let mut now = String::new();
    for (c, _, _) in rewrites {
        now += &format!(" WHEN {} THEN g.{}", quote_literal(c), quote_ident(c));
    }
    // (Each survivor's identity once, whatever the number of its columns.)
    db.execute_batch(
        "DROP TABLE IF EXISTS temp._dedup_identities;
         CREATE TEMP TABLE _dedup_identities (rid INTEGER PRIMARY KEY, identity BLOB);",
    )?;
    db.execute(
        &format!(
            "INSERT INTO temp._dedup_identities SELECT g.{rowid}, {identity} FROM {table} AS g
             WHERE g.{rowid} IN (SELECT dedup_rowid FROM main.dedup_rewritten
                                 WHERE rowid > ?2 AND dedup_run = ?1)",
            table = source.qualified(),
            rowid = source.rowid,
            identity = crate::sqlite::tables::identity::identity_of(source, "g"),
        ),
        [run, rewritten_after],
    )?;
    db.execute(
        &format!(
            "UPDATE main.dedup_rewritten AS w SET written = CASE w.name{now} END,
               identity = (SELECT i.identity FROM temp._dedup_identities AS i WHERE i.rid = w.dedup_rowid)
             FROM {table} AS g
             WHERE w.rowid > ?2 AND w.dedup_run = ?1 AND g.{rowid} = w.dedup_rowid",
            table = source.qualified(),
            rowid = source.rowid,
        ),
        [run, rewritten_after],
    )?;
    db.execute_batch("DROP TABLE temp._dedup_identities;")?;
    let cancelled: Option<(i64, i64, String)> = db
        .query_row(
            &format!(
                "SELECT count(*) OVER (), w.dedup_rowid, w.name FROM main.dedup_rewritten AS w
                 WHERE w.rowid > ?2 AND w.dedup_run = ?1 AND (w.written IS w.value
                   OR NOT EXISTS (SELECT 1 FROM {table} AS g WHERE g.{rowid} = w.dedup_rowid))
                 ORDER BY w.dedup_rowid LIMIT 1",
                table = source.qualified(),
                rowid = source.rowid
            ),
            [run, rewritten_after],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )
        .optional()?;
    if let Some((n, rowid, name)) = cancelled {
        return fail(Code::Blocked, format!(
            "dedup: rewriting the survivors' columns left {n} of their new values unwritten (the first: column {} of the row whose rowid is {rowid}): a trigger on {} cancelled or undid the rewrite; nothing was changed",
            quote_ident(&name),
            quote_ident(&source.table)
        ));
    }
    Ok(())
}

/// `dedup_why`: for every removed row, why it left and the final survivor
/// it lost to (following survivors that later phases or runs removed), and
/// for a near duplicate the ratio to that survivor when it is the final
/// survivor of its own run (above the threshold; a note says when below),
/// and, when the survivor is in another database (`against`) or shard
/// (Spark), where (`elsewhere`).
/// Plain SQL in the user's database: readable without the extension.
fn create_why_view(db: &Connection, source: &Source) -> Result<(), DedupError> {
    match schema::object_type(db, "dedup_why")?.as_deref() {
        None | Some("view") => {}
        Some(_) => return Ok(()), // a user's own object of that name stays
    }
    let url = match source.column("url") {
        Some(real) => format!("d.{}", quote_ident(&real)),
        None => "NULL".into(),
    };
    db.execute_batch(&format!(
        "DROP VIEW IF EXISTS main.dedup_why;
         CREATE VIEW main.dedup_why AS
         WITH RECURSIVE chain(start, run, phase, at, path, depth) AS (
           SELECT d.rowid, d.dedup_run, d.dedup_phase, d.dedup_survivor, CAST(d.dedup_rowid AS TEXT), 0
           FROM dedup_removed AS d
           UNION ALL
           SELECT c.start, n.dedup_run, n.dedup_phase, n.dedup_survivor, c.path || ' -> ' || c.at, c.depth + 1
           FROM chain AS c JOIN dedup_removed AS n
             ON n.dedup_rowid = c.at AND (n.dedup_run > c.run OR (n.dedup_run = c.run AND n.dedup_phase >= c.phase))
           WHERE c.at IS NOT NULL AND c.depth < 100
         ),
         last AS (
           SELECT start, at, path, phase, max(depth) FROM chain GROUP BY start
         )
         SELECT d.dedup_rowid AS rowid, {url} AS url, d.dedup_run AS run, d.dedup_phase AS phase,
                d.dedup_reason AS reason, d.dedup_ratio AS ratio, d.dedup_survivor AS survivor,
                l.at AS final_survivor,
                CASE WHEN l.at IS NULL THEN NULL ELSE l.path || ' -> ' || l.at END AS chain,
                (SELECT {qurl} FROM {table} WHERE {rowid} = l.at) AS final_url,
                n.ratio AS final_ratio, n.note AS final_note,
                (SELECT e.note FROM dedup_notes AS e WHERE e.dedup_run = d.dedup_run AND e.dedup_rowid = d.dedup_rowid
                   AND e.kind = 'survivor elsewhere' LIMIT 1) AS elsewhere
         FROM dedup_removed AS d JOIN last AS l ON l.start = d.rowid
         LEFT JOIN dedup_notes AS n
           ON n.dedup_run = d.dedup_run AND n.dedup_rowid = d.dedup_rowid AND n.kind = 'final' AND n.other = l.at;",
        qurl = source.column("url").map_or("NULL".into(), |u| quote_ident(&u)),
        table = quote_ident(&source.table),
        rowid = source.rowid,
    ))?;
    Ok(())
}

/// The rows a run removes, in rowid order.
const REMOVED: &str = "SELECT source_rowid FROM temp._dedup_removal ORDER BY source_rowid";
/// The rows a run keeps (and may rewrite), in rowid order.
const KEPT: &str = "SELECT source_rowid FROM temp._dedup_prepared WHERE skip_reason IS NULL
    AND source_rowid NOT IN (SELECT source_rowid FROM temp._dedup_removal) ORDER BY source_rowid";

/// An error of a bulk statement. For a constraint (a UNIQUE index, a CHECK,
/// a trigger's RAISE), `one` (the statement for one rowid) is retried on each
/// row of `rows` to name the first row that fails
/// ([`crate::sqlite::pipeline::run::locate::first_refused`]).
fn located(
    db: &Connection,
    e: rusqlite::Error,
    doing: &str,
    rows: &str,
    one: impl Fn(i64) -> rusqlite::Result<usize>,
) -> DedupError {
    let generic = || {
        DedupError::new(
            Code::of(&e),
            format!("dedup: {doing} rows failed, nothing was changed: {e}"),
        )
    };
    if !crate::sqlite::pipeline::run::locate::refused(&e) {
        return generic();
    }
    let ids: Vec<i64> = db
        .prepare(rows)
        .and_then(|mut s| s.query_map([], |r| r.get(0))?.collect())
        .unwrap_or_default();
    match crate::sqlite::pipeline::run::locate::first_refused(db, &ids, one) {
        Some((id, err)) => DedupError::new(
            Code::of(&e),
            format!("dedup: {doing} rowid {id} failed, nothing was changed: {err}"),
        ),
        None => generic(),
    }
}
