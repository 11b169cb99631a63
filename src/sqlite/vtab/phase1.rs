//! `dedup_phase1(input, url_options, strict_options, compat, boilerplate,
//! url_rules, fix_urls)`: phase 1 of every row of `input`, a row out for
//! each row in, by the rules of [`crate::core::phase1`] (the one place
//! they live). `sql/01_canonicalize.sql` reads it; its arguments are the
//! run's settings (`temp._dedup_run`).
//!
//! `input` names a table or view with the columns `rid`, `url`, `title`,
//! `content`, `parsed`, `content_hash`, `length`, `datetime`, `crawled`,
//! `category` (`temp._dedup_todo`). Its rows are read a batch at a time as
//! the caller steps (up to 512 rows or 8 MiB of values held), and each batch
//! prepared together: on the crate's pool when it holds much markup to
//! parse ([`crate::core::phase1_batch`]), with the same rows as one at a
//! time. Output columns:
//! `source_rowid`, `skip_reason`, `canonical_url`, `domain`, `wayback`,
//! `discard_reason`, `content_hash`, `datetime`, `crawled`, `length`,
//! `category`, `fill_parsed`, `has_text`, `strict_url`, `https`; a value
//! the row had and phase 1 keeps (its hash and length when given, its
//! dates and category) is the row's own, of its type.
//!
//! Learned URL options: with `url_rules` above 0, the parameters the rules
//! drop on the URL's domain (`url_rule_params`); with `fix_urls`, the
//! options `temp._dedup_url_fixes` holds for the URL's host.
//!
//! Each row counts one in `dedup_progress()`; a long HTML parse stops on
//! `sqlite3_interrupt`.

use std::cell::RefCell;
use std::collections::{HashMap, VecDeque};
use std::ffi::c_int;
use std::marker::PhantomData;

use rusqlite::types::{Null, ValueRef};
use rusqlite::vtab::{
    eponymous_only_module, Context, Filters, IndexInfo, VTab, VTabConfig, VTabConnection,
    VTabCursor,
};
use rusqlite::{ffi, Connection, Result};

use super::arguments::{plan_arguments, planned_arguments, unwind_safe};
use super::stepped::{Statement, Value};
use crate::core::phase1::{prepare, Failure, Given, PageRow, Prepared, Rules, TextCell};
use crate::core::phase1_batch::{fill_bytes, prepare_batch};
use crate::sqlite::ground::arguments::describe;
use crate::sqlite::ground::arguments::module_error;
use crate::sqlite::ground::interrupt::InterruptPoll;
use crate::sqlite::ground::quote::quote_ident;

const NAME: &str = "dedup_phase1";
/// Hidden argument columns start after the output columns.
const FIRST_ARGUMENT: c_int = 15;
/// input, url_options, strict_options, compat, boilerplate, url_rules, fix_urls.
const ARGUMENTS: usize = 7;

/// Registers the eponymous table-valued function `dedup_phase1`.
pub fn register(db: &Connection) -> Result<()> {
    db.create_module(NAME, eponymous_only_module::<Phase1Tab>(), None)
}

#[repr(C)]
struct Phase1Tab {
    base: ffi::sqlite3_vtab,
    db: *mut ffi::sqlite3,
}

unsafe impl<'vtab> VTab<'vtab> for Phase1Tab {
    type Aux = ();
    type Cursor = Phase1Cursor<'vtab>;

    fn connect(
        db: &mut VTabConnection,
        _aux: Option<&()>,
        _args: &[&[u8]],
    ) -> Result<(String, Self)> {
        // Reads another table of the database: not innocuous.
        db.config(VTabConfig::DirectOnly)?;
        let handle = unsafe { db.handle() };
        Ok((
            "CREATE TABLE x(source_rowid INTEGER, skip_reason TEXT, canonical_url TEXT, domain TEXT, \
             wayback TEXT, discard_reason TEXT, content_hash, datetime, crawled, length, category, \
             fill_parsed TEXT, has_text INTEGER, strict_url TEXT, https INTEGER, \
             input HIDDEN, url_options HIDDEN, strict_options HIDDEN, compat HIDDEN, boilerplate HIDDEN, \
             url_rules HIDDEN, fix_urls HIDDEN)"
                .to_owned(),
            Phase1Tab {
                base: ffi::sqlite3_vtab::default(),
                db: handle,
            },
        ))
    }

