//! What the pipeline reads of the user's schema: the pages table, its
//! columns and rowid, and the one helper that quotes names into SQL.

use crate::sqlite::ground::error::Code;
use rusqlite::{Connection, OptionalExtension, Result};

use crate::sqlite::ground::error::{fail, DedupError};
use crate::sqlite::ground::json::json_string;
pub use crate::sqlite::ground::quote::{quote_ident, quote_literal};
use crate::sqlite::ground::shown::excerpt;

/// The columns the phase scripts read; a table may lack all but `url` and
/// one of `content`/`parsed` (absent ones read as NULL, never written).
pub const PAGE_COLUMNS: [&str; 11] = [
    "url",
    "domain",
    "title",
    "content",
    "parsed",
    "length",
    "content_hash",
    "datetime",
    "crawled",
    "category",
    "wayback",
];

/// The columns of `dedup_removed` before the copied page columns.
pub const ARCHIVE_META: [&str; 6] = [
    "dedup_rowid",
    "dedup_run",
    "dedup_phase",
    "dedup_reason",
    "dedup_survivor",
    "dedup_ratio",
];

/// The type (`table`, `view`, `index`, `trigger`) of the main-schema object
/// called `name` (case-insensitive), if there is one.
pub fn object_type(db: &Connection, name: &str) -> Result<Option<String>> {
    db.query_row(
        "SELECT type FROM main.sqlite_schema WHERE lower(name) = lower(?1) ORDER BY type = 'table' DESC LIMIT 1",
        [name],
        |r| r.get(0),
    )
    .optional()
}

/// Whether the temp schema has a table `name` (a step's output that runs
/// only with some settings).
pub fn temp_table_exists(db: &Connection, name: &str) -> Result<bool> {
    db.query_row(
        "SELECT EXISTS (SELECT 1 FROM temp.sqlite_schema WHERE type = 'table' AND name = ?1)",
        [name],
        |r| r.get(0),
    )
}

/// Creates the temp view `name` as `body` unless it exists with that body
/// already (a schema change makes every prepared statement of the
/// connection prepare again, so functions called often skip it).
pub fn ensure_temp_view(db: &Connection, name: &str, body: &str) -> Result<()> {
    let stored: Option<String> = db
        .query_row(
            "SELECT sql FROM temp.sqlite_schema WHERE type = 'view' AND name = ?1",
            [name],
            |r| r.get(0),
        )
        .optional()?;
    if stored.is_some_and(|sql| sql.ends_with(body)) {
        return Ok(());
    }
    db.execute_batch(&format!(
        "DROP VIEW IF EXISTS temp.{q}; CREATE TEMP VIEW {q} AS {body}",
        q = quote_ident(name)
    ))
}

/// One column of a table, as `pragma_table_xinfo` describes it.
#[derive(Debug, Clone)]
pub struct Column {
    /// Its name as declared.
    pub name: String,
    /// Its declared type (may be empty).
    pub decl_type: String,
    /// Position in the primary key (0: not in it).
    pub pk: i64,
}

/// The ordinary (not generated, not hidden) columns of `main.table`.
pub fn columns(db: &Connection, table: &str) -> Result<Vec<Column>> {
    let mut stmt = db.prepare(
        "SELECT name, coalesce(type, ''), pk FROM pragma_table_xinfo(?1, 'main') WHERE hidden = 0 ORDER BY cid",
    )?;
    let rows = stmt.query_map([table], |r| {
        Ok(Column {
            name: r.get(0)?,
            decl_type: r.get(1)?,
            pk: r.get(2)?,
        })
    })?;
    rows.collect()
}

/// The user's table of pages as the pipeline sees it.
#[derive(Debug, Clone)]
pub struct Source {
    /// The table's name as stored in the schema.
    pub table: String,
    /// Its ordinary columns.
    pub columns: Vec<Column>,
    /// The name that reads its rowid (`rowid`, `_rowid_` or `oid`: one no
    /// column shadows).
    pub rowid: &'static str,
    /// The column that is an alias of the rowid (`INTEGER PRIMARY KEY`).
    pub rowid_column: Option<String>,
    /// The `columns` setting: (pipeline name, the table's column).
    pub renamed: Vec<(String, String)>,
}

impl Source {
    /// Inspects `main.table`: it must exist, have a rowid, a `url` column
    /// and one of `content`/`parsed`, and no column named like the archive's
    /// own columns. Nothing is written.
    pub fn inspect(db: &Connection, table: &str) -> std::result::Result<Source, DedupError> {
        Self::inspect_mapped(db, table, &[])
    }

