//! What a run did: rows before and after, removals per phase, rows skipped
//! for bad values. Printed by `dedup_run()`, kept as JSON in
//! `dedup_runs.report`.

use crate::core::phase::Phase;
use rusqlite::Connection;

use crate::sqlite::ground::error::DedupError;
use crate::sqlite::ground::json::json_string;
use crate::sqlite::pipeline::incremental::run_kind::RunKind;
use crate::sqlite::pipeline::run::plan::Planned;
use crate::sqlite::tables::schema::{quote_ident, Source};

/// (domain, parameter) pairs of pages kept apart listed in the report.
pub const KEPT_APART_LISTED: usize = 10;

/// Skipped rows named one by one in the report; the rest are counted.
pub const SKIPPED_LISTED: usize = 20;

/// The report of one run.
#[derive(Debug, Clone, PartialEq)]
pub struct Report {
    /// The run's number.
    pub run: i64,
    /// Rows before the run.
    pub rows_before: i64,
    /// Rows after it.
    pub rows_after: i64,
    /// (phase, rows removed), phases that removed nothing left out.
    pub removed: Vec<(i64, i64)>,
    /// The first skipped rows: (rowid, why).
    pub skipped: Vec<(i64, String)>,
    /// How many rows were skipped in all.
    pub skipped_total: i64,
    /// The query that lists every skipped row, in the table's own names
    /// (empty when every skipped row is listed).
    pub skipped_query: String,
    /// Seconds per phase script, then `apply` (not printed; in the JSON).
    pub seconds: Vec<(String, f64)>,
    /// With `boilerplate = 'strip'`: (segments, domains) left out of the
    /// near-duplicate comparison.
    pub boilerplate: Option<(i64, i64)>,
    /// Pairs of pages too long to compare within the bound on one pair's
    /// work (`near_dups_stats()`'s `too_long`), kept apart.
    pub too_long: i64,
    /// (domain, parameters, pages): survivors that share a canonical URL
    /// but were kept apart because those parameters change their content.
    pub kept_apart: Vec<(Option<String>, String, i64)>,
    /// Phase-4 removals whose final survivor is at or below the threshold.
    pub drift: i64,
    /// The kind of run as [`crate::sqlite::pipeline::incremental::run_kind`] decided: `None` for the first
    /// run (full, nothing to say).
    pub kind: Option<RunKind>,
    /// With `against`: what the run compared there.
    pub against: Option<crate::sqlite::pipeline::inputs::against::Compared>,
    /// With `paragraphs = 'dedup'`: (paragraphs cut, pages edited, pages
    /// kept whole because a page before them holds each of their
    /// paragraphs).
    pub paragraphs: Option<(i64, i64, i64)>,
}

/// The query that lists the rows of `source` a run skips for bad values,
/// in its own names (a column it lacks read as NULL).
///
/// ```
/// use dedup::sqlite::pipeline::run::report::skipped_query;
/// use dedup::sqlite::tables::schema::Source;
/// let db = rusqlite::Connection::open_in_memory().unwrap();
/// db.execute_batch("CREATE TABLE docs (link TEXT, body BLOB)").unwrap();
/// let docs = Source::inspect_mapped(&db, "docs", &[("url".into(), "link".into()),
///                                                 ("content".into(), "body".into())]).unwrap();
/// assert_eq!(skipped_query(&docs),
///            "SELECT rowid FROM \"docs\" WHERE dedup_invalid_text(\"link\", \"body\", NULL) IS NOT NULL");
/// ```
pub fn skipped_query(source: &Source) -> String {
    let column = |name: &str| {
        source
            .column(name)
            .map_or("NULL".to_string(), |c| quote_ident(&c))
    };
    format!(
        "SELECT {} FROM {} WHERE dedup_invalid_text({}, {}, {}) IS NOT NULL",
        source.rowid,
        quote_ident(&source.table),
        column("url"),
        column("content"),
        column("parsed")
    )
}