    fn best_index(&self, info: &mut IndexInfo) -> Result<()> {
        unwind_safe(NAME, || {
            plan_arguments(info, FIRST_ARGUMENT, ARGUMENTS, 0b111_1111, 1e6)
        })
    }

    fn open(&mut self) -> Result<Phase1Cursor<'_>> {
        Ok(Phase1Cursor {
            base: ffi::sqlite3_vtab_cursor::default(),
            db: self.db,
            run: None,
            row: None,
            phantom: PhantomData,
        })
    }
}

/// The input's columns, in the order the cursor's statement reads them.
const INPUT: &str = "rid, url, CAST(title AS TEXT), content, parsed, content_hash, length, datetime, crawled, category, \
     CASE WHEN typeof(parsed) NOT IN ('text', 'null') THEN length(parsed) END";

/// One call's state: the input's statement, the rules, the learned
/// options' sources.
struct Run {
    stmt: Statement,
    rules: Rules,
    url_rules: f64,
    fixes: Option<HashMap<String, String>>,
    poll: RefCell<InterruptPoll>,
    /// Rows prepared and not yet handed out, in order.
    ready: VecDeque<Row>,
    /// Whether the input's statement is at its end.
    read_all: bool,
}

/// One output row: the rid, phase 1's values, and the row's own values it
/// keeps.
struct Row {
    rid: i64,
    prepared: Prepared,
    hash: Value,
    length: Value,
    datetime: Value,
    crawled: Value,
    category: Value,
}

#[repr(C)]
struct Phase1Cursor<'vtab> {
    /// (First: SQLite sees a cursor as this struct.)
    base: ffi::sqlite3_vtab_cursor,
    db: *mut ffi::sqlite3,
    run: Option<Run>,
    row: Option<Row>,
    phantom: PhantomData<&'vtab Phase1Tab>,
}

/// Argument `what` as text (NULL: `None`).
fn text(what: &str, value: Option<ValueRef<'_>>) -> Result<Option<String>> {
    match value {
        None | Some(ValueRef::Null) => Ok(None),
        Some(ValueRef::Text(t)) => Ok(Some(String::from_utf8_lossy(t).into_owned())),
        Some(other) => Err(module_error(
            NAME,
            &format!("{what} must be TEXT"),
            &describe(other),
        )),
    }
}

