"""Real crawl schemas, restore after re-crawls and schema changes, bad rows
and crafted databases: the run works (not just fails cleanly) and no page
is ever lost."""
import json
import os
import shutil
import sqlite3
import subprocess
import zlib

import pytest

import crawl
import pipeline as P
from test_faults import fingerprint, survivors


def rows_by_url(path, table="pages"):
    conn = sqlite3.connect(path)
    got = sorted(conn.execute(f"SELECT * FROM {table}").fetchall(), key=repr)
    conn.close()
    return got


def shell(db, *commands):
    return subprocess.run(["sqlite3", db, f".load {P.EXTENSION}", *commands], capture_output=True, text=True)


@pytest.fixture
def db(tmp_path):
    return crawl.make(str(tmp_path / "crawl.db"))


@pytest.fixture(scope="module")
def plain_survivors(tmp_path_factory):
    path = crawl.make(str(tmp_path_factory.mktemp("plain") / "crawl.db"))
    P.connect(path).execute("SELECT dedup_run()").fetchone()
    return survivors(path)


def test_restore_after_a_recrawl_that_reused_rowids(db):
    conn = sqlite3.connect(db)
    top = conn.execute("SELECT max(rowid) FROM pages").fetchone()[0]
    # A late tracking-parameter copy of page 1 takes the highest rowid; it loses.
    url, parsed = conn.execute("SELECT url, parsed FROM pages WHERE url LIKE '%/articles/1/'").fetchone()
    conn.execute("INSERT INTO pages (url, parsed, crawled) VALUES (?, ?, '2000-01-01')", (url + "?utm_source=x", parsed))
    conn.commit()
    original = rows_by_url(db)
    conn = P.connect(db)
    conn.execute("SELECT dedup_run()").fetchone()
    assert conn.execute("SELECT dedup_phase FROM dedup_removed WHERE dedup_rowid = ?", (top + 1,)).fetchone() == (2,)
    # A re-crawl: SQLite hands out the freed highest rowid again.
    conn.execute("INSERT INTO pages (url, parsed) VALUES ('https://new.example/a', 'fresh text')")
    reused = conn.execute("SELECT last_insert_rowid()").fetchone()[0]
    assert conn.execute("SELECT count(*) FROM dedup_removed WHERE dedup_rowid = ?", (reused,)).fetchone()[0] == 1
    new = conn.execute("SELECT * FROM pages WHERE rowid = ?", (reused,)).fetchone()
    report = conn.execute("SELECT dedup_restore()").fetchone()[0]
    moved = conn.execute("SELECT rowid FROM pages WHERE rowid > ?", (top + 1,)).fetchall()
    assert len(moved) == 1 and f"{reused} -> {moved[0][0]}" in report, report
    assert rows_by_url(db) == sorted(original + [new], key=repr)
    assert conn.execute("SELECT count(*) FROM sqlite_schema WHERE name LIKE 'dedup%'").fetchone()[0] == 0  # no run left


def test_restore_after_columns_were_added_and_dropped(db):
    original = rows_by_url(db)
    conn = P.connect(db)
    conn.execute("SELECT dedup_run()").fetchone()
    conn.execute("ALTER TABLE pages ADD COLUMN note TEXT DEFAULT 'n/a'")
    conn.execute("ALTER TABLE pages DROP COLUMN category")
    report = conn.execute("SELECT dedup_restore()").fetchone()[0]
    assert 'column "category" is no longer in "pages"' in report, report
    cols = [r[1] for r in conn.execute("PRAGMA table_info(pages)")]
    got = sorted(conn.execute("SELECT * FROM pages").fetchall(), key=repr)
    expected = sorted([tuple(v for n, v in zip([c.split()[0] for c in crawl.FULL_COLUMNS], r) if n != "category")
                       + ("n/a",) for r in original], key=repr)
    assert cols[-1] == "note" and got == expected


