//! `near_dups_among(input, pairs [, threshold [, election [, measure]]])`: the window
//! scan's election over candidate pairs instead of a window, so
//! near-duplicates are found however far apart they sort; with `election =
//! 'direct'`, without drift (see [`crate::core::pair_scan::Election`]).
//!
//! `input` has the columns of `near_dups`' input (`pos`, `id`, `text`,
//! `rank`; `pos` and `id` unique integers; optionally `settled`: two rows
//! of the same non-NULL value are known apart and not compared). `pairs` has columns `a`
//! and `b` (ids of `input` rows: listed pairs), or columns `band`, `key` and
//! `id` (rows sharing a `band` and `key` are candidates, e.g. the rows of
//! `lsh_bands`), or columns `id` and `keys` (a row's band keys packed by
//! `lsh_keys`, band `i` the `i`-th key: one row a text instead of one a
//! band). Keyed pairs are generated as the scan reaches each row, never
//! all held. Rows are scanned in `pos` order and each live row is compared
//! with its later live candidates; texts are read one group at a time
//! (`WHERE pos = ?`, so index `pos`). Output columns are `near_dups`' (see
//! [`crate::core::pair_scan::scan_pairs`]).

use std::collections::HashMap;
use std::ffi::c_int;

use rusqlite::types::ValueRef;
use rusqlite::{Connection, Error, Result};

use super::arguments::{
    measure_argument, require_columns, table_argument, table_columns, text_value,
    threshold_argument,
};
use super::near_dups::INPUT_COLUMNS;
use super::scan_table::{self, LastScan, Scan};
use crate::core::band_keys::unpack;
use crate::core::candidates::{Candidates, PairList, SharedKeys, SharedKeysBuilder, SkipSettled};
use crate::core::measure::Measure;
use crate::core::near_dups::{validate, Removal, ScanStats};
use crate::core::pair_scan::{election_order, scan_pairs_with, Election};
use crate::sqlite::ground::arguments::describe;
use crate::sqlite::ground::arguments::module_error;
use crate::sqlite::ground::interrupt::InterruptPoll;
use crate::sqlite::ground::progress;
use crate::sqlite::ground::quote::quote_ident;

const NAME: &str = "near_dups_among";
/// Columns of a table or view of listed pairs.
const PAIR_COLUMNS: [&str; 2] = ["a", "b"];
/// Columns of a table or view of keys (rows sharing `band` and `key` pair up).
const KEY_COLUMNS: [&str; 3] = ["band", "key", "id"];
/// Columns of a table or view of packed keys (`lsh_keys`'s blobs).
const PACKED_COLUMNS: [&str; 2] = ["id", "keys"];

/// Registers the eponymous table-valued function `near_dups_among`; its
/// counters go to `last` (read by `near_dups_stats()`).
pub fn register(db: &Connection, last: LastScan) -> Result<()> {
    scan_table::register::<PairScan>(db, last)
}

/// The scan over candidate pairs.
struct PairScan;

