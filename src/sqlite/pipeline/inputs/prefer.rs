//! The `prefer` setting: its terms checked, then each row's place in their
//! order for the elections here, or each row's key in it for a run that
//! elects elsewhere (`dedup_prepare`, `sqlite-dedup spark`), where the rows
//! of many databases are ranked together.
//!
//! What: a key is a BLOB whose byte order is the terms' order
//! ([`crate::core::ordering`]): each term's direction, NULL placement and
//! collation read from SQLite's compiled ranking (`EXPLAIN`), its value
//! from the term without its direction. Before any key is used, the
//! range's rows ranked by their keys must rank as SQLite ranks them by the
//! terms, or the run stops with an error naming the term.
//!
//! Cost: one read of the table (or of the range's rows) and one sort
//! (ranks), or two reads and two sorts of the range's rows (keys).

use crate::sqlite::ground::error::Code;
use rusqlite::{Connection, OptionalExtension};

use crate::core::ordering::{self, TermOrder};
use crate::sqlite::ground::error::{fail, DedupError};
use crate::sqlite::ground::shown;
use crate::sqlite::pipeline::mode::RunMode;
use crate::sqlite::settings::{
    untrusted,
    values::{Origin, Settings},
};
use crate::sqlite::tables::schema::{quote_ident, Source};

/// `temp._dedup_prefer(rid, prefer_rank, prefer_key)`: each row's place
/// in the order the `prefer` terms give (1 first; ties share a place),
/// which every phase's election puts before its own rules; empty without
/// terms, but against another database (this table's rows 1, that
/// database's 0: the record wins every election). A run that elects elsewhere (`dedup_prepare`) gets each row's
/// key instead (`write_keys`). Each
/// term is checked alone first, so that an error names it; terms read from
/// `dedup_settings` are held to a schema's rules first
/// ([`crate::sqlite::settings::untrusted`]).
pub fn write(
    db: &Connection,
    source: &Source,
    s: &Settings,
    mode: &RunMode,
) -> Result<(), DedupError> {
    let terms = &s.prefer;
    db.execute_batch(
        "DROP TABLE IF EXISTS temp._dedup_prefer;
         CREATE TEMP TABLE _dedup_prefer (rid INTEGER PRIMARY KEY, prefer_rank INTEGER, prefer_key BLOB);",
    )?;
    // (Against another database, that database is the record: its pages
    // rank before every page of this table in every election, and this
    // table's rows elect among themselves by the run's own rules. Copied,
    // this table's rows are `_dedup_source`'s; planned there, this table's
    // rows are its `_dedup_extra`.)
    if !s.against.is_empty() && *mode == RunMode::All {
        db.execute_batch("INSERT INTO temp._dedup_prefer (rid, prefer_rank) SELECT rid, 1 FROM temp._dedup_source;")?;
    } else if *mode == RunMode::There {
        db.execute_batch("INSERT INTO temp._dedup_prefer (rid, prefer_rank) SELECT rid, 1 FROM temp._dedup_extra;")?;
    }
    if terms.is_empty() {
        return Ok(());
    }
    let table = source.qualified();
    let ranked = |terms: &str| {
        format!(
            "SELECT {rowid}, dense_rank() OVER (ORDER BY {terms}) FROM {table}",
            rowid = source.rowid
        )
    };
    // (Checked as the tail of a plain ordered read: the ranking's window
    // adds a select of its own; the same text with its tail swallowed by a
    // comment would not parse there.)
    let ordered = |terms: &str| format!("SELECT {} FROM {table} ORDER BY {terms}", source.rowid);
    let untrusted = s.prefer_from == Origin::Database;
    for (i, term) in terms.iter().enumerate() {
        if untrusted {
            untrusted::check(
                db,
                &source.table,
                &ordered(term),
                &format!(
                    "prefer term {} from dedup_settings ({})",
                    i + 1,
                    shown::excerpt(term)
                ),
            )?;
        }
        if let Err(e) = db.prepare(&format!("SELECT 1 FROM {table} ORDER BY {term}")) {
            return fail(Code::Setting, format!(
                "dedup: prefer term {} must be an SQL ordering term over the columns of {}, got {}: {}; nothing was changed",
                i + 1,
                quote_ident(&source.table),
                shown::excerpt(term),
                shown::truncate(DedupError::from(e).words(), 200)
            ));
        }
    }
    let joined = terms.join(", ");
    if untrusted {
        untrusted::check(
            db,
            &source.table,
            &ordered(&joined),
            "prefer from dedup_settings",
        )?;
    }
    if let RunMode::PrepareOnly(lo, hi) = *mode {
        return write_keys(db, source, terms, untrusted, lo, hi);
    }
    let all = ranked(&joined);
    if let Err(e) = db.execute(
        &format!("INSERT INTO temp._dedup_prefer (rid, prefer_rank) {all}"),
        [],
    ) {
        return Err(prefer_failed(db, source, terms, e));
    }
    Ok(())
}

