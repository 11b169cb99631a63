//! lsh mode's part of the incremental index: the band keys of every kept
//! row with a text, so that an incremental run finds the last run's rows a
//! new row shares a band and key with, and their keys, without reading
//! their texts (`src/sqlite/pipeline/incremental/lsh_input.rs`, `sql/04b_near_dups.sql`).
//!
//! `main.dedup_index_bands(band, key, rid)` holds them by band and key, and
//! `dedup_index.bands` the same keys of the row packed (`PackKeys`). The
//! keys come from phase 4: a full run's `temp._dedup_lsh_keys` (each row's
//! `lsh_keys` blob), an incremental run's `temp._dedup_lsh_bands` (band
//! rows); window mode has none.
//!
//! The entries of a row that leaves (deleted or edited by the user,
//! removed now) are not deleted at once: each lands on another page of a
//! b-tree of 32 entries a kept row, and deleting them cost an incremental
//! run at 1M pages about a sixth of its time. Its packed keys go to
//! `main.dedup_index_bands_left`, and an entry counts only while
//! `dedup_index` holds its row with its key ([`holds`]: a rowid the table
//! reuses, or a row edited, has other keys). Once the rows left number an
//! eighth of the kept rows, a run deletes their entries together, in the
//! b-tree's order (many share a page by then), but those a row holds again.

use std::collections::HashMap;

use rusqlite::functions::{Aggregate, Context, FunctionFlags};
use rusqlite::types::ValueRef;
use rusqlite::{Connection, OptionalExtension};

use crate::sqlite::ground::error::{Code, DedupError};

/// The aggregate that packs a row's band keys.
const PACK: &str = "dedup_pack_keys";

/// `dedup_pack_keys(band, key)`: the (band, key) pairs given (integers, a
/// band from 0 to 2^32 - 1; others are skipped), distinct and ascending,
/// as 12 little-endian bytes each (the band in 4, the key in 8).
struct PackKeys;

impl Aggregate<Vec<(u32, i64)>, Option<Vec<u8>>> for PackKeys {
    fn init(&self, _: &mut Context<'_>) -> rusqlite::Result<Vec<(u32, i64)>> {
        Ok(Vec::new())
    }

    fn step(&self, ctx: &mut Context<'_>, keys: &mut Vec<(u32, i64)>) -> rusqlite::Result<()> {
        if let (ValueRef::Integer(band), ValueRef::Integer(key)) = (ctx.get_raw(0), ctx.get_raw(1))
        {
            if let Ok(band) = u32::try_from(band) {
                keys.push((band, key));
            }
        }
        Ok(())
    }

    fn finalize(
        &self,
        _: &mut Context<'_>,
        keys: Option<Vec<(u32, i64)>>,
    ) -> rusqlite::Result<Option<Vec<u8>>> {
        Ok(keys.map(|mut keys| {
            keys.sort_unstable();
            keys.dedup();
            keys.iter()
                .flat_map(|(band, key)| band.to_le_bytes().into_iter().chain(key.to_le_bytes()))
                .collect()
        }))
    }
}

/// One packed (band, key) pair: 12 bytes, as [`PackKeys`] wrote it.
fn pair(c: &[u8]) -> (u32, i64) {
    let band = u32::from_le_bytes(c[..4].try_into().expect("4 bytes"));
    let key = i64::from_le_bytes(c[4..12].try_into().expect("8 bytes"));
    (band, key)
}

/// The (band, key) pairs [`PackKeys`] packed.
pub(super) fn unpack(blob: &[u8]) -> impl Iterator<Item = (i64, i64)> + '_ {
    blob.chunks_exact(12).map(|c| {
        let (band, key) = pair(c);
        (i64::from(band), key)
    })
}

/// Whether the packed keys `blob` hold `(band, key)` (`PackKeys` sorted
/// them: a binary search).
pub fn holds(blob: &[u8], band: i64, key: i64) -> bool {
    let (Ok(band), n) = (u32::try_from(band), blob.len() / 12) else {
        return false;
    };
    let (mut lo, mut hi) = (0, n);
    while lo < hi {
        let mid = (lo + hi) / 2;
        match pair(&blob[mid * 12..mid * 12 + 12]).cmp(&(band, key)) {
            std::cmp::Ordering::Less => lo = mid + 1,
            std::cmp::Ordering::Greater => hi = mid,
            std::cmp::Ordering::Equal => return true,
        }
    }
    false
}