def test_a_second_run_after_a_schema_change_archives_the_new_column(db):
    conn = P.connect(db)
    conn.execute("SELECT dedup_run()").fetchone()
    conn.execute("ALTER TABLE pages ADD COLUMN note TEXT")
    for n in range(3):
        conn.execute("INSERT INTO pages (url, parsed, note) VALUES (?, 'same new text', ?)",
                     (f"https://z.example/{n}", f"note {n}"))
    assert "phase 3 (same content hash): 2 removed" in conn.execute("SELECT dedup_run()").fetchone()[0]
    assert sorted(r[0] for r in conn.execute("SELECT note FROM dedup_removed WHERE dedup_run = 2")) == \
        ["note 1", "note 2"]
    conn.execute("SELECT dedup_restore()").fetchone()
    conn.execute("SELECT dedup_restore()").fetchone()
    assert conn.execute("SELECT count(*) FROM sqlite_schema WHERE name LIKE 'dedup%'").fetchone()[0] == 0  # no run left


def test_restore_with_nothing_to_undo_says_so(db):
    out = shell(db, ".read " + os.path.join(P.ROOT, "sql", "restore.sql"))
    assert out.returncode == 1 and "dedup_restore[state]: nothing to undo" in out.stderr, out
    P.connect(db).execute("SELECT dedup_run()").fetchone()
    P.connect(db).execute("SELECT dedup_restore()").fetchone()
    out = shell(db, ".read " + os.path.join(P.ROOT, "sql", "restore.sql"))
    assert out.returncode == 1 and "nothing to undo, got no dedup_runs table" in out.stderr, out
    # With a run record gone by hand, the table stays empty: that too is said.
    P.connect(db).execute("SELECT dedup_run()").fetchone()
    sqlite3.connect(db).executescript("DELETE FROM dedup_runs;")
    out = shell(db, ".read " + os.path.join(P.ROOT, "sql", "restore.sql"))
    assert out.returncode == 1 and "nothing to undo, got no run in dedup_runs" in out.stderr, out


def first_refused_row(db, refused):
    """The archived row a restore puts back first (lowest old rowid) that
    `refused(url, urls already in the table)` refuses, modelled apart
    from the extension: its old rowid and URL. (A restore gives the
    survivors their old URLs first, then puts the rows back.)"""
    conn = sqlite3.connect(db)
    present = {r[0] for r in conn.execute(
        "SELECT coalesce((SELECT w.value FROM dedup_rewritten AS w WHERE w.dedup_rowid = p.rowid AND w.name = 'url'),"
        " p.url) FROM pages AS p")}
    for rowid, url in conn.execute("SELECT dedup_rowid, url FROM dedup_removed ORDER BY dedup_rowid"):
        if refused(url, present):
            return rowid, url
        present.add(url)
    return None


@pytest.mark.parametrize("crawled, after_the_run, refused, said", [
    # (the demo's archive holds URLs its survivors hold too)
    ("demo", "CREATE UNIQUE INDEX pages_url ON pages (url)", lambda url, present: url in present,
     "UNIQUE constraint failed: pages.url"),
    ("crawl", "CREATE TRIGGER no_wayback BEFORE INSERT ON pages WHEN NEW.url LIKE '%web.archive.org%'"
              " BEGIN SELECT RAISE(ABORT, 'no wayback copies'); END",
     lambda url, present: "web.archive.org" in url, "no wayback copies"),
])
def test_a_restore_the_table_refuses_names_the_first_row_refused(db, tmp_path, crawled, after_the_run, refused, said):
    """A constraint or trigger the user added after a run that refuses an
    archived row: the restore changes nothing and names the first row
    refused, by its old rowid and URL (was the constraint's words alone)."""
    if crawled == "demo":
        db = str(tmp_path / "demo.db")
        shutil.copy(os.path.join(P.ROOT, "demo", "crawl.db"), db)
    P.connect(db).execute("SELECT dedup_run()").fetchone()
    sqlite3.connect(db).executescript(after_the_run)
    rowid, url = first_refused_row(db, refused)
    before = fingerprint(db)
    out = shell(db, "SELECT dedup_restore();")
    assert out.returncode == 1, out
    assert (f"dedup_restore[blocked]: putting the rows of run 1 back failed, nothing was changed: {said} "
            f"(the first row refused: rowid {rowid}, \"url\" '{url[:60]}") in out.stderr, out.stderr
    assert fingerprint(db) == before


