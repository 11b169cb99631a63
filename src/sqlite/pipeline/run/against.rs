//! Another database's pages as rows of a run (the `against` setting): this
//! week's crawl deduplicated against last month's database, which stays
//! untouched.
//!
//! [`load`] opens the other file read-only, on a connection of its own that
//! has only SQLite's built-in functions (nothing its schema holds can call
//! the host's; [`open`]), and copies its table's rows into `temp._dedup_against` with
//! rids below every rowid of this table: the election's last rule, the
//! lower rowid, then prefers the page that was there first.
//! `temp._dedup_pages`, the rows phase 1 prepares and phases 4 and 6 read
//! texts from, is their union with the table's. Every phase treats both
//! alike; `sql/against/06_only_here.sql` then keeps the plan to this
//! table's rows: a row of the other database never leaves, and a removal
//! whose survivor is there names it in a `survivor elsewhere` note
//! (`survivor in last-month.db, rowid 17 (https://a.example/x)`), as a Spark job names a survivor
//! in another shard.
//!
//! Cost: one read of the other table and a copy of its rows into temp
//! storage. A run `against` another database is always full and keeps no
//! index (the index describes one table).
//!
//! Errors: a path read from `dedup_settings` (a database may name an
//! attached schema, never make the run open a file), a file that is not
//! there or not a database, the run's own database, a path on a read-only
//! connection (Datasette's: a user there names an attached schema), a
//! `prefer` setting (its terms rank one table's columns), no table of pages
//! there.

use crate::core::phase::Phase;
use std::path::Path;

use rusqlite::types::Value;
use rusqlite::{Connection, OpenFlags, OptionalExtension};

use crate::sqlite::ground::error::{fail, DedupError};
use crate::sqlite::ground::shown::excerpt;
use crate::sqlite::pipeline::mode::RunMode;
use crate::sqlite::settings::values::{Origin, Settings};
use crate::sqlite::tables::schema::{Source, PAGE_COLUMNS};

/// The other database of a run, as [`load`] found it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Against {
    /// Its name in notes and the report: the file's name.
    pub name: String,
    /// The rows of its table the run compares.
    pub rows: i64,
}

/// Creates `temp._dedup_against` (empty without the setting) and
/// `temp._dedup_pages`; with the setting, copies the other database's rows.
pub fn load(
    db: &Connection,
    source: &Source,
    s: &Settings,
    mode: &RunMode,
) -> Result<Option<Against>, DedupError> {
    let columns = PAGE_COLUMNS.join(", ");
    db.execute_batch(&format!(
        "DROP TABLE IF EXISTS temp._dedup_against;
         CREATE TEMP TABLE _dedup_against (rid INTEGER PRIMARY KEY, their_rowid INTEGER, {columns});
         DROP TABLE IF EXISTS temp._dedup_against_of;
         CREATE TEMP TABLE _dedup_against_of (name TEXT, rows INTEGER, indexed INTEGER);
         DROP TABLE IF EXISTS temp._dedup_against_archive;
         CREATE TEMP TABLE _dedup_against_archive (dedup_rowid INTEGER, dedup_phase INTEGER, url, content, parsed);
         DROP VIEW IF EXISTS temp._dedup_pages;"
    ))?;
    if s.against.is_empty() {
        db.execute_batch("CREATE TEMP VIEW _dedup_pages AS SELECT * FROM temp._dedup_source;")?;
        return Ok(None);
    }
    if let RunMode::Made(made) = mode {
        // (Planned there, against its index: its name and pages compared,
        // for the report; its rows stay there.)
        db.execute_batch("CREATE TEMP VIEW _dedup_pages AS SELECT * FROM temp._dedup_source;")?;
        db.execute(
            "INSERT INTO temp._dedup_against_of VALUES (?1, ?2, 1)",
            rusqlite::params![made.there, made.compared],
        )?;
        return Ok(Some(Against {
            name: made.there.clone(),
            rows: made.compared,
        }));
    }
    if !s.prefer.is_empty() {
        return fail(
            "dedup: against cannot be combined with prefer (its terms rank the columns of this table only); nothing was changed".into(),
        );
    }
    if *mode != RunMode::All {
        return fail("dedup: against works with dedup_run and dedup_plan only (a plan made elsewhere already compared what it compared); nothing was changed".into());
    }
    let (path, name) = resolve(db, s)?;
    // Safety: the caller's connection, on this thread, outlives the link.
    let _link = unsafe { crate::sqlite::ground::interrupt::Link::new(db.handle()) };
    let theirs = open(&path, &name, s.busy_timeout)?;
    let their = Source::inspect_mapped(&theirs, &s.table, &s.columns)
        .map_err(|e| DedupError::new(format!("dedup: against {name}: {}", without_prefix(&e))))?;
    refuse_a_copy(db, source, &theirs, &their, &name)?;
    let rows = copy(db, source, &theirs, &their, &name, s)?;
    db.execute(
        "INSERT INTO temp._dedup_against_of VALUES (?1, ?2, 0)",
        rusqlite::params![name, rows],
    )?;
    // (Every column without affinity in both arms: SQLite looks a row of
    // a compound view up by its rid only when the arms agree in affinity.)
    let plain: Vec<String> = PAGE_COLUMNS
        .iter()
        .map(|c| format!("+{c} AS {c}"))
        .collect();
    db.execute_batch(&format!(
        "CREATE TEMP VIEW _dedup_pages AS
         SELECT rid, {plain} FROM temp._dedup_source
         UNION ALL SELECT rid, {plain} FROM temp._dedup_against;",
        plain = plain.join(", ")
    ))?;
    Ok(Some(Against { name, rows }))
}