/// Registers `dedup_pack_keys(band, key)`.
pub fn register(db: &Connection) -> rusqlite::Result<()> {
    db.create_aggregate_function(
        PACK,
        2,
        FunctionFlags::SQLITE_UTF8 | FunctionFlags::SQLITE_DETERMINISTIC,
        PackKeys,
    )
}

/// `temp._dedup_band_blobs(rid, bands)`: the packed keys of the rows this
/// run writes into the index with keys: the rows phase 4 compared that
/// stay, all of them in a full run, the new and changed ones in an
/// incremental run (the last run's keep theirs; of those, phase 4 has only
/// the keys a new row shares).
pub fn collect(db: &Connection, incremental: bool) -> Result<(), DedupError> {
    db.execute_batch(
        "DROP TABLE IF EXISTS temp._dedup_band_blobs;
         CREATE TEMP TABLE _dedup_band_blobs (rid INTEGER PRIMARY KEY, bands BLOB);",
    )?;
    if incremental {
        db.execute_batch(&format!(
            "INSERT INTO temp._dedup_band_blobs
             SELECT id, {PACK}(band, key) FROM temp._dedup_lsh_bands
             WHERE id NOT IN (SELECT source_rowid FROM temp._dedup_removal)
               AND id IN (SELECT rid FROM temp._dedup_dirty)
             GROUP BY id;"
        ))?;
        return Ok(());
    }
    // A full run: each row's lsh_keys blob, band i the i-th key, packed as
    // PackKeys packs them (ascending by band, then key: band order).
    let mut read = db.prepare(
        "SELECT id, keys FROM temp._dedup_lsh_keys
         WHERE keys IS NOT NULL AND id NOT IN (SELECT source_rowid FROM temp._dedup_removal)",
    )?;
    let mut insert = db.prepare("INSERT INTO temp._dedup_band_blobs VALUES (?1, ?2)")?;
    let mut rows = read.query([])?;
    let mut packed = Vec::new();
    while let Some(row) = rows.next()? {
        let id: i64 = row.get(0)?;
        let ValueRef::Blob(blob) = row.get_ref(1)? else {
            continue;
        };
        let keys = crate::core::band_keys::unpack(blob).map_err(|e| {
            DedupError::new(Code::Internal, format!("_dedup_lsh_keys at id {id}: {e}"))
        })?;
        packed.clear();
        for (band, key) in keys.enumerate() {
            packed.extend((band as u32).to_le_bytes());
            packed.extend(key.to_le_bytes());
        }
        insert.execute(rusqlite::params![id, packed])?;
    }
    Ok(())
}

/// The column `dedup_index.bands` of row `g` as this run leaves it: the
/// keys collected now, or (an incremental run, `x` the row's old index
/// entry) the old ones of a row that is not new or changed.
pub fn column(incremental: bool, rowid: &str) -> String {
    let now = format!("(SELECT b.bands FROM temp._dedup_band_blobs AS b WHERE b.rid = g.{rowid})");
    if incremental {
        format!("CASE WHEN g.{rowid} IN (SELECT rid FROM temp._dedup_dirty) THEN {now} ELSE x.bands END")
    } else {
        now
    }
}

/// Brings `main.dedup_index_bands` up to date, before `dedup_index` is
/// (an incremental run reads there the keys of the rows that leave): a
/// full run writes it whole; an incremental run lists the rows gone or
/// removed now in `dedup_index_bands_left` (and deletes the entries of all
/// the rows listed once they are many), then adds those of the new rows it
/// keeps.
pub fn write(db: &Connection, incremental: bool) -> Result<(), DedupError> {
    let mut step = std::time::Instant::now();
    if incremental {
        db.execute_batch(
            "INSERT INTO main.dedup_index_bands_left (rid, bands)
             SELECT rid, bands FROM main.dedup_index
             WHERE bands IS NOT NULL
               AND (rid IN (SELECT rid FROM temp._dedup_gone)
                    OR rid IN (SELECT source_rowid FROM temp._dedup_removal));",
        )?;
        let left: i64 = db.query_row(
            "SELECT count(*) FROM main.dedup_index_bands_left",
            [],
            |r| r.get(0),
        )?;
        // (Window mode lists nothing: no count of the kept rows.)
        if left > 0 {
            let kept = super::index_state::kept_rows(db)?;
            if left * 8 > kept {
                sweep(db)?;
            }
        }
    } else {
        db.execute_batch(
            "DELETE FROM main.dedup_index_bands;
             DELETE FROM main.dedup_index_bands_left;",
        )?;
    }
    crate::sqlite::ground::trace::lap("index: band keys of the rows that left", &mut step);
    // The collected rows' keys, sorted: appended in the b-tree's order.
    db.execute_batch(
        "INSERT OR IGNORE INTO main.dedup_index_bands (band, key, rid)
         SELECT band, key, rid FROM dedup_band_entries('_dedup_band_blobs');",
    )?;
    Ok(())
}

