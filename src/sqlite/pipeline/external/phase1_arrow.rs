//! `dedup_phase1_arrow(batch [, settings])`: phase 1 of pages that arrive
//! as a batch of Arrow columns (a Spark DataFrame's partition), with no
//! table between: each row through [`crate::core::phase1::prepare`], the
//! rules the SQL runner's phase 1 runs, and out as the rows
//! `dedup_rows_arrow` gives of a shard ([`crate::sqlite::pipeline::external::rows_arrow::ROW_COLUMNS`],
//! the election keys included), one batch in, one batch out.
//!
//! The batch (`crate::core::arrow_columns`'s format) holds an Int64
//! column `rid` and any of the page columns `url`, `title`, `content`,
//! `parsed`, `content_hash`, `length`, `datetime`, `crawled`, `category`,
//! each Utf8, Binary, Int64 or Int32 (a missing column is NULL). The
//! settings (a JSON object, as for `dedup_run`) may not hold what needs a
//! database: `prefer` (its terms are SQL), `url_rules`, `fix_urls`,
//! `boilerplate = 'strip'` (the chrome is counted over shards).
//!
//! Cost: one pass over the rows; the output holds each row's values, keys
//! and compared text.

use crate::sqlite::ground::error::Code;
use rusqlite::types::ValueRef;
use rusqlite::{Connection, Result};

use crate::core::arrow_columns::{decode, encode, Cell, Column, ColumnView};
use crate::core::phase1::{prepare, Failure, Given, PageRow, Rules, TextCell};
use crate::sqlite::ground::arguments::{check_arity, describe, user_error, WRITES};
use crate::sqlite::ground::error::DedupError;
use crate::sqlite::pipeline::external::rows_arrow::{push_row, RowValues, ROW_COLUMNS};
use crate::sqlite::settings::choices::{Boilerplate, Compat};

const NAME: &str = "dedup_phase1_arrow";

/// The page columns a batch may hold.
const PAGE_COLUMNS: [&str; 9] = [
    "url",
    "title",
    "content",
    "parsed",
    "content_hash",
    "length",
    "datetime",
    "crawled",
    "category",
];