def test_a_restore_a_trigger_rolls_back_is_not_retried_row_by_row(db):
    """A trigger's RAISE(ROLLBACK) ends the restore's transaction: no row is
    then tried alone (each try would be committed by itself), and the
    database is as before, alone or inside the caller's BEGIN."""
    P.connect(db).execute("SELECT dedup_run()").fetchone()
    sqlite3.connect(db).executescript(
        "CREATE TRIGGER no_wayback BEFORE INSERT ON pages WHEN NEW.url LIKE '%web.archive.org%'"
        " BEGIN SELECT RAISE(ROLLBACK, 'no wayback copies'); END")
    before = fingerprint(db)
    for statements in (["SELECT dedup_restore();"], ["BEGIN;", "SELECT dedup_restore();", "COMMIT;"]):
        out = shell(db, *statements)
        assert out.returncode == 1, out
        assert ("dedup_restore[blocked]: putting the rows of run 1 back failed, nothing was changed: no wayback copies"
                in out.stderr and "first row refused" not in out.stderr), out.stderr
        assert fingerprint(db) == before


def test_a_restore_the_table_refuses_names_the_first_survivor_refused(db):
    """A survivor's rewritten URL whose old value a trigger added after the
    run refuses: named by its rowid and the old value (lowest rowid first)."""
    P.connect(db).execute("SELECT dedup_run()").fetchone()
    conn = sqlite3.connect(db)
    old = conn.execute("SELECT dedup_rowid, value FROM dedup_rewritten WHERE name = 'url' AND value LIKE '%utm_%'"
                       " ORDER BY dedup_rowid").fetchall()
    assert old, "the crawl's survivors include rewritten tracking URLs"
    conn.executescript("CREATE TRIGGER no_utm BEFORE UPDATE OF url ON pages WHEN NEW.url LIKE '%utm_%'"
                       " BEGIN SELECT RAISE(ABORT, 'no tracking'); END")
    conn.close()
    before = fingerprint(db)
    out = shell(db, "SELECT dedup_restore();")
    assert out.returncode == 1, out
    assert ('dedup_restore[blocked]: restoring column "url" of the survivors failed, nothing was changed: no tracking '
            f"(the first survivor refused: rowid {old[0][0]}, its old value '{old[0][1][:60]}") in out.stderr, out.stderr
    assert fingerprint(db) == before


KEEP = "CREATE TABLE keep (x); INSERT INTO keep VALUES (1);"


@pytest.mark.parametrize("craft,run_message,restore_message", [
    ("CREATE VIEW dedup_runs AS SELECT '1; DELETE FROM keep' AS run, NULL AS settings",
     "dedup_runs must be a table this extension created, got a view",
     "dedup_runs must be a table this extension created, got a view"),
    ("CREATE TABLE dedup_runs (run, settings); INSERT INTO dedup_runs VALUES ('1 OR 1=1; DELETE FROM keep', NULL)",
     "dedup_runs is not the table this extension creates, got CREATE TABLE dedup_runs (run, settings)",
     "dedup_runs.run must hold integers, got '1 OR 1=1; DELETE FROM keep'"),
    # Restore reads a table name from dedup_runs and only ever uses it quoted.
    ("CREATE TABLE dedup_runs (run, settings); "
     "INSERT INTO dedup_runs VALUES (1, '{\"table\": \"keep\\\"; DROP TABLE keep; --\"}')",
     "dedup[own]: dedup_runs is not the table this extension creates, got CREATE TABLE dedup_runs (run, settings)",
     "dedup[no_table]: table 'keep\"; DROP TABLE keep; --' not found"),
    ("CREATE VIEW dedup_removed AS SELECT 1 AS dedup_rowid",
     "dedup_removed must be a table this extension created, got a view", "nothing to undo"),
])
def test_crafted_databases_run_no_sql_of_theirs(db, craft, run_message, restore_message):
    conn = sqlite3.connect(db)
    conn.executescript(KEEP + craft)
    conn.close()
    before = fingerprint(db)
    out = shell(db, ".read " + os.path.join(P.ROOT, "sql", "restore.sql"))
    assert out.returncode == 1 and restore_message in out.stderr, out
    assert fingerprint(db) == before
    out = shell(db, ".read " + os.path.join(P.ROOT, "sql", "dedup.sql"))
    if run_message is None:
        assert out.returncode == 0, out.stderr
        assert sqlite3.connect(db).execute("SELECT x FROM keep").fetchall() == [(1,)]
    else:
        assert out.returncode == 1 and run_message in out.stderr, out
        assert fingerprint(db) == before


