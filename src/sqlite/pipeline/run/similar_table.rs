//! `SELECT * FROM dedup_similar(text [, url [, settings [, page]]])`: the
//! table-valued form of `dedup_similar`, a row per stored row that decides
//! a fetched page's fate in the next run (columns `rowid`, `url`, `phase`,
//! `reason`, `ratio`, `survivor`). The answer, its arguments and its errors
//! are the scalar form's: [`crate::sqlite::pipeline::run::similar`].

use std::ffi::c_int;

use rusqlite::types::{Null, ValueRef};
use rusqlite::vtab::{
    eponymous_only_module, Context, Filters, IndexInfo, VTab, VTabConfig, VTabConnection,
};
use rusqlite::{ffi, Connection, Result};

use crate::sqlite::ground::arguments::describe;
use crate::sqlite::ground::arguments::module_error;
use crate::sqlite::pipeline::run::similar::{similar_rows, Match, Page};
use crate::sqlite::vtab::arguments::{plan_arguments, planned_arguments, unwind_safe};
use crate::sqlite::vtab::rows_cursor::{RowSource, RowsCursor};

const NAME: &str = "dedup_similar";
/// Hidden argument columns start after the six output columns.
const FIRST_ARGUMENT: c_int = 6;
/// text, url, settings, page.
const ARGUMENTS: usize = 4;

/// Registers the eponymous table-valued function `dedup_similar`.
pub fn register(db: &Connection) -> Result<()> {
    db.create_module(NAME, eponymous_only_module::<SimilarTab>(), None)
}

#[repr(C)]
struct SimilarTab {
    base: ffi::sqlite3_vtab,
    db: *mut ffi::sqlite3,
}

unsafe impl<'vtab> VTab<'vtab> for SimilarTab {
    type Aux = ();
    type Cursor = RowsCursor<'vtab, Answers>;

    fn connect(
        db: &mut VTabConnection,
        _aux: Option<&()>,
        _args: &[&[u8]],
    ) -> Result<(String, Self)> {
        // Plans a run, reading and (tentatively) writing the database.
        db.config(VTabConfig::DirectOnly)?;
        let handle = unsafe { db.handle() };
        Ok((
            "CREATE TABLE x(rowid INTEGER, url TEXT, phase INTEGER, reason TEXT, ratio REAL, survivor TEXT, \
             text HIDDEN, page_url HIDDEN, settings HIDDEN, page HIDDEN)"
                .to_owned(),
            SimilarTab {
                base: ffi::sqlite3_vtab::default(),
                db: handle,
            },
        ))
    }

    fn best_index(&self, info: &mut IndexInfo) -> Result<()> {
        unwind_safe(NAME, || {
            plan_arguments(info, FIRST_ARGUMENT, ARGUMENTS, 0b1, 1e6)
        })
    }

    fn open(&mut self) -> Result<RowsCursor<'_, Answers>> {
        Ok(RowsCursor::new(Answers { db: self.db }))
    }
}

/// A cursor's source: the connection whose query calls the function.
struct Answers {
    db: *mut ffi::sqlite3,
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

impl RowSource for Answers {
    const NAME: &'static str = NAME;
    type Row = Match;

    fn rows(&mut self, idx_num: c_int, args: &Filters<'_>) -> Result<Vec<Match>> {
        if idx_num & 1 == 0 {
            return Err(module_error(NAME, "text is required", "no argument"));
        }
        let given = planned_arguments(idx_num, args, ARGUMENTS);
        let page = Page {
            text: text_argument("text", given[0])?,
            url: text_argument("url", given[1])?,
            columns: text_argument("page", given[3])?,
        };
        let settings = text_argument("settings", given[2])?;
        // A non-owning handle on the connection that runs this query.
        let db = unsafe { Connection::from_handle(self.db) }?;
        Ok(similar_rows(&db, &page, settings.as_deref())?)
    }

    fn column(row: &Match, _position: usize, ctx: &mut Context, i: c_int) -> Result<()> {
        match i {
            0 => ctx.set_result(&row.rowid),
            1 => ctx.set_result(&row.url),
            2 => ctx.set_result(&row.phase),
            3 => ctx.set_result(&row.reason),
            4 => ctx.set_result(&row.ratio),
            5 => ctx.set_result(&row.survivor),
            _ => ctx.set_result(&Null),
        }
    }
}
