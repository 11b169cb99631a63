//! Each row as a run made elsewhere (`sqlite-dedup spark`) reads it: phase
//! 1's values with the keys of every election ([`push_row`], the one place
//! they are made, for a shard's rows and for pages that arrive as Arrow
//! batches alike), as Arrow columns (`crate::core::arrow_columns`), so that
//! no value is made per cell in the host's language.
//! `dedup_rows_arrow(lo, hi)` gives the rows `dedup_prepare` left in the
//! view `temp._dedup_rows` whose rid is in [lo, hi) (NULL: unbounded).

use rusqlite::functions::Context;
use rusqlite::types::ValueRef;
use rusqlite::{Connection, Result};

use crate::core::arrow_columns::{encode, Column, Kind};
use crate::sqlite::functions::sort_key::sort_key;
use crate::sqlite::ground::arguments::{check_arity, describe, int_arg, user_error};

/// The columns of a row a run made elsewhere reads, in order, with what
/// each holds ([`push_row`] makes them).
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
    ("filled", Kind::Int32),
];

const FUNCTION: &str = "dedup_rows_arrow";

/// One row's values as phase 1 left them, from which [`push_row`] makes
/// the row a run made elsewhere reads.
#[derive(Debug, Clone, Copy)]
pub struct RowValues<'a> {
    /// The rowid.
    pub rid: i64,
    /// A window slot of a row an earlier run removed (`canonical_url` is
    /// its URL; nothing else counts).
    pub placeholder: bool,
    /// Why the row is skipped.
    pub skip_reason: Option<&'a [u8]>,
    /// Why its URL leaves the pipeline.
    pub discard_reason: Option<&'a [u8]>,
    /// Its canonical URL.
    pub canonical_url: Option<&'a [u8]>,
    /// Its strict URL.
    pub strict_url: Option<&'a [u8]>,
    /// Its domain.
    pub domain: Option<&'a [u8]>,
    /// Its content hash, as phase 1 left it.
    pub content_hash: ValueRef<'a>,
    /// Its category.
    pub category: ValueRef<'a>,
    /// An `https://` URL (NULL for a NULL URL).
    pub https: Option<i64>,
    /// Its dates and length, as phase 1 left them.
    pub datetime: ValueRef<'a>,
    /// (as above)
    pub crawled: ValueRef<'a>,
    /// (as above)
    pub length: ValueRef<'a>,
    /// The `prefer` setting's key (`inputs/prefer.rs`).
    pub prefer_key: Option<&'a [u8]>,
    /// `boilerplate = 'strip'`: the title as chrome counting counts it.
    pub title_key: Option<&'a [u8]>,
    /// `boilerplate = 'strip'`: its content's segment hashes.
    pub segments: Option<&'a [u8]>,
    /// Whether the text phase 4 compares is not empty.
    pub has_text: bool,
    /// The text phase 1 made (no parsed text), or parsed.
    pub fill: Option<&'a [u8]>,
    /// (as above)
    pub parsed: Option<&'a [u8]>,
}

/// SQL's `quote()` of a value (text quoted with its quotes doubled, a
/// BLOB as `X'..'`, NULL as `NULL`), the hash's key.
fn quote(v: ValueRef<'_>) -> String {
    match v {
        ValueRef::Null => "NULL".into(),
        ValueRef::Integer(i) => i.to_string(),
        ValueRef::Real(r) => format!("{r:e}"),
        ValueRef::Text(t) => format!("'{}'", String::from_utf8_lossy(t).replace('\'', "''")),
        ValueRef::Blob(b) => {
            let hex: String = b.iter().map(|x| format!("{x:02X}")).collect();
            format!("X'{hex}'")
        }
    }
}

/// A value of an output row.
enum Out<'a> {
    Int(i64),
    Bytes(&'a [u8]),
    Owned(Vec<u8>),
}

