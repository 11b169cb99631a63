//! `dedup_phase1(input, url_options, strict_options, compat, boilerplate,
//! url_rules, fix_urls)`: phase 1 of every row of `input`, a row out for
//! each row in, by the rules of [`crate::core::phase1`] (the one place
//! they live). `sql/01_canonicalize.sql` reads it; its arguments are the
//! run's settings (`temp._dedup_run`).
//!
//! `input` names a table or view with the columns `rid`, `url`, `title`,
//! `content`, `parsed`, `content_hash`, `length`, `datetime`, `crawled`,
//! `category` (`temp._dedup_todo`). Its rows are read one at a time as the
//! caller steps (nothing is held but the row at hand). Output columns:
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
use std::collections::HashMap;
use std::ffi::{c_int, CString};
use std::marker::PhantomData;

use rusqlite::types::{Null, ToSqlOutput, ValueRef};
use rusqlite::vtab::{
    eponymous_only_module, Context, Filters, IndexInfo, VTab, VTabConfig, VTabConnection,
    VTabCursor,
};
use rusqlite::{ffi, Connection, Result};

use super::arguments::{error, plan_arguments, planned_arguments, quote_identifier, unwind_safe};
use crate::core::phase1::{prepare, Failure, Given, PageRow, Prepared, Rules, TextCell};
use crate::sqlite::interrupt::InterruptPoll;
use crate::sqlite::scalars::describe;

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
}

/// A value of the row kept as it is, its bytes untouched (a text need not
/// be valid UTF-8 to pass through).
#[derive(Debug, Clone, PartialEq)]
enum Value {
    Null,
    Integer(i64),
    Real(f64),
    Text(Vec<u8>),
    Blob(Vec<u8>),
}

