"""The change log of incremental runs (issue 26, docs/incremental.md): the
triggers name what users write and not what runs write, changes they cannot
see (a vacuum, a schema change, a replace by rowid) make the run read every
row, restore takes the log away, and a trigger of the user's writing to it is
refused."""
import os
import shutil
import sqlite3

import pytest

import pipeline as P
from incremental_state import demo_copy, table_state, report


def run_both(tmp_path, db, settings=None):
    """An incremental run on db and a full run on a copy: their reports,
    and whether they leave the same table and archive."""
    settings = settings or {}
    full_db = str(tmp_path / "full-copy.db")
    shutil.copy(db, full_db)
    full = P.connect(full_db)
    expected = report(full, dict(settings, full=True))
    conn = P.connect(db)
    got = report(conn, settings)
    same = table_state(conn) == table_state(full)
    conn.close()
    full.close()
    os.remove(full_db)
    return got, expected, same


def test_the_change_log_names_what_users_write_and_not_what_runs_write(tmp_path):
    db, conn = demo_copy(tmp_path)
    report(conn, {})
    # The run's own deletes and rewrites are not logged (only rows the next
    # run must look at again: the unsettled ones).
    unsettled = conn.execute("SELECT count(*) FROM dedup_index WHERE fp = 0").fetchone()[0]
    assert conn.execute("SELECT count(*) FROM dedup_changes").fetchone()[0] == unsettled
    # (Left in the log: deleting its rows would make the next run full.)
    logged = {r[0] for r in conn.execute("SELECT rid FROM dedup_changes")}
    kept = [r[0] for r in conn.execute("SELECT rowid FROM pages ORDER BY rowid LIMIT 3")]
    conn.execute("INSERT INTO pages (url, parsed, crawled) VALUES ('https://new.example.org/a', 'a page of its own', '2030-01-01')")
    new = conn.execute("SELECT last_insert_rowid()").fetchone()[0]
    conn.execute("UPDATE pages SET crawled = '2031-01-01' WHERE rowid = ?", (kept[0],))
    conn.execute("UPDATE pages SET rowid = ? WHERE rowid = ?", (new + 10, kept[1]))
    conn.execute("DELETE FROM pages WHERE rowid = ?", (kept[2],))
    assert {r[0] for r in conn.execute("SELECT rid FROM dedup_changes")} == logged | {
        new, kept[0], kept[1], new + 10, kept[2]}
    conn.close()
    got, expected, same = run_both(tmp_path, db)
    assert got["kind"] == "incremental" and got["scanned"] is None
    assert same and got["removed"] == expected["removed"]


@pytest.mark.parametrize("how,why", [
    # INSERT OR REPLACE deletes the row with the same URL without a delete trigger firing.
    ("replace", "rows changed that the change log does not name (INSERT OR REPLACE deleting another row, VACUUM)"),
    ("dropped trigger", "the change log's triggers were dropped or changed"),
    ("added column", "the schema of \"pages\" changed"),
])
def test_changes_the_log_cannot_see_make_the_run_read_every_row(tmp_path, how, why):
    db, conn = demo_copy(tmp_path)
    # One URL per row first, so that a unique index on url can be made.
    conn.execute("DELETE FROM pages WHERE rowid NOT IN (SELECT min(rowid) FROM pages GROUP BY url)")
    conn.execute("CREATE UNIQUE INDEX by_url ON pages (url)")
    report(conn, {})
    rowid, url, parsed = conn.execute(
        "SELECT rowid, url, parsed FROM pages WHERE parsed <> '' ORDER BY rowid LIMIT 1").fetchone()
    if how == "replace":
        conn.execute("INSERT OR REPLACE INTO pages (url, parsed, crawled) VALUES (?, ?, '2035-01-01')",
                     (url, parsed + " and a line more"))
        assert conn.execute("SELECT count(*) FROM pages WHERE rowid = ?", (rowid,)).fetchone()[0] == 0
    elif how == "dropped trigger":
        conn.execute("DROP TRIGGER dedup_track_update")
        conn.execute("UPDATE pages SET parsed = parsed || ' and a line more', content_hash = NULL WHERE rowid = ?",
                     (rowid,))
    else:
        conn.execute("ALTER TABLE pages ADD COLUMN note TEXT DEFAULT 'x'")
    conn.close()
    got, expected, same = run_both(tmp_path, db)
    assert (got["kind"], got["scanned"]) == ("incremental", why)
    assert same and got["removed"] == expected["removed"]
    # The run put the log back: the next one reads it again.
    conn = P.connect(db)
    assert report(conn, {})["scanned"] is None


