//! An incremental run's phase-4 input (window mode), read from the last
//! run's scan order (`main.dedup_index_order`) by seeks, in order of the
//! places where it changed.
//!
//! The places where the order changed are the *keys* (`temp._dedup_keys`,
//! from `sql/incremental/04_keys.sql`): the new rows' places and the places
//! of the last run's rows that left the order (*ghosts*). Around each key,
//! the `distance` entries of the last run's order on each side (ghosts
//! skipped) may meet a new row or come closer to each other; nothing else
//! can change. Those entries and the new rows, in scan order, are the
//! input. A settled row (one of the last run's) needs its text only when
//! some row within `distance` of it that the last run did not compare it
//! with (a new row, or a settled one that was further than the window
//! from it before rows between them left) may be near it by the exact
//! bounds ([`needed`]: the lengths, kept with the order, first; then the
//! histograms, from the index, of the rows the lengths leave); the others,
//! and the placeholders, are slots that are
//! never compared, so each run of them is written as one row standing for
//! that many slots (`slots`, which `near_dups` expands). Only the rows
//! compared are ranked for the election (only the order of ranks counts).
//!
//! What it writes: `temp._dedup_near_rows(pos, id, placeholder, slots,
//! settled, tlen, url)` (`url`: a new row's; a settled row's place is its
//! `pos_url` in the index), which `sql/incremental/04_near_input.sql` turns
//! into `temp._dedup_near_input`. What it holds: a few words a row of the
//! neighbourhoods, and the histograms of the rows not placeholders whose
//! lengths let a pair through.

use crate::sqlite::ground::error::Code;
use rusqlite::types::ValueRef;
use rusqlite::Connection;

use crate::core::similarity::CharHistogram;
use crate::core::window_prune::{histograms_wanted, needed, PruneRow, Windows};
use crate::sqlite::ground::error::DedupError;
use crate::sqlite::ground::trace::lap;

/// A place in the scan order: `(url, id, placeholder)`, compared as
/// SQLite compares them (BINARY text, then integers).
type Place = (String, i64, i64);

/// One row of the input being built.
struct Entry {
    id: i64,
    placeholder: bool,
    /// The group the last run settled it in (the ghosts before it); `None`
    /// for a new row and for placeholders.
    settled: Option<i64>,
    /// A new (or changed) row's URL.
    new_url: Option<String>,
    /// Its text's length in code points (a settled row's from the order).
    len: Option<usize>,
    /// A new row's text's histogram (boxed: most rows of the neighbourhoods
    /// are placeholders or never compared; a settled row's is read from
    /// the index only when the lengths let a pair of it through).
    histogram: Option<Box<CharHistogram>>,
}