def test_unique_url_gives_the_same_survivors(tmp_path, plain_survivors):
    db = crawl.make(str(tmp_path / "u.db"), columns=["url TEXT UNIQUE"] + crawl.FULL_COLUMNS[1:])
    original = fingerprint(db)
    conn = P.connect(db)
    conn.execute("SELECT dedup_run()").fetchone()
    assert survivors(db) == plain_survivors
    conn.execute("SELECT dedup_restore()").fetchone()
    assert fingerprint(db)["pages"] == original["pages"]


def test_fts5_external_content_stays_consistent_through_run_and_restore(db):
    conn = P.connect(db)
    conn.executescript("""
        CREATE VIRTUAL TABLE fts USING fts5(title, parsed, content='pages', content_rowid='rowid');
        INSERT INTO fts(fts) VALUES ('rebuild');
        CREATE TRIGGER pages_ai AFTER INSERT ON pages BEGIN
          INSERT INTO fts(rowid, title, parsed) VALUES (new.rowid, new.title, new.parsed); END;
        CREATE TRIGGER pages_ad AFTER DELETE ON pages BEGIN
          INSERT INTO fts(fts, rowid, title, parsed) VALUES ('delete', old.rowid, old.title, old.parsed); END;
        CREATE TRIGGER pages_au AFTER UPDATE ON pages BEGIN
          INSERT INTO fts(fts, rowid, title, parsed) VALUES ('delete', old.rowid, old.title, old.parsed);
          INSERT INTO fts(rowid, title, parsed) VALUES (new.rowid, new.title, new.parsed); END;
    """)
    tag = conn.execute("SELECT rowid FROM pages WHERE url LIKE '%/tag/%' LIMIT 1").fetchone()[0]
    word = conn.execute("SELECT title FROM pages WHERE rowid = ?", (tag,)).fetchone()[0].split()[-1]
    hits = lambda: {r[0] for r in conn.execute("SELECT rowid FROM fts WHERE fts MATCH ?", (f'title:"{word}"',))}
    assert tag in hits()
    conn.execute("SELECT dedup_run()").fetchone()
    conn.execute("INSERT INTO fts(fts, rank) VALUES ('integrity-check', 1)")
    assert tag not in hits()
    conn.execute("SELECT dedup_restore()").fetchone()
    conn.execute("INSERT INTO fts(fts, rank) VALUES ('integrity-check', 1)")
    assert tag in hits()


def test_strict_table_and_foreign_keys_to_a_parent_round_trip(tmp_path, plain_survivors):
    db = str(tmp_path / "s.db")
    conn = sqlite3.connect(db)
    conn.executescript("CREATE TABLE sites (id INTEGER PRIMARY KEY, name TEXT); INSERT INTO sites VALUES (1, 'all');")
    conn.close()
    strict = [c.replace("DATETIME", "TEXT") for c in crawl.FULL_COLUMNS] + ["site INTEGER REFERENCES sites(id)"]
    crawl.make(db, columns=strict, suffix=" STRICT")
    sqlite3.connect(db).execute("UPDATE pages SET site = 1").connection.commit()
    original = fingerprint(db)
    conn = P.connect(db)
    conn.execute("PRAGMA foreign_keys = ON")
    conn.execute("SELECT dedup_run()").fetchone()
    assert survivors(db) == plain_survivors
    conn.execute("SELECT dedup_restore()").fetchone()
    assert fingerprint(db)["pages"] == original["pages"]