impl Value {
    fn sql(&self) -> ToSqlOutput<'_> {
        ToSqlOutput::Borrowed(match self {
            Value::Null => ValueRef::Null,
            Value::Integer(i) => ValueRef::Integer(*i),
            Value::Real(r) => ValueRef::Real(*r),
            Value::Text(t) => ValueRef::Text(t),
            Value::Blob(b) => ValueRef::Blob(b),
        })
    }
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
        Some(other) => Err(error(
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
            .ok_or_else(|| error(NAME, "input is required", "no argument"))?;
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
                error(
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
            &format!("SELECT {INPUT} FROM {}", quote_identifier(&input)),
        )
        .map_err(|e| {
            error(
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
        });
        self.advance()
    }

    /// Reads and prepares the next input row (`row` None at the end).
    fn advance(&mut self) -> Result<()> {
        let run = self.run.as_mut().expect("started");
        if !run.stmt.step()? {
            self.row = None;
            return Ok(());
        }
        crate::sqlite::pipeline::run::progress::tick();
        let s = &run.stmt;
        let rid = s.int(0);
        let cell = |i: c_int| -> TextCell<'_> {
            match s.kind(i) {
                ffi::SQLITE_NULL => TextCell::Null,
                ffi::SQLITE_TEXT => TextCell::Text(s.bytes(i)),
                ffi::SQLITE_BLOB => TextCell::Other {
                    what: "a BLOB",
                    sql_length: s.int(10),
                },
                ffi::SQLITE_INTEGER => TextCell::Other {
                    what: "an integer",
                    sql_length: s.int(10),
                },
                _ => TextCell::Other {
                    what: "a real",
                    sql_length: s.int(10),
                },
            }
        };
        let page = PageRow {
            url: cell(1),
            title: (s.kind(2) != ffi::SQLITE_NULL).then(|| s.bytes(2)),
            content: cell(3),
            parsed: cell(4),
            hash_missing: s.kind(5) == ffi::SQLITE_NULL,
            length_missing: s.kind(6) == ffi::SQLITE_NULL,
        };
        let learned = match (page.invalid(), page.url) {
            (None, TextCell::Text(url)) => {
                let url = std::str::from_utf8(url).expect("checked by invalid()");
                learned(self.db, run.url_rules, run.fixes.as_ref(), url)?
            }
            _ => String::new(),
        };
        let poll = &run.poll;
        let stop = || poll.borrow_mut().interrupted();
        let prepared = prepare(&page, &mut run.rules, &learned, &stop).map_err(|f| match f {
            Failure::Halted(h) => rusqlite::Error::from(h),
            Failure::InvalidText(why) => error(
                NAME,
                &format!(
                    "{why}, so phase 1 cannot make the row's text (title, blank line, content)"
                ),
                &format!("the row with rid {rid}"),
            ),
        })?;
        let length = match &prepared.length {
            // (NULLIF(length, 0): a given 0 is no length.)
            Given::Given => match s.value(6) {
                Value::Integer(0) => Value::Null,
                Value::Real(0.0) => Value::Null,
                v => v,
            },
            Given::Computed(n) => Value::Integer(*n),
            Given::Null => Value::Null,
        };
        let hash = match &prepared.hash {
            Given::Given => s.value(5),
            Given::Computed(h) => Value::Text(h.clone().into_bytes()),
            Given::Null => Value::Null,
        };
        self.row = Some(Row {
            rid,
            hash,
            length,
            datetime: s.value(7),
            crawled: s.value(8),
            category: s.value(9),
            prepared,
        });
        Ok(())
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
        if let Some(params) = crate::sqlite::url_rules::rule_params(&db, url, url_rules)? {
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

/// A statement stepped one row at a time across the cursor's calls
/// (rusqlite's `Statement` borrows a `Connection` the cursor cannot hold).
struct Statement {
    stmt: *mut ffi::sqlite3_stmt,
    db: *mut ffi::sqlite3,
}

impl Statement {
    /// The statement of `sql`, or SQLite's message why not.
    fn prepare(db: *mut ffi::sqlite3, sql: &str) -> std::result::Result<Self, String> {
        let sql = CString::new(sql).map_err(|_| "a NUL in its name".to_string())?;
        let mut stmt = std::ptr::null_mut();
        // Safety: `db` is the connection running the query; the statement
        // is finalized on drop.
        let rc = unsafe {
            ffi::sqlite3_prepare_v2(db, sql.as_ptr(), -1, &mut stmt, std::ptr::null_mut())
        };
        if rc != ffi::SQLITE_OK {
            return Err(Self::message(db));
        }
        Ok(Statement { stmt, db })
    }

    /// SQLite's message of the connection's last error.
    fn message(db: *mut ffi::sqlite3) -> String {
        // Safety: `db` is valid; the message is copied at once.
        unsafe { std::ffi::CStr::from_ptr(ffi::sqlite3_errmsg(db)) }
            .to_string_lossy()
            .into_owned()
    }

    fn failure(db: *mut ffi::sqlite3, rc: c_int, what: &str) -> rusqlite::Error {
        rusqlite::Error::SqliteFailure(
            ffi::Error::new(rc),
            Some(format!("{NAME}: {what}: {}", Self::message(db))),
        )
    }

    /// Steps to the next row: false at the end.
    fn step(&mut self) -> Result<bool> {
        // Safety: the statement is this struct's, on the connection's thread.
        match unsafe { ffi::sqlite3_step(self.stmt) } {
            ffi::SQLITE_ROW => Ok(true),
            ffi::SQLITE_DONE => Ok(false),
            rc => Err(Self::failure(self.db, rc, "reading input failed")),
        }
    }

    fn kind(&self, i: c_int) -> c_int {
        // Safety: a row is current (after `step` returned true).
        unsafe { ffi::sqlite3_column_type(self.stmt, i) }
    }

    fn int(&self, i: c_int) -> i64 {
        // Safety: as above.
        unsafe { ffi::sqlite3_column_int64(self.stmt, i) }
    }

    /// The bytes of a TEXT or BLOB column, valid until the next step.
    fn bytes(&self, i: c_int) -> &[u8] {
        // Safety: as above; text first, then its length (SQLite's order).
        unsafe {
            let p = if self.kind(i) == ffi::SQLITE_BLOB {
                ffi::sqlite3_column_blob(self.stmt, i) as *const u8
            } else {
                ffi::sqlite3_column_text(self.stmt, i)
            };
            let n = ffi::sqlite3_column_bytes(self.stmt, i) as usize;
            if p.is_null() {
                &[]
            } else {
                std::slice::from_raw_parts(p, n)
            }
        }
    }

    /// Column `i` as an owned value of its type.
    fn value(&self, i: c_int) -> Value {
        match self.kind(i) {
            ffi::SQLITE_NULL => Value::Null,
            ffi::SQLITE_INTEGER => Value::Integer(self.int(i)),
            // Safety: as above.
            ffi::SQLITE_FLOAT => Value::Real(unsafe { ffi::sqlite3_column_double(self.stmt, i) }),
            ffi::SQLITE_TEXT => Value::Text(self.bytes(i).to_vec()),
            _ => Value::Blob(self.bytes(i).to_vec()),
        }
    }
}

impl Drop for Statement {
    fn drop(&mut self) {
        // Safety: the statement is this struct's and not used after.
        unsafe {
            ffi::sqlite3_finalize(self.stmt);
        }
    }
}
