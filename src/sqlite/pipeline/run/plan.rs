//! Phases 1–6 as the SQL scripts of `sql/` (embedded in the binary): they
//! read the user's table through temp views and write only temp tables, so
//! planning a run changes nothing a user can see.

use crate::sqlite::ground::error::Code;
use rusqlite::{params, Connection, OptionalExtension};

use crate::sqlite::ground::error::{fail, DedupError};
use crate::sqlite::ground::trace::{lap, Trace};
use crate::sqlite::pipeline::external::plan_in;
use crate::sqlite::pipeline::incremental::run_kind::RunKind;
use crate::sqlite::pipeline::inputs::against;
use crate::sqlite::pipeline::mode::RunMode;
use crate::sqlite::pipeline::scripts::{Step, When, EXTERNAL, PHASES, PREPARE_ONLY};
use crate::sqlite::settings::{self, values::Settings};
use crate::sqlite::tables::schema::{self, Source};

/// Every temp object a plan leaves, dropped once it is applied.
pub const TEMP_OBJECTS: [(&str, &str); 73] = [
    ("TABLE", "_dedup_paragraphs_decided"),
    ("TABLE", "_dedup_paragraph_texts"),
    ("TABLE", "_dedup_paragraph_keys"),
    ("TABLE", "_dedup_paragraph_scope"),
    ("TABLE", "_dedup_paragraph_leaving"),
    ("TABLE", "_dedup_paragraph_new"),
    ("TABLE", "_dedup_paragraph_cuts"),
    ("TABLE", "_dedup_apart"),
    ("TABLE", "_dedup_index_new"),
    ("TABLE", "_dedup_restore_to"),
    ("TABLE", "_dedup_restore_ids"),
    ("TABLE", "_dedup_identities"),
    ("VIEW", "_dedup_index_apart"),
    ("TABLE", "_dedup_apart_all"),
    ("TRIGGER", "_dedup_seen_insert"),
    ("TRIGGER", "_dedup_seen_update"),
    ("TRIGGER", "_dedup_seen_delete"),
    ("TABLE", "_dedup_seen"),
    ("TABLE", "_dedup_triggered"),
    ("TABLE", "_dedup_planned"),
    ("TABLE", "_dedup_band_blobs"),
    ("TABLE", "_dedup_lsh_new"),
    ("TABLE", "_dedup_range"),
    ("VIEW", "_dedup_rows"),
    ("TABLE", "_dedup_rows_placeholders"),
    ("TABLE", "_dedup_external"),
    ("VIEW", "_dedup_placeholders"),
    ("VIEW", "_dedup_todo"),
    (
        "VIEW",
        crate::sqlite::pipeline::incremental::index_keys::VIEW,
    ),
    ("TABLE", "_dedup_clean"),
    ("TABLE", "_dedup_ghosts"),
    ("TABLE", "_dedup_keys"),
    ("TABLE", "_dedup_domains_touched"),
    ("TABLE", "_dedup_lost"),
    ("TABLE", "_dedup_near_rows"),
    ("TABLE", "_dedup_domain_delta"),
    ("TABLE", "_dedup_url_only"),
    ("VIEW", "_dedup_url_only_rows"),
    ("TABLE", "_dedup_before"),
    ("TABLE", "_dedup_incremental"),
    ("TABLE", "_dedup_fingerprint"),
    ("TABLE", "_dedup_dirty"),
    ("TABLE", "_dedup_gone"),
    ("TABLE", "_dedup_drift"),
    ("TABLE", "_dedup_final"),
    ("TABLE", "_dedup_notes"),
    ("TABLE", "_dedup_prefer"),
    ("TABLE", "_dedup_kept_apart"),
    ("TABLE", "_dedup_snapshot"),
    ("TABLE", "_dedup_removal"),
    ("TABLE", "_dedup_domain_removed"),
    ("TABLE", "_dedup_domain_counts"),
    ("TABLE", "_dedup_near_removed"),
    ("TABLE", "_dedup_lsh_bands"),
    ("TABLE", "_dedup_lsh_keys"),
    ("TABLE", "_dedup_near_copy"),
    ("VIEW", "_dedup_near_texts"),
    ("TABLE", "_dedup_chrome"),
    ("TABLE", "_dedup_near_input"),
    ("TABLE", "_dedup_exact_winners"),
    ("VIEW", "_dedup_content_ballots"),
    ("TABLE", "_dedup_content_ranked"),
    ("VIEW", "_dedup_url_ballots"),
    ("TABLE", "_dedup_url_ranked"),
    ("TABLE", "_dedup_prepared"),
    ("TABLE", "_dedup_run"),
    ("VIEW", "_dedup_archive"),
    ("VIEW", "_dedup_pages"),
    ("TABLE", "_dedup_against"),
    ("TABLE", "_dedup_against_of"),
    ("TABLE", "_dedup_against_archive"),
    ("TABLE", "_dedup_url_fixes"),
    ("VIEW", "_dedup_source"),
];