/// Builds `temp._dedup_near_rows` (see the module's documentation); in
/// lsh mode only makes it empty, for [`super::lsh_input::build`].
pub fn build(db: &Connection) -> Result<(), DedupError> {
    db.execute_batch(
        "DROP TABLE IF EXISTS temp._dedup_near_rows;
         CREATE TEMP TABLE _dedup_near_rows (pos INTEGER PRIMARY KEY, id INTEGER, placeholder INTEGER,
                                             slots INTEGER, settled INTEGER, tlen INTEGER, url TEXT);",
    )?;
    let (distance, threshold, mode, measure): (i64, f64, String, String) = db.query_row(
        "SELECT distance, threshold, near_mode, measure FROM temp._dedup_run",
        [],
        |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)),
    )?;
    // (lsh mode's rows: super::lsh_input.)
    if threshold >= 1.0 || mode == "lsh" {
        return Ok(());
    }
    // (The bounds below are Levenshtein's; under resemblance they leave out
    // only what no measure finds near: texts of no common character.)
    let threshold = if measure == "resemblance" {
        0.0
    } else {
        threshold
    };
    let d = distance.max(0) as usize;
    let mut step = std::time::Instant::now();
    let keys: Vec<Place> = places(
        db,
        "SELECT url, id, 0 FROM temp._dedup_keys ORDER BY url, id",
    )?;
    let ghosts: Vec<Place> = places(
        db,
        "SELECT url, id, 0 FROM temp._dedup_ghosts ORDER BY url, id",
    )?;
    let fresh = new_rows(db)?
        .into_iter()
        .map(|n| Entry {
            id: n.id,
            placeholder: false,
            settled: None,
            new_url: Some(n.url),
            len: n.len,
            histogram: n.histogram,
        })
        .collect();
    lap("near_input: keys and new rows", &mut step);
    let mut entries = select_entries(db, &keys, &ghosts, fresh, d)?;
    lap("near_input: order", &mut step);
    let mut rows: Vec<PruneRow> = entries
        .iter_mut()
        .map(|e| PruneRow {
            placeholder: e.placeholder,
            settled: e.settled,
            len: e.len,
            histogram: e.histogram.take(),
        })
        .collect();
    // (The scan compares each row with the next distance - 1, at their
    // places in the input, which are these rows' (a run of slots written
    // as one row stands for as many); the last run did so too, so its
    // settled rows that close were compared.)
    let window = d.saturating_sub(1);
    let windows = Windows {
        distance: window,
        last: window,
    };
    let wanted = histograms_wanted(&rows, threshold, windows);
    lap(
        &format!(
            "near_input: lengths ({} rows, {} histograms wanted)",
            rows.len(),
            wanted.len()
        ),
        &mut step,
    );
    histograms(db, &entries, &mut rows, wanted)?;
    lap("near_input: histograms", &mut step);
    let need = needed(&rows, threshold, windows);
    let tlen: Vec<Option<i64>> = rows.iter().map(|r| r.len.map(|l| l as i64)).collect();
    drop(rows);
    lap(
        &format!(
            "near_input: needed ({} rows compared)",
            need.iter().filter(|&&n| n).count()
        ),
        &mut step,
    );
    write(db, &entries, &tlen, &need)?;
    lap("near_input: written", &mut step);
    Ok(())
}

/// Places read by `sql` (columns url, id, placeholder).
fn places(db: &Connection, sql: &str) -> Result<Vec<Place>, DedupError> {
    let mut stmt = db.prepare(sql)?;
    let found = stmt
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?
        .collect::<Result<_, _>>()?;
    Ok(found)
}

/// A new (or changed) row of phase 4's input: a dirty winner of phases
/// 2-3 with a text.
pub(super) struct NewRow {
    /// Its rowid.
    pub id: i64,
    /// Its canonical URL (its place in the scan order).
    pub url: String,
    /// Its text's length in code points.
    pub len: Option<usize>,
    /// Its text's character histogram.
    pub histogram: Option<Box<CharHistogram>>,
}

/// The new rows of phase 4's input (dirty winners with text), in scan
/// order, with their texts' lengths and histograms.
pub(super) fn new_rows(db: &Connection) -> Result<Vec<NewRow>, DedupError> {
    let mut stmt = db.prepare(
        "SELECT p.canonical_url, p.source_rowid,
                coalesce(p.fill_parsed, (SELECT s.parsed FROM temp._dedup_source AS s WHERE s.rid = p.source_rowid))
         FROM temp._dedup_exact_winners AS w JOIN temp._dedup_prepared AS p ON p.source_rowid = w.source_rowid
         WHERE p.has_text AND p.source_rowid IN (SELECT rid FROM temp._dedup_dirty)
         ORDER BY p.canonical_url, p.source_rowid",
    )?;
    let mut found = stmt.query([])?;
    let mut rows = Vec::new();
    while let Some(r) = found.next()? {
        let text = match r.get_ref(2)? {
            ValueRef::Text(t) => std::str::from_utf8(t).ok(),
            _ => None,
        };
        rows.push(NewRow {
            id: r.get(1)?,
            url: r.get(0)?,
            len: text.map(|s| s.chars().count()),
            histogram: text.map(|s| Box::new(CharHistogram::new(s))),
        });
    }
    Ok(rows)
}

