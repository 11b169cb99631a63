//! The other database of `against`: the file the setting names
//! ([`resolve`]: an attached schema's file, or a path the caller gave),
//! opened once, read-only, with no function but SQLite's own ([`open`]),
//! and refused when it is this database by path or by content
//! ([`refuse_a_copy`]).

use std::path::Path;

use rusqlite::types::Value;
use rusqlite::{Connection, OpenFlags, OptionalExtension};

use crate::sqlite::ground::error::{fail, Code, DedupError};
use crate::sqlite::ground::shown::excerpt;
use crate::sqlite::settings::values::{Origin, Settings};
use crate::sqlite::tables::schema::Source;

/// The other database, opened once for the run: its connection, its name
/// in notes and the report (the file's name), and its table of pages.
pub struct Other {
    /// The connection to it ([`open`]).
    pub conn: Connection,
    /// The file's name.
    pub name: String,
    /// Its table of pages, as the settings map its columns.
    pub source: Source,
}

impl Other {
    /// Resolves, opens and inspects the other database of `s.against`, and
    /// refuses it when it is this one (by path or by content). `here` is
    /// this table. The caller holds an interrupt link to `db` while it
    /// uses the connection.
    pub fn open(db: &Connection, here: &Source, s: &Settings) -> Result<Other, DedupError> {
        let (path, name) = resolve(db, s)?;
        let conn = open(&path, &name, s.busy_timeout)?;
        let source = Source::inspect_mapped(&conn, &s.table, &s.columns).map_err(|e| {
            DedupError::new(
                Code::Against,
                format!("dedup: against {name}: {}", e.words()),
            )
        })?;
        refuse_a_copy(db, here, &conn, &source, &name)?;
        Ok(Other { conn, name, source })
    }
}

/// The file `against` names and the name notes give it: an attached
/// schema's file, or a path (the caller's only).
fn resolve(db: &Connection, s: &Settings) -> Result<(String, String), DedupError> {
    let attached: Option<(String, String)> = db
        .query_row(
            "SELECT name, file FROM pragma_database_list
             WHERE lower(name) = lower(?1) AND name NOT IN ('main', 'temp')",
            [&s.against],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .optional()?;
    let path = match attached {
        Some((schema, file)) if file.is_empty() => {
            return fail(Code::Against, format!(
                "dedup: against names the attached schema {}, got one without a file (an in-memory or temporary database); attach a database file",
                excerpt(&schema)
            ))
        }
        Some((_, file)) => file,
        None if s.against_from == Origin::Database => {
            return fail(Code::Setting, format!(
                "dedup: against in dedup_settings must name an attached schema, got {} (a database may not make the run open a file: pass a path in the call's settings, or ATTACH the file and name its schema)",
                excerpt(&s.against)
            ))
        }
        None if db.is_readonly(rusqlite::MAIN_DB)?
            || db.query_row("PRAGMA query_only", [], |r| r.get::<_, bool>(0))? =>
        {
            return fail(Code::Against, format!(
                "dedup: against names no attached schema, got {} on a read-only connection (ATTACH the file and name its schema)",
                excerpt(&s.against)
            ))
        }
        None => s.against.clone(),
    };
    if !Path::new(&path).is_file() {
        return fail(Code::Against, format!(
            "dedup: against must be the path of an SQLite database file or the name of an attached schema, got {} (no such file)",
            excerpt(&s.against)
        ));
    }
    let main: String = db.query_row(
        "SELECT file FROM pragma_database_list WHERE name = 'main'",
        [],
        |r| r.get(0),
    )?;
    if !main.is_empty() && same_file(&main, &path) {
        return fail(Code::Against, format!(
            "dedup: against must be another database than the one the run deduplicates, got {} (the same file{}); nothing was changed",
            excerpt(&s.against),
            if Path::new(&main) == Path::new(&path) { "" } else { " by another path: a link to it" }
        ));
    }
    let name = Path::new(&path)
        .file_name()
        .map_or_else(|| path.clone(), |n| n.to_string_lossy().into_owned());
    Ok((path, name))
}

/// Whether two paths name one file: the same device and inode (a hard
/// link, a symbolic link, another spelling of the path), or where those
/// cannot be read, the same canonical path.
fn same_file(a: &str, b: &str) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        if let (Ok(x), Ok(y)) = (std::fs::metadata(a), std::fs::metadata(b)) {
            return (x.dev(), x.ino()) == (y.dev(), y.ino());
        }
    }
    match (std::fs::canonicalize(a), std::fs::canonicalize(b)) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    }
}

