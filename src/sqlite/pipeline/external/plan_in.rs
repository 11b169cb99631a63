//! A plan made elsewhere, read back into `temp._dedup_external` (which
//! `sql/external/06_from_plan.sql` turns into the run's removals): a plan
//! table given to `dedup_apply_plan` ([`copy_plan`], checked row by row),
//! or the rows of a plan made on the other database of `against`
//! ([`write_plan`]).

use rusqlite::{Connection, OptionalExtension};

use crate::sqlite::ground::error::{fail, Code, DedupError};
use crate::sqlite::pipeline::mode::Made;
use crate::sqlite::tables::schema::quote_ident;

/// Columns of the plan `dedup_apply_plan` takes.
pub const PLAN_COLUMNS: [&str; 7] = [
    "rid",
    "phase",
    "reason",
    "survivor",
    "ratio",
    "rewrite_url",
    "note",
];

/// Copies the plan made elsewhere from `table` into `temp._dedup_external`
/// and checks it against the table about to change: each row once, a
/// rowid of the table, a phase 1–5 with a reason (or NULL to keep the row
/// apart under `rewrite_url`), a survivor that is a row of the table or
/// NULL. An error names the plan's first bad row.
pub fn copy_plan(db: &Connection, table: &str) -> Result<(), DedupError> {
    let missing: Vec<&str> = {
        let sql = format!("SELECT * FROM {} LIMIT 0", quote_ident_path(table));
        let stmt = db.prepare(&sql).map_err(|e| {
            DedupError::new(
                Code::Plan,
                format!(
                    "dedup_apply_plan: the plan must be a table or view, got {}: {}",
                    crate::sqlite::ground::shown::excerpt(table),
                    DedupError::from(e).words()
                ),
            )
        })?;
        let have: Vec<String> = stmt
            .column_names()
            .iter()
            .map(|c| c.to_lowercase())
            .collect();
        PLAN_COLUMNS
            .iter()
            .copied()
            .filter(|c| !have.iter().any(|h| h == c))
            .collect()
    };
    if !missing.is_empty() {
        return fail(
            Code::Plan,
            format!(
                "dedup_apply_plan: the plan {} lacks column(s) {} (it needs {})",
                crate::sqlite::ground::shown::excerpt(table),
                missing.join(", "),
                PLAN_COLUMNS.join(", ")
            ),
        );
    }
    db.execute_batch(&format!(
        "DROP TABLE IF EXISTS temp._dedup_external;
         CREATE TEMP TABLE _dedup_external AS
         SELECT rid, phase, reason, survivor, ratio, rewrite_url, note FROM {};",
        quote_ident_path(table)
    ))?;
    let checks = [
        ("its rid is not an integer", "typeof(rid) <> 'integer'"),
        (
            "its rid is listed twice",
            "rid IN (SELECT rid FROM temp._dedup_external GROUP BY rid HAVING count(*) > 1)",
        ),
        (
            "its rid is not a row of the table",
            "rid NOT IN (SELECT rid FROM temp._dedup_source)",
        ),
        (
            "its phase is not NULL or 1 to 5",
            "phase IS NOT NULL AND (typeof(phase) <> 'integer' OR phase NOT BETWEEN 1 AND 5)",
        ),
        (
            "a removal needs a reason (TEXT)",
            "phase IS NOT NULL AND typeof(reason) <> 'text'",
        ),
        (
            "a kept row needs a rewrite_url or a note",
            "phase IS NULL AND rewrite_url IS NULL AND note IS NULL",
        ),
        // (A survivor may lose in a later phase in turn, as in any run.)
        (
            "its survivor is not a row of the table",
            "survivor IS NOT NULL AND survivor NOT IN (SELECT rid FROM temp._dedup_source)",
        ),
        (
            "its ratio is not a number",
            "ratio IS NOT NULL AND typeof(ratio) NOT IN ('real', 'integer')",
        ),
        (
            "its rewrite_url is not TEXT",
            "rewrite_url IS NOT NULL AND typeof(rewrite_url) <> 'text'",
        ),
    ];
    first_bad(db, "temp._dedup_external", &checks, "the plan's row")
}