/// The last run's entries within `d` of a key on either side (ghosts
/// skipped and not counted; an entry at a key's own place belongs to
/// neither side), each with its settled group (the ghosts before it), and
/// the new rows, in scan order (a new row before the last run's entries at
/// its URL and rowid).
///
/// Read by seeks in the order's primary key, so that the pass costs what
/// the keys cost, not what the order holds. The keys come in order, and so
/// do their neighbourhoods: a key within the rows already taken needs no
/// seek back (every row before it down to the previous neighbourhoods is
/// taken), and its seek forward starts after the last row taken, for as
/// many rows as its side still lacks.
fn select_entries(
    db: &Connection,
    keys: &[Place],
    ghosts: &[Place],
    fresh: Vec<Entry>,
    d: usize,
) -> Result<Vec<Entry>, DedupError> {
    const COLUMNS: &str = "SELECT url, id, placeholder, tlen FROM main.dedup_index_order";
    let mut before = db.prepare(&format!(
        "{COLUMNS} WHERE (url, id, placeholder) < (?1, ?2, ?3) ORDER BY url DESC, id DESC, placeholder DESC"
    ))?;
    let mut from = db.prepare(&format!(
        "{COLUMNS} WHERE (url, id, placeholder) >= (?1, ?2, ?3) ORDER BY url, id, placeholder"
    ))?;
    let mut past = db.prepare(&format!(
        "{COLUMNS} WHERE (url, id, placeholder) > (?1, ?2, ?3) ORDER BY url, id, placeholder"
    ))?;
    // (By rowid first: most rows of the order are not ghosts, and an
    // integer look-up spares them the URLs' comparisons.)
    let ghost_ids: std::collections::HashSet<i64> = ghosts.iter().map(|g| g.1).collect();
    let ghost = |url: &str, id: i64| {
        ghost_ids.contains(&id)
            && ghosts
                .binary_search_by(|g| (g.0.as_str(), g.1).cmp(&(url, id)))
                .is_ok()
    };
    // Up to `n` rows of the order that are not ghosts, from `at` on as
    // `stmt` reads them; the row at `own`'s place, when it comes first, is
    // passed over (not counted; the flag says so).
    type Row = (Place, Option<i64>);
    let read = |stmt: &mut rusqlite::Statement<'_>,
                at: &Place,
                n: usize,
                own: Option<&Place>|
     -> Result<(Vec<Row>, bool), DedupError> {
        let (mut rows, mut passed) = (Vec::with_capacity(n), false);
        let mut found = stmt.query(rusqlite::params![at.0, at.1, at.2])?;
        while rows.len() < n {
            let Some(r) = found.next()? else { break };
            let url = order_url(r.get_ref(0)?)?;
            let (id, placeholder, len): (i64, i64, Option<i64>) = (r.get(1)?, r.get(2)?, r.get(3)?);
            if placeholder == 0 && ghost(url, id) {
                continue;
            }
            let place = (url.to_owned(), id, placeholder);
            if rows.is_empty() && !passed && own == Some(&place) {
                passed = true;
                continue;
            }
            rows.push((place, len));
        }
        Ok((rows, passed))
    };
    // The rows taken, in order; rows at or before the last one taken when
    // they come (only a row a key passed over can be one not yet taken).
    let mut taken: Vec<Row> = Vec::new();
    let mut late: Vec<Row> = Vec::new();
    let mut passed_over = false;
    let mut take = |row: Row, taken: &mut Vec<Row>| match taken.last() {
        Some((last, _)) if row.0 <= *last => {
            if taken.binary_search_by(|(p, _)| p.cmp(&row.0)).is_err() {
                late.push(row);
            }
        }
        _ => taken.push(row),
    };
    for key in keys {
        let within = taken
            .last()
            .filter(|(last, _)| key <= last)
            .map(|(p, _)| p.clone());
        match within {
            Some(last) if !passed_over => {
                // Every row from before the key's side up to `last` is
                // taken: the side after it lacks what [key, last] holds.
                let start = taken.partition_point(|(p, _)| p < key);
                let own = usize::from(taken[start].0 == *key);
                let have = taken.len() - start - own;
                if have < d {
                    let (rows, _) = read(&mut past, &last, d - have, None)?;
                    for row in rows {
                        take(row, &mut taken);
                    }
                }
            }
            _ => {
                let (mut rows, _) = read(&mut before, key, d, None)?;
                rows.reverse();
                let (after, passed) = read(&mut from, key, d, Some(key))?;
                passed_over |= passed;
                for row in rows.into_iter().chain(after) {
                    take(row, &mut taken);
                }
            }
        }
    }
    if !late.is_empty() {
        taken.extend(late);
        taken.sort_by(|a, b| a.0.cmp(&b.0));
        taken.dedup_by(|a, b| a.0 == b.0);
    }
    let mut out = Vec::with_capacity(taken.len() + fresh.len());
    let mut fresh = fresh.into_iter().peekable();
    // (The ghosts before each row taken, counted as the rows come in
    // order.)
    let mut before_it = 0usize;
    for ((url, id, placeholder), len) in taken {
        while let Some(n) =
            fresh.next_if(|n| (n.new_url.as_deref().unwrap_or(""), n.id) <= (url.as_str(), id))
        {
            out.push(n);
        }
        while ghosts
            .get(before_it)
            .is_some_and(|g| (g.0.as_str(), g.1) < (url.as_str(), id))
        {
            before_it += 1;
        }
        let settled = (placeholder == 0).then_some(before_it as i64);
        out.push(Entry {
            id,
            placeholder: placeholder != 0,
            settled,
            new_url: None,
            len: len.map(|l| l.max(0) as usize),
            histogram: None,
        });
    }
    out.extend(fresh);
    Ok(out)
}