/// A cell as SQLite holds the value.
fn value(cell: Cell<'_>) -> ValueRef<'_> {
    match cell {
        Cell::Null => ValueRef::Null,
        Cell::Integer(i) => ValueRef::Integer(i),
        Cell::Text(t) => ValueRef::Text(t),
        Cell::Blob(b) => ValueRef::Blob(b),
    }
}

/// A cell as phase 1 reads a text column.
fn text_cell(cell: Cell<'_>) -> TextCell<'_> {
    match cell {
        Cell::Null => TextCell::Null,
        Cell::Text(t) => TextCell::Text(t),
        Cell::Blob(b) => TextCell::Other {
            what: "a BLOB",
            sql_length: b.len() as i64,
        },
        Cell::Integer(i) => TextCell::Other {
            what: "an integer",
            sql_length: i.to_string().len() as i64,
        },
    }
}

/// The rules of the settings, or the error of one this path cannot take.
fn rules(db: &Connection, settings: Option<&str>) -> std::result::Result<Rules, DedupError> {
    let s = crate::sqlite::settings::read::read(db, NAME, settings)?;
    let refused = [
        (!s.prefer.is_empty(), "prefer"),
        (s.url_rules > 0.0, "url_rules"),
        (s.fix_urls, "fix_urls"),
        (s.boilerplate == Boilerplate::Strip, "boilerplate = 'strip'"),
    ];
    if let Some((_, name)) = refused.iter().find(|(on, _)| *on) {
        return Err(DedupError::new(
            Code::Setting,
            format!(
            "{NAME}: {name} needs the pages in a database (dedup_prepare), got it in the settings"
        ),
        ));
    }
    Rules::new(
        &s.canonical_options(),
        s.strict_options().as_deref(),
        s.compat == Compat::Reference,
        false,
    )
    .map_err(|e| DedupError::new(Code::Setting, format!("{NAME}: {e}")))
}

/// The batch's rows through phase 1, as a batch of [`ROW_COLUMNS`].
fn batch(blob: &[u8], rules: &mut Rules) -> Result<Vec<u8>> {
    let (rows, columns) = decode(blob)
        .map_err(|e| user_error(NAME, "batch must be a batch of Arrow columns", e.as_str()))?;
    prepare_columns(rows, &columns, rules)
}

/// `rows` rows of `columns` (an Int64 `rid` and any of the page columns)
/// through phase 1, as one batch of [`ROW_COLUMNS`] in
/// `crate::core::arrow_columns`'s format.
pub fn prepare_columns(
    rows: usize,
    columns: &[ColumnView<'_>],
    rules: &mut Rules,
) -> Result<Vec<u8>> {
    let find = |name: &str| columns.iter().find(|c| c.name() == name);
    let Some(rid) = find("rid") else {
        return Err(user_error(
            NAME,
            "batch must have an Int64 column rid",
            "none",
        ));
    };
    let page: Vec<Option<&ColumnView<'_>>> = PAGE_COLUMNS.iter().map(|n| find(n)).collect();
    let cell = |k: usize, i: usize| page[k].map_or(Cell::Null, |c| c.cell(i));
    let mut out: Vec<Column> = ROW_COLUMNS
        .iter()
        .map(|(n, k)| Column::new(n, *k))
        .collect();
    for i in 0..rows {
        let Cell::Integer(id) = rid.cell(i) else {
            return Err(user_error(
                NAME,
                "rid must be an integer in every row",
                &format!("{} in row {i} of the batch", describe(value(rid.cell(i)))),
            ));
        };
        let parsed = cell(3, i);
        // (The title as SQL joins it: a number as its digits.)
        let number;
        let title = match cell(1, i) {
            Cell::Null => None,
            Cell::Text(t) | Cell::Blob(t) => Some(t),
            Cell::Integer(n) => {
                number = n.to_string();
                Some(number.as_bytes())
            }
        };
        let row = PageRow {
            url: text_cell(cell(0, i)),
            title,
            content: text_cell(cell(2, i)),
            parsed: text_cell(parsed),
            hash_missing: cell(4, i) == Cell::Null,
            length_missing: cell(5, i) == Cell::Null,
        };
        let p = prepare(&row, rules, "", &crate::core::halt::never).map_err(|f| match f {
            Failure::Halted(h) => rusqlite::Error::from(h),
            Failure::InvalidText(why) => user_error(
                NAME,
                &format!(
                    "{why}, so phase 1 cannot make the row's text (title, blank line, content)"
                ),
                &format!("the row with rid {id}"),
            ),
        })?;
        let hash_value = match &p.hash {
            Given::Computed(h) => ValueRef::Text(h.as_bytes()),
            Given::Given => value(cell(4, i)),
            Given::Null => ValueRef::Null,
        };
        let length_value = match &p.length {
            Given::Computed(n) => ValueRef::Integer(*n),
            Given::Given => match value(cell(5, i)) {
                ValueRef::Integer(0) => ValueRef::Null,
                v => v,
            },
            Given::Null => ValueRef::Null,
        };
        let parsed_text = match parsed {
            Cell::Text(t) => Some(t),
            _ => None,
        };
        let values = RowValues {
            rid: id,
            placeholder: false,
            skip_reason: p.skip_reason.as_deref().map(str::as_bytes),
            discard_reason: p.discard_reason.as_deref().map(str::as_bytes),
            canonical_url: p.canonical_url.as_deref().map(str::as_bytes),
            strict_url: p.strict_url.as_deref().map(str::as_bytes),
            domain: p.domain.as_deref().map(str::as_bytes),
            content_hash: hash_value,
            category: value(cell(8, i)),
            https: p.https.map(i64::from),
            datetime: value(cell(6, i)),
            crawled: value(cell(7, i)),
            length: length_value,
            prefer_key: None,
            title_key: None,
            segments: None,
            has_text: p.has_text,
            fill: p.fill.as_deref().map(str::as_bytes),
            parsed: parsed_text,
        };
        push_row(&mut out, &values)
            .map_err(|problem| user_error(NAME, &problem, &format!("the row with rid {id}")))?;
    }
    encode(&out).map_err(|e| user_error(NAME, "the batch cannot be written", e.as_str()))
}

/// Registers `dedup_phase1_arrow`.
pub fn register(db: &Connection) -> Result<()> {
    db.create_scalar_function(NAME, -1, WRITES, |ctx| {
        check_arity(ctx, NAME, 1, 2)?;
        let blob = match ctx.get_raw(0) {
            ValueRef::Blob(b) => b,
            other => {
                return Err(user_error(
                    NAME,
                    "batch must be a BLOB of Arrow columns",
                    &describe(other),
                ))
            }
        };
        let settings = if ctx.len() > 1 {
            match ctx.get_raw(1) {
                ValueRef::Null => None,
                ValueRef::Text(t) => Some(String::from_utf8_lossy(t).into_owned()),
                other => {
                    return Err(user_error(
                        NAME,
                        "settings must be a JSON object",
                        &describe(other),
                    ))
                }
            }
        } else {
            None
        };
        // Safety: the handle is the connection running this function, used
        // on this thread for the duration of the call.
        let db = unsafe { ctx.get_connection()? };
        let mut rules = rules(&db, settings.as_deref())?;
        batch(blob, &mut rules)
    })
}