impl Scan for PairScan {
    const NAME: &'static str = NAME;
    const ARGUMENTS: &'static [&'static str] =
        &["input", "pairs", "threshold", "election", "measure"];
    const REQUIRED: c_int = 0b011;

    fn run(db: &Connection, args: &[Option<ValueRef<'_>>]) -> Result<(Vec<Removal>, ScanStats)> {
        let input = table_argument(NAME, "input", args[0])?;
        let pairs = table_argument(NAME, "pairs", args[1])?;
        let threshold = threshold_argument(NAME, args[2])?;
        let election = match args.get(3).copied().flatten() {
            None | Some(ValueRef::Null) => Election::Chain,
            Some(value) => match value.as_str().ok().and_then(Election::from_word) {
                Some(election) => election,
                None => {
                    return Err(module_error(
                        NAME,
                        "election must be 'chain' (the window scan's, the default) or 'direct' (no drift)",
                        &describe(value),
                    ))
                }
            },
        };
        validate(threshold, 0).map_err(|e| Error::ModuleError(format!("{NAME}[argument]: {e}")))?;
        let measure = measure_argument(NAME, args.get(4).copied().flatten())?;
        require_columns(db, NAME, "input", &input, &INPUT_COLUMNS)?;
        let columns = table_columns(db, NAME, "pairs", &pairs)?;
        let has = |names: &[&str]| names.iter().all(|n| columns.iter().any(|c| c == n));
        let (keyed, listed, packed) = (has(&KEY_COLUMNS), has(&PAIR_COLUMNS), has(&PACKED_COLUMNS));
        if !keyed && !listed && !packed {
            return Err(module_error(
                NAME,
                "pairs must have columns a, b (pairs), band, key, id (keys) or id, keys (lsh_keys)",
                &format!("'{pairs}' with columns {}", columns.join(", ")),
            ));
        }
        let with_settled = table_columns(db, NAME, "input", &input)?
            .iter()
            .any(|c| c == "settled");
        let (mut rows, mut positions, mut index, mut settled) =
            read_rows(db, &input, with_settled)?;
        if election == Election::Direct {
            // Scanned best rank first: each row standing when reached wins.
            let order = election_order(&rows);
            rows = order.iter().map(|&k| rows[k]).collect();
            positions = order.iter().map(|&k| positions[k]).collect();
            settled = order.iter().map(|&k| settled[k]).collect();
            index = rows.iter().enumerate().map(|(k, r)| (r.0, k)).collect();
        }
        let (removed, mut stats, skipped) = if listed {
            let candidates = SkipSettled::new(read_pairs(db, &pairs, &input, &index)?, settled);
            scan(
                db,
                &input,
                &rows,
                &positions,
                candidates,
                (threshold, &measure),
                election,
            )?
        } else {
            let keys = read_keys(db, &pairs, &input, &index, !keyed)?;
            let candidates = SkipSettled::new(keys, settled);
            scan(
                db,
                &input,
                &rows,
                &positions,
                candidates,
                (threshold, &measure),
                election,
            )?
        };
        stats.settled += skipped;
        Ok((removed, stats))
    }
}

/// The election over `candidates`, reading texts from `input` by `pos`;
/// also the settled pairs left out.
fn scan<C: Candidates>(
    db: &Connection,
    input: &str,
    rows: &[(i64, i64)],
    positions: &[i64],
    mut candidates: SkipSettled<C>,
    near: (f64, &Measure),
    election: Election,
) -> Result<(Vec<Removal>, ScanStats, u64)> {
    let sql = format!("SELECT text FROM {} WHERE pos = ?1", quote_ident(input));
    let mut text = db.prepare(&sql)?;
    // Safety: the connection runs this scan on this thread.
    let mut poll = unsafe { InterruptPoll::new(db.handle()) };
    progress::total(rows.len() as u64);
    let mut furthest = 0usize;
    let result = scan_pairs_with(
        rows,
        &mut candidates,
        near,
        election,
        |k| {
            if k > furthest + 255 {
                furthest = k;
                progress::done(k as u64);
            }
            let mut found = text.query([positions[k]])?;
            match found.next()? {
                Some(row) => text_value(NAME, row.get_ref(0)?, rows[k].0),
                // The row left the input since it was listed: nothing to compare.
                None => Ok(None),
            }
        },
        &mut || poll.interrupted(),
    );
    // Every row is through (texts are read only for rows with candidates).
    if result.is_ok() {
        progress::done(rows.len() as u64);
    }
    result.map(|(removed, stats)| (removed, stats, candidates.skipped))
}

/// An integer column, or an error naming the column and what it held.
fn integer(row: &rusqlite::Row<'_>, i: usize, column: &str, table: &str) -> Result<i64> {
    match row.get_ref(i)? {
        ValueRef::Integer(v) => Ok(v),
        other => Err(module_error(
            NAME,
            &format!("{column} in '{table}' must be an integer"),
            &describe(other),
        )),
    }
}

/// The input rows (`id`, `rank`) in `pos` order, their positions, the
/// index of each id, and each row's `settled` group.
type Rows = (
    Vec<(i64, i64)>,
    Vec<i64>,
    HashMap<i64, usize>,
    Vec<Option<i64>>,
);