def test_only_url_and_content_are_required_and_only_url_is_written(tmp_path):
    db = crawl.make(str(tmp_path / "m.db"), columns=["url TEXT", "content TEXT"])
    original = fingerprint(db)
    conn = P.connect(db)
    report = conn.execute("SELECT dedup_run()").fetchone()[0]
    assert "phase 2 (same canonical URL)" in report and "phase 3 (same content hash)" in report, report
    assert [r[1] for r in conn.execute("PRAGMA table_info(pages)")] == ["url", "content"]
    assert {r[0] for r in conn.execute("SELECT DISTINCT name FROM dedup_rewritten")} == {"url"}
    conn.execute("SELECT dedup_restore()").fetchone()
    assert fingerprint(db)["pages"] == original["pages"]


def test_the_table_setting_names_another_table(tmp_path, plain_survivors):
    db = crawl.make(str(tmp_path / "d.db"), table="docs")
    conn = P.connect(db)
    conn.executescript("CREATE TABLE dedup_settings (key TEXT PRIMARY KEY, value);"
                       "INSERT INTO dedup_settings VALUES ('table', 'docs');")
    conn.execute("SELECT dedup_run()").fetchone()
    assert dict(conn.execute("SELECT rowid, url FROM docs")) == plain_survivors
    assert json.loads(conn.execute("SELECT settings FROM dedup_runs").fetchone()[0])["table"] == "docs"
    conn.execute("SELECT dedup_restore()").fetchone()
    assert conn.execute("SELECT count(*) FROM docs").fetchone()[0] == 110


def test_without_rowid_is_refused_before_anything_runs(tmp_path):
    db = str(tmp_path / "w.db")
    sqlite3.connect(db).execute("CREATE TABLE pages (url TEXT PRIMARY KEY, parsed TEXT) WITHOUT ROWID")
    before = fingerprint(db)
    out = shell(db, ".read " + os.path.join(P.ROOT, "sql", "dedup.sql"))
    assert out.returncode == 1 and "'pages' is a WITHOUT ROWID table" in out.stderr, out
    assert fingerprint(db) == before


@pytest.mark.parametrize("create, module", [
    ("CREATE VIRTUAL TABLE pages USING fts5(url, parsed)", "fts5"),
    ("create  virtual\ttable \"pages\" using FTS4 (url, parsed)", "FTS4"),
    ("CREATE VIRTUAL TABLE pages USING rtree(id, a, b)", "rtree"),
])
def test_a_virtual_table_is_refused_as_such_before_anything_runs(tmp_path, create, module):
    """A full-text or other virtual table is named as one, with its module
    and what to do (was SQLite's "cannot create triggers on virtual
    tables"), by run and plan alike; the file is unchanged."""
    db = str(tmp_path / "v.db")
    conn = sqlite3.connect(db)
    conn.execute(create)
    if module != "rtree":
        conn.execute("INSERT INTO pages VALUES ('https://a.example/1', 'x y'), ('https://a.example/1', 'x y')")
    conn.commit()
    conn.close()
    before = fingerprint(db)
    for statement in ("SELECT dedup_run();", "SELECT dedup_plan();"):
        out = shell(db, statement)
        assert out.returncode == 1, out
        fix = ('CREATE TABLE "pages_rows" AS SELECT * FROM "pages"; '
               """SELECT dedup_run('{"table": "pages_rows"}')""")
        assert (f"dedup[table]: 'pages' must be an ordinary table, got a virtual table (USING {module}) "
                "(a run deletes rows and keeps them in dedup_removed: copy the rows into a table and run on that, "
                f"e.g. {fix})") in out.stderr, out
        assert fingerprint(db) == before
    # (The fix it names, run as given, works on a table of pages.)
    if module != "rtree":
        out = shell(db, fix + ";")
        assert out.returncode == 0 and out.stdout.startswith("run 1: 2 rows -> 1 rows"), out