/// Temp objects a caller writes before a plan, for it (a plan there of a
/// run `against` another database: `inputs/against/indexed.rs`); a plan leaves
/// them, and whoever made them drops them.
pub const TEMP_INPUTS: [(&str, &str); 1] = [("TABLE", "_dedup_extra")];

/// A planned run, as `temp._dedup_planned` records it.
#[derive(Debug, Clone)]
pub struct Planned {
    /// The run's number.
    pub run: i64,
    /// The table it deduplicates.
    pub table: String,
    /// The settings as JSON (for `dedup_runs.settings`).
    pub settings: String,
    /// Rows of the table when planned.
    pub rows_before: i64,
    /// Seconds each phase script took, in order.
    pub seconds: Vec<(String, f64)>,
    /// Full or incremental, as the run decided it.
    pub kind: RunKind,
}

/// Plans a run of `mode`: checks the table and the earlier runs' tables,
/// writes the temp inputs, runs the phase scripts and records the plan.
pub fn plan(db: &Connection, s: &Settings, mode: &RunMode) -> Result<Planned, DedupError> {
    let mut lapped = std::time::Instant::now();
    drop_temp(db)?;
    crate::sqlite::tables::own_tables::refuse_as_pages(&s.table)?;
    let source = Source::inspect_mapped(db, &s.table, &s.columns)?;
    if s.paragraphs == crate::sqlite::settings::choices::Paragraphs::Dedup
        && source.column("parsed").is_none()
    {
        return fail(Code::Setting, format!(
            "dedup: paragraphs 'dedup' edits the kept pages' parsed column, got a table {} without one (map it with the columns setting, e.g. {{\"parsed\": \"text\"}})",
            schema::quote_ident(&source.table)
        ));
    }
    crate::sqlite::tables::own_tables::check(db, "dedup")?;
    let run = next_run(db)?;
    source.create_view(db)?;
    if *mode == RunMode::There {
        against::indexed::extend_source(db, &source)?;
    }
    let there = |c: &Connection, s: &Settings| {
        plan(c, s, &RunMode::There).map(|p| (p.kind.incremental, p.rows_before))
    };
    let against = match against::decide(db, &source, s, mode, there)? {
        // (Made there, against its index: read back as a plan made elsewhere.)
        against::Decided::MadeThere(made) => return plan(db, s, &RunMode::Made(made)),
        against::Decided::Here(against) => against,
    };
    crate::sqlite::pipeline::inputs::url_fixes::load(db, s)?;
    create_archive_view(db, &source)?;
    crate::sqlite::pipeline::inputs::prefer::write(db, &source, s, mode)?;
    lap("plan: checks", &mut lapped);
    // (The index's look at what changed is timed as step 00.)
    let start = std::time::Instant::now();
    let kind = crate::sqlite::pipeline::incremental::run_kind::prepare(
        db,
        &source,
        s,
        mode,
        &s.to_json(db)?,
    )
    .map_err(index_edited)?;
    let rows_before = crate::sqlite::pipeline::incremental::run_kind::rows(db, &source, &kind)?;
    let mut seconds = vec![("00_changes".to_string(), start.elapsed().as_secs_f64())];
    settings::record::write_run_row(db, s, run, rows_before)?;
    lap("plan: 00_changes", &mut lapped);
    if let RunMode::FromPlan(table, paragraphs) = mode {
        plan_in::copy_plan(db, table)?;
        let on = s.paragraphs == crate::sqlite::settings::choices::Paragraphs::Dedup;
        match paragraphs {
            Some(cuts) if on => plan_in::copy_paragraphs(db, cuts)?,
            None if on => return fail(Code::Plan, "dedup_apply_plan: paragraphs 'dedup' needs the plan's paragraph cuts, got no third argument (a table of rid, position, owner, owner_url, owner_paragraph)".into()),
            Some(_) => return fail(Code::Plan, "dedup_apply_plan: paragraph cuts (the third argument) need paragraphs 'dedup', got paragraphs 'keep'".into()),
            None => {}
        }
    }
    if let RunMode::Made(made) = mode {
        plan_in::write_plan(db, made)?;
    }
    if let RunMode::PrepareOnly(lo, hi) = *mode {
        // (The range's rows only; its placeholders, in external/01_rows.sql.)
        db.execute_batch(
            "DROP TABLE IF EXISTS temp._dedup_range;
             CREATE TEMP TABLE _dedup_range (lo INTEGER, hi INTEGER);
             DROP VIEW IF EXISTS temp._dedup_todo;
             CREATE TEMP VIEW _dedup_todo AS SELECT g.* FROM temp._dedup_source AS g, temp._dedup_range AS r
             WHERE (r.lo IS NULL OR g.rid >= r.lo) AND (r.hi IS NULL OR g.rid < r.hi);",
        )?;
        db.execute(
            "INSERT INTO temp._dedup_range VALUES (?1, ?2)",
            params![lo, hi],
        )?;
    }
    let phases: &[(&str, &[Step])] = match mode {
        RunMode::All | RunMode::There => &PHASES,
        RunMode::PrepareOnly(..) => &PREPARE_ONLY,
        RunMode::FromPlan(..) | RunMode::Made(_) => &EXTERNAL,
    };
    let when = Conditions {
        incremental: kind.incremental,
        against: against.is_some(),
        strip: s.boilerplate == crate::sqlite::settings::choices::Boilerplate::Strip,
        paragraphs: s.paragraphs == crate::sqlite::settings::choices::Paragraphs::Dedup,
    };
    seconds.extend(if s.url_rules > 0.0 {
        crate::sqlite::url_learner::drop_rules::with_rules_snapshot(db, || {
            run_phases(db, phases, rows_before, when)
        })??
    } else {
        run_phases(db, phases, rows_before, when)?
    });
    let planned = Planned {
        run,
        table: source.table.clone(),
        settings: s.to_json(db)?,
        rows_before,
        seconds,
        kind,
    };
    if matches!(mode, RunMode::PrepareOnly(..)) {
        // (No plan to apply: phase 1's tables are the result.)
        return Ok(planned);
    }
    db.execute_batch(
        "CREATE TEMP TABLE _dedup_planned (run INTEGER, tbl TEXT, settings TEXT, rows_before INTEGER, seconds TEXT)",
    )?;
    db.execute(
        "INSERT INTO temp._dedup_planned VALUES (?1, ?2, ?3, ?4, ?5)",
        params![
            run,
            planned.table,
            planned.settings,
            rows_before,
            encode_seconds(&planned.seconds)
        ],
    )?;
    Ok(planned)
}