/// Appends one row to `columns` (those of [`ROW_COLUMNS`], in order): its
/// values and the keys every election sorts by (`dedup_sort_key`'s: byte
/// order is SQLite's order of the values). An error names the column
/// that cannot hold a value.
pub fn push_row(columns: &mut [Column], r: &RowValues<'_>) -> std::result::Result<(), String> {
    let key = |v: ValueRef<'_>| sort_key(v).map(Out::Owned);
    let values: [Option<Out<'_>>; 26] = if r.placeholder {
        // (A window slot: its URL, nothing to elect.)
        [
            Some(Out::Int(r.rid)),
            Some(Out::Int(1)),
            None,
            None,
            r.canonical_url.map(Out::Bytes),
            None,
            None,
            None,
            None,
            None,
            Some(Out::Int(0)),
            Some(Out::Int(1)),
            Some(Out::Int(0)),
            None,
            None,
            None,
            None,
            None,
            None,
            None,
            None,
            None,
            None,
            Some(Out::Int(0)),
            None,
            Some(Out::Int(0)),
        ]
    } else {
        let canonical = r.canonical_url.map(String::from_utf8_lossy);
        let extra = match (r.strict_url, &canonical) {
            (Some(s), Some(c)) => Some(
                crate::core::url::dropped_params(&String::from_utf8_lossy(s), c)
                    .into_iter()
                    .map(|(name, value)| format!("{name}={value}"))
                    .collect::<Vec<_>>()
                    .join("&")
                    .into_bytes(),
            ),
            _ => None,
        };
        let text = if r.has_text && r.skip_reason.is_none() && r.canonical_url.is_some() {
            r.fill.or(r.parsed)
        } else {
            None
        };
        let empty_null = |v: ValueRef<'_>| match v {
            ValueRef::Text(b"") => None,
            v => sort_key(v).map(Out::Owned),
        };
        [
            Some(Out::Int(r.rid)),
            Some(Out::Int(0)),
            r.skip_reason.map(Out::Bytes),
            r.discard_reason.map(Out::Bytes),
            r.canonical_url.map(Out::Bytes),
            r.strict_url.or(r.canonical_url).map(Out::Bytes),
            r.strict_url.map(Out::Bytes),
            extra.map(Out::Owned),
            r.domain.map(Out::Bytes),
            Some(Out::Owned(quote(r.content_hash).into_bytes())),
            Some(Out::Int(i64::from(r.content_hash != ValueRef::Null))),
            Some(Out::Int(i64::from(
                r.category == ValueRef::Text(b"external"),
            ))),
            r.https.map(Out::Int),
            key(r.datetime),
            key(r.crawled),
            key(r.length),
            match (&canonical, r.https) {
                (Some(u), Some(h)) => Some(Out::Int(u.chars().count() as i64 - h)),
                _ => None,
            },
            empty_null(r.datetime),
            empty_null(r.crawled),
            key(match r.length {
                ValueRef::Null => ValueRef::Integer(0),
                v => v,
            }),
            r.prefer_key.map(Out::Bytes),
            r.title_key.map(Out::Bytes),
            r.segments.map(Out::Bytes),
            Some(Out::Int(i64::from(r.has_text))),
            text.map(Out::Bytes),
            Some(Out::Int(i64::from(r.fill.is_some()))),
        ]
    };
    for (column, v) in columns.iter_mut().zip(values) {
        let pushed = match v {
            None => {
                column.push_null();
                Ok(())
            }
            Some(Out::Int(n)) => column.push_int(n),
            Some(Out::Bytes(b)) => column.push_bytes(b),
            Some(Out::Owned(b)) => column.push_bytes(&b),
        };
        pushed.map_err(|problem| format!("column {} cannot hold {problem}", column.name()))?;
    }
    Ok(())
}

fn bound(ctx: &Context<'_>, i: usize) -> Result<Option<i64>> {
    int_arg(ctx, i, FUNCTION, "rid bounds must be integers or NULL")
}

/// The view's columns [`batch`] reads, in order.
const VIEW: &str = "rid, placeholder, skip_reason, discard_reason, canonical_url, strict_url, domain, \
     content_hash, category, https, datetime, crawled, length, prefer_key, title_key, segments, has_text, \
     fill_parsed, parsed";

/// The batch of rows with rid in [lo, hi).
fn batch(db: &Connection, lo: Option<i64>, hi: Option<i64>) -> Result<Vec<u8>> {
    // Plain comparisons (no `?1 IS NULL OR`), so that SQLite pushes them
    // into the view's arms as rowid ranges.
    let mut stmt = db.prepare(&format!(
        "SELECT {VIEW} FROM temp._dedup_rows WHERE rid >= ?1 AND rid <= ?2"
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
                    .map_err(|e| user_error(FUNCTION, "the batch cannot be written", e.as_str()))
            }
        },
    };
    let mut rows = stmt.query((lo.unwrap_or(i64::MIN), last))?;
    while let Some(row) = rows.next()? {
        let text = |i: usize| -> Result<Option<&[u8]>> {
            Ok(match row.get_ref(i)? {
                ValueRef::Text(t) | ValueRef::Blob(t) => Some(t),
                _ => None,
            })
        };
        let values = RowValues {
            rid: row.get(0)?,
            placeholder: row.get::<_, i64>(1)? != 0,
            skip_reason: text(2)?,
            discard_reason: text(3)?,
            canonical_url: text(4)?,
            strict_url: text(5)?,
            domain: text(6)?,
            content_hash: row.get_ref(7)?,
            category: row.get_ref(8)?,
            https: row.get(9)?,
            datetime: row.get_ref(10)?,
            crawled: row.get_ref(11)?,
            length: row.get_ref(12)?,
            prefer_key: text(13)?,
            title_key: text(14)?,
            segments: text(15)?,
            has_text: row.get::<_, Option<i64>>(16)?.unwrap_or(0) != 0,
            fill: text(17)?,
            parsed: text(18)?,
        };
        push_row(&mut columns, &values).map_err(|problem| {
            user_error(
                FUNCTION,
                &problem,
                &format!(
                    "the row with rid {}",
                    describe(ValueRef::Integer(values.rid))
                ),
            )
        })?;
    }
    encode(&columns).map_err(|e| user_error(FUNCTION, "the batch cannot be written", e.as_str()))
}

/// Registers `dedup_rows_arrow`.
pub fn register(db: &Connection) -> Result<()> {
    db.create_scalar_function(
        FUNCTION,
        -1,
        crate::sqlite::ground::arguments::WRITES,
        |ctx| {
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
                return Err(crate::sqlite::ground::arguments::coded_error(
                    FUNCTION,
                    crate::sqlite::ground::error::Code::State,
                    "no rows are prepared on this connection",
                    "no temp._dedup_rows (run dedup_prepare first)",
                ));
            }
            batch(&db, lo, hi)
        },
    )
}