/// What each phase removes, for the report.
pub fn phase_name(phase: i64) -> &'static str {
    Phase::from_number(phase).map_or("unknown phase", Phase::name)
}

impl Report {
    /// Reads the report of the plan in the temp tables.
    pub fn read(db: &Connection, plan: &Planned) -> Result<Report, DedupError> {
        let removed: Vec<(i64, i64)> = db
            .prepare(
                "SELECT phase, count(*) FROM temp._dedup_removal GROUP BY phase ORDER BY phase",
            )?
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
            .collect::<Result<_, _>>()?;
        let skipped: Vec<(i64, String)> = db
            .prepare(&format!(
                "SELECT source_rowid, skip_reason FROM temp._dedup_prepared
                 WHERE skip_reason IS NOT NULL ORDER BY source_rowid LIMIT {SKIPPED_LISTED}"
            ))?
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
            .collect::<Result<_, _>>()?;
        let skipped_total: i64 = db.query_row(
            "SELECT count(*) FROM temp._dedup_prepared WHERE skip_reason IS NOT NULL",
            [],
            |r| r.get(0),
        )?;
        let strip: bool = db.query_row(
            "SELECT boilerplate = 'strip' FROM temp._dedup_run",
            [],
            |r| r.get(0),
        )?;
        let boilerplate = if strip {
            Some(db.query_row(
                "SELECT coalesce(sum(segments), 0), count(*) FROM temp._dedup_chrome",
                [],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )?)
        } else {
            None
        };
        // The pipeline's scan is the connection's latest.
        let too_long: i64 = db.query_row(
            "SELECT coalesce(json_extract(near_dups_stats(), '$.too_long'), 0)",
            [],
            |r| r.get(0),
        )?;
        let kept_apart: Vec<(Option<String>, String, i64)> = db
            .prepare(&format!(
                "SELECT domain, coalesce(params, ''), pages FROM temp._dedup_kept_apart LIMIT {KEPT_APART_LISTED}"
            ))?
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?
            .collect::<Result<_, _>>()?;
        let drift: i64 =
            db.query_row("SELECT count(*) FROM temp._dedup_drift", [], |r| r.get(0))?;
        // (Printed only past the rows listed: the table is read again only then.)
        let skipped_query = if skipped_total > skipped.len() as i64 {
            skipped_query(&Source::inspect_mapped(db, &plan.table, &plan.columns()?)?)
        } else {
            String::new()
        };
        let paragraphs =
            if crate::sqlite::tables::schema::temp_table_exists(db, "_dedup_paragraph_cuts")? {
                Some(db.query_row(
                    "SELECT (SELECT count(*) FROM temp._dedup_paragraph_cuts),
                        (SELECT count(*) FROM temp._dedup_paragraph_texts),
                        (SELECT count(*) FROM temp._dedup_notes WHERE kind = 'paragraphs held')",
                    [],
                    |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
                )?)
            } else {
                None
            };
        let decided = plan.kind.clone();
        let kind = (plan.run > 1 || decided.incremental).then_some(decided);
        let gone: i64 = removed.iter().map(|(_, n)| n).sum();
        Ok(Report {
            run: plan.run,
            rows_before: plan.rows_before,
            rows_after: plan.rows_before - gone,
            removed,
            skipped,
            skipped_total,
            skipped_query,
            seconds: plan.seconds.clone(),
            boilerplate,
            too_long,
            kept_apart,
            drift,
            kind,
            against: crate::sqlite::pipeline::inputs::against::compared(db)?,
            paragraphs,
        })
    }