/// Deletes the entries of the rows listed in `dedup_index_bands_left`, in
/// the b-tree's order, but those a row of the index holds now (a reused
/// rowid, a row that came back with the same key; the new rows of this run
/// are added after), and empties the list.
fn sweep(db: &Connection) -> Result<(), DedupError> {
    let mut entries: Vec<(i64, i64, i64)> = Vec::new();
    let mut rids: Vec<i64> = Vec::new();
    {
        let mut stmt = db.prepare("SELECT rid, bands FROM main.dedup_index_bands_left")?;
        let mut rows = stmt.query([])?;
        while let Some(r) = rows.next()? {
            let rid: i64 = r.get(0)?;
            rids.push(rid);
            if let ValueRef::Blob(blob) = r.get_ref(1)? {
                entries.extend(unpack(blob).map(|(band, key)| (band, key, rid)));
            }
        }
    }
    // The keys the listed rowids hold now, each looked up once.
    rids.sort_unstable();
    rids.dedup();
    let mut now: HashMap<i64, Vec<u8>> = HashMap::new();
    {
        let mut stmt = db.prepare(
            "SELECT bands FROM main.dedup_index WHERE rid = ?1 AND bands IS NOT NULL
               AND rid NOT IN (SELECT rid FROM temp._dedup_gone)
               AND rid NOT IN (SELECT source_rowid FROM temp._dedup_removal)",
        )?;
        for rid in rids {
            if let Some(blob) = stmt.query_row([rid], |r| r.get(0)).optional()? {
                now.insert(rid, blob);
            }
        }
    }
    entries.sort_unstable();
    entries.dedup();
    let mut delete =
        db.prepare("DELETE FROM main.dedup_index_bands WHERE band = ?1 AND key = ?2 AND rid = ?3")?;
    for (band, key, rid) in entries {
        if now.get(&rid).is_some_and(|blob| holds(blob, band, key)) {
            continue;
        }
        delete.execute([band, key, rid])?;
    }
    db.execute_batch("DELETE FROM main.dedup_index_bands_left;")?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn packed_keys_come_back_distinct_and_sorted() {
        let db = Connection::open_in_memory().unwrap();
        register(&db).unwrap();
        let blob: Vec<u8> = db
            .query_row(
                "SELECT dedup_pack_keys(b, k) FROM (SELECT 1 AS b, -1 AS k UNION ALL SELECT 0, 5
                 UNION ALL SELECT 0, 5 UNION ALL SELECT 1, 9223372036854775807
                 UNION ALL SELECT 0, 'x' UNION ALL SELECT -1, 3)",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(
            unpack(&blob).collect::<Vec<_>>(),
            [(0, 5), (1, -1), (1, i64::MAX)]
        );
        let none: Option<Vec<u8>> = db
            .query_row("SELECT dedup_pack_keys(0, 1) WHERE 0", [], |r| r.get(0))
            .unwrap();
        assert_eq!(none, None);
    }

    #[test]
    fn holds_finds_exactly_the_packed_keys() {
        let db = Connection::open_in_memory().unwrap();
        register(&db).unwrap();
        let blob: Vec<u8> = db
            .query_row(
                "SELECT dedup_pack_keys(b, k) FROM (SELECT 3 AS b, 7 AS k UNION ALL SELECT 0, -2
                 UNION ALL SELECT 3, -9 UNION ALL SELECT 1, 0 UNION ALL SELECT 4294967295, 5)",
                [],
                |r| r.get(0),
            )
            .unwrap();
        for (band, key) in [(3, 7), (0, -2), (3, -9), (1, 0), (4294967295, 5)] {
            assert!(holds(&blob, band, key), "{band} {key}");
        }
        for (band, key) in [(3, 8), (0, 2), (2, 0), (-1, 5), (4294967296, 5), (9, 9)] {
            assert!(!holds(&blob, band, key), "{band} {key}");
        }
        assert!(!holds(&[], 0, 0));
    }
}