@pytest.mark.parametrize("how", ["vacuum", "replace by rowid", "other schema change"])
def test_a_table_without_an_index_is_trusted_only_while_no_vacuum_came_between(tmp_path, how):
    """Without an index on the table its rowids are not read when the schema
    cookie is the last run's (no constraint can delete a row unlogged); a
    VACUUM, which renumbers the rowids of a table without INTEGER PRIMARY
    KEY, changes the cookie and the run reads them again."""
    db, conn = demo_copy(tmp_path)
    assert conn.execute("SELECT count(*) FROM pragma_index_list('pages')").fetchone()[0] == 0
    report(conn, {})
    first, second = conn.execute("SELECT rowid FROM pages ORDER BY rowid LIMIT 2").fetchall()
    url, parsed = conn.execute("SELECT url, parsed FROM pages WHERE rowid = ?", second).fetchone()
    if how == "vacuum":
        conn.execute("DELETE FROM pages WHERE rowid = ?", first)  # (logged)
        before = conn.execute("SELECT rowid FROM pages ORDER BY rowid").fetchall()
        conn.execute("VACUUM")
        # The rows after the gaps (the first run's removals, the delete)
        # moved down: the log does not name them.
        after = conn.execute("SELECT rowid FROM pages ORDER BY rowid").fetchall()
        assert len(after) == len(before) and after != before
        why = "rows changed that the change log does not name (INSERT OR REPLACE deleting another row, VACUUM)"
    elif how == "replace by rowid":
        conn.execute("INSERT OR REPLACE INTO pages (rowid, url, parsed, crawled) VALUES (?, ?, ?, '2035-01-01')",
                     (second[0], url, parsed + " and a line more"))
        why = None
    else:
        conn.execute("CREATE TABLE notes (x)")
        conn.execute("DELETE FROM pages WHERE rowid = ?", first)
        why = None
    conn.close()
    got, expected, same = run_both(tmp_path, db)
    assert (got["kind"], got["scanned"]) == ("incremental", why)
    assert same and got["removed"] == expected["removed"]
    assert got["rows_before"] == expected["rows_before"]


def test_restore_takes_the_change_log_away(tmp_path):
    db, conn = demo_copy(tmp_path)
    report(conn, {})
    report(conn, {})
    conn.execute("SELECT dedup_restore()").fetchone()
    assert conn.execute("SELECT name FROM sqlite_schema WHERE type = 'trigger'").fetchall() == []
    assert conn.execute("SELECT count(*) FROM dedup_changes").fetchone()[0] == 0
    conn.execute("SELECT dedup_restore()").fetchone()
    assert conn.execute("SELECT name FROM sqlite_schema WHERE name LIKE 'dedup%'").fetchall() == []


def test_a_trigger_of_the_users_writing_to_the_log_is_refused(tmp_path):
    db, conn = demo_copy(tmp_path)
    report(conn, {})
    conn.execute("CREATE TRIGGER mine AFTER INSERT ON pages BEGIN INSERT OR IGNORE INTO dedup_changes VALUES (new.rowid + 1); END")
    with pytest.raises(sqlite3.OperationalError, match=r'trigger "mine" \(on "pages"\) is on or writes to'):
        conn.execute("SELECT dedup_run()").fetchone()
