//! `dedup_elected(input, grp, ranking)`: one survivor per group, as
//! `first_value(id) OVER (PARTITION BY grp ORDER BY ranking)` elects it,
//! from a sort in memory instead of SQLite's sorter (phases 2 and 3).
//!
//! `input` names a table or view with an INTEGER column `id`, the column
//! `grp` names and the columns `ranking` lists (`a, b DESC, c`: each column
//! ascending unless it says DESC; NULL first ascending, last descending, as
//! SQLite orders it). Values compare as SQLite compares them, text by its
//! bytes (the BINARY collation, whatever a column declares); NULL `grp`
//! values make one group, as `PARTITION BY` does. One output row per input
//! row: `id` and `survivor`, the group's first row by `ranking` (of rows
//! equal in it, the first read). Input rows are held in memory for the
//! sort: their `grp` and `ranking` values' bytes.

use std::ffi::c_int;

use rusqlite::types::ValueRef;
use rusqlite::vtab::Context;
use rusqlite::{Connection, Result};

use super::arguments::{table_argument, table_columns};
use super::reads_tables::ReadsTables;
use crate::core::election::{Ballots, OrderKey, Sortable};
use crate::sqlite::ground::arguments::describe;
use crate::sqlite::ground::arguments::module_error;
use crate::sqlite::ground::quote::quote_ident;

const NAME: &str = "dedup_elected";

/// Registers the eponymous table-valued function `dedup_elected`.
pub fn register(db: &Connection) -> Result<()> {
    super::reads_tables::register::<Elected>(db)
}

/// One column of the ranking: its name and whether it is descending.
fn ranking_columns(ranking: &str, have: &[String]) -> Result<Vec<(String, bool)>> {
    let bad = |why: &str| {
        module_error(
            NAME,
            &format!("ranking must list columns of input, each optionally followed by ASC or DESC ({why})"),
            &format!("'{ranking}'"),
        )
    };
    let mut out = Vec::new();
    for part in ranking.split(',') {
        let words: Vec<&str> = part.split_whitespace().collect();
        let (column, descending) = match words.as_slice() {
            [c] => (*c, false),
            [c, d] if d.eq_ignore_ascii_case("asc") => (*c, false),
            [c, d] if d.eq_ignore_ascii_case("desc") => (*c, true),
            [] => return Err(bad("an empty entry")),
            _ => {
                return Err(bad(&format!(
                    "'{}' is not a column and a direction",
                    part.trim()
                )))
            }
        };
        if !have.iter().any(|h| h.eq_ignore_ascii_case(column)) {
            return Err(bad(&format!("no column '{column}'")));
        }
        out.push((column.to_string(), descending));
    }
    Ok(out)
}

/// Reads `input` and elects each group's survivor.
fn elect(db: &Connection, args: &[Option<ValueRef<'_>>]) -> Result<Vec<(i64, i64)>> {
    let input = table_argument(NAME, "input", args[0])?;
    let group = table_argument(NAME, "grp", args[1])?;
    let ranking = match args[2] {
        Some(ValueRef::Text(t)) => String::from_utf8_lossy(t).into_owned(),
        Some(other) => {
            return Err(module_error(
                NAME,
                "ranking must be a list of columns",
                &describe(other),
            ))
        }
        None => return Err(module_error(NAME, "ranking is required", "no argument")),
    };
    let have = table_columns(db, NAME, "input", &input)?;
    for (what, column) in [("id", "id"), ("grp", group.as_str())] {
        if !have.iter().any(|h| h.eq_ignore_ascii_case(column)) {
            return Err(module_error(
                NAME,
                &format!("input must have the column {what} names"),
                &format!("'{input}' without '{column}'"),
            ));
        }
    }
    let ranking = ranking_columns(&ranking, &have)?;
    let sql = format!(
        "SELECT id, {}{} FROM {}",
        quote_ident(&group),
        ranking
            .iter()
            .map(|(c, _)| format!(", {}", quote_ident(c)))
            .collect::<String>(),
        quote_ident(&input)
    );
    let mut stmt = db.prepare(&sql)?;
    let mut rows = stmt.query([])?;
    let mut ballots = Ballots::new();
    let (mut group_key, mut order) = (OrderKey::new(), OrderKey::new());
    while let Some(row) = rows.next()? {
        let id = match row.get_ref(0)? {
            ValueRef::Integer(i) => i,
            other => {
                return Err(module_error(
                    NAME,
                    &format!("id in '{input}' must be an integer"),
                    &describe(other),
                ))
            }
        };
        group_key.clear();
        group_key.push(sortable(row.get_ref(1)?), false);
        order.clear();
        for (k, (_, descending)) in ranking.iter().enumerate() {
            order.push(sortable(row.get_ref(k + 2)?), *descending);
        }
        ballots.add(id, group_key.as_bytes(), order.as_bytes());
    }
    Ok(ballots.elect())
}

/// A value as the election compares it.
fn sortable(value: ValueRef<'_>) -> Sortable<'_> {
    match value {
        ValueRef::Null => Sortable::Null,
        ValueRef::Integer(i) => Sortable::Integer(i),
        ValueRef::Real(r) => Sortable::Real(r),
        ValueRef::Text(t) => Sortable::Text(t),
        ValueRef::Blob(b) => Sortable::Blob(b),
    }
}

/// `dedup_elected`'s shape: reads `input`.
pub struct Elected;

impl ReadsTables for Elected {
    const NAME: &'static str = NAME;
    const COLUMNS: &'static str = "id INTEGER, survivor INTEGER";
    const OUTPUT_COLUMNS: c_int = 2;
    const ARGUMENTS: &'static [&'static str] = &["input", "grp", "ranking"];
    const REQUIRED: c_int = 0b111;
    /// (id, survivor)
    type Row = (i64, i64);

    fn rows(db: &Connection, args: &[Option<ValueRef<'_>>]) -> Result<Vec<(i64, i64)>> {
        elect(db, args)
    }

    fn column(row: &(i64, i64), ctx: &mut Context, i: c_int) -> Result<()> {
        match i {
            0 => ctx.set_result(&row.0),
            _ => ctx.set_result(&row.1),
        }
    }
}
