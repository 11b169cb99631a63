//! An incremental run's phase-4 input in lsh mode: the new rows, and the
//! last run's kept rows that share a band key with one of them
//! (`main.dedup_index_bands`, less the entries of rows that left it, which
//! their rows in `main.dedup_index` no longer hold) and that the exact
//! bounds let near one of
//! those (their lengths and histograms from `main.dedup_index`:
//! [`crate::core::lsh_prune`]). The new rows' band keys are in
//! `temp._dedup_lsh_new` already (`sql/incremental/04_lsh_keys.sql`).
//!
//! Nothing else can change: the last run left no two rows near (a second
//! run removes nothing), so every pair a full run would find near holds a
//! new row, and a full run's election on the rows these pairs join is this
//! scan's (their order by URL and by rank is the same among fewer rows). A
//! kept row whose every pair with a new row fails the bounds is in no
//! near pair, so the elections never see it; it is left out, unread and
//! unranked. The kept rows are settled (group 0: their pairs are not
//! compared); gone rows and the rows phases 2-3 removed now for a new copy
//! are left out.
//!
//! What it writes: `temp._dedup_near_rows` (as
//! [`super::near_input`] does in window mode, without placeholders), which
//! `sql/incremental/04_near_input.sql` ranks, and the kept rows' entries of
//! the keys they share with a new row, appended to `temp._dedup_lsh_new`.
//! What it holds: the new rows' histograms, and a length and histogram for
//! each kept row sharing a key with a new row.

use std::collections::{HashMap, HashSet};

use rusqlite::types::ValueRef;
use rusqlite::Connection;

use super::index_bands::holds;
use super::near_input::new_rows;
use crate::core::lsh_prune::{kept_rows_needed, SharedKey};
use crate::core::similarity::CharHistogram;
use crate::core::window_prune::PruneRow;
use crate::sqlite::ground::error::DedupError;
use crate::sqlite::ground::trace::lap;

/// A kept row of the last run sharing a key with a new row.
struct Kept {
    rid: i64,
    /// Its place in the scan order (`dedup_index.pos_url`).
    url: String,
    /// Its text's length in code points, when the index has it.
    tlen: Option<i64>,
}

/// Builds `temp._dedup_near_rows` and the kept rows' entries of
/// `temp._dedup_lsh_new` (see the module's documentation).
pub fn build(db: &Connection) -> Result<(), DedupError> {
    let (threshold, mode, measure): (f64, String, String) = db.query_row(
        "SELECT threshold, near_mode, measure FROM temp._dedup_run",
        [],
        |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
    )?;
    if threshold >= 1.0 || mode != "lsh" {
        return Ok(());
    }
    // (The bounds below are Levenshtein's; under resemblance they leave out
    // only what no measure finds near: texts of no common character.)
    let threshold = if measure == "resemblance" {
        0.0
    } else {
        threshold
    };
    let mut step = std::time::Instant::now();
    let mut fresh = new_rows(db)?;
    let by_id: HashMap<i64, usize> = fresh.iter().enumerate().map(|(i, n)| (n.id, i)).collect();
    // The new rows' keys, by band and key.
    let mut keys: Vec<((i64, i64), SharedKey)> = {
        let mut by_key: HashMap<(i64, i64), SharedKey> = HashMap::new();
        let mut stmt = db.prepare("SELECT band, key, id FROM temp._dedup_lsh_new")?;
        let mut found = stmt.query([])?;
        while let Some(r) = found.next()? {
            if let Some(&i) = by_id.get(&r.get::<_, i64>(2)?) {
                by_key
                    .entry((r.get(0)?, r.get(1)?))
                    .or_default()
                    .fresh
                    .push(i);
            }
        }
        by_key.into_iter().collect()
    };
    keys.sort_unstable_by_key(|(k, _)| *k);
    let (keys, mut shared): (Vec<(i64, i64)>, Vec<SharedKey>) = keys.into_iter().unzip();
    lap("lsh_input: new rows and keys", &mut step);
    // The kept rows holding each key, less the rows that are not the last
    // run's kept rows any more.
    let left_out: HashSet<i64> = {
        let mut stmt = db.prepare(
            "SELECT rid FROM temp._dedup_dirty UNION SELECT rid FROM temp._dedup_gone
             UNION SELECT c.rid FROM temp._dedup_clean AS c
                   WHERE c.rid NOT IN (SELECT source_rowid FROM temp._dedup_exact_winners)",
        )?;
        let found = stmt.query_map([], |r| r.get(0))?;
        found.collect::<Result<_, _>>()?
    };
    let mut kept_at: HashMap<i64, usize> = HashMap::new();
    let mut rids: Vec<i64> = Vec::new();
    {
        let mut stmt =
            db.prepare("SELECT rid FROM main.dedup_index_bands WHERE band = ?1 AND key = ?2")?;
        for (&(band, key), shared) in keys.iter().zip(shared.iter_mut()) {
            let mut found = stmt.query([band, key])?;
            while let Some(r) = found.next()? {
                let rid: i64 = r.get(0)?;
                if left_out.contains(&rid) {
                    continue;
                }
                let at = *kept_at.entry(rid).or_insert_with(|| {
                    rids.push(rid);
                    rids.len() - 1
                });
                shared.kept.push(at);
            }
        }
    }
    lap(
        &format!("lsh_input: {} kept rows share a key", rids.len()),
        &mut step,
    );
    // (The keys each of those rows was found under, to check them.)
    let mut found_under: Vec<Vec<usize>> = vec![Vec::new(); rids.len()];
    for (j, holders) in shared.iter().enumerate() {
        for &at in &holders.kept {
            found_under[at].push(j);
        }
    }
    let (kept, profiles, stale) = kept_rows(db, &rids, &keys, &found_under)?;
    drop(found_under);
    if !stale.is_empty() {
        for (j, holders) in shared.iter_mut().enumerate() {
            holders.kept.retain(|&at| !stale.contains(&(j, at)));
        }
    }
    lap("lsh_input: kept rows' lengths and histograms", &mut step);
    let fresh_rows: Vec<PruneRow> = fresh
        .iter_mut()
        .map(|n| PruneRow {
            placeholder: false,
            settled: None,
            len: n.len,
            histogram: n.histogram.take(),
        })
        .collect();
    let mut need = kept_rows_needed(&fresh_rows, &profiles, &shared, threshold);
    drop((fresh_rows, profiles));
    // (A row the index has no place for is not one of the scan's rows.)
    for (n, k) in need.iter_mut().zip(&kept) {
        *n &= k.is_some();
    }
    lap(
        &format!(
            "lsh_input: {} kept rows may be near a new row",
            need.iter().filter(|&&n| n).count()
        ),
        &mut step,
    );
    write(db, &fresh, &kept, &need, (&keys, &shared), &rids)?;
    lap("lsh_input: written", &mut step);
    Ok(())
}