    /// [`Self::inspect`] with the `columns` setting: the table's column that
    /// stands for each pipeline name of [`PAGE_COLUMNS`] it names.
    pub fn inspect_mapped(
        db: &Connection,
        table: &str,
        renamed: &[(String, String)],
    ) -> std::result::Result<Source, DedupError> {
        if table
            .as_bytes()
            .get(..7)
            .is_some_and(|p| p.eq_ignore_ascii_case(b"sqlite_"))
        {
            return fail(Code::Table, format!(
                "dedup: table {} is one of SQLite's own (names beginning sqlite_ are), got no table of pages (set the table setting to the table that holds them)",
                excerpt(table)
            ));
        }
        let stored: Option<(String, String, Option<String>)> = db
            .query_row(
                "SELECT name, type, sql FROM main.sqlite_schema WHERE lower(name) = lower(?1) ORDER BY type = 'table' DESC LIMIT 1",
                [table],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
            )
            .optional()?;
        let name = match stored {
            None => {
                return fail(Code::NoTable, match outside_main(db, table)? {
                    Some(schema) if schema.eq_ignore_ascii_case("temp") => format!(
                        "dedup: table {} not found in the main database, got a temporary one (a run works on a table of its connection's main database: copy it there, e.g. CREATE TABLE main.name AS SELECT * FROM temp.name)",
                        excerpt(table)
                    ),
                    Some(schema) => format!(
                        "dedup: table {} not found in the main database, got one in the attached database {} (a run works on its connection's main database: open that database's file itself)",
                        excerpt(table),
                        excerpt(&schema)
                    ),
                    None => format!(
                        "dedup: table {} not found, got {} in this database (set the table name with INSERT OR REPLACE INTO dedup_settings VALUES ('table', 'name'))",
                        excerpt(table),
                        tables_there(db)?
                    ),
                })
            }
            Some((name, kind, _)) if kind == "view" => {
                return fail(Code::Table, format!(
                    "dedup: {} must be a table, got a view (a run deletes rows: set the table setting to the table the view reads, and name its columns with the columns setting, e.g. {{\"columns\": {{\"url\": \"link\"}}}})",
                    excerpt(&name)
                ))
            }
            Some((name, kind, _)) if kind != "table" => {
                return fail(Code::Table, format!(
                    "dedup: {} must be a table, got a {kind}",
                    excerpt(&name)
                ))
            }
            Some((name, _, sql)) => match sql.as_deref().and_then(virtual_module) {
                Some(module) => {
                    return fail(Code::Table, format!(
                        "dedup: {} must be an ordinary table, got a virtual table (USING {module}) (a run deletes rows and keeps them in dedup_removed: copy the rows into a table and run on that, e.g. CREATE TABLE {copy} AS SELECT * FROM {}; SELECT dedup_run('{{\"table\": {}}}'))",
                        excerpt(&name),
                        quote_ident(&name),
                        json_string(&format!("{name}_rows")).replace('\'', "''"),
                        copy = quote_ident(&format!("{name}_rows")),
                    ))
                }
                None => name,
            },
        };
        let columns = columns(db, &name)?;
        if columns.is_empty() {
            return fail(
                Code::Table,
                format!(
                    "dedup: {} must be an ordinary table, got a virtual table",
                    excerpt(&name)
                ),
            );
        }
        let has = |c: &str| columns.iter().any(|x| x.name.eq_ignore_ascii_case(c));
        for (pipeline, real) in renamed {
            if !has(real) {
                return fail(
                    Code::Setting,
                    format!(
                        "dedup: columns maps {} to {}, got no such column in {}",
                        excerpt(pipeline),
                        excerpt(real),
                        excerpt(&name)
                    ),
                );
            }
        }
        let mapped = |c: &str| {
            renamed
                .iter()
                .find(|(p, _)| p.eq_ignore_ascii_case(c))
                .map_or_else(|| has(c), |_| true)
        };
        let mut missing = Vec::new();
        if !mapped("url") {
            missing.push("url");
        }
        if !mapped("content") && !mapped("parsed") {
            missing.push("content or parsed");
        }
        if !missing.is_empty() {
            return fail(Code::Table, format!(
                "dedup: {} lacks required column(s), got none named {} (the others are optional; a column of another name: the columns setting, e.g. {{\"columns\": {{\"url\": \"link\"}}}})",
                excerpt(&name),
                missing.join(", ")
            ));
        }
        // (A text read from the URLs' column: every page would be compared
        // by its URL, and near URLs removed as near duplicates.)
        let resolved = |c: &str| -> Option<String> {
            match renamed.iter().find(|(p, _)| p.eq_ignore_ascii_case(c)) {
                Some((_, real)) => Some(real.clone()),
                None => has(c).then(|| c.to_string()),
            }
        };
        if let Some(url) = resolved("url") {
            let clash = ["content", "parsed", "content_hash"]
                .into_iter()
                .find(|c| resolved(c).is_some_and(|r| r.eq_ignore_ascii_case(&url)));
            if let Some(text) = clash {
                return fail(Code::Setting, format!(
                    "dedup: columns reads {text} from {}, the column the URLs are read from, got no column of its own for it (the pages would be compared by their URLs: map {text} to the column that holds it, or leave it out)",
                    excerpt(&url)
                ));
            }
        }
        // (A run writes the pipeline's values into the mapped columns:
        // `{"domain": "url"}` would write host names over every URL, and a
        // swap of two names reads each from the other's column.)
        for (pipeline, real) in renamed {
            if let Some(other) = PAGE_COLUMNS
                .iter()
                .find(|p| p.eq_ignore_ascii_case(real) && !p.eq_ignore_ascii_case(pipeline))
            {
                return fail(Code::Setting, format!(
                    "dedup: columns maps {} to the column {}, got the column of the pipeline's own {other} (a run would read and write {pipeline}'s values in it): map {pipeline} to a column of another name; nothing was changed",
                    excerpt(pipeline),
                    excerpt(real),
                ));
            }
        }
        if let Some(c) = columns
            .iter()
            .find(|c| ARCHIVE_META.iter().any(|m| c.name.eq_ignore_ascii_case(m)))
        {
            return fail(
                Code::Table,
                format!(
                "dedup: {} has a column named {}, which dedup_removed uses for itself; rename it",
                excerpt(&name),
                excerpt(&c.name)
            ),
            );
        }
        let Some(rowid) = ["rowid", "_rowid_", "oid"].into_iter().find(|a| !has(a)) else {
            return fail(Code::Table, format!(
                "dedup: {} has columns named rowid, _rowid_ and oid, got no name left to read its rowid",
                excerpt(&name)
            ));
        };
        let quoted = quote_ident(&name);
        match db.prepare(&format!("SELECT {rowid} FROM main.{quoted} LIMIT 0")) {
            Ok(_) => {}
            // Only "no such column" means no rowid: an interrupt or a lock
            // is reported as itself.
            Err(e) if !e.to_string().contains("no such column") => return Err(e.into()),
            Err(_) => return fail(Code::Table, format!(
                "dedup: {} is a WITHOUT ROWID table, got no rowid to keep removed rows by (the pipeline needs a rowid table)",
                excerpt(&name)
            )),
        }
        let pks: Vec<&Column> = columns.iter().filter(|c| c.pk > 0).collect();
        let rowid_column = match pks.as_slice() {
            [only] if only.decl_type.eq_ignore_ascii_case("INTEGER") => Some(only.name.clone()),
            _ => None,
        };
        Ok(Source {
            table: name,
            columns,
            rowid,
            rowid_column,
            renamed: renamed.to_vec(),
        })
    }