/// Refuses the first row of `table` (by rid) that one of `checks` (what is
/// wrong, the condition that finds it) finds, naming it as `row` for rid N.
fn first_bad(
    db: &Connection,
    table: &str,
    checks: &[(&str, &str)],
    row: &str,
) -> Result<(), DedupError> {
    for (what, bad) in checks {
        let rid: Option<String> = db
            .query_row(
                &format!("SELECT quote(rid) FROM {table} WHERE {bad} ORDER BY rid LIMIT 1"),
                [],
                |r| r.get(0),
            )
            .optional()?;
        if let Some(rid) = rid {
            return fail(
                Code::Plan,
                format!(
                    "dedup_apply_plan: {row} for rid {} is wrong: {what}; nothing was changed",
                    crate::sqlite::ground::shown::truncate(&rid, 60)
                ),
            );
        }
    }
    Ok(())
}

/// Columns of the paragraph cuts `dedup_apply_plan` takes (its third
/// argument): a kept row, the position of a paragraph of its text (from
/// 1), the owner's rowid here (NULL: in another shard), its URL and the
/// owner's paragraph, which the cut must equal once normalized.
pub const PARAGRAPH_COLUMNS: [&str; 5] =
    ["rid", "position", "owner", "owner_url", "owner_paragraph"];

/// Copies the paragraph cuts of a plan made elsewhere from `table` into
/// `temp._dedup_paragraphs_decided`, checked: each row a kept row of the
/// table's (not removed by the plan), an integer position, an owner that
/// is a row of the table or NULL, the owner's paragraph as TEXT. An error
/// names the first bad row.
pub fn copy_paragraphs(db: &Connection, table: &str) -> Result<(), DedupError> {
    let select = PARAGRAPH_COLUMNS.join(", ");
    db.execute_batch(&format!(
        "DROP TABLE IF EXISTS temp._dedup_paragraphs_decided;
         CREATE TEMP TABLE _dedup_paragraphs_decided AS SELECT {select} FROM {};",
        quote_ident_path(table)
    ))
    .map_err(|e| {
        DedupError::new(
            Code::Plan,
            format!(
                "dedup_apply_plan: the paragraph cuts must be a table or view with the columns {}, got {}: {}",
                PARAGRAPH_COLUMNS.join(", "),
                crate::sqlite::ground::shown::excerpt(table),
                DedupError::from(e).words()
            ),
        )
    })?;
    let checks = [
        ("its rid is not an integer", "typeof(rid) <> 'integer'"),
        (
            "its rid is not a row of the table",
            "rid NOT IN (SELECT rid FROM temp._dedup_source)",
        ),
        (
            "its rid is a row the plan removes",
            "rid IN (SELECT rid FROM temp._dedup_external WHERE phase IS NOT NULL)",
        ),
        (
            "its position is not an integer >= 1",
            "typeof(position) <> 'integer' OR position < 1",
        ),
        (
            "its owner is not a row of the table or NULL",
            "owner IS NOT NULL AND (typeof(owner) <> 'integer' OR owner NOT IN (SELECT rid FROM temp._dedup_source))",
        ),
        (
            "its owner_url is not TEXT or NULL",
            "owner_url IS NOT NULL AND typeof(owner_url) <> 'text'",
        ),
        ("its owner_paragraph is not TEXT", "typeof(owner_paragraph) <> 'text'"),
    ];
    first_bad(
        db,
        "temp._dedup_paragraphs_decided",
        &checks,
        "the paragraph cut",
    )
}

/// `name` or `schema.name` as a quoted SQL name.
fn quote_ident_path(name: &str) -> String {
    match name.split_once('.') {
        Some((schema, table))
            if schema.eq_ignore_ascii_case("temp") || schema.eq_ignore_ascii_case("main") =>
        {
            format!("{schema}.{}", quote_ident(table))
        }
        _ => quote_ident(name),
    }
}

/// The plan made there as `dedup_apply_plan` reads one:
/// `temp._dedup_external`.
pub fn write_plan(db: &Connection, made: &Made) -> Result<(), DedupError> {
    db.execute_batch(
        "DROP TABLE IF EXISTS temp._dedup_external;
         CREATE TEMP TABLE _dedup_external (rid INTEGER, phase INTEGER, reason TEXT, survivor INTEGER,
           ratio REAL, rewrite_url TEXT, note TEXT);",
    )?;
    let mut write =
        db.prepare("INSERT INTO temp._dedup_external VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)")?;
    for r in &made.rows {
        write.execute(rusqlite::params![
            r.rid,
            r.phase,
            r.reason,
            r.survivor,
            r.ratio,
            r.rewrite_url,
            r.note
        ])?;
    }
    Ok(())
}