/// A URL of the order as text (the order holds only UTF-8 text).
fn order_url(v: ValueRef<'_>) -> Result<&str, DedupError> {
    match v {
        ValueRef::Text(t) => std::str::from_utf8(t).map_err(|_| {
            DedupError::new(
                Code::Own,
                "dedup: dedup_index_order holds a URL that is not UTF-8",
            )
        }),
        _ => Err(DedupError::new(
            Code::Own,
            "dedup: dedup_index_order holds a URL that is not text; run with {\"full\": true}",
        )),
    }
}

/// The `wanted` settled rows' lengths and histograms, from the index
/// (looked up in rowid order). A row the index has none of may be near
/// anything: its length is taken as unknown too.
fn histograms(
    db: &Connection,
    entries: &[Entry],
    rows: &mut [PruneRow],
    wanted: Vec<usize>,
) -> Result<(), DedupError> {
    let mut wanted: Vec<(i64, usize)> = wanted.into_iter().map(|i| (entries[i].id, i)).collect();
    wanted.sort_unstable();
    let mut stmt = db.prepare("SELECT tlen, hist FROM main.dedup_index WHERE rid = ?1")?;
    for (rid, i) in wanted {
        let mut found = stmt.query([rid])?;
        let mut profile = None;
        if let Some(r) = found.next()? {
            let len: Option<i64> = r.get(0)?;
            let hist = match r.get_ref(1)? {
                ValueRef::Blob(b) => CharHistogram::from_bytes(b),
                _ => None,
            };
            profile = len.zip(hist);
        }
        match profile {
            Some((len, hist)) => {
                rows[i].len = Some(len.max(0) as usize);
                rows[i].histogram = Some(Box::new(hist));
            }
            None => rows[i].len = None,
        }
    }
    Ok(())
}

