"""`dedup_apply` refuses a plan made on rows that changed since
`dedup_plan` (edited, inserted, deleted, by this connection or another),
naming a changed row, and changes nothing; in every host."""
import os
import sqlite3

import pytest

import crawl
import hosts as H
import pipeline as P
from pipeline import fingerprint

HOSTS = H.available()


def edits(ref):
    """(SQL that changes the table, the row it names, the word)."""
    kept, removed = ref["kept"], ref["removed"]
    return {
        # A removed row edited into a unique page: applying would delete it.
        "edited": (f"UPDATE pages SET url = 'https://unique.example/new', content = 'Now its own page.', "
                   f"parsed = 'Now its own page.' WHERE rowid = {removed}", removed),
        # A survivor given a new URL: applying would overwrite it.
        "edited survivor": (f"UPDATE pages SET url = 'https://elsewhere.example/x' WHERE rowid = {kept}", kept),
        "deleted": (f"DELETE FROM pages WHERE rowid = {kept}", kept),
        "inserted": ("INSERT INTO pages (rowid, url, content) VALUES (100000, 'https://n.example/', 'New.')", 100000),
    }


@pytest.fixture(scope="module")
def ref(tmp_path_factory):
    db = crawl.make(str(tmp_path_factory.mktemp("ref") / "crawl.db"))
    conn = P.connect(db)
    conn.execute("SELECT dedup_plan()").fetchone()
    removed = conn.execute("SELECT min(source_rowid) FROM temp._dedup_removal").fetchone()[0]
    kept = conn.execute("SELECT min(rowid) FROM pages WHERE rowid NOT IN "
                        "(SELECT source_rowid FROM temp._dedup_removal)").fetchone()[0]
    conn.close()
    return {"removed": removed, "kept": kept}


@pytest.mark.parametrize("kind", ["edited", "edited survivor", "deleted", "inserted"])
@pytest.mark.parametrize("host", HOSTS)
def test_a_plan_on_changed_rows_is_refused_naming_one(tmp_path, ref, host, kind):
    db = crawl.make(str(tmp_path / "crawl.db"))
    change, rowid = edits(ref)[kind]
    script = tmp_path / "s.sql"
    script.write_text(f"SELECT dedup_plan();\n{change};\nSELECT dedup_apply();\n")
    # What the database should hold: the change alone.
    expected = str(tmp_path / "expected.db")
    crawl.make(expected)
    conn = sqlite3.connect(expected)
    conn.execute(change)
    conn.commit()
    conn.close()
    rc, out, err = H.run(host, db, str(script), P.EXTENSION)
    assert rc == 1 and f"rowid {rowid} was {kind.split()[0]}" in err and "stale plan" in err, (out, err)
    assert fingerprint(db) == fingerprint(expected)


def test_another_connections_edit_is_seen_and_a_fresh_plan_applies(tmp_path, ref):
    db = crawl.make(str(tmp_path / "crawl.db"))
    conn = P.connect(db)
    conn.execute("SELECT dedup_plan()").fetchone()
    other = sqlite3.connect(db)
    other.execute(edits(ref)["edited"][0])
    other.commit()
    other.close()
    with pytest.raises(sqlite3.OperationalError, match=f"rowid {ref['removed']} was edited"):
        conn.execute("SELECT dedup_apply()").fetchone()
    conn.execute("SELECT dedup_plan()").fetchone()
    conn.execute("SELECT dedup_apply()").fetchone()
    # The edited row is now a page of its own: kept.
    assert conn.execute(f"SELECT url FROM pages WHERE rowid = {ref['removed']}").fetchone() == (
        "https://unique.example/new",)


def test_run_takes_no_snapshot(tmp_path):
    """dedup_run plans and applies in one transaction: it takes no snapshot."""
    db = crawl.make(str(tmp_path / "crawl.db"))
    conn = P.connect(db)
    conn.execute("SELECT dedup_run()").fetchone()
    assert conn.execute("SELECT count(*) FROM temp.sqlite_schema WHERE name = '_dedup_snapshot'").fetchone() == (0,)
