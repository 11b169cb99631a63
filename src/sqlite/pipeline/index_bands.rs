//! lsh mode's part of the incremental index: the band keys of every kept
//! row with a text, so that an incremental run finds the last run's rows a
//! new row shares a band key with (`sql/incremental/04_lsh_rows.sql`).
//!
//! `main.dedup_index_bands(bk, rid)` holds each key masked to 31 bits
//! ([`MASK`]: 4 bytes a key on disk; a masked key two rows share by chance
//! only adds a row to compare that meets no new row), and
//! `dedup_index.bands` the same keys of the row packed (4 bytes each,
//! little-endian), so that the entries of a row that leaves (deleted or
//! edited by the user, removed now) are deleted without its text. The keys
//! come from phase 4's `temp._dedup_lsh_bands` (window mode: none).

use rusqlite::functions::{Aggregate, Context, FunctionFlags};
use rusqlite::types::ValueRef;
use rusqlite::Connection;

use super::DedupError;

/// The mask a band key is stored under (31 bits: SQLite stores it in 4
/// bytes).
pub const MASK: i64 = 0x7fff_ffff;

/// The aggregate that packs a row's band keys.
const PACK: &str = "dedup_pack_keys";

/// `dedup_pack_keys(key)`: the keys masked by [`MASK`], distinct and
/// ascending, as 4 little-endian bytes each.
struct PackKeys;

impl Aggregate<Vec<u32>, Option<Vec<u8>>> for PackKeys {
    fn init(&self, _: &mut Context<'_>) -> rusqlite::Result<Vec<u32>> {
        Ok(Vec::new())
    }

    fn step(&self, ctx: &mut Context<'_>, keys: &mut Vec<u32>) -> rusqlite::Result<()> {
        if let ValueRef::Integer(k) = ctx.get_raw(0) {
            keys.push((k & MASK) as u32);
        }
        Ok(())
    }

    fn finalize(
        &self,
        _: &mut Context<'_>,
        keys: Option<Vec<u32>>,
    ) -> rusqlite::Result<Option<Vec<u8>>> {
        Ok(keys.map(|mut keys| {
            keys.sort_unstable();
            keys.dedup();
            keys.iter().flat_map(|k| k.to_le_bytes()).collect()
        }))
    }
}

/// The keys [`PackKeys`] packed.
fn unpack(blob: &[u8]) -> impl Iterator<Item = i64> + '_ {
    blob.chunks_exact(4)
        .map(|c| i64::from(u32::from_le_bytes([c[0], c[1], c[2], c[3]])))
}

/// Registers `dedup_pack_keys(key)`.
pub fn register(db: &Connection) -> rusqlite::Result<()> {
    db.create_aggregate_function(
        PACK,
        1,
        FunctionFlags::SQLITE_UTF8 | FunctionFlags::SQLITE_DETERMINISTIC,
        PackKeys,
    )
}

/// `temp._dedup_band_blobs(rid, bands)`: the packed keys of the rows this
/// run writes into the index with keys: the rows phase 4 compared that
/// stay, all of them in a full run, the new and changed ones in an
/// incremental run (the last run's keep theirs).
pub fn collect(db: &Connection, incremental: bool) -> Result<(), DedupError> {
    let which = if incremental {
        "AND id IN (SELECT rid FROM temp._dedup_dirty)"
    } else {
        ""
    };
    db.execute_batch(&format!(
        "DROP TABLE IF EXISTS temp._dedup_band_blobs;
         CREATE TEMP TABLE _dedup_band_blobs (rid INTEGER PRIMARY KEY, bands BLOB);
         INSERT INTO temp._dedup_band_blobs
         SELECT id, {PACK}(key) FROM temp._dedup_lsh_bands
         WHERE id NOT IN (SELECT source_rowid FROM temp._dedup_removal) {which}
         GROUP BY id;"
    ))?;
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
/// full run writes it whole; an incremental run deletes the entries of the
/// rows gone or removed now, then adds those of the new rows it keeps.
pub fn write(db: &Connection, incremental: bool) -> Result<(), DedupError> {
    if incremental {
        let leaving: Vec<(i64, Vec<u8>)> = db
            .prepare(
                "SELECT rid, bands FROM main.dedup_index
                 WHERE bands IS NOT NULL
                   AND (rid IN (SELECT rid FROM temp._dedup_gone)
                        OR rid IN (SELECT source_rowid FROM temp._dedup_removal))",
            )?
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
            .collect::<Result<_, _>>()?;
        let mut delete =
            db.prepare("DELETE FROM main.dedup_index_bands WHERE bk = ?1 AND rid = ?2")?;
        for (rid, blob) in &leaving {
            for bk in unpack(blob) {
                delete.execute([bk, *rid])?;
            }
        }
    } else {
        db.execute_batch("DELETE FROM main.dedup_index_bands;")?;
    }
    // (Sorted by key: appended in the b-tree's order.)
    db.execute_batch(&format!(
        "INSERT OR IGNORE INTO main.dedup_index_bands
         SELECT key & {MASK}, id FROM temp._dedup_lsh_bands
         WHERE id IN (SELECT rid FROM temp._dedup_band_blobs)
         ORDER BY 1, 2;"
    ))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn packed_keys_come_back_masked_distinct_and_sorted() {
        let db = Connection::open_in_memory().unwrap();
        register(&db).unwrap();
        let blob: Vec<u8> = db
            .query_row(
                "SELECT dedup_pack_keys(k) FROM (SELECT -1 AS k UNION ALL SELECT 5 UNION ALL SELECT 5 + 4294967296 UNION ALL SELECT 3)",
                [],
                |r| r.get(0),
            )
            .unwrap();
        // -1 masks to 2^31 - 1; 5 + 2^32 masks to 5, the same as 5.
        assert_eq!(unpack(&blob).collect::<Vec<_>>(), [3, 5, MASK]);
        let none: Option<Vec<u8>> = db
            .query_row("SELECT dedup_pack_keys(1) WHERE 0", [], |r| r.get(0))
            .unwrap();
        assert_eq!(none, None);
    }
}