/// What decides whether a step that runs only [`When`] something runs.
#[derive(Debug, Clone, Copy)]
struct Conditions {
    incremental: bool,
    against: bool,
    strip: bool,
    paragraphs: bool,
}

/// Runs the phase scripts in order; the seconds each took.
fn run_phases(
    db: &Connection,
    phases: &[(&str, &[Step])],
    rows: i64,
    when: Conditions,
) -> Result<Vec<(String, f64)>, DedupError> {
    let Conditions {
        incremental,
        against,
        strip,
        paragraphs,
    } = when;
    let mut seconds = Vec::with_capacity(phases.len());
    for (i, (name, steps)) in phases.iter().enumerate() {
        crate::sqlite::pipeline::run::progress::phase(name, i + 1, phases.len() + 1);
        if i == 0 {
            // Phase 1 ticks once a row (dedup_invalid_text).
            crate::sqlite::ground::progress::total(rows.max(0) as u64);
        }
        let start = std::time::Instant::now();
        for step in *steps {
            let t0 = std::time::Instant::now();
            let label = match *step {
                Step::Script(file, _, _) => file.to_string(),
                Step::NearInput => "near_input".into(),
                Step::Paragraphs => "paragraphs".into(),
            };
            let _trace = Trace(label, t0);
            match *step {
                Step::Script(file, sql, when) => {
                    if (when == When::Incremental && !incremental)
                        || (when == When::Against && !against)
                        || (when == When::Strip && !strip)
                    {
                        continue;
                    }
                    run_script(db, sql).map_err(|e| {
                        DedupError::new(
                            Code::of(&e),
                            match e {
                                // Our own messages already say what is wrong.
                                rusqlite::Error::SqliteFailure(_, Some(m)) if m.contains(": ") => m,
                                other => format!("dedup: phase {file} failed: {other}"),
                            },
                        )
                    })?;
                }
                Step::NearInput if incremental => {
                    crate::sqlite::pipeline::incremental::near_input::build(db)
                        .map_err(index_edited)?;
                    crate::sqlite::pipeline::incremental::lsh_input::build(db)
                        .map_err(index_edited)?;
                }
                Step::NearInput => {}
                Step::Paragraphs if paragraphs => {
                    crate::sqlite::pipeline::run::paragraphs::plan(db)?;
                }
                Step::Paragraphs => {}
            }
        }
        seconds.push((name.to_string(), start.elapsed().as_secs_f64()));
    }
    Ok(seconds)
}

