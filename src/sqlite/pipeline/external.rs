//! `dedup_rows_arrow(lo, hi)`: the rows `dedup_prepare` left in the view
//! `temp._dedup_rows` whose rid is in [lo, hi) (NULL: unbounded), as one
//! batch of Arrow columns (`crate::core::arrow_columns`), so that a run
//! made elsewhere (`sqlite-dedup spark`) reads them without a value per
//! cell in its own language.

use rusqlite::functions::Context;
use rusqlite::types::ValueRef;
use rusqlite::{Connection, Result};

use crate::core::arrow_columns::{encode, Column, Kind};
use crate::sqlite::scalars::{check_arity, describe, int_arg, user_error};

/// The columns of `temp._dedup_rows` (sql/external/01_rows.sql), in order,
/// with what each holds.
pub const ROW_COLUMNS: &[(&str, Kind)] = &[
    ("rid", Kind::Int64),
    ("placeholder", Kind::Int32),
    ("skip_reason", Kind::Utf8),
    ("discard_reason", Kind::Utf8),
    ("canonical_url", Kind::Utf8),
    ("url_key", Kind::Utf8),
    ("strict_url", Kind::Utf8),
    ("extra_params", Kind::Utf8),
    ("domain", Kind::Utf8),
    ("hash_key", Kind::Utf8),
    ("has_hash", Kind::Int32),
    ("external", Kind::Int32),
    ("https", Kind::Int32),
    ("datetime_key", Kind::Binary),
    ("crawled_key", Kind::Binary),
    ("length_key", Kind::Binary),
    ("url_length", Kind::Int64),
    ("datetime4_key", Kind::Binary),
    ("crawled4_key", Kind::Binary),
    ("length4_key", Kind::Binary),
    ("prefer_key", Kind::Binary),
    ("title_key", Kind::Utf8),
    ("segments", Kind::Utf8),
    ("has_text", Kind::Int32),
    ("text", Kind::Utf8),
];

const FUNCTION: &str = "dedup_rows_arrow";

fn bound(ctx: &Context<'_>, i: usize) -> Result<Option<i64>> {
    int_arg(ctx, i, FUNCTION, "rid bounds must be integers or NULL")
}

/// The batch of rows with rid in [lo, hi).
fn batch(db: &Connection, lo: Option<i64>, hi: Option<i64>) -> Result<Vec<u8>> {
    let names: Vec<&str> = ROW_COLUMNS.iter().map(|(n, _)| *n).collect();
    // Plain comparisons (no `?1 IS NULL OR`), so that SQLite pushes them
    // into the view's arms as rowid ranges.
    let mut stmt = db.prepare(&format!(
        "SELECT {} FROM temp._dedup_rows WHERE rid >= ?1 AND rid <= ?2",
        names.join(", ")
    ))?;
    let mut columns: Vec<Column> = ROW_COLUMNS
        .iter()
        .map(|(n, k)| Column::new(n, *k))
        .collect();
    let last = match hi {
        None => i64::MAX,
        Some(h) => match h.checked_sub(1) {
            Some(last) => last,
            None => {
                return encode(&columns)
                    .map_err(|e| user_error(FUNCTION, "the batch cannot be written", &e))
            }
        },
    };
    let mut rows = stmt.query((lo.unwrap_or(i64::MIN), last))?;
    while let Some(row) = rows.next()? {
        for (i, column) in columns.iter_mut().enumerate() {
            let pushed = match row.get_ref(i)? {
                ValueRef::Null => {
                    column.push_null();
                    Ok(())
                }
                ValueRef::Integer(v) => column.push_int(v),
                ValueRef::Text(t) | ValueRef::Blob(t) => column.push_bytes(t),
                ValueRef::Real(r) => Err(format!("a real ({r})")),
            };
            if let Err(problem) = pushed {
                let rid = row.get_ref(0).map(describe).unwrap_or_default();
                return Err(user_error(
                    FUNCTION,
                    &format!("column {} cannot hold {problem}", column.name()),
                    &format!("the row with rid {rid}"),
                ));
            }
        }
    }
    encode(&columns).map_err(|e| user_error(FUNCTION, "the batch cannot be written", &e))
}

/// Registers `dedup_rows_arrow`.
pub fn register(db: &Connection) -> Result<()> {
    db.create_scalar_function(FUNCTION, -1, crate::sqlite::scalars::WRITES, |ctx| {
        check_arity(ctx, FUNCTION, 2, 2)?;
        let (lo, hi) = (bound(ctx, 0)?, bound(ctx, 1)?);
        // Safety: the handle is the connection running this function, used
        // on this thread for the duration of the call.
        let db = unsafe { ctx.get_connection()? };
        let exists: bool = db.query_row(
            "SELECT count(*) FROM temp.sqlite_schema WHERE name = '_dedup_rows'",
            [],
            |r| r.get(0),
        )?;
        if !exists {
            return Err(user_error(
                FUNCTION,
                "no rows are prepared on this connection",
                "no temp._dedup_rows (run dedup_prepare first)",
            ));
        }
        batch(&db, lo, hi)
    })
}