@pytest.mark.parametrize("setup, table, said", [
    ("ATTACH '{other}' AS crawl; CREATE TABLE crawl.pages (url TEXT, content TEXT);", "crawl.pages",
     "table 'crawl.pages' not found in the main database, got one in the attached database 'crawl'"),
    ("ATTACH '{other}' AS crawl; CREATE TABLE crawl.docs (url TEXT, content TEXT);", "docs",
     "table 'docs' not found in the main database, got one in the attached database 'crawl'"),
    ("CREATE TEMP TABLE scraped (url TEXT, content TEXT);", "scraped",
     "table 'scraped' not found in the main database, got a temporary one"),
    ("", "crawl.pages", "table 'crawl.pages' not found, got table 'kept' in this database"),
])
def test_a_table_outside_the_main_database_is_named_where_it_is(tmp_path, setup, table, said):
    """A run works on the main database only; a table the setting names in
    an attached or temporary database is refused with where it was found,
    and nothing of either database changes."""
    db, other = str(tmp_path / "main.db"), str(tmp_path / "other.db")
    sqlite3.connect(db).execute("CREATE TABLE kept (x)").connection.commit()
    before = fingerprint(db)
    out = shell(db, setup.format(other=other) + f"SELECT dedup_run('{{\"table\": \"{table}\"}}');")
    assert out.returncode == 1 and "dedup[no_table]: " + said in out.stderr, out
    assert fingerprint(db) == before
    if os.path.exists(other):
        assert [r[0] for r in sqlite3.connect(other).execute("SELECT name FROM sqlite_schema")] \
            in (["pages"], ["docs"])


@pytest.mark.parametrize("tables, said", [
    ([], "got no table in this database"),
    (["Pages_2024"], "got table 'Pages_2024' in this database"),
    (["g", "f", "e", "d", "c", "b", "a"], "got tables 'a', 'b', 'c', 'd', 'e' and 2 more in this database"),
    # (SQLite's own tables and this extension's, made by a run, URL
    # learning and ANALYZE before the table was renamed, are never meant)
    (["a run, then renamed to docs"], "got table 'docs' in this database"),
    # (a full-text index of the table, as sqlite-utils enable-fts makes it:
    # its virtual table is named, its five shadow tables are not)
    (["docs", "CREATE VIRTUAL TABLE docs_fts USING fts5(url, content, content='docs')"],
     "got tables 'docs', 'docs_fts' in this database"),
])
def test_a_table_not_found_is_refused_with_the_tables_there(tmp_path, tables, said):
    """The error for a table the database does not hold names the tables it
    does (up to five, then how many more), so that a misspelt name or the
    wrong file shows at once; nothing changes."""
    db = str(tmp_path / "c.db")
    if tables == ["a run, then renamed to docs"]:
        crawl.make(db)
        made = P.connect(db)
        made.execute("SELECT dedup_run()").fetchone()
        made.execute("SELECT dedup_learn_url_rules()").fetchone()
        made.execute("ANALYZE")
        made.execute("ALTER TABLE pages RENAME TO docs")
        made.commit()
        names = {r[0] for r in made.execute("SELECT name FROM sqlite_schema WHERE type = 'table'")}
        assert {"sqlite_stat1", "dedup_runs", "dedup_url_rules", "dedup_index"} <= names, names
        made.close()
        tables = []
    conn = sqlite3.connect(db)
    for t in tables:
        conn.execute(t if t.startswith("CREATE") else f'CREATE TABLE "{t}" (url TEXT, content TEXT)')
    conn.commit()
    conn.close()
    before = fingerprint(db)
    out = shell(db, "SELECT dedup_run();")
    assert out.returncode == 1, out
    assert "dedup[no_table]: table 'pages' not found, " + said + " (set the table name with" in out.stderr, out.stderr
    assert fingerprint(db) == before


@pytest.fixture(scope="module")
def after_a_run(tmp_path_factory):
    path = crawl.make(str(tmp_path_factory.mktemp("after") / "crawl.db"))
    P.connect(path).execute("SELECT dedup_run()").fetchone()
    return path