/// An incremental run's error of a value of another type than the index
/// holds, said so: only an edit outside the extension puts one there.
fn index_edited(e: DedupError) -> DedupError {
    if !e.is_wrong_type() {
        return e;
    }
    DedupError::wrong_type(format!(
        "dedup: the incremental index (dedup_index, dedup_index_order and the tables beside them) holds a value this extension does not write: {} (an edit outside the extension); a run with {{\"full\": true}} rebuilds it; nothing was changed",
        e.words()
    ))
}

/// Runs a phase script; with `DEDUP_TRACE` set, a statement at a time,
/// printing each one's first line and seconds.
fn run_script(db: &Connection, sql: &str) -> rusqlite::Result<()> {
    if std::env::var("DEDUP_TRACE").is_err() {
        return db.execute_batch(sql);
    }
    use rusqlite::fallible_iterator::FallibleIterator;
    let mut batch = rusqlite::Batch::new(db, sql);
    while let Some(mut stmt) = batch.next()? {
        let start = std::time::Instant::now();
        stmt.raw_execute()?;
        let text = stmt.expanded_sql().unwrap_or_default();
        let first = text
            .lines()
            .map(str::trim)
            .find(|l| !l.is_empty() && !l.starts_with("--"))
            .unwrap_or("");
        eprintln!(
            "TRACE   {} {:.3}",
            first.chars().take(70).collect::<String>(),
            start.elapsed().as_secs_f64()
        );
    }
    Ok(())
}

impl Planned {
    /// The `columns` setting the plan was made with.
    pub fn columns(&self) -> Result<Vec<(String, String)>, DedupError> {
        columns_of(&Connection::open_in_memory()?, &self.settings)
    }
}

/// The `columns` member of a run's settings JSON (none when absent).
pub fn columns_of(
    db: &Connection,
    settings_json: &str,
) -> Result<Vec<(String, String)>, DedupError> {
    let columns: Option<String> = db.query_row(
        "SELECT CASE WHEN json_valid(?1) THEN json_extract(?1, '$.columns') END",
        [settings_json],
        |r| r.get(0),
    )?;
    Ok(match columns {
        Some(text) => settings::check::parse_columns(&text)?.unwrap_or_default(),
        None => Vec::new(),
    })
}