/// Refuses the other database when it is this one by content (every page
/// here would be removed as a copy of itself): a copy that holds the same
/// runs in `dedup_runs` (a `VACUUM` renumbers rowids but keeps those), or
/// whose table holds every row of this table under the same rowid with the
/// same URL and texts. The rows are sampled first (64 spread over the
/// rowids, each looked up there): another database differs at once; only a
/// copy is read whole.
fn refuse_a_copy(
    db: &Connection,
    source: &Source,
    theirs: &Connection,
    their: &Source,
    name: &str,
) -> Result<(), DedupError> {
    // (With each run's row counts: the shards of one Spark job share its
    // run number, time and settings, never all their counts.)
    type Run = (i64, Value, Value, Value, Value);
    let runs = |c: &Connection| -> Result<Vec<Run>, DedupError> {
        if crate::sqlite::tables::schema::object_type(c, "dedup_runs")?.as_deref() != Some("table")
        {
            return Ok(Vec::new());
        }
        let mut stmt = c.prepare(
            "SELECT run, finished, rows_before, rows_after, settings FROM main.dedup_runs ORDER BY run",
        )?;
        let rows = stmt
            .query_map([], |r| {
                Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?))
            })?
            .collect::<Result<Vec<_>, _>>()?;
        Ok(rows)
    };
    let mine = runs(db)?;
    if !mine.is_empty() && mine == runs(theirs)? {
        return fail(Code::Against, format!(
            "dedup: against {name} is this database by content (a copy: its dedup_runs holds the same {} run(s) as this one's), got {name}; every page here would be removed as a copy of itself. Nothing was changed",
            mine.len()
        ));
    }
    let cols = |s: &Source| -> String {
        ["url", "content", "parsed"]
            .iter()
            .map(|c| {
                s.column(c).map_or("NULL".to_string(), |real| {
                    crate::sqlite::tables::schema::quote_ident(&real)
                })
            })
            .collect::<Vec<_>>()
            .join(", ")
    };
    let here = format!(
        "SELECT {rowid}, {cols} FROM {t}",
        rowid = source.rowid,
        cols = cols(source),
        t = source.qualified()
    );
    let mut there = theirs
        .prepare(&format!(
            "SELECT {cols} FROM {t} WHERE {rowid} = ?1",
            rowid = their.rowid,
            cols = cols(their),
            t = their.qualified()
        ))
        .map_err(DedupError::from)?;
    let mut same = |row: &rusqlite::Row<'_>| -> Result<bool, DedupError> {
        let rowid: i64 = row.get(0)?;
        let mine: Vec<Value> = (1..=3).map(|i| row.get(i)).collect::<Result<_, _>>()?;
        let theirs: Option<Vec<Value>> = there
            .query_row([rowid], |r| (0..3).map(|i| r.get(i)).collect())
            .optional()?;
        Ok(theirs.as_ref() == Some(&mine))
    };
    let (n, low, high): (i64, Option<i64>, Option<i64>) = db.query_row(
        &format!(
            "SELECT count(*), min({r}), max({r}) FROM {t}",
            r = source.rowid,
            t = source.qualified()
        ),
        [],
        |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
    )?;
    let (Some(low), Some(high)) = (low, high) else {
        return Ok(());
    };
    // A copy a VACUUM renumbered (a table with gaps): the same rows in the
    // same order, rowids aside: its first and last 32, then its count.
    let ends = |c: &Connection, s: &Source| -> Result<Vec<Vec<Value>>, DedupError> {
        let mut rows = Vec::new();
        for order in ["ASC", "DESC"] {
            let mut stmt = c.prepare(&format!(
                "SELECT {cols} FROM {t} ORDER BY {r} {order} LIMIT 32",
                cols = cols(s),
                t = s.qualified(),
                r = s.rowid
            ))?;
            let got = stmt
                .query_map([], |r| {
                    (0..3).map(|i| r.get(i)).collect::<Result<Vec<Value>, _>>()
                })?
                .collect::<Result<Vec<_>, _>>()?;
            rows.extend(got);
        }
        Ok(rows)
    };
    if ends(db, source)? == ends(theirs, their)? {
        let theirs_n: i64 = theirs.query_row(
            &format!("SELECT count(*) FROM {}", their.qualified()),
            [],
            |r| r.get(0),
        )?;
        if theirs_n == n {
            return fail(Code::Against, format!(
                "dedup: against {name} is this database by content (a copy: its table holds the same {n} rows in the same order, with the same URLs and texts), got {name}; every page here would be removed as a copy of itself. Nothing was changed"
            ));
        }
    }
    let mut seek = db.prepare(&format!(
        "{here} WHERE {r} >= ?1 ORDER BY {r} LIMIT 1",
        r = source.rowid
    ))?;
    const SAMPLES: i128 = 64;
    for i in 0..SAMPLES {
        let at = low as i128 + (high as i128 - low as i128) * i / (SAMPLES - 1);
        let mut rows = seek.query([at as i64])?;
        if let Some(row) = rows.next()? {
            if !same(row)? {
                return Ok(());
            }
        }
    }
    let mut all = db.prepare(&here)?;
    let mut rows = all.query([])?;
    let mut matched = 0i64;
    while let Some(row) = rows.next()? {
        if !same(row)? {
            return Ok(());
        }
        matched += 1;
    }
    if matched == n {
        return fail(Code::Against, format!(
            "dedup: against {name} is this database by content (a copy: its table holds every row of this one, under the same rowids with the same URLs and texts), got {name}; every page here would be removed as a copy of itself. Nothing was changed"
        ));
    }
    Ok(())
}

/// A connection to the other file, opened read-only (`SQLITE_OPEN_READONLY`:
/// its file cannot be written, whatever runs on it), with no schema code
/// trusted (`trusted_schema` off: its views and triggers may call only
/// innocuous functions) and, as opened, no function but SQLite's own. The
/// plan made there ([`super::indexed`]) then registers this
/// extension's functions on it and turns `query_only` off for the plan's
/// temp tables: the only writes, to its temporary storage. Its statements
/// end when the caller's connection is interrupted (within a
/// [`crate::sqlite::ground::interrupt::Link`]).
fn open(path: &str, name: &str, busy_timeout: i64) -> Result<Connection, DedupError> {
    let opened = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .and_then(|c| {
        c.execute_batch(&format!(
            "PRAGMA query_only = 1; PRAGMA trusted_schema = 0; PRAGMA busy_timeout = {busy_timeout};"
        ))?;
        crate::sqlite::ground::interrupt::Link::forward_to(&c, 1000);
        // (A file that is not a database fails here, on its first read.)
        c.query_row("SELECT count(*) FROM sqlite_schema", [], |_| Ok(()))?;
        Ok(c)
    });
    opened.map_err(|e| {
        DedupError::new(Code::Against, format!(
            "dedup: against {name} could not be read as an SQLite database: {}; nothing was changed",
            DedupError::from(e).words()
        ))
    })
}