impl Phase1Cursor<'_> {
    fn start(&mut self, idx_num: c_int, args: &Filters<'_>) -> Result<()> {
        let given = planned_arguments(idx_num, args, ARGUMENTS);
        let input = text("input", given[0])?
            .ok_or_else(|| module_error(NAME, "input is required", "no argument"))?;
        let url_options = text("url_options", given[1])?.unwrap_or_default();
        let strict_options = text("strict_options", given[2])?;
        let reference = text("compat", given[3])?.as_deref() == Some("reference");
        let strip = text("boilerplate", given[4])?.as_deref() == Some("strip");
        let url_rules = match given[5] {
            Some(ValueRef::Integer(i)) => i as f64,
            Some(ValueRef::Real(r)) => r,
            _ => 0.0,
        };
        let fix_urls = matches!(given[6], Some(ValueRef::Integer(i)) if i != 0);
        let rules =
            Rules::new(&url_options, strict_options.as_deref(), reference, strip).map_err(|e| {
                module_error(
                    NAME,
                    &format!("url options: {e}"),
                    &format!("'{url_options}'"),
                )
            })?;
        // A non-owning handle on the connection that runs this query.
        let db = unsafe { Connection::from_handle(self.db) }?;
        let fixes = if fix_urls {
            let mut stmt = db.prepare("SELECT host, options FROM temp._dedup_url_fixes")?;
            let map = stmt
                .query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?)))?
                .collect::<Result<HashMap<_, _>>>()?;
            Some(map)
        } else {
            None
        };
        let stmt = Statement::prepare(
            self.db,
            &format!("SELECT {INPUT} FROM {}", quote_ident(&input)),
            NAME,
        )
        .map_err(|e| {
            module_error(
                NAME,
                "input must name a table or view with the columns rid, url, title, content, parsed, content_hash, \
                 length, datetime, crawled, category",
                &format!("'{input}' ({e})"),
            )
        })?;
        self.run = Some(Run {
            stmt,
            rules,
            url_rules,
            fixes,
            // Safety: the handle is this connection's, which outlives the
            // cursor; used on this thread.
            poll: RefCell::new(unsafe { InterruptPoll::new(self.db) }),
            ready: VecDeque::new(),
            read_all: false,
        });
        self.advance()
    }

    /// The next output row (`row` None at the end): from the batch
    /// prepared, or the next batch read and prepared first.
    fn advance(&mut self) -> Result<()> {
        let run = self.run.as_mut().expect("started");
        if run.ready.is_empty() && !run.read_all {
            self.read_batch()?;
        }
        let run = self.run.as_mut().expect("started");
        self.row = run.ready.pop_front();
        Ok(())
    }

    /// Reads up to [`BATCH_ROWS`] input rows and prepares them, into
    /// `ready`: a row with its text given at once, on this thread (nothing
    /// copied); the rows whose markup phase 1 parses (up to [`BATCH_BYTES`]
    /// of their values) together after, on the pool when they are many
    /// ([`prepare_batch`]). A row's failure is raised in the rows' order.
    fn read_batch(&mut self) -> Result<()> {
        let db = self.db;
        let run = self.run.as_mut().expect("started");
        let mut slots: Vec<Slot> = Vec::new();
        let mut parse: Vec<Raw> = Vec::new();
        let mut bytes = 0;
        while slots.len() < BATCH_ROWS && bytes < BATCH_BYTES {
            if !run.stmt.step()? {
                // (Stepped again, a statement at its end starts over.)
                run.read_all = true;
                break;
            }
            crate::sqlite::ground::progress::tick();
            let s = &run.stmt;
            let page = page_of(s);
            let learned = match (page.invalid(), page.url) {
                (None, TextCell::Text(url)) => {
                    let url = std::str::from_utf8(url).expect("checked by invalid()");
                    learned(db, run.url_rules, run.fixes.as_ref(), url)?
                }
                _ => String::new(),
            };
            if fill_bytes(&page) == 0 {
                let poll = &run.poll;
                let stop = || poll.borrow_mut().interrupted();
                let prepared = prepare(&page, &mut run.rules, &learned, &stop);
                slots.push(Some((Kept::read(s), prepared)));
            } else {
                let raw = Raw::read(s, learned);
                bytes += raw.size();
                parse.push(raw);
                slots.push(None);
            }
        }
        let poll = &run.poll;
        let parsed = prepare_batch(
            &parse,
            |raw| (raw.page(), raw.learned.as_str()),
            &mut run.rules,
            &mut || poll.borrow_mut().interrupted(),
        )
        .map_err(rusqlite::Error::from)?;
        let mut parsed = parse.into_iter().zip(parsed);
        for slot in slots {
            let (kept, prepared) = match slot {
                Some(ready) => ready,
                None => {
                    let (raw, prepared) = parsed.next().expect("one result a row parsed");
                    (raw.kept, prepared)
                }
            };
            let rid = kept.rid;
            let prepared = prepared.map_err(|f| match f {
                Failure::Halted(h) => rusqlite::Error::from(h),
                Failure::InvalidText(why) => module_error(
                    NAME,
                    &format!(
                        "{why}, so phase 1 cannot make the row's text (title, blank line, content)"
                    ),
                    &format!("the row with rid {rid}"),
                ),
            })?;
            run.ready.push_back(kept.output(prepared));
        }
        Ok(())
    }
}