fn read_rows(db: &Connection, input: &str, with_settled: bool) -> Result<Rows> {
    let sql = format!(
        "SELECT pos, id, rank, {} FROM {} ORDER BY pos",
        if with_settled { "settled" } else { "NULL" },
        quote_ident(input)
    );
    let mut stmt = db.prepare(&sql)?;
    let mut query = stmt.query([])?;
    let (mut rows, mut positions, mut index, mut settled) =
        (Vec::new(), Vec::new(), HashMap::new(), Vec::new());
    while let Some(row) = query.next()? {
        let pos = integer(row, 0, "pos", input)?;
        let at = |e: Error| match e {
            Error::ModuleError(m) => Error::ModuleError(format!("{m} in the row at pos {pos}")),
            other => other,
        };
        let id = integer(row, 1, "id", input).map_err(at)?;
        let rank = integer(row, 2, "rank", input).map_err(at)?;
        settled.push(match row.get_ref(3)? {
            ValueRef::Null => None,
            _ => Some(integer(row, 3, "settled", input).map_err(at)?),
        });
        if positions.last() == Some(&pos) {
            return Err(module_error(
                NAME,
                &format!("pos in '{input}' must be unique"),
                &format!("pos {pos} twice"),
            ));
        }
        if index.insert(id, rows.len()).is_some() {
            return Err(module_error(
                NAME,
                &format!("id in '{input}' must be unique"),
                &format!("id {id} twice"),
            ));
        }
        rows.push((id, rank));
        positions.push(pos);
    }
    Ok((rows, positions, index, settled))
}

fn read_pairs(
    db: &Connection,
    pairs: &str,
    input: &str,
    index: &HashMap<i64, usize>,
) -> Result<PairList> {
    let sql = format!("SELECT a, b FROM {}", quote_ident(pairs));
    let mut stmt = db.prepare(&sql)?;
    let mut query = stmt.query([])?;
    let mut out = PairList::new(index.len());
    let find = finder(index, pairs, input);
    while let Some(row) = query.next()? {
        let a = integer(row, 0, "a", pairs)?;
        let b = integer(row, 1, "b", pairs)?;
        out.add(find(a)?, find(b)?);
    }
    Ok(out)
}

/// The index of an input id, or an error naming the id `pairs` gave.
fn finder<'a>(
    index: &'a HashMap<i64, usize>,
    pairs: &'a str,
    input: &'a str,
) -> impl Fn(i64) -> Result<usize> + 'a {
    move |id| {
        index.get(&id).copied().ok_or_else(|| {
            module_error(
                NAME,
                &format!("pairs in '{pairs}' must join ids of '{input}'"),
                &format!("id {id}"),
            )
        })
    }
}

/// Rows grouped by the (band, key) they carry: rows (`band`, `key`,
/// `id`), or with `packed` rows (`id`, `keys`) of `lsh_keys` blobs (band
/// `i` is the `i`-th key; a NULL blob carries none).
fn read_keys(
    db: &Connection,
    keys: &str,
    input: &str,
    index: &HashMap<i64, usize>,
    packed: bool,
) -> Result<SharedKeys> {
    if index.len() >= u32::MAX as usize {
        return Err(module_error(
            NAME,
            "input must have fewer than 2^32 - 1 rows with keys",
            &format!("{} rows", index.len()),
        ));
    }
    let mut out = SharedKeysBuilder::new(index.len());
    let columns = if packed { "id, keys" } else { "band, key, id" };
    let sql = format!("SELECT {columns} FROM {}", quote_ident(keys));
    let mut stmt = db.prepare(&sql)?;
    let mut query = stmt.query([])?;
    let find = finder(index, keys, input);
    while let Some(row) = query.next()? {
        if !packed {
            let band = integer(row, 0, "band", keys)?;
            let key = integer(row, 1, "key", keys)?;
            let id = integer(row, 2, "id", keys)?;
            out.add(band, key, find(id)?);
            continue;
        }
        let id = integer(row, 0, "id", keys)?;
        let blob = match row.get_ref(1)? {
            ValueRef::Null => continue,
            ValueRef::Blob(b) => b,
            other => {
                return Err(module_error(
                    NAME,
                    &format!("keys in '{keys}' must be lsh_keys blobs"),
                    &format!("{} at id {id}", describe(other)),
                ))
            }
        };
        let band_keys = unpack(blob).map_err(|e| {
            module_error(
                NAME,
                &format!("keys in '{keys}': {e}"),
                &format!("blob of {} bytes at id {id}", blob.len()),
            )
        })?;
        let row = find(id)?;
        for (band, key) in band_keys.enumerate() {
            out.add(band as i64, key, row);
        }
    }
    Ok(out.finish())
}