/// The error of `prefer` terms that failed while ranking the rows: the
/// first term and row that fail alone, and SQLite's message.
fn prefer_failed(
    db: &Connection,
    source: &Source,
    terms: &[String],
    e: rusqlite::Error,
) -> DedupError {
    let message = shown::truncate(DedupError::from(e).words(), 200);
    let table = source.qualified();
    let rowid = source.rowid;
    let culprit = (|| -> Option<(usize, i64)> {
        let mut ids = db.prepare(&format!("SELECT {rowid} FROM {table}")).ok()?;
        let ids: Vec<i64> = ids
            .query_map([], |r| r.get(0))
            .ok()?
            .collect::<rusqlite::Result<_>>()
            .ok()?;
        for (i, term) in terms.iter().enumerate() {
            let mut one = db
                .prepare(&format!(
                    "SELECT dense_rank() OVER (ORDER BY {term}) FROM {table} WHERE {rowid} = ?1"
                ))
                .ok()?;
            for id in &ids {
                if one.query_row([id], |_| Ok(())).optional().is_err() {
                    return Some((i, *id));
                }
            }
        }
        None
    })();
    DedupError::new(Code::Setting, match culprit {
        Some((i, id)) => format!(
            "dedup: prefer term {} ({}) failed on the row of {} whose rowid is {id}: {message}; nothing was changed",
            i + 1,
            shown::excerpt(&terms[i]),
            quote_ident(&source.table),
        ),
        None => format!(
            "dedup: the prefer terms failed while ranking the rows of {}: {message}; nothing was changed",
            quote_ident(&source.table)
        ),
    })
}

/// The order SQLite gives `terms` (a comma-separated list of ordering
/// terms) on `table`: the key description of the ranking's comparison, as
/// `EXPLAIN` shows it.
fn compiled_order(db: &Connection, source: &Source, terms: &str) -> Result<Vec<TermOrder>, String> {
    let sql = format!(
        "EXPLAIN SELECT {}, dense_rank() OVER (ORDER BY {terms}) FROM {}",
        source.rowid,
        source.qualified()
    );
    let mut stmt = db.prepare(&sql).map_err(|e| e.to_string())?;
    let mut rows = stmt.query([]).map_err(|e| e.to_string())?;
    let mut found: Option<String> = None;
    while let Some(r) = rows.next().map_err(|e| e.to_string())? {
        let opcode: String = r.get(1).map_err(|e| e.to_string())?;
        let p4: Option<String> = r.get(5).ok();
        if opcode == "Compare" {
            if let Some(p4) = p4.filter(|p| p.starts_with("k(")) {
                match &found {
                    Some(f) if *f != p4 => return Err("two orders in one ranking".into()),
                    _ => found = Some(p4),
                }
            }
        }
    }
    ordering::parse_key_info(&found.ok_or("no comparison in the ranking")?)
        .map_err(|e| e.to_string())
}