/// What [`kept_rows`] reads: each row's place and profile, and the
/// entries found that are stale, as (key, row) indexes.
type KeptRows = (Vec<Option<Kept>>, Vec<PruneRow>, HashSet<(usize, usize)>);

/// The kept rows `rids` as the index holds them (looked up in rowid
/// order), each with its length and histogram for the bounds. A row the
/// index gives no place in the scan order is not one of the scan's rows
/// (`None`); a row without a length or histogram may be near anything.
/// An entry of `dedup_index_bands` whose row does not hold its key (the
/// row left and its rowid was reused: [`super::index_bands`]) is stale:
/// row `i` was found under the keys `found_under[i]`.
fn kept_rows(
    db: &Connection,
    rids: &[i64],
    keys: &[(i64, i64)],
    found_under: &[Vec<usize>],
) -> Result<KeptRows, DedupError> {
    let mut order: Vec<usize> = (0..rids.len()).collect();
    order.sort_unstable_by_key(|&i| rids[i]);
    let mut kept: Vec<Option<Kept>> = (0..rids.len()).map(|_| None).collect();
    let mut profiles: Vec<PruneRow> = (0..rids.len())
        .map(|_| PruneRow {
            placeholder: false,
            settled: Some(0),
            len: None,
            histogram: None,
        })
        .collect();
    let mut stale = HashSet::new();
    let mut stmt =
        db.prepare("SELECT pos_url, tlen, hist, bands FROM main.dedup_index WHERE rid = ?1")?;
    for i in order {
        let mut found = stmt.query([rids[i]])?;
        let Some(r) = found.next()? else {
            stale.extend(found_under[i].iter().map(|&j| (j, i)));
            continue;
        };
        let blob = match r.get_ref(3)? {
            ValueRef::Blob(b) => b,
            _ => &[],
        };
        for &j in &found_under[i] {
            if !holds(blob, keys[j].0, keys[j].1) {
                stale.insert((j, i));
            }
        }
        let Some(url) = r.get::<_, Option<String>>(0)? else {
            continue;
        };
        let tlen: Option<i64> = r.get(1)?;
        let histogram = match r.get_ref(2)? {
            ValueRef::Blob(b) => CharHistogram::from_bytes(b),
            _ => None,
        };
        profiles[i].len = tlen.map(|l| l.max(0) as usize);
        profiles[i].histogram = histogram.map(Box::new);
        kept[i] = Some(Kept {
            rid: rids[i],
            url,
            tlen,
        });
    }
    Ok((kept, profiles, stale))
}

/// Writes the new rows and the needed kept rows in scan order (URL, then
/// rowid) to `temp._dedup_near_rows`, and the needed kept rows' entries of
/// the shared keys to `temp._dedup_lsh_new`.
fn write(
    db: &Connection,
    fresh: &[super::near_input::NewRow],
    kept: &[Option<Kept>],
    need: &[bool],
    (keys, shared): (&[(i64, i64)], &[SharedKey]),
    rids: &[i64],
) -> Result<(), DedupError> {
    // (url, id, settled, tlen): a new row is not settled; the scan
    // measures its text itself.
    let mut rows: Vec<(&str, i64, Option<i64>, Option<i64>)> = fresh
        .iter()
        .map(|n| (n.url.as_str(), n.id, None, None))
        .chain(
            kept.iter()
                .zip(need)
                .filter_map(|(k, &n)| k.as_ref().filter(|_| n))
                .map(|k| (k.url.as_str(), k.rid, Some(0), k.tlen)),
        )
        .collect();
    // (SQLite's BINARY order of text is the order of its UTF-8 bytes.)
    rows.sort_unstable_by(|a, b| (a.0.as_bytes(), a.1).cmp(&(b.0.as_bytes(), b.1)));
    let mut row = db.prepare(
        "INSERT INTO temp._dedup_near_rows (pos, id, placeholder, slots, settled, tlen, url)
         VALUES (?1, ?2, 0, NULL, ?3, ?4, ?5)",
    )?;
    for (pos, (url, id, settled, tlen)) in rows.into_iter().enumerate() {
        row.execute(rusqlite::params![pos as i64 + 1, id, settled, tlen, url])?;
    }
    let mut entry =
        db.prepare("INSERT INTO temp._dedup_lsh_new (band, key, id) VALUES (?1, ?2, ?3)")?;
    for (&(band, key), holders) in keys.iter().zip(shared) {
        for &k in &holders.kept {
            if need[k] {
                entry.execute([band, key, rids[k]])?;
            }
        }
    }
    Ok(())
}