    /// The report as the shell prints it, one line per fact.
    ///
    /// ```
    /// use dedup::sqlite::pipeline::inputs::against::Compared;
    /// use dedup::sqlite::pipeline::run::report::Report;
    /// let r = Report { run: 1, rows_before: 5, rows_after: 3, removed: vec![(2, 2)],
    ///                  skipped: vec![(4, "content is a BLOB".into())], skipped_total: 1,
    ///                  skipped_query: String::new(),
    ///                  seconds: vec![], boilerplate: Some((12, 3)), too_long: 0,
    ///                  kept_apart: vec![(Some("a.org".into()), "id".into(), 36)], drift: 0,
    ///                  kind: None,
    ///                  against: Some(Compared { name: "old.db".into(), rows: 40, there: 3,
    ///                                           there_by_phase: vec![(2, 1), (4, 2)], indexed: true }),
    ///                  paragraphs: Some((7, 5, 1)) };
    /// assert_eq!(r.to_text(), "run 1: 5 rows -> 3 rows\n  phase 2 (same canonical URL): 2 removed\n  \
    ///     kept apart: `id` changes content on a.org, 36 pages\n  \
    ///     boilerplate stripped: 12 segment(s) of 3 domain(s) left out of the near-duplicate comparison\n  \
    ///     against old.db: 40 page(s) there compared too, through its index; 3 removed here for a page there (phase 2: 1, phase 4: 2; dedup_notes: survivor elsewhere)\n  \
    ///     paragraphs: 7 cut from 5 page(s), each held by a page before it (dedup_paragraphs); 1 page(s) kept whole, made of paragraphs held before them (dedup_notes: paragraphs held)\n  \
    ///     skipped: rowid 4, content is a BLOB");
    /// ```
    pub fn to_text(&self) -> String {
        let mut lines = vec![format!(
            "run {}: {} rows -> {} rows",
            self.run, self.rows_before, self.rows_after
        )];
        for (phase, n) in &self.removed {
            lines.push(format!(
                "  phase {phase} ({}): {n} removed",
                phase_name(*phase)
            ));
        }
        for (domain, params, pages) in &self.kept_apart {
            let mut names: Vec<String> = params.split(',').map(|p| format!("`{p}`")).collect();
            names.sort();
            names.dedup();
            lines.push(format!(
                "  kept apart: {} change{} content on {}, {pages} pages",
                names.join(", "),
                if names.len() == 1 { "s" } else { "" },
                domain.as_deref().unwrap_or("(no domain)")
            ));
        }
        if let Some((segments, domains)) = self.boilerplate {
            lines.push(format!(
                "  boilerplate stripped: {segments} segment(s) of {domains} domain(s) left out of the near-duplicate comparison"
            ));
        }
        if let Some(a) = &self.against {
            let by_phase: String = a
                .there_by_phase
                .iter()
                .map(|(p, n)| format!("phase {p}: {n}"))
                .collect::<Vec<_>>()
                .join(", ");
            lines.push(format!(
                "  against {}: {} page(s) there compared too{}; {} removed here for a page there ({}dedup_notes: survivor elsewhere)",
                a.name,
                a.rows,
                if a.indexed { ", through its index" } else { "" },
                a.there,
                if by_phase.is_empty() { by_phase } else { format!("{by_phase}; ") }
            ));
        }
        if let Some((cut, pages, whole)) = self.paragraphs {
            lines.push(format!(
                "  paragraphs: {cut} cut from {pages} page(s), each held by a page before it (dedup_paragraphs){}",
                if whole > 0 {
                    format!("; {whole} page(s) kept whole, made of paragraphs held before them (dedup_notes: paragraphs held)")
                } else {
                    String::new()
                }
            ));
        }
        if self.drift > 0 {
            lines.push(format!(
                "  drift: {} phase-4 removal(s) whose final survivor is at or below the threshold (its survivor was removed in turn: docs/pipeline.md, \"Drift\")",
                self.drift
            ));
        }
        match &self.kind {
            Some(k) if k.incremental => lines.push(format!(
                "  incremental since run {}: {} new or changed row(s), {} gone or changed{}; only they and the rows they can meet were compared{}",
                k.since.map_or("?".into(), |r| r.to_string()),
                k.dirty,
                k.gone,
                if k.recheck > 0 {
                    format!(", {} checked again (the last run's rewrite changed what phase 1 makes of it, or cut its text)", k.recheck)
                } else {
                    String::new()
                },
                k.scanned.as_deref().map_or(String::new(), |why| format!(
                    "\n  every row was read to find them: {why}"
                ))
            )),
            Some(k) => lines.push(format!(
                "  full run: {}",
                k.why.as_deref().unwrap_or("asked for")
            )),
            None => {}
        }
        if self.too_long > 0 {
            lines.push(format!(
                "  phase 4: {} pair(s) of pages too long to compare within the bound on one pair's work, kept apart (docs/safety.md)",
                self.too_long
            ));
        }
        for (rowid, why) in &self.skipped {
            lines.push(format!("  skipped: rowid {rowid}, {why}"));
        }
        let more = self.skipped_total - self.skipped.len() as i64;
        if more > 0 {
            lines.push(format!(
                "  skipped: {more} more rows with bad values ({})",
                self.skipped_query
            ));
        }
        lines.join("\n")
    }