@pytest.mark.parametrize("table,said", [
    ("dedup_removed", "table 'dedup_removed' is one of this extension's own"),
    ("Dedup_Runs", "table 'Dedup_Runs' is one of this extension's own"),
    ("dedup_index", "table 'dedup_index' is one of this extension's own"),
    ("dedup_why", "table 'dedup_why' is one of this extension's own"),
    ("dedup_url_rules", "table 'dedup_url_rules' is one of this extension's own"),
    ("DEDUP_URL_SEEN", "table 'DEDUP_URL_SEEN' is one of this extension's own"),
    ("sqlite_schema", "table 'sqlite_schema' is one of SQLite's own"),
    ("sqlite_stat1", "table 'sqlite_stat1' is one of SQLite's own"),
    # (a name whose seventh byte is inside a character: not one of SQLite's)
    ("sqlit\u20acx", "table 'sqlit\u20acx' not found, got table 'pages' in this database"),
])
def test_the_extensions_and_sqlites_own_tables_are_no_table_of_pages(tmp_path, after_a_run, table, said):
    """A `table` setting naming the archive, another table a run keeps, or
    one of SQLite's is refused as such (the archive was refused for having a
    dedup_rowid column, sqlite_schema as not found), and nothing changes."""
    db = str(tmp_path / "c.db")
    src = sqlite3.connect(after_a_run)
    dst = sqlite3.connect(db)
    src.backup(dst)
    dst.execute("ANALYZE")
    dst.commit()
    for conn in (src, dst):
        conn.close()
    before = fingerprint(db)
    for function in ("dedup_run", "dedup_plan"):
        out = shell(db, f"SELECT {function}('{{\"table\": \"{table}\"}}');")
        assert out.returncode == 1 and ("dedup[no_table]: " if " not found" in said else "dedup[table]: ") + said in out.stderr, out
    assert fingerprint(db) == before


def test_settings_made_before_the_first_run_on_a_fresh_database(tmp_path):
    db = crawl.make(str(tmp_path / "f.db"))
    out = shell(db, "CREATE TABLE IF NOT EXISTS dedup_settings (key TEXT PRIMARY KEY, value);",
                "INSERT OR REPLACE INTO dedup_settings VALUES ('threshold', 0.85), ('url_options', 'ignore+=.net');",
                ".read " + os.path.join(P.ROOT, "sql", "dedup.sql"))
    assert out.returncode == 0, out.stderr
    # The .net mirrors are ignored in phase 1 (an option that ignores the
    # old probe URL must not make the run silently do nothing).
    assert "phase 1 (URL ignored/unparseable): 20 removed" in out.stdout, out.stdout


def test_bad_rows_are_skipped_named_and_untouched(db):
    conn = sqlite3.connect(db)
    conn.execute("INSERT INTO pages (rowid, url, parsed) VALUES (9001, X'68747470', 'blob url')")
    conn.execute("INSERT INTO pages (rowid, url, content) VALUES (9002, 'https://x.org/a', CAST(X'ff00fe' AS TEXT))")
    conn.execute("INSERT INTO pages (rowid, url, parsed) VALUES (9003, 'https://x.org/b', X'00')")
    conn.commit()
    conn.text_factory = bytes
    bad = conn.execute("SELECT rowid, * FROM pages WHERE rowid > 9000 ORDER BY rowid").fetchall()
    conn.close()
    out = shell(db, ".read " + os.path.join(P.ROOT, "sql", "dedup.sql"))
    assert out.returncode == 0, out.stderr
    for line in ["skipped: rowid 9001, url is a BLOB", "skipped: rowid 9002, content is not valid UTF-8 (byte 0)",
                 "skipped: rowid 9003, parsed is a BLOB"]:
        assert line in out.stdout, out.stdout
    conn = sqlite3.connect(db)
    conn.text_factory = bytes
    assert conn.execute("SELECT rowid, * FROM pages WHERE rowid > 9000 ORDER BY rowid").fetchall() == bad
    report = json.loads(conn.execute("SELECT report FROM dedup_runs").fetchone()[0])
    assert report["skipped_total"] == 3


