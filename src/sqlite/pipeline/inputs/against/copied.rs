//! The other database's pages copied in (the path of `against` when its
//! index cannot stand for them, [`super::decide`]): its table's rows into
//! `temp._dedup_against` with rids below every rowid of this table (the
//! election's last rule, the lower rowid, then prefers the page that was
//! there first), and `temp._dedup_pages`, the rows phase 1 prepares and
//! phases 4 and 6 read texts from, their union with the table's. Every
//! phase treats both alike; `sql/against/06_only_here.sql` then keeps the
//! plan to this table's rows: a row of the other database never leaves,
//! and a removal whose survivor is there names it in a `survivor elsewhere`
//! note (`survivor in last-month.db, rowid 17 (https://a.example/x)`), as a
//! Spark job names a survivor in another shard.
//!
//! Cost: one read of the other table and a copy of its rows into temp
//! storage. A run `against` another database this way is full and keeps no
//! index (the index describes one table).

use rusqlite::types::Value;
use rusqlite::Connection;

use crate::core::phase::Phase;
use crate::sqlite::ground::error::{fail, Code, DedupError};
use crate::sqlite::ground::shown::excerpt;
use crate::sqlite::settings::values::Settings;
use crate::sqlite::tables::schema::{Source, PAGE_COLUMNS};

/// Copies the other table's rows into `temp._dedup_against`, below every
/// rowid of this table, their rowids shifted by one amount (so in their
/// order, and in it with the rows its earlier runs removed); in window
/// mode, those removed rows' window slots into
/// `temp._dedup_against_archive` (as the other database's own next run
/// would place them). The rows copied.
pub fn copy(
    db: &Connection,
    source: &Source,
    theirs: &Connection,
    their: &Source,
    name: &str,
    s: &Settings,
) -> Result<i64, DedupError> {
    let read_failed = |e: rusqlite::Error| {
        DedupError::new(
            Code::Against,
            format!(
                "dedup: against {name}: reading its table {} failed: {}; nothing was changed",
                excerpt(&their.table),
                DedupError::from(e).words()
            ),
        )
    };
    // (One read transaction: the counts and the rows agree.)
    theirs.execute_batch("BEGIN").map_err(read_failed)?;
    let archive = match crate::sqlite::tables::schema::object_type(theirs, "dedup_removed")?
        .as_deref()
    {
        Some("table") => Some(
            crate::sqlite::tables::schema::archive_view_body(theirs, their, None).map_err(|e| {
                DedupError::new(
                    Code::Against,
                    format!("dedup: against {name}: {}", e.words()),
                )
            })?,
        ),
        _ => None,
    };
    let archived = archive
        .as_deref()
        .map_or("SELECT NULL AS dedup_rowid".to_string(), |a| {
            format!("SELECT dedup_rowid FROM ({a})")
        });
    let (n, low, high): (i64, Option<i64>, Option<i64>) = theirs
        .query_row(
            &format!(
                "SELECT (SELECT count(*) FROM {table}),
                        min((SELECT min({rowid}) FROM {table}), coalesce((SELECT min(dedup_rowid) FROM ({archived})), (SELECT min({rowid}) FROM {table}))),
                        max((SELECT max({rowid}) FROM {table}), coalesce((SELECT max(dedup_rowid) FROM ({archived})), (SELECT max({rowid}) FROM {table})))",
                table = their.qualified(),
                rowid = their.rowid
            ),
            [],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )
        .map_err(read_failed)?;
    let lowest: i64 = db.query_row(
        &format!(
            "SELECT min(coalesce(min({}), 0), 0) FROM {}",
            source.rowid,
            source.qualified()
        ),
        [],
        |r| r.get(0),
    )?;
    // (Their rowid r becomes r + shift: every one below this table's.)
    let shift = match (low, high) {
        (Some(low), Some(high)) => lowest
            .checked_sub(1)
            .and_then(|l| l.checked_sub(high))
            .filter(|shift| low.checked_add(*shift).is_some()),
        _ => Some(0),
    };
    let Some(shift) = shift else {
        return fail(
            Code::Against,
            format!(
            "dedup: against {name}: no rids are left below this table's rowids; nothing was changed"
        ),
        );
    };
    let mut read = theirs
        .prepare(&format!("{} ORDER BY rid", their.view_body()))
        .map_err(read_failed)?;
    let marks = vec!["?"; PAGE_COLUMNS.len() + 2].join(", ");
    let mut write = db.prepare(&format!("INSERT INTO temp._dedup_against VALUES ({marks})"))?;
    let mut rows = read.query([]).map_err(read_failed)?;
    let mut k = 0i64;
    while let Some(row) = rows.next().map_err(read_failed)? {
        if k >= n {
            break;
        }
        let rid: i64 = row.get(0).map_err(read_failed)?;
        let mut values: Vec<Value> = Vec::with_capacity(PAGE_COLUMNS.len() + 2);
        values.push(Value::Integer(rid + shift));
        for i in 0..=PAGE_COLUMNS.len() {
            values.push(row.get(i).map_err(read_failed)?);
        }
        write.execute(rusqlite::params_from_iter(values))?;
        k += 1;
    }
    if let (Some(archive), crate::sqlite::settings::choices::NearMode::Window) =
        (archive, s.near_mode)
    {
        let mut read = theirs
            .prepare(&format!(
                "SELECT dedup_rowid, dedup_phase, url, content, parsed FROM ({archive})
                 WHERE dedup_phase IN {slot} AND typeof(dedup_rowid) = 'integer'",
                slot = Phase::sql_list(&Phase::KEEP_SLOT)
            ))
            .map_err(read_failed)?;
        let mut write =
            db.prepare("INSERT INTO temp._dedup_against_archive VALUES (?1, ?2, ?3, ?4, ?5)")?;
        let mut rows = read.query([]).map_err(read_failed)?;
        while let Some(row) = rows.next().map_err(read_failed)? {
            let rid: i64 = row.get(0).map_err(read_failed)?;
            write.execute(rusqlite::params![
                rid + shift,
                row.get::<_, Value>(1).map_err(read_failed)?,
                row.get::<_, Value>(2).map_err(read_failed)?,
                row.get::<_, Value>(3).map_err(read_failed)?,
                row.get::<_, Value>(4).map_err(read_failed)?
            ])?;
        }
    }
    Ok(k)
}