    /// The report as a JSON object.
    pub fn to_json(&self) -> String {
        let removed: Vec<String> = self
            .removed
            .iter()
            .map(|(p, n)| format!("\"{p}\":{n}"))
            .collect();
        let skipped: Vec<String> = self
            .skipped
            .iter()
            .map(|(rowid, why)| format!("{{\"rowid\":{rowid},\"reason\":{}}}", json_string(why)))
            .collect();
        let seconds: Vec<String> = self
            .seconds
            .iter()
            .map(|(n, s)| format!("{}:{s:.4}", json_string(n)))
            .collect();
        let boilerplate = match self.boilerplate {
            Some((s, d)) => format!("{{\"segments\":{s},\"domains\":{d}}}"),
            None => "null".into(),
        };
        let mut too_long = if self.too_long > 0 {
            format!(",\"too_long\":{}", self.too_long)
        } else {
            String::new()
        };
        if self.drift > 0 {
            too_long.push_str(&format!(",\"drift\":{}", self.drift));
        }
        if let Some(k) = &self.kind {
            too_long.push_str(&format!(
                ",\"kind\":{},\"why\":{},\"since\":{},\"dirty\":{},\"gone\":{},\"recheck\":{},\"scanned\":{}",
                json_string(if k.incremental { "incremental" } else { "full" }),
                k.why.as_deref().map_or("null".into(), json_string),
                k.since.map_or("null".into(), |r| r.to_string()),
                k.dirty,
                k.gone,
                k.recheck,
                k.scanned.as_deref().map_or("null".into(), json_string)
            ));
        }
        if let Some(a) = &self.against {
            too_long.push_str(&format!(
                ",\"against\":{{\"name\":{},\"rows\":{},\"survivor_there\":{},\"survivor_there_by_phase\":{{{}}},\"index\":{}}}",
                json_string(&a.name),
                a.rows,
                a.there,
                a.there_by_phase
                    .iter()
                    .map(|(p, n)| format!("\"{p}\":{n}"))
                    .collect::<Vec<_>>()
                    .join(","),
                a.indexed
            ));
        }
        if let Some((cut, pages, whole)) = self.paragraphs {
            too_long.push_str(&format!(
                ",\"paragraphs\":{{\"cut\":{cut},\"pages\":{pages},\"kept_whole\":{whole}}}"
            ));
        }
        if !self.kept_apart.is_empty() {
            let apart: Vec<String> = self
                .kept_apart
                .iter()
                .map(|(d, p, n)| {
                    format!(
                        "{{\"domain\":{},\"params\":{},\"pages\":{n}}}",
                        d.as_deref().map_or("null".into(), json_string),
                        json_string(p)
                    )
                })
                .collect();
            too_long.push_str(&format!(",\"kept_apart\":[{}]", apart.join(",")));
        }
        format!(
            "{{\"run\":{},\"rows_before\":{},\"rows_after\":{},\"removed\":{{{}}},\"skipped\":[{}],\"skipped_total\":{},\"boilerplate\":{boilerplate}{too_long},\"seconds\":{{{}}}}}",
            self.run,
            self.rows_before,
            self.rows_after,
            removed.join(","),
            skipped.join(","),
            self.skipped_total,
            seconds.join(",")
        )
    }
}