/// Input rows read ahead and prepared together, at most.
const BATCH_ROWS: usize = 512;
/// Bytes of the values of rows to parse held, at most (at least one row).
const BATCH_BYTES: usize = 8 << 20;

/// A row of a batch: prepared as it was read (`Some`), or among those to
/// parse (`None`).
type Slot = Option<(Kept, std::result::Result<Prepared, Failure>)>;

/// The input row the statement is on, as phase 1 reads it (borrowed
/// until the next step).
fn page_of(s: &Statement) -> PageRow<'_> {
    let cell = |i: c_int| -> TextCell<'_> {
        match s.kind(i) {
            ffi::SQLITE_NULL => TextCell::Null,
            ffi::SQLITE_TEXT => TextCell::Text(s.bytes(i)),
            kind => other_cell(kind, s.int(10)),
        }
    };
    PageRow {
        url: cell(1),
        title: (s.kind(2) != ffi::SQLITE_NULL).then(|| s.bytes(2)),
        content: cell(3),
        parsed: cell(4),
        hash_missing: s.kind(5) == ffi::SQLITE_NULL,
        length_missing: s.kind(6) == ffi::SQLITE_NULL,
    }
}

/// A text column holding a value of another type (`kind`, SQLite's type
/// code): `sql_length` is the length phase 1 gives it.
fn other_cell(kind: c_int, sql_length: i64) -> TextCell<'static> {
    let what = match kind {
        ffi::SQLITE_BLOB => "a BLOB",
        ffi::SQLITE_INTEGER => "an integer",
        _ => "a real",
    };
    TextCell::Other { what, sql_length }
}

/// The row's own values phase 1 passes through or measures.
struct Kept {
    rid: i64,
    hash: Value,
    length: Value,
    datetime: Value,
    crawled: Value,
    category: Value,
}

impl Kept {
    /// The values of the row the statement is on.
    fn read(s: &Statement) -> Kept {
        Kept {
            rid: s.int(0),
            hash: s.value(5),
            length: s.value(6),
            datetime: s.value(7),
            crawled: s.value(8),
            category: s.value(9),
        }
    }

    /// The output row of phase 1's values.
    fn output(self, prepared: Prepared) -> Row {
        let length = match &prepared.length {
            // (NULLIF(length, 0): a given 0 is no length.)
            Given::Given => match self.length {
                Value::Integer(0) => Value::Null,
                Value::Real(0.0) => Value::Null,
                v => v,
            },
            Given::Computed(n) => Value::Integer(*n),
            Given::Null => Value::Null,
        };
        let hash = match &prepared.hash {
            Given::Given => self.hash,
            Given::Computed(h) => Value::Text(h.clone().into_bytes()),
            Given::Null => Value::Null,
        };
        Row {
            rid: self.rid,
            hash,
            length,
            datetime: self.datetime,
            crawled: self.crawled,
            category: self.category,
            prepared,
        }
    }
}

/// An input row whose markup phase 1 parses, its values owned (the
/// statement steps on before the batch is prepared).
struct Raw {
    kept: Kept,
    url: Value,
    title: Option<Vec<u8>>,
    content: Value,
    parsed: Value,
    /// The length a cell of another type is given (column 10).
    other_length: i64,
    /// The row's learned URL options ([`learned`]).
    learned: String,
}

impl Raw {
    /// The row the statement is on.
    fn read(s: &Statement, learned: String) -> Raw {
        Raw {
            kept: Kept::read(s),
            url: s.value(1),
            title: (s.kind(2) != ffi::SQLITE_NULL).then(|| s.bytes(2).to_vec()),
            content: s.value(3),
            parsed: s.value(4),
            other_length: s.int(10),
            learned,
        }
    }