    /// The table's column for the pipeline's name `name` (the `columns`
    /// setting's, else the column of that name), if the table has one.
    pub fn column(&self, name: &str) -> Option<String> {
        if let Some((_, real)) = self
            .renamed
            .iter()
            .find(|(p, _)| p.eq_ignore_ascii_case(name))
        {
            return Some(real.clone());
        }
        self.columns
            .iter()
            .find(|c| c.name.eq_ignore_ascii_case(name))
            .map(|c| c.name.clone())
    }

    /// Whether the table has column `name` (case-insensitive).
    pub fn has(&self, name: &str) -> bool {
        self.columns
            .iter()
            .any(|c| c.name.eq_ignore_ascii_case(name))
    }

    /// Every column of the table's row `alias`, quoted, comma-separated
    /// (the arguments of a hash of the whole row).
    pub fn every_column(&self, alias: &str) -> String {
        self.columns
            .iter()
            .map(|c| format!("{alias}.{}", quote_ident(&c.name)))
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// `main."table"`.
    pub fn qualified(&self) -> String {
        format!("main.{}", quote_ident(&self.table))
    }

    /// Creates `temp._dedup_source`: the pipeline's view of the table, with
    /// `rid` (the rowid) and every column of [`PAGE_COLUMNS`] (NULL when
    /// the table lacks it).
    pub fn create_view(&self, db: &Connection) -> Result<()> {
        db.execute_batch(&format!(
            "DROP VIEW IF EXISTS temp._dedup_source;
             CREATE TEMP VIEW _dedup_source AS {};",
            self.view_body()
        ))
    }

    /// The SELECT of `temp._dedup_source`.
    pub fn view_body(&self) -> String {
        let cols: Vec<String> = PAGE_COLUMNS
            .iter()
            .map(|c| match self.column(c) {
                Some(real) => format!("{} AS {c}", quote_ident(&real)),
                None => format!("NULL AS {c}"),
            })
            .collect();
        format!(
            "SELECT {} AS rid, {} FROM {}",
            self.rowid,
            cols.join(", "),
            self.qualified()
        )
    }
}

/// The SELECT of `temp._dedup_archive`; with `also_run`, that run's rows too
/// (a run being applied, not yet in `dedup_runs`).
pub(crate) fn archive_view_body(
    db: &Connection,
    source: &Source,
    also_run: Option<i64>,
) -> Result<String, DedupError> {
    let body = match object_type(db, "dedup_removed")?.as_deref() {
        None => "SELECT NULL AS archive_rowid, NULL AS dedup_rowid, NULL AS dedup_phase, NULL AS dedup_survivor, NULL AS url, NULL AS title, NULL AS content, NULL AS parsed, NULL AS content_hash, NULL AS crawled, NULL AS dedup_run WHERE 0".to_string(),
        Some("table") => {
            let cols = columns(db, "dedup_removed")?;
            let has = |c: &str| cols.iter().any(|x| x.name.eq_ignore_ascii_case(c));
            if let Some(m) = ARCHIVE_META.iter().find(|m| !has(m)) {
                return fail(Code::Own, format!(
                    "dedup: dedup_removed lacks its column {m}, got a table this extension did not create"
                ));
            }
            // The archive keeps the table's own column names.
            let col = |c: &str| {
                let real = source.column(c).unwrap_or_else(|| c.to_string());
                if has(&real) {
                    quote_ident(&real)
                } else {
                    "NULL".into()
                }
            };
            // Only runs on this table (the table name is in each run's settings).
            let runs = if object_type(db, "dedup_runs")?.as_deref() == Some("table") {
                format!(
                    "AND (dedup_run IN (SELECT run FROM main.dedup_runs WHERE lower(CASE WHEN json_valid(settings) THEN coalesce(json_extract(settings, '$.table'), 'pages') ELSE 'pages' END) = lower({})){})",
                    quote_literal(&source.table),
                    also_run.map_or(String::new(), |r| format!(" OR dedup_run = {r}"))
                )
            } else {
                String::new()
            };
            format!(
                "SELECT rowid AS archive_rowid, dedup_rowid, dedup_phase, dedup_survivor, {} AS url, {} AS title, {} AS content, {} AS parsed, {} AS content_hash, {} AS crawled, dedup_run FROM main.dedup_removed WHERE typeof(dedup_rowid) = 'integer' {runs}",
                col("url"),
                col("title"),
                col("content"),
                col("parsed"),
                col("content_hash"),
                col("crawled")
            )
        }
        Some(other) => {
            return fail(Code::Own, format!(
                "dedup: dedup_removed must be a table this extension created, got a {other}"
            ))
        }
    };
    Ok(body)
}

/// The module of a virtual table, from its `CREATE VIRTUAL TABLE ... USING
/// module(...)` statement (`"?"` when the statement does not say it
/// plainly); `None` for any other statement.
fn virtual_module(sql: &str) -> Option<String> {
    let words: Vec<&str> = sql.split_whitespace().take(3).collect();
    let virtual_table = words.len() == 3
        && words[0].eq_ignore_ascii_case("create")
        && words[1].eq_ignore_ascii_case("virtual")
        && words[2].eq_ignore_ascii_case("table");
    if !virtual_table {
        return None;
    }
    let upper = sql.to_ascii_uppercase();
    let module = upper
        .match_indices("USING")
        .map(|(at, _)| sql[at + 5..].trim_start())
        .find_map(|rest| {
            let end = rest
                .find(|c: char| !(c.is_alphanumeric() || c == '_'))
                .unwrap_or(rest.len());
            (end > 0).then(|| rest[..end].to_string())
        });
    Some(module.unwrap_or_else(|| "?".to_string()))
}

/// The main database's tables a run could be pointed at (not SQLite's,
/// this extension's own, nor the shadow tables that hold a virtual table's
/// data, such as an FTS5 table's `pages_fts_data`), named for an error: "no
/// table", "table 'pages'", "tables 'a', 'b', 'c', 'd', 'e' and 2 more".
fn tables_there(db: &Connection) -> Result<String> {
    const SHOWN: usize = 5;
    let tables: Vec<(String, Option<String>)> = db
        .prepare(
            "SELECT name, sql FROM main.sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\'
             ORDER BY name",
        )?
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
        .collect::<Result<_>>()?;
    let shadow_prefixes: Vec<String> = tables
        .iter()
        .filter(|(_, sql)| sql.as_deref().and_then(virtual_module).is_some())
        .map(|(name, _)| format!("{}_", name.to_lowercase()))
        .collect();
    let names: Vec<String> = tables
        .into_iter()
        .map(|(name, _)| name)
        .filter(|n| !crate::sqlite::tables::own_schema::is_own(n))
        .filter(|n| {
            let lower = n.to_lowercase();
            !shadow_prefixes
                .iter()
                .any(|p| lower.starts_with(p.as_str()))
        })
        .collect();
    let shown: Vec<String> = names.iter().take(SHOWN).map(|n| excerpt(n)).collect();
    Ok(match names.len() {
        0 => "no table".to_string(),
        1 => format!("table {}", shown[0]),
        n if n <= SHOWN => format!("tables {}", shown.join(", ")),
        n => format!("tables {} and {} more", shown.join(", "), n - SHOWN),
    })
}

/// The schema other than `main` (`temp` or an attached database) that holds
/// a table or view named `table`, or named by its part after the first dot
/// when that part before names the schema (`"other.pages"`); `None` when no
/// other schema holds it.
fn outside_main(db: &Connection, table: &str) -> Result<Option<String>> {
    let schemas: Vec<String> = db
        .prepare("SELECT name FROM pragma_database_list WHERE name <> 'main' ORDER BY seq")?
        .query_map([], |r| r.get(0))?
        .collect::<Result<_>>()?;
    for schema in schemas {
        let qualified = table
            .split_once('.')
            .filter(|(s, _)| s.eq_ignore_ascii_case(&schema))
            .map(|(_, t)| t);
        for name in [Some(table), qualified].into_iter().flatten() {
            let sql = format!(
                "SELECT 1 FROM \"{}\".sqlite_schema WHERE lower(name) = lower(?1) AND type IN ('table', 'view')",
                schema.replace('"', "\"\"")
            );
            if db.query_row(&sql, [name], |_| Ok(())).optional()?.is_some() {
                return Ok(Some(schema));
            }
        }
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn db(schema: &str) -> Connection {
        let db = Connection::open_in_memory().unwrap();
        db.execute_batch(schema).unwrap();
        db
    }

    fn err(schema: &str, table: &str) -> String {
        Source::inspect(&db(schema), table).unwrap_err().to_string()
    }

    #[test]
    fn minimal_tables_are_accepted() {
        let s = Source::inspect(
            &db("CREATE TABLE Pages (id INTEGER PRIMARY KEY, URL TEXT, content TEXT)"),
            "pages",
        )
        .unwrap();
        assert_eq!(s.table, "Pages");
        assert_eq!(s.rowid_column.as_deref(), Some("id"));
        assert!(s.has("url") && !s.has("parsed"));
        let s = Source::inspect(&db("CREATE TABLE p (rowid TEXT, url, parsed)"), "p").unwrap();
        assert_eq!(s.rowid, "_rowid_");
        assert_eq!(s.rowid_column, None);
    }

    #[test]
    fn unusable_tables_are_named() {
        assert!(err("", "pages").starts_with("dedup[no_table]: table 'pages' not found"));
        assert_eq!(
            err("CREATE TABLE pages (url TEXT PRIMARY KEY, content) WITHOUT ROWID", "pages"),
            "dedup[table]: 'pages' is a WITHOUT ROWID table, got no rowid to keep removed rows by (the pipeline needs a rowid table)"
        );
        assert_eq!(
            err("CREATE TABLE pages (link TEXT, body TEXT)", "pages"),
            "dedup[table]: 'pages' lacks required column(s), got none named url, content or parsed (the others are optional; a column of another name: the columns setting, e.g. {\"columns\": {\"url\": \"link\"}})"
        );
        assert!(err("CREATE VIEW pages AS SELECT 1 AS url", "pages")
            .contains("must be a table, got a view (a run deletes rows: set the table setting"));
        assert!(err("CREATE TABLE pages (url, parsed, dedup_run)", "pages")
            .contains("column named 'dedup_run'"));
    }
}