/// `temp._dedup_prefer.prefer_key` for the rows whose rowid is in [lo, hi)
/// (None: unbounded); see the module's documentation. Each term must be
/// one ordering term, of collation BINARY, NOCASE or RTRIM.
fn write_keys(
    db: &Connection,
    source: &Source,
    terms: &[String],
    untrusted: bool,
    lo: Option<i64>,
    hi: Option<i64>,
) -> Result<(), DedupError> {
    let table = source.qualified();
    let refuse = |why: String| -> Result<(), DedupError> {
        fail(Code::Setting, format!(
            "dedup: prefer for a run that elects elsewhere (Spark) needs each term as one ordering term, \
             expression [ASC|DESC] [NULLS FIRST|LAST], of collation BINARY, NOCASE or RTRIM: {why}; \
             nothing was changed"
        ))
    };
    let joined = terms.join(", ");
    let orders = match compiled_order(db, source, &joined) {
        Ok(orders) => orders,
        Err(e) => return refuse(e),
    };
    // (An item may hold several terms, "a DESC, b": each is keyed apart.)
    let pieces: Vec<String> = terms
        .iter()
        .flat_map(|t| ordering::split_list(t))
        .map(str::to_string)
        .collect();
    if orders.len() != pieces.len() {
        return refuse(format!(
            "{} term(s) that SQLite reads as {} (give each as its own item)",
            pieces.len(),
            orders.len()
        ));
    }
    let terms = &pieces;
    let parts: Vec<(&str, &str)> = terms.iter().map(|t| ordering::split_term(t)).collect();
    let rebuilt: Vec<String> = parts
        .iter()
        .map(|(e, tail)| format!("({e}) {tail}"))
        .collect();
    let values: Vec<String> = parts.iter().map(|(e, _)| format!("({e})")).collect();
    let select = format!(
        "SELECT {rowid}, {} FROM {table} WHERE {rowid} >= ?1 AND {rowid} <= ?2",
        values.join(", "),
        rowid = source.rowid
    );
    if untrusted {
        untrusted::check(db, &source.table, &select, "prefer from dedup_settings")?;
    }
    if compiled_order(db, source, &rebuilt.join(", "))
        .ok()
        .as_ref()
        != Some(&orders)
    {
        let i = (0..terms.len())
            .find(|&i| compiled_order(db, source, &rebuilt[i]).ok() != Some(vec![orders[i]]))
            .unwrap_or(0);
        return refuse(format!(
            "term {} ({}) does not read the same without its direction",
            i + 1,
            shown::excerpt(&terms[i])
        ));
    }
    let (from, to) = (
        lo.unwrap_or(i64::MIN),
        hi.map_or(i64::MAX, |h| h.saturating_sub(1)),
    );
    {
        let mut read = db.prepare(&select)?;
        let mut insert =
            db.prepare("INSERT INTO temp._dedup_prefer (rid, prefer_key) VALUES (?1, ?2)")?;
        let mut rows = read.query((from, to))?;
        let mut key = Vec::new();
        loop {
            let row = match rows.next() {
                Ok(Some(row)) => row,
                Ok(None) => break,
                Err(e) => return Err(prefer_failed(db, source, terms, e)),
            };
            key.clear();
            for (i, order) in orders.iter().enumerate() {
                let value = row.get_ref(i + 1)?;
                let folded;
                let value = match value {
                    rusqlite::types::ValueRef::Text(t) => {
                        folded = ordering::collated(t, order.collation);
                        rusqlite::types::ValueRef::Text(&folded)
                    }
                    other => other,
                };
                let sort_key = crate::sqlite::functions::sort_key::sort_key(value);
                ordering::push_term_key(&mut key, sort_key.as_deref(), *order);
            }
            insert.execute((row.get::<_, i64>(0)?, &key))?;
        }
    }
    // The keys rank the range's rows as SQLite ranks them by the terms.
    let differ: Option<i64> = db
        .query_row(
            &format!(
                "SELECT r FROM (SELECT r, a, dense_rank() OVER (ORDER BY k) AS b FROM (
                   SELECT t.{rowid} AS r, dense_rank() OVER (ORDER BY {terms}) AS a,
                          (SELECT f.prefer_key FROM temp._dedup_prefer AS f WHERE f.rid = t.{rowid}) AS k
                   FROM {table} AS t WHERE t.{rowid} >= ?1 AND t.{rowid} <= ?2))
                 WHERE a <> b LIMIT 1",
                terms = terms.join(", "),
                rowid = source.rowid
            ),
            (from, to),
            |r| r.get(0),
        )
        .optional()?;
    if let Some(rid) = differ {
        return refuse(format!(
            "the keys of the row whose rowid is {rid} do not rank it as the terms do"
        ));
    }
    Ok(())
}
