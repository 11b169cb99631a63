//! `near_dups(input, threshold, distance [, measure])`: the window scan as
//! a table-valued function, and `near_dups_stats()`. `measure` is
//! `levenshtein` (the default) or `resemblance N [stopword ...]`
//! ([`crate::core::measure::Measure`]).
//!
//! `input` names a table or view with columns `pos`, `id`, `text`, `rank`;
//! rows are scanned in `pos` order; a NULL `text` is a placeholder that
//! occupies its window slot but is never compared. An optional column
//! `settled` (an integer, or NULL) marks rows known to be near no row of the
//! same `settled` value within the window: such pairs are not compared
//! (an incremental run's rows that the last run compared already). An
//! optional column `slots` (an integer from 1, or NULL for 1) makes a
//! placeholder stand for that many window slots. Each output row is one
//! removed input row: `id`, `survivor`, `anchor`, `ratio` (see
//! [`crate::core::near_dups`]).

use std::ffi::c_int;

use rusqlite::functions::FunctionFlags;
use rusqlite::types::ValueRef;
use rusqlite::{Connection, Error, Result};

use super::arguments::{
    measure_argument, require_columns, table_argument, table_columns, text_value,
    threshold_argument,
};
use super::scan_table::{self, LastScan, Scan};
use crate::core::near_dups::{validate, Removal, ScanRow, ScanStats};
use crate::core::window_scan::scan_by;
use crate::sqlite::ground::arguments::describe;
use crate::sqlite::ground::arguments::module_error;
use crate::sqlite::ground::interrupt::InterruptPoll;
use crate::sqlite::ground::progress;
use crate::sqlite::ground::quote::quote_ident;

const NAME: &str = "near_dups";
/// Columns the input table or view must have.
pub const INPUT_COLUMNS: [&str; 4] = ["pos", "id", "text", "rank"];

/// Registers the eponymous table-valued function `near_dups`, and
/// `near_dups_stats()`: the counters of the last scan recorded in `last`
/// as JSON, or NULL before the first scan.
pub fn register(db: &Connection, last: LastScan) -> Result<()> {
    scan_table::register::<WindowScan>(db, last.clone())?;
    db.create_scalar_function(
        "near_dups_stats",
        0,
        FunctionFlags::SQLITE_UTF8 | FunctionFlags::SQLITE_DIRECTONLY,
        move |_ctx| {
            let stats = last
                .lock()
                .map_err(|_| module_error(NAME, "stats unavailable", "a poisoned lock"))?;
            Ok(stats.as_ref().map(ScanStats::to_json))
        },
    )
}

/// The window scan.
struct WindowScan;

impl Scan for WindowScan {
    const NAME: &'static str = NAME;
    const ARGUMENTS: &'static [&'static str] = &["input", "threshold", "distance", "measure"];
    const REQUIRED: c_int = 0b001;

    fn run(db: &Connection, args: &[Option<ValueRef<'_>>]) -> Result<(Vec<Removal>, ScanStats)> {
        let input = table_argument(NAME, "input", args[0])?;
        let threshold = threshold_argument(NAME, args[1])?;
        let distance = match args[2] {
            // (The pipeline's distance counts the row itself.)
            None => crate::core::near_dups::DEFAULT_DISTANCE - 1,
            Some(ValueRef::Integer(i)) => i,
            Some(other) => {
                return Err(module_error(
                    NAME,
                    "distance must be a non-negative integer",
                    &describe(other),
                ))
            }
        };
        validate(threshold, distance)
            .map_err(|e| Error::ModuleError(format!("{NAME}[argument]: {e}")))?;
        let measure = measure_argument(NAME, args.get(3).copied().flatten())?;
        require_columns(db, NAME, "input", &input, &INPUT_COLUMNS)?;
        let columns = table_columns(db, NAME, "input", &input)?;
        let optional = |name: &'static str| match columns.iter().any(|c| c == name) {
            true => name,
            false => "NULL",
        };
        let sql = format!(
            "SELECT id, text, rank, pos, {}, {} FROM {} ORDER BY pos",
            optional("settled"),
            optional("slots"),
            quote_ident(&input)
        );
        let total: i64 = db.query_row(
            &format!("SELECT count(*) FROM {}", quote_ident(&input)),
            [],
            |r| r.get(0),
        )?;
        progress::total(total as u64);
        let mut stmt = db.prepare(&sql)?;
        let mut read = 0u64;
        let rows = stmt
            .query_map([], |row| read_row(row, &input))?
            .inspect(|_| {
                read += 1;
                if read.is_multiple_of(256) {
                    progress::done(read);
                }
            })
            .flat_map(|found| {
                // (A placeholder of n slots is n placeholders.)
                let more = match &found {
                    Ok((row, slots)) => std::iter::repeat((row.id, row.rank)).take(slots - 1),
                    Err(_) => std::iter::repeat((0, 0)).take(0),
                };
                std::iter::once(found.map(|(row, _)| row)).chain(more.map(|(id, rank)| {
                    Ok(ScanRow {
                        id,
                        rank,
                        text: None,
                        settled: None,
                    })
                }))
            });
        // Safety: the connection runs this scan on this thread.
        let mut poll = unsafe { InterruptPoll::new(db.handle()) };
        let result = scan_by(
            rows,
            threshold,
            &measure,
            usize::try_from(distance).unwrap_or(usize::MAX),
            &mut || poll.interrupted(),
        );
        // Every row is through (the count above was read every 256 rows).
        if result.is_ok() {
            progress::done(total as u64);
        }
        result
    }
}

/// One input row and the slots it takes; a bad `id`, `rank` or `slots`
/// is an error naming the row's `pos`.
fn read_row(row: &rusqlite::Row<'_>, input: &str) -> Result<(ScanRow, usize)> {
    let integer = |i: usize, column: &str| match row.get_ref(i)? {
        ValueRef::Integer(v) => Ok(v),
        other => Err(module_error(
            NAME,
            &format!("{column} in '{input}' must be an integer"),
            &format!(
                "{} in the row at pos {}",
                describe(other),
                describe(row.get_ref(3)?)
            ),
        )),
    };
    let id = integer(0, "id")?;
    let settled = match row.get_ref(4)? {
        ValueRef::Null => None,
        _ => Some(integer(4, "settled")?),
    };
    let text = text_value(NAME, row.get_ref(1)?, id)?;
    let slots = match row.get_ref(5)? {
        ValueRef::Null => 1,
        _ => match integer(5, "slots")? {
            n if n >= 1 && (n == 1 || text.is_none()) => n as usize,
            n => {
                return Err(module_error(
                    NAME,
                    "slots in the input must be at least 1, and 1 for a row with a text",
                    &format!("{n} in the row at pos {}", describe(row.get_ref(3)?)),
                ))
            }
        },
    };
    Ok((
        ScanRow {
            id,
            rank: integer(2, "rank")?,
            text,
            settled,
        },
        slots,
    ))
}