/// The plan left by [`plan`] in this connection, if any.
pub fn planned(db: &Connection) -> Result<Option<Planned>, DedupError> {
    let exists: bool = db.query_row(
        "SELECT EXISTS (SELECT 1 FROM temp.sqlite_schema WHERE name = '_dedup_planned')",
        [],
        |r| r.get(0),
    )?;
    if !exists {
        return Ok(None);
    }
    let kind = crate::sqlite::pipeline::incremental::run_kind::decision(db)?;
    Ok(db
        .query_row(
            "SELECT run, tbl, settings, rows_before, seconds FROM temp._dedup_planned",
            [],
            |r| {
                Ok(Planned {
                    run: r.get(0)?,
                    table: r.get(1)?,
                    settings: r.get(2)?,
                    rows_before: r.get(3)?,
                    seconds: decode_seconds(&r.get::<_, String>(4)?),
                    kind: kind.clone(),
                })
            },
        )
        .optional()?)
}

/// `name=seconds;...` (names are phase file stems: no `=` or `;`).
fn encode_seconds(seconds: &[(String, f64)]) -> String {
    seconds
        .iter()
        .map(|(n, s)| format!("{n}={s}"))
        .collect::<Vec<_>>()
        .join(";")
}

fn decode_seconds(text: &str) -> Vec<(String, f64)> {
    text.split(';')
        .filter_map(|item| {
            let (n, s) = item.split_once('=')?;
            Some((n.to_string(), s.parse().ok()?))
        })
        .collect()
}

/// Drops every temp object of a plan.
pub fn drop_temp(db: &Connection) -> rusqlite::Result<()> {
    let sql: String = TEMP_OBJECTS
        .iter()
        .map(|(kind, name)| format!("DROP {kind} IF EXISTS temp.{name};"))
        .collect();
    db.execute_batch(&sql)
}

/// The number of the next run: one more than the largest in `dedup_runs`.
/// A `dedup_runs` that is not this extension's table is refused.
pub fn next_run(db: &Connection) -> Result<i64, DedupError> {
    match schema::object_type(db, "dedup_runs")?.as_deref() {
        None => return Ok(1),
        Some("table") => {}
        Some(other) => {
            return fail(
                Code::Own,
                format!("dedup: dedup_runs must be a table this extension created, got a {other}"),
            )
        }
    }
    let bad: Option<String> = db
        .query_row(
            "SELECT quote(run) FROM main.dedup_runs WHERE typeof(run) <> 'integer' LIMIT 1",
            [],
            |r| r.get(0),
        )
        .optional()
        .map_err(|e| {
            DedupError::new(
                Code::Own,
                format!("dedup: dedup_runs has no column run, got {e}"),
            )
        })?;
    if let Some(v) = bad {
        return fail(
            Code::Own,
            format!(
                "dedup: dedup_runs.run must hold integers, got {}",
                crate::sqlite::ground::shown::truncate(&v, 60)
            ),
        );
    }
    let max: Option<i64> =
        db.query_row("SELECT max(run) FROM main.dedup_runs", [], |r| r.get(0))?;
    Ok(max.unwrap_or(0) + 1)
}

/// `temp._dedup_archive`: the rows earlier runs removed from this table
/// (`archive_rowid`, `dedup_rowid`, `dedup_phase`, `dedup_survivor`, `url`,
/// `title`, `content`, `parsed`, `content_hash`, `crawled`, `dedup_run`), or
/// no rows.
fn create_archive_view(db: &Connection, source: &Source) -> Result<(), DedupError> {
    let body = schema::archive_view_body(db, source, None)?;
    // (With `against`, the other database's window slots too: its rows
    // its earlier runs removed in phases 4-5, inputs/against/copied.rs.)
    db.execute_batch(&format!(
        "DROP VIEW IF EXISTS temp._dedup_archive; CREATE TEMP VIEW _dedup_archive AS {body}
         UNION ALL SELECT NULL, dedup_rowid, dedup_phase, NULL, url, NULL, content, parsed, NULL, NULL, NULL
         FROM temp._dedup_against_archive;"
    ))?;
    Ok(())
}
