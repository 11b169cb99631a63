//! A run with `{"action": "label"}`: the same phases as a deleting run, and
//! instead of its apply, every row of the table labelled in
//! `dedup_clusters`, nothing deleted or rewritten (the dataset shape of
//! text-dedup, NeMo and datatrove).
//!
//! Each row gets: `cluster`, the rowid of the row its survivor chain ends
//! at (a row removed for a survivor that is removed in turn belongs to the
//! final survivor's cluster; a row a deleting run keeps is its own
//! cluster, and so is a row removed with no survivor, in phases 1 and 5);
//! `kept`, 1 where a deleting run with these settings keeps the row; and
//! the removal's `phase`, `reason`, direct `survivor` and `ratio` (NULL for
//! a kept row). So `kept = 1` are the survivors of `dedup_run()` with the
//! same settings, and the other rows its removals, phase for phase.
//!
//! A label run is always full and keeps no index; the table is replaced
//! whole each time, in the run's one transaction. Not with `against`.

use rusqlite::Connection;

use crate::sqlite::ground::error::DedupError;
use crate::sqlite::tables::own_schema::CLUSTERS;
use crate::sqlite::tables::schema;

/// Writes `dedup_clusters` from the plan in this connection (made by
/// [`super::plan::plan`]); the rows labelled.
pub fn write(db: &Connection) -> Result<i64, DedupError> {
    let (name, create) = CLUSTERS;
    // (Made anew: its shape is this extension's, and no trigger of an
    // earlier table runs on the rows written.)
    match schema::object_type(db, name)?.as_deref() {
        None => db.execute_batch(create)?,
        Some("table") => db.execute_batch(&format!("DROP TABLE main.{name}; {create}"))?,
        Some(other) => {
            return crate::sqlite::ground::error::fail(
                crate::sqlite::ground::error::Code::Own,
                format!("dedup: {name} must be the table this extension creates, got a {other}"),
            )
        }
    }
    // (Each removal's survivor followed until a row that is not removed,
    // or is removed with no survivor: the chain's end is the cluster.)
    let n = db.execute(
        "INSERT INTO main.dedup_clusters (dedup_rowid, cluster, kept, phase, reason, survivor, ratio)
         WITH RECURSIVE chain(rid, at, depth) AS (
           SELECT source_rowid, survivor, 1 FROM temp._dedup_removal WHERE survivor IS NOT NULL
           UNION ALL
           SELECT c.rid, r.survivor, c.depth + 1
           FROM chain AS c JOIN temp._dedup_removal AS r ON r.source_rowid = c.at
           WHERE r.survivor IS NOT NULL
         ),
         final(rid, cluster) AS (
           SELECT rid, at FROM (
             SELECT rid, at, row_number() OVER (PARTITION BY rid ORDER BY depth DESC) AS k FROM chain
           ) WHERE k = 1
         )
         SELECT s.rid, coalesce(f.cluster, s.rid), r.source_rowid IS NULL, r.phase, r.reason, r.survivor, r.ratio
         FROM temp._dedup_source AS s
         LEFT JOIN temp._dedup_removal AS r ON r.source_rowid = s.rid
         LEFT JOIN final AS f ON f.rid = s.rid
         ORDER BY s.rid",
        [],
    )?;
    Ok(n as i64)
}
