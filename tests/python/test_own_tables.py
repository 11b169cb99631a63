"""The extension's own tables (dedup_runs, dedup_removed, dedup_rewritten,
dedup_domains, dedup_domains_before): a user-made table of that name is
refused unless it has exactly the shape the extension creates; a trigger on
them or writing to them, and a foreign key to them, are refused by name
before anything changes, in every host; a user's rows in dedup_domains are
given back by restore."""
import sqlite3

import pytest

import crawl
import hosts as H
import pipeline as P
from pipeline import fingerprint

HOSTS = H.available()
DEDUP = "SELECT dedup_run();\n"

ARCHIVE = ("CREATE TABLE dedup_removed (dedup_rowid INTEGER, dedup_run INTEGER, dedup_phase INTEGER, "
           "dedup_reason TEXT, dedup_survivor INTEGER, dedup_ratio REAL)")

# (name, SQL run on the crawl before the run, what the error must name)
SETUPS = {
    "trigger deleting archived rows": (
        ARCHIVE + "; CREATE TRIGGER eat AFTER INSERT ON dedup_removed WHEN NEW.dedup_rowid % 7 = 0 "
        "BEGIN DELETE FROM dedup_removed WHERE rowid = NEW.rowid; END", ['trigger "eat"']),
    "trigger on pages writing the archive": (
        ARCHIVE + "; CREATE TRIGGER sneak AFTER DELETE ON pages "
        "BEGIN DELETE FROM dedup_removed WHERE dedup_rowid = OLD.rowid; END", ['trigger "sneak"']),
    "archive keyed by TEXT": (
        ARCHIVE.replace("dedup_rowid INTEGER", "dedup_rowid TEXT"), ["dedup_removed is not the table"]),
    "archive replacing on conflict": (
        ARCHIVE.replace("REAL)", "REAL, UNIQUE (dedup_run) ON CONFLICT REPLACE)"), ["dedup_removed is not the table"]),
    "runs without its key": (
        "CREATE TABLE dedup_runs (run, finished TEXT, rows_before INTEGER, rows_after INTEGER, settings TEXT, "
        "report TEXT)", ["dedup_runs is not the table"]),
    "domains as a view": ("CREATE VIEW dedup_domains AS SELECT 1 AS domain, 2 AS pages", ["got a view"]),
}


def script(tmp_path, body, foreign_keys=False):
    path = tmp_path / "s.sql"
    path.write_text(("PRAGMA foreign_keys = ON;\n" if foreign_keys else "") + body)
    return str(path)


@pytest.mark.parametrize("setup", list(SETUPS))
@pytest.mark.parametrize("host", HOSTS)
def test_user_made_tables_and_triggers_are_refused_by_name(tmp_path, host, setup):
    db = crawl.make(str(tmp_path / "crawl.db"))
    sql, names = SETUPS[setup]
    conn = sqlite3.connect(db)
    conn.executescript(sql)
    conn.close()
    before = fingerprint(db)
    rc, out, err = H.run(host, db, script(tmp_path, DEDUP), P.EXTENSION)
    assert rc == 1 and all(n in err for n in names), (out, err)
    assert fingerprint(db) == before


@pytest.mark.parametrize("host", HOSTS)
def test_a_foreign_key_to_the_run_record_is_refused(tmp_path, host):
    db = crawl.make(str(tmp_path / "crawl.db"))
    conn = P.connect(db)
    conn.execute("SELECT dedup_run()").fetchone()
    conn.executescript("CREATE TABLE notes (run INTEGER REFERENCES dedup_runs(run) ON DELETE CASCADE, text TEXT);"
                       "INSERT INTO notes VALUES (1, 'my note on run 1');")
    conn.close()
    before = fingerprint(db)
    for body in ("SELECT dedup_restore();\n", DEDUP):
        rc, out, err = H.run(host, db, script(tmp_path, body, foreign_keys=True), P.EXTENSION)
        assert rc == 1 and 'table "notes" has a foreign key to' in err, (body, out, err)
        assert fingerprint(db) == before


def test_a_trigger_added_after_a_run_stops_its_restore(tmp_path):
    db = crawl.make(str(tmp_path / "crawl.db"))
    conn = P.connect(db)
    conn.execute("SELECT dedup_run()").fetchone()
    conn.execute("CREATE TRIGGER keep BEFORE DELETE ON dedup_removed BEGIN SELECT RAISE(IGNORE); END")
    before = fingerprint(db)
    with pytest.raises(sqlite3.OperationalError, match=r'dedup_restore\[own\]: trigger "keep"'):
        conn.execute("SELECT dedup_restore()").fetchone()
    assert fingerprint(db) == before


def test_the_extensions_own_tables_are_accepted_as_they_are(tmp_path):
    """Tables an earlier run created (and the archive's added page columns)
    pass the shape check: a second run and two restores work."""
    db = crawl.make(str(tmp_path / "crawl.db"))
    conn = P.connect(db)
    conn.execute("SELECT dedup_run()").fetchone()
    conn.execute("ALTER TABLE pages ADD COLUMN \"odd \"\"name\"")
    conn.execute("INSERT INTO pages (url, content) SELECT url || '?again', content FROM pages LIMIT 20")
    assert "run 2" in conn.execute("SELECT dedup_run()").fetchone()[0]
    assert "restored run 2" in conn.execute("SELECT dedup_restore()").fetchone()[0]
    assert "restored run 1" in conn.execute("SELECT dedup_restore()").fetchone()[0]


def test_a_users_rows_in_dedup_domains_come_back_with_restore(tmp_path):
    db = crawl.make(str(tmp_path / "crawl.db"))
    conn = P.connect(db)
    conn.executescript("CREATE TABLE dedup_domains (domain TEXT PRIMARY KEY, pages INTEGER);"
                       "INSERT INTO dedup_domains VALUES ('mine.example', 42), ('x.example', X'00ff');")
    mine = conn.execute("SELECT rowid, domain, pages FROM dedup_domains ORDER BY rowid").fetchall()
    conn.execute("SELECT dedup_run()").fetchone()
    assert conn.execute("SELECT count(*) FROM dedup_domains WHERE domain = 'mine.example'").fetchone() == (0,)
    conn.execute("SELECT dedup_run()").fetchone()  # a second run keeps the first one's counts
    first = conn.execute("SELECT rowid, domain, pages FROM dedup_domains ORDER BY rowid").fetchall()
    conn.execute("SELECT dedup_restore()").fetchone()
    assert conn.execute("SELECT rowid, domain, pages FROM dedup_domains ORDER BY rowid").fetchall() == first
    conn.execute("SELECT dedup_restore()").fetchone()
    assert conn.execute("SELECT rowid, domain, pages FROM dedup_domains ORDER BY rowid").fetchall() == mine
    # No run left: the extension's tables are gone but dedup_domains, which holds the user's rows.
    assert [r[0] for r in conn.execute("SELECT name FROM sqlite_schema WHERE name LIKE 'dedup%' AND type = 'table'")] \
        == ["dedup_domains"]