def test_the_skipped_rows_past_the_first_twenty_are_listed_by_a_query_that_runs(tmp_path):
    """Past the twenty skipped rows the report names, it gives the query
    that lists them all, in the table's own names (a table named otherwise,
    with no parsed column: the query said `FROM pages ... parsed` there and
    failed); the query lists exactly the rows whose content is a BLOB."""
    db = str(tmp_path / "docs.db")
    conn = sqlite3.connect(db)
    conn.execute("CREATE TABLE docs (link TEXT, body)")
    conn.executemany("INSERT INTO docs VALUES (?, ?)",
                     [(f"https://a.example/{i}", zlib.compress(b"<p>x</p>") if i % 3 else f"text {i} " * 20)
                      for i in range(45)])
    conn.commit()
    blobs = [r[0] for r in conn.execute("SELECT rowid FROM docs WHERE typeof(body) = 'blob' ORDER BY rowid")]
    conn.close()
    settings = json.dumps({"table": "docs", "columns": {"url": "link", "content": "body"}})
    conn = P.connect(db)
    text = conn.execute("SELECT dedup_run(?)", (settings,)).fetchone()[0]
    query = 'SELECT rowid FROM "docs" WHERE dedup_invalid_text("link", "body", NULL) IS NOT NULL'
    assert f"  skipped: {len(blobs) - 20} more rows with bad values ({query})" in text, text
    assert [r[0] for r in conn.execute(query + " ORDER BY rowid")] == blobs


def test_why_a_page_is_gone_follows_the_chain_to_a_survivor(db):
    conn = P.connect(db)
    conn.execute("SELECT dedup_run()").fetchone()
    rows = conn.execute("SELECT rowid, phase, reason, survivor, final_survivor, chain, final_url FROM dedup_why").fetchall()
    assert len(rows) == conn.execute("SELECT count(*) FROM dedup_removed").fetchone()[0]
    kept = dict(conn.execute("SELECT rowid, url FROM pages"))
    for rowid, phase, reason, survivor, final, chain, final_url in rows:
        if phase == 1:
            assert final is None and reason.startswith("ignored")
        else:
            assert final in kept and final_url == kept[final]
            assert chain.startswith(f"{rowid} -> {survivor}") and chain.endswith(f"-> {final}")


def test_an_archive_of_version_0_1_is_upgraded_and_restored(db):
    """0.1 kept one wide dedup_rewritten row per survivor (url, domain,
    wayback, parsed_was_null, content_hash, length)."""
    original = fingerprint(db)["pages"]
    conn = P.connect(db)
    conn.execute("SELECT dedup_run()").fetchone()
    conn.executescript("""
        CREATE TABLE old AS SELECT dedup_run, dedup_rowid,
          (SELECT value FROM dedup_rewritten w WHERE w.dedup_rowid = r.dedup_rowid AND name = 'url') AS url,
          p.domain AS domain, p.wayback AS wayback, 0 AS parsed_was_null, p.content_hash AS content_hash, p.length AS length
        FROM (SELECT DISTINCT dedup_run, dedup_rowid FROM dedup_rewritten) AS r JOIN pages AS p ON p.rowid = r.dedup_rowid;
        UPDATE old SET content_hash = NULL;
        DROP TABLE dedup_rewritten; ALTER TABLE old RENAME TO dedup_rewritten;
        ALTER TABLE dedup_runs DROP COLUMN report;
    """)
    conn.execute("SELECT dedup_restore()").fetchone()
    # The survivors' old values came back from the converted rows.
    assert fingerprint(db)["pages"] == original
    assert conn.execute("SELECT count(*) FROM sqlite_schema WHERE name LIKE 'dedup%'").fetchone()[0] == 0  # no run left


@pytest.mark.parametrize("mode", ["window", "lsh"])
def test_a_second_run_removes_nothing(db, mode):
    conn = P.connect(db)
    conn.execute("SELECT dedup_run(?)", (json.dumps({"near_mode": mode}),)).fetchone()
    first = survivors(db)
    kind = ("  incremental since run 1: 0 new or changed row(s), 0 gone or changed; "
            "only they and the rows they can meet were compared")
    assert conn.execute("SELECT dedup_run(?)", (json.dumps({"near_mode": mode}),)).fetchone()[0] == \
        f"run 2: {len(first)} rows -> {len(first)} rows\n{kind}"
    assert survivors(db) == first