/// What a run `against` another database compared, for its report.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Compared {
    /// The other database's name (its file's).
    pub name: String,
    /// Its pages the run compared.
    pub rows: i64,
    /// The removals here whose survivor is there.
    pub there: i64,
    /// Those by phase: (phase, removals), phases in order.
    pub there_by_phase: Vec<(i64, i64)>,
    /// Whether the plan was made there, against its index
    /// (`run/against_index.rs`): its pages were not read again.
    pub indexed: bool,
}

/// The other database of the plan in this connection, if any.
pub fn compared(db: &Connection) -> Result<Option<Compared>, DedupError> {
    let exists: bool = db.query_row(
        "SELECT EXISTS (SELECT 1 FROM temp.sqlite_schema WHERE name = '_dedup_against_of')",
        [],
        |r| r.get(0),
    )?;
    if !exists {
        return Ok(None);
    }
    let there_by_phase: Vec<(i64, i64)> = db
        .prepare(
            "SELECT r.phase, count(*) FROM temp._dedup_notes AS n
             JOIN temp._dedup_removal AS r ON r.source_rowid = n.rowid_
             WHERE n.kind = 'survivor elsewhere' GROUP BY r.phase ORDER BY r.phase",
        )?
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
        .collect::<Result<_, _>>()?;
    Ok(db
        .query_row(
            "SELECT name, rows, (SELECT count(*) FROM temp._dedup_notes WHERE kind = 'survivor elsewhere'), indexed
             FROM temp._dedup_against_of",
            [],
            |r| {
                Ok(Compared {
                    name: r.get(0)?,
                    rows: r.get(1)?,
                    there: r.get(2)?,
                    there_by_phase: there_by_phase.clone(),
                    indexed: r.get(3)?,
                })
            },
        )
        .optional()?)
}

