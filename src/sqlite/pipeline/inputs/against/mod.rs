//! Another database's pages as rows of a run (the `against` setting): this
//! week's crawl deduplicated against last month's database, which stays
//! untouched.
//!
//! [`decide`] opens the other file once ([`other`]: read-only, with only
//! SQLite's built-in functions, refused when it is this database) and
//! decides once how its pages take part: through its incremental index,
//! the plan made there as its next run would make it ([`indexed`]), or, when
//! its index cannot stand for them, copied into this run's temp tables
//! ([`copied`]). Both give the same plan, row for row.
//!
//! Cost: opening the file and reading its schema; then [`indexed`]'s or
//! [`copied`]'s.
//!
//! Errors: a path read from `dedup_settings` (a database may name an
//! attached schema, never make the run open a file), a file that is not
//! there or not a database, the run's own database (by path or by
//! content), a path on a read-only connection (Datasette's: a user there
//! names an attached schema), a `prefer` setting (its terms rank one
//! table's columns), a plan of another variant than `dedup_run` or
//! `dedup_plan`, no table of pages there.

pub mod copied;
pub mod indexed;
pub mod other;

use rusqlite::{Connection, OptionalExtension};

use crate::sqlite::ground::error::{fail, Code, DedupError};
use crate::sqlite::pipeline::mode::{Made, RunMode};
use crate::sqlite::settings::values::Settings;
use crate::sqlite::tables::schema::{Source, PAGE_COLUMNS};
use other::Other;

/// The other database of a run, as [`decide`] found it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Against {
    /// Its name in notes and the report: the file's name.
    pub name: String,
    /// The rows of its table the run compares.
    pub rows: i64,
}

/// How the other database takes part in the run, decided once.
#[derive(Debug)]
pub enum Decided {
    /// The plan was made there, against its index: the run plans again
    /// with `RunMode::Made` and reads it back.
    MadeThere(Made),
    /// Its pages, if any, are rows of this run (copied, or none without the
    /// setting); the temp tables the phases read are written.
    Here(Option<Against>),
}

/// Writes the temp tables of `against` (empty without the setting), opens
/// the other database once, and decides how its pages take part
/// ([`Decided`]). `plan_there` is the runner on the other connection
/// ([`indexed::plan_there`]'s `plan`).
pub fn decide(
    db: &Connection,
    source: &Source,
    s: &Settings,
    mode: &RunMode,
    plan_there: impl Fn(&Connection, &Settings) -> Result<(bool, i64), DedupError>,
) -> Result<Decided, DedupError> {
    create_tables(db)?;
    if s.against.is_empty() {
        db.execute_batch("CREATE TEMP VIEW _dedup_pages AS SELECT * FROM temp._dedup_source;")?;
        return Ok(Decided::Here(None));
    }
    if let RunMode::Made(made) = mode {
        // (Planned there, against its index: its name and pages compared,
        // for the report; its rows stay there.)
        db.execute_batch("CREATE TEMP VIEW _dedup_pages AS SELECT * FROM temp._dedup_source;")?;
        db.execute(
            "INSERT INTO temp._dedup_against_of VALUES (?1, ?2, 1)",
            rusqlite::params![made.there, made.compared],
        )?;
        return Ok(Decided::Here(Some(Against {
            name: made.there.clone(),
            rows: made.compared,
        })));
    }
    if !s.prefer.is_empty() {
        return fail(
            Code::Setting,
            "dedup: against cannot be combined with prefer (its terms rank the columns of this table only); nothing was changed".into(),
        );
    }
    if *mode != RunMode::All {
        return fail(Code::Setting, "dedup: against works with dedup_run and dedup_plan only (a plan made elsewhere already compared what it compared); nothing was changed".into());
    }
    // Safety: the caller's connection, on this thread, outlives the link.
    let _link = unsafe { crate::sqlite::ground::interrupt::Link::new(db.handle()) };
    let other = Other::open(db, source, s)?;
    if let Some(made) = indexed::plan_there(db, s, &other, plan_there)? {
        return Ok(Decided::MadeThere(made));
    }
    let rows = copied::copy(db, source, &other.conn, &other.source, &other.name, s)?;
    db.execute(
        "INSERT INTO temp._dedup_against_of VALUES (?1, ?2, 0)",
        rusqlite::params![other.name, rows],
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
    Ok(Decided::Here(Some(Against {
        name: other.name,
        rows,
    })))
}

/// The temp tables of `against`, empty.
fn create_tables(db: &Connection) -> Result<(), DedupError> {
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
    Ok(())
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
    /// ([`indexed`]): its pages were not read again.
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sqlite::settings::values::Origin;

    fn load(
        db: &Connection,
        source: &Source,
        s: &Settings,
        mode: &RunMode,
    ) -> Result<Option<Against>, DedupError> {
        match decide(db, source, s, mode, |_, _| unreachable!("no index there"))? {
            Decided::Here(found) => Ok(found),
            Decided::MadeThere(_) => panic!("made there without an index"),
        }
    }

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