/// Writes the input: each row compared on its own, each run of slots as
/// one placeholder row with its count.
fn write(
    db: &Connection,
    entries: &[Entry],
    tlen: &[Option<i64>],
    need: &[bool],
) -> Result<(), DedupError> {
    let mut row = db.prepare(
        "INSERT INTO temp._dedup_near_rows (pos, id, placeholder, settled, tlen, url)
         VALUES (?1, ?2, 0, ?3, ?4, ?5)",
    )?;
    let mut slots_row = db.prepare(
        "INSERT INTO temp._dedup_near_rows (pos, id, placeholder, slots) VALUES (?1, ?2, 1, ?3)",
    )?;
    let mut pos = 0i64;
    let mut gap: Option<(i64, i64)> = None; // (its first row's id, slots)
    for ((e, &need), tlen) in entries.iter().zip(need).zip(tlen) {
        if !(need || e.new_url.is_some()) {
            match &mut gap {
                Some((_, slots)) => *slots += 1,
                None => gap = Some((e.id, 1)),
            }
            continue;
        }
        if let Some((id, slots)) = gap.take() {
            pos += 1;
            slots_row.execute(rusqlite::params![pos, id, slots])?;
        }
        pos += 1;
        row.execute(rusqlite::params![pos, e.id, e.settled, tlen, e.new_url])?;
    }
    if let Some((id, slots)) = gap {
        slots_row.execute(rusqlite::params![pos + 1, id, slots])?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeSet;

    /// What a test compares of an entry: id, placeholder, settled group,
    /// a new row's URL, length.
    type Shown = (i64, bool, Option<i64>, Option<String>, Option<usize>);

    /// The selection by its definition, on the order as a sorted list: for
    /// each key, the `d` rows that are not ghosts before it, and the `d`
    /// from it on (a row at its own place passed over).
    fn by_definition(order: &[Place], keys: &[Place], ghosts: &[Place], d: usize) -> Vec<Place> {
        let live: Vec<&Place> = order
            .iter()
            .filter(|p| !(p.2 == 0 && ghosts.iter().any(|g| (&g.0, g.1) == (&p.0, p.1))))
            .collect();
        let mut taken = BTreeSet::new();
        for key in keys {
            let at = live.partition_point(|p| *p < key);
            taken.extend(live[at.saturating_sub(d)..at].iter().map(|p| (*p).clone()));
            let from = if live.get(at) == Some(&key) {
                at + 1
            } else {
                at
            };
            taken.extend(
                live[from..(from + d).min(live.len())]
                    .iter()
                    .map(|p| (*p).clone()),
            );
        }
        taken.into_iter().collect()
    }

    proptest! {
        /// The seeks (which skip what they took) take what the definition
        /// takes, in order, new rows before the last run's rows at their
        /// URL and rowid; keys at the place of a row that is not a ghost
        /// included (a case the runner never makes, defined all the same).
        #[test]
        fn the_seeks_take_what_the_definition_takes(
            order in proptest::collection::btree_set(("[ab]{1,2}", 0i64..4, 0i64..2), 0..40),
            ghostly in proptest::collection::vec(any::<bool>(), 40),
            new in proptest::collection::btree_set(("[ab]{1,2}", 0i64..4), 0..6),
            d in 0usize..5,
        ) {
            let db = Connection::open_in_memory().unwrap();
            db.execute_batch(
                "CREATE TABLE dedup_index_order (url TEXT NOT NULL, id INTEGER NOT NULL, placeholder INTEGER NOT NULL,
                 tlen INTEGER, PRIMARY KEY (url, id, placeholder)) WITHOUT ROWID",
            ).unwrap();
            for (url, id, placeholder) in &order {
                db.execute("INSERT INTO dedup_index_order VALUES (?1, ?2, ?3, ?2 * 10)",
                           rusqlite::params![url, id, placeholder]).unwrap();
            }
            let order: Vec<Place> = order.into_iter().collect();
            // Ghosts: some of the order's rows, and a place it does not hold.
            let mut ghosts: BTreeSet<Place> = order.iter().zip(&ghostly)
                .filter(|(p, &g)| g && p.2 == 0).map(|(p, _)| (p.0.clone(), p.1, 0)).collect();
            ghosts.insert(("ab".into(), 9, 0));
            let ghosts: Vec<Place> = ghosts.into_iter().collect();
            let new: Vec<Place> = new
                .into_iter()
                .map(|(u, i)| (u, i + 100 * (i % 2), 0))
                .collect::<BTreeSet<_>>()
                .into_iter()
                .collect();
            let keys: Vec<Place> = ghosts.iter().chain(&new).cloned().collect::<BTreeSet<_>>().into_iter().collect();
            let fresh = new.iter().map(|(u, i, _)| Entry {
                id: *i, placeholder: false, settled: None, new_url: Some(u.clone()), len: None, histogram: None,
            }).collect();
            let got: Vec<Shown> =
                select_entries(&db, &keys, &ghosts, fresh, d).unwrap().into_iter()
                    .map(|e| (e.id, e.placeholder, e.settled, e.new_url, e.len)).collect();
            let mut want: Vec<(Place, Shown)> =
                by_definition(&order, &keys, &ghosts, d).into_iter().map(|(u, i, ph)| {
                    let settled = (ph == 0).then(|| ghosts.iter().filter(|g| (&g.0, g.1) < (&u, i)).count() as i64);
                    ((u.clone(), i, ph), (i, ph != 0, settled, None, Some(i as usize * 10)))
                }).collect();
            want.extend(new.iter().map(|(u, i, _)| ((u.clone(), *i, -1), (*i, false, None, Some(u.clone()), None))));
            want.sort_by(|a, b| a.0.cmp(&b.0));
            let want: Vec<_> = want.into_iter().map(|(_, e)| e).collect();
            prop_assert_eq!(got, want);
        }
    }
}