/// The file `against` names and the name notes give it: an attached
/// schema's file, or a path (the caller's only).
pub(crate) fn resolve(db: &Connection, s: &Settings) -> Result<(String, String), DedupError> {
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
            return fail(format!(
                "dedup: against names the attached schema {}, got one without a file (an in-memory or temporary database); attach a database file",
                excerpt(&schema)
            ))
        }
        Some((_, file)) => file,
        None if s.against_from == Origin::Database => {
            return fail(format!(
                "dedup: against in dedup_settings must name an attached schema, got {} (a database may not make the run open a file: pass a path in the call's settings, or ATTACH the file and name its schema)",
                excerpt(&s.against)
            ))
        }
        None if db.is_readonly(rusqlite::MAIN_DB)?
            || db.query_row("PRAGMA query_only", [], |r| r.get::<_, bool>(0))? =>
        {
            return fail(format!(
                "dedup: against names no attached schema, got {} on a read-only connection (ATTACH the file and name its schema)",
                excerpt(&s.against)
            ))
        }
        None => s.against.clone(),
    };
    if !Path::new(&path).is_file() {
        return fail(format!(
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
        return fail(format!(
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
pub(crate) fn refuse_a_copy(
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
        return fail(format!(
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
            return fail(format!(
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
        return fail(format!(
            "dedup: against {name} is this database by content (a copy: its table holds every row of this one, under the same rowids with the same URLs and texts), got {name}; every page here would be removed as a copy of itself. Nothing was changed"
        ));
    }
    Ok(())
}

/// A connection to the other file, opened read-only (`SQLITE_OPEN_READONLY`:
/// its file cannot be written, whatever runs on it), with no schema code
/// trusted (`trusted_schema` off: its views and triggers may call only
/// innocuous functions) and, as opened, no function but SQLite's own. The
/// plan made there ([`super::against_index`]) then registers this
/// extension's functions on it and turns `query_only` off for the plan's
/// temp tables: the only writes, to its temporary storage. Its statements
/// end when the caller's connection is interrupted (within a
/// [`crate::sqlite::ground::interrupt::Link`]).
pub(crate) fn open(path: &str, name: &str, busy_timeout: i64) -> Result<Connection, DedupError> {
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
        DedupError::new(format!(
            "dedup: against {name} could not be read as an SQLite database: {}; nothing was changed",
            DedupError::from(e)
        ))
    })
}

/// Copies the other table's rows into `temp._dedup_against`, below every
/// rowid of this table, their rowids shifted by one amount (so in their
/// order, and in it with the rows its earlier runs removed); in window
/// mode, those removed rows' window slots into
/// `temp._dedup_against_archive` (as the other database's own next run
/// would place them). The rows copied.
fn copy(
    db: &Connection,
    source: &Source,
    theirs: &Connection,
    their: &Source,
    name: &str,
    s: &Settings,
) -> Result<i64, DedupError> {
    let read_failed = |e: rusqlite::Error| {
        DedupError::new(format!(
            "dedup: against {name}: reading its table {} failed: {}; nothing was changed",
            excerpt(&their.table),
            DedupError::from(e)
        ))
    };
    // (One read transaction: the counts and the rows agree.)
    theirs.execute_batch("BEGIN").map_err(read_failed)?;
    let archive =
        match crate::sqlite::tables::schema::object_type(theirs, "dedup_removed")?.as_deref() {
            Some("table") => Some(
                crate::sqlite::tables::schema::archive_view_body(theirs, their, None).map_err(
                    |e| DedupError::new(format!("dedup: against {name}: {}", without_prefix(&e))),
                )?,
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
        return fail(format!(
            "dedup: against {name}: no rids are left below this table's rowids; nothing was changed"
        ));
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

/// A run error's message without its leading `dedup: `.
pub(crate) fn without_prefix(e: &DedupError) -> String {
    let text = e.to_string();
    text.strip_prefix("dedup: ").unwrap_or(&text).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(against: &str) -> Settings {
        Settings {
            against: against.into(),
            ..Settings::default()
        }
    }

    fn pages(db: &Connection, rows: &[(i64, &str, &str)]) {
        db.execute_batch("CREATE TABLE pages (url TEXT, parsed TEXT)")
            .unwrap();
        for (id, url, text) in rows {
            db.execute(
                "INSERT INTO pages (rowid, url, parsed) VALUES (?1, ?2, ?3)",
                rusqlite::params![id, url, text],
            )
            .unwrap();
        }
    }

    #[test]
    fn the_other_rows_get_rids_below_every_rowid_here_in_their_order_and_gaps() {
        let dir = std::env::temp_dir().join(format!("dedup-against-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let other = dir.join("old.db");
        let _ = std::fs::remove_file(&other);
        pages(
            &Connection::open(&other).unwrap(),
            &[(5, "https://a/x", "x"), (9, "https://a/y", "y")],
        );
        let db = Connection::open_in_memory().unwrap();
        pages(&db, &[(-3, "https://a/z", "z"), (4, "https://a/w", "w")]);
        let source = Source::inspect(&db, "pages").unwrap();
        source.create_view(&db).unwrap();
        let found = load(
            &db,
            &source,
            &settings(other.to_str().unwrap()),
            &RunMode::All,
        )
        .unwrap();
        assert_eq!(
            found,
            Some(Against {
                name: "old.db".into(),
                rows: 2
            })
        );
        let got: Vec<(i64, i64, String)> = db
            .prepare("SELECT rid, their_rowid, url FROM temp._dedup_against ORDER BY rid")
            .unwrap()
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
            .unwrap()
            .collect::<rusqlite::Result<_>>()
            .unwrap();
        // (Shifted by one amount, -13, below this table's lowest rowid, -3:
        // in their order, their gaps kept, where rows their runs removed
        // keep their window slots.)
        assert_eq!(
            got,
            [(-8, 5, "https://a/x".into()), (-4, 9, "https://a/y".into())]
        );
        let union: i64 = db
            .query_row("SELECT count(*) FROM temp._dedup_pages", [], |r| r.get(0))
            .unwrap();
        assert_eq!(union, 4);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_path_from_the_database_and_a_missing_file_are_refused() {
        let db = Connection::open_in_memory().unwrap();
        pages(&db, &[]);
        let source = Source::inspect(&db, "pages").unwrap();
        source.create_view(&db).unwrap();
        let mut s = settings("/no/such/file.db");
        let e = load(&db, &source, &s, &RunMode::All)
            .unwrap_err()
            .to_string();
        assert!(e.contains("(no such file)"), "{e}");
        s.against_from = Origin::Database;
        let e = load(&db, &source, &s, &RunMode::All)
            .unwrap_err()
            .to_string();
        assert!(e.contains("must name an attached schema"), "{e}");
        let none = load(&db, &source, &settings(""), &RunMode::All).unwrap();
        assert_eq!(none, None);
    }
}
