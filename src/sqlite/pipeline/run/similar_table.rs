//! `SELECT * FROM dedup_similar(text [, url [, settings [, page]]])`: the
//! table-valued form of `dedup_similar`, a row per stored row that decides
//! a fetched page's fate in the next run (columns `rowid`, `url`, `phase`,
//! `reason`, `ratio`, `survivor`). The answer, its arguments and its errors
//! are the scalar form's: [`crate::sqlite::pipeline::run::similar`].

use std::ffi::c_int;

use rusqlite::types::ValueRef;
use rusqlite::vtab::Context;
use rusqlite::{Connection, Result};

use crate::sqlite::ground::arguments::describe;
use crate::sqlite::ground::arguments::module_error;
use crate::sqlite::pipeline::run::similar::{similar_rows, Match, Page};
use crate::sqlite::vtab::reads_tables::{self, ReadsTables};

const NAME: &str = "dedup_similar";

/// Registers the eponymous table-valued function `dedup_similar`.
pub fn register(db: &Connection) -> Result<()> {
    reads_tables::register::<Similar>(db)
}

/// Argument `what` as text: `None` for NULL or absent.
fn text_argument(what: &str, value: Option<ValueRef<'_>>) -> Result<Option<String>> {
    match value {
        None | Some(ValueRef::Null) => Ok(None),
        Some(ValueRef::Text(t)) => String::from_utf8(t.to_vec()).map(Some).map_err(|_| {
            module_error(NAME, &format!("{what} is not valid UTF-8"), "invalid bytes")
        }),
        Some(other) => Err(module_error(
            NAME,
            &format!("{what} must be TEXT"),
            &describe(other),
        )),
    }
}

/// `dedup_similar`'s shape: plans a run, reading and (tentatively)
/// writing the database.
struct Similar;

impl ReadsTables for Similar {
    const NAME: &'static str = NAME;
    const COLUMNS: &'static str =
        "rowid INTEGER, url TEXT, phase INTEGER, reason TEXT, ratio REAL, survivor TEXT";
    const OUTPUT_COLUMNS: c_int = 6;
    const ARGUMENTS: &'static [&'static str] = &["text", "page_url", "settings", "page"];
    const REQUIRED: c_int = 0b1;
    type Row = Match;

    fn rows(db: &Connection, given: &[Option<ValueRef<'_>>]) -> Result<Vec<Match>> {
        if given[0].is_none() {
            return Err(module_error(NAME, "text is required", "no argument"));
        }
        let page = Page {
            text: text_argument("text", given[0])?,
            url: text_argument("url", given[1])?,
            columns: text_argument("page", given[3])?,
        };
        let settings = text_argument("settings", given[2])?;
        Ok(similar_rows(db, &page, settings.as_deref())?)
    }

    fn column(row: &Match, ctx: &mut Context, i: c_int) -> Result<()> {
        match i {
            0 => ctx.set_result(&row.rowid),
            1 => ctx.set_result(&row.url),
            2 => ctx.set_result(&row.phase),
            3 => ctx.set_result(&row.reason),
            4 => ctx.set_result(&row.ratio),
            _ => ctx.set_result(&row.survivor),
        }
    }
}