    /// A text column as phase 1 reads it.
    fn cell<'a>(&self, value: &'a Value) -> TextCell<'a> {
        match value {
            Value::Null => TextCell::Null,
            Value::Text(t) => TextCell::Text(t),
            Value::Blob(_) => other_cell(ffi::SQLITE_BLOB, self.other_length),
            Value::Integer(_) => other_cell(ffi::SQLITE_INTEGER, self.other_length),
            Value::Real(_) => other_cell(ffi::SQLITE_FLOAT, self.other_length),
        }
    }

    /// The row as phase 1 reads it.
    fn page(&self) -> PageRow<'_> {
        PageRow {
            url: self.cell(&self.url),
            title: self.title.as_deref(),
            content: self.cell(&self.content),
            parsed: self.cell(&self.parsed),
            hash_missing: self.kept.hash == Value::Null,
            length_missing: self.kept.length == Value::Null,
        }
    }

    /// Its bytes held.
    fn size(&self) -> usize {
        let n = |v: &Value| match v {
            Value::Text(b) | Value::Blob(b) => b.len(),
            _ => 8,
        };
        n(&self.url) + n(&self.content) + n(&self.parsed) + self.title.as_ref().map_or(0, Vec::len)
    }
}

/// The learned URL options of `url`: `,tracking+=a|b` from the rules
/// (`url_rules` above 0), then the host's answers of `fix_urls`.
fn learned(
    db: *mut ffi::sqlite3,
    url_rules: f64,
    fixes: Option<&HashMap<String, String>>,
    url: &str,
) -> Result<String> {
    let mut out = String::new();
    if url_rules > 0.0 {
        // A non-owning handle on the connection that runs this query.
        let db = unsafe { Connection::from_handle(db) }?;
        if let Some(params) =
            crate::sqlite::url_learner::functions::rule_params(&db, url, url_rules)?
        {
            out.push_str(",tracking+=");
            out.push_str(&params);
        }
    }
    if let Some(fixes) = fixes {
        if let Some(options) = crate::core::url_host::host_key(url).and_then(|h| fixes.get(&h)) {
            out.push_str(options);
        }
    }
    Ok(out)
}

unsafe impl VTabCursor for Phase1Cursor<'_> {
    fn filter(&mut self, idx_num: c_int, _idx_str: Option<&str>, args: &Filters<'_>) -> Result<()> {
        unwind_safe(NAME, || self.start(idx_num, args))
    }

    fn next(&mut self) -> Result<()> {
        unwind_safe(NAME, || self.advance())
    }

    fn eof(&self) -> bool {
        self.row.is_none()
    }

    fn column(&self, ctx: &mut Context, i: c_int) -> Result<()> {
        let Some(row) = &self.row else {
            return ctx.set_result(&Null);
        };
        let p = &row.prepared;
        match i {
            0 => ctx.set_result(&row.rid),
            1 => ctx.set_result(&p.skip_reason),
            2 => ctx.set_result(&p.canonical_url),
            3 => ctx.set_result(&p.domain),
            4 => ctx.set_result(&p.wayback),
            5 => ctx.set_result(&p.discard_reason),
            6 => ctx.set_result(&row.hash.sql()),
            7 => ctx.set_result(&row.datetime.sql()),
            8 => ctx.set_result(&row.crawled.sql()),
            9 => ctx.set_result(&row.length.sql()),
            10 => ctx.set_result(&row.category.sql()),
            11 => ctx.set_result(&p.fill),
            12 => ctx.set_result(&(p.has_text as i64)),
            13 => ctx.set_result(&p.strict_url),
            14 => ctx.set_result(&p.https.map(i64::from)),
            _ => ctx.set_result(&Null),
        }
    }

    fn rowid(&self) -> Result<i64> {
        Ok(self.row.as_ref().map_or(0, |r| r.rid))
    }
}
