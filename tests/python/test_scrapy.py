"""`sqlite_dedup.scrapy.AvoidDupContentMiddleware` in a real Scrapy crawl of
a local site (127.0.0.1 only), against MaybeDont's own middleware on the
same site in the same run: a forum whose URLs carry parameters that never
change content (session ids, `start=0`, print views) and one that always
does (thread ids), and a shop whose product pages are mostly chrome. Each URL's
content group is known, so a skip is counted as avoided (its content was
fetched before) or false (it was not)."""
import json
import os
import re
import sqlite3
import subprocess

import pytest

import pipeline as P
from scrapy_site import PYTHON, Site, crawl, score, site_rows


def needs(module):
    out = subprocess.run([PYTHON, "-c", f"import {module}"], capture_output=True)
    if out.returncode:
        message = f"needs {module} for {PYTHON} (tests/install installs it)"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)


def printed(tmp_path, code, database):
    """The lines `code` prints, run by the package's Python in a process of
    its own, with sys.argv[1] the package's folder and sys.argv[2]
    `database`."""
    return subprocess.run([PYTHON, "-c", "import sys; sys.path.insert(0, sys.argv[1])\n" + code,
                           P.package(tmp_path), str(database)],
                          capture_output=True, text=True, check=True).stdout.splitlines()


def test_it_avoids_as_many_fetches_as_maybedont_with_no_more_false_skips(tmp_path):
    needs("scrapy")
    needs("maybedont")
    rows = site_rows()
    half = len(rows) // 2
    with Site(rows) as site:
        urls = [site.base + path for path, _, _, _ in rows]
        whole = crawl(tmp_path, "ours", urls, str(tmp_path / "crawl.db"), "ours")
        theirs = crawl(tmp_path, "maybedont", urls, "", "maybedont")
        # (The same stream in two processes, one after the other, on one file.)
        split = str(tmp_path / "split.db")
        first = crawl(tmp_path, "ours", urls[:half], split, "first")
        second = crawl(tmp_path, "ours", urls[half:], split, "second")
    ours, theirs = score(rows, site.base, whole), score(rows, site.base, theirs)
    print(json.dumps({"ours": ours, "maybedont": theirs,
                      "cost per request, ours / MaybeDont": ours["seconds"] / theirs["seconds"]}))
    assert ours["avoided"] >= theirs["avoided"] and ours["avoided"] > 0, (ours, theirs)
    assert ours["false"] <= theirs["false"], (ours, theirs)
    # (Every fetched page was stored and learned from.)
    conn = P.connect(str(tmp_path / "crawl.db"))
    assert conn.execute("SELECT count(*) FROM pages").fetchone()[0] == len(whole["fetched"])
    # The model is the file's: a restart mid-crawl skips exactly what one
    # process skips (exploration off), from the second process's first
    # requests on, without waiting for a new initial queue.
    assert first["skipped"] + second["skipped"] == whole["skipped"]
    assert second["skipped"]


def test_settings_are_checked(tmp_path):
    needs("scrapy")
    code = ("from sqlite_dedup.scrapy import AvoidDupContentMiddleware as M\n"
            "for kw in ({'database': ''}, {'database': sys.argv[2], 'threshold': 2}, "
            "{'database': sys.argv[2], 'initial_queue_limit': -1}):\n"
            "    try:\n        M(**kw)\n    except ValueError as e:\n        print(e)\n")
    out = printed(tmp_path, code, tmp_path / "x.db")
    assert out == ["AVOID_DUP_CONTENT_DATABASE must name the crawl's SQLite file, got ''",
                   "AVOID_DUP_CONTENT_THRESHOLD must be a number in [0, 1], got 2",
                   "AVOID_DUP_CONTENT_INITIAL_QUEUE_LIMIT must be an int >= 0, got -1"]


def test_a_response_is_stored_and_learned_from_or_neither(tmp_path):
    # (Learning fails on a bad value in the file's settings, after the page
    # was inserted: the insert is taken back and the error raised; once the
    # value is gone, the same response is stored and learned from.)
    needs("scrapy")
    code = ("import sqlite3\n"
            "from scrapy.http import HtmlResponse, Request\n"
            "from sqlite_dedup.scrapy import AvoidDupContentMiddleware as M\n"
            "m = M(sys.argv[2]); c = sqlite3.connect(sys.argv[2])\n"
            "c.execute(\"CREATE TABLE dedup_settings (key TEXT PRIMARY KEY, value)\")\n"
            "c.execute(\"INSERT INTO dedup_settings VALUES ('threshold', 'high')\"); c.commit()\n"
            "req = Request('http://127.0.0.1:1/a?sid=1', meta={'avoid_dup_content': True})\n"
            "resp = HtmlResponse(req.url, body=b'<html><title>A</title><p>Some text.</p></html>', request=req)\n"
            "def counts():\n"
            "    seen = c.execute(\"SELECT count(*) FROM sqlite_schema WHERE name = 'dedup_url_seen'\").fetchone()[0]\n"
            "    return [c.execute('SELECT count(*) FROM pages').fetchone()[0],\n"
            "            seen and c.execute('SELECT count(*) FROM dedup_url_seen').fetchone()[0]]\n"
            "try:\n    m.process_response(req, resp)\nexcept Exception as e:\n    print(e)\n"
            "print(counts())\n"
            "c.execute('DELETE FROM dedup_settings'); c.commit()\n"
            "m.process_response(req, resp); print(counts())\n")
    out = printed(tmp_path, code, tmp_path / "crawl.db")
    assert out == ["dedup[setting]: threshold must be in [0.0, 1.0], got 'high'", "[0, 0]", "[1, 1]"]


def test_a_strangers_database_makes_the_scrapy_layer_do_no_more_than_its_triggers_could(tmp_path):
    """The crawl database the middleware and the pipeline open may be
    someone else's: a table name in dedup_settings built to break out of
    its quotes names a table (both store there, its quotes intact); the
    pages table is untouched."""
    needs("scrapy")
    code = ("import sqlite3\n"
            "from scrapy.http import HtmlResponse, Request\n"
            "from sqlite_dedup.scrapy import AvoidDupContentMiddleware as M, DedupPipeline as D\n"
            "c = sqlite3.connect(sys.argv[2])\n"
            "c.execute('CREATE TABLE pages (url TEXT, content TEXT)')\n"
            "c.execute(\"INSERT INTO pages VALUES ('https://a.example/', 'kept')\")\n"
            "c.execute('CREATE TABLE dedup_settings (key TEXT PRIMARY KEY, value)')\n"
            "c.execute(\"INSERT INTO dedup_settings VALUES ('table', 'x\\\"; DROP TABLE pages; --')\"); c.commit()\n"
            "m = M(sys.argv[2])\n"
            "req = Request('http://127.0.0.1:1/a', meta={'avoid_dup_content': True})\n"
            "m.process_response(req, HtmlResponse(req.url, body=b'<p>Some text.</p>', request=req)); m.close()\n"
            "d = D(sys.argv[2]); d.process_item({'url': 'http://127.0.0.1:1/b', 'content': 'Other text.'}); d.close_spider()\n"
            "print(sorted(n for (n,) in c.execute(\"SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'dedup%'\")))\n"
            "print(c.execute('SELECT count(*) FROM pages').fetchone()[0])\n"
            "print(c.execute('SELECT count(*) FROM \"x\"\"; DROP TABLE pages; --\"').fetchone()[0])\n")
    out = printed(tmp_path, code, tmp_path / "crawl.db")
    assert out == ["['pages', 'x\"; DROP TABLE pages; --']", "1", "2"], out


def recrawl(tmp_path, tag, served, pages, which, db, settings):
    """One link-following crawl of `pages` (served) with middleware `which`
    and more Scrapy `settings`, in a process of its own: its result."""
    from recrawl_site import score  # noqa: F401
    out, extra = tmp_path / f"{tag}.json", tmp_path / f"{tag}.settings.json"
    extra.write_text(json.dumps(settings))
    served.serve(pages)
    subprocess.run([PYTHON, os.path.join(os.path.dirname(P.__file__), "scrapy_recrawl.py"), served.base + "/", which,
                    db, str(out), P.package(tmp_path), str(extra)], check=True, timeout=600,
                   env=dict(os.environ, PYTHONHASHSEED="0"))
    return json.loads(out.read_text())


@pytest.mark.parametrize("skip_refetches", [False, True], ids=["as-shipped", "refetches-skipped"])
def test_a_recrawl_into_the_same_database_reaches_what_changed(tmp_path, skip_refetches):
    """Issue 77: a second crawl into the same database skipped every URL it
    had fetched by the refetch rule the file kept (its pages had not
    changed), index pages that now link to new pages among them, so new
    pages were never reached. As shipped, a URL fetched before is fetched
    again (the rules still skip other forms of fetched pages); skipping
    refetches (the earlier default, a setting now) loses new content on
    the same crawl. A real link-following crawl of a local site a day
    later (a few new threads on the last listing page)."""
    needs("scrapy")
    from recrawl_site import A_DAY_LATER, Served, score, site
    v1, v2 = site(1, change=A_DAY_LATER), site(2, change=A_DAY_LATER)
    db = str(tmp_path / "crawl.db")
    settings = {"AVOID_DUP_CONTENT_SKIP_REFETCHES": skip_refetches}
    with Served(v1) as served:
        first = score(v1, served.base, recrawl(tmp_path, "first", served, v1, "ours", db, settings))
        second = score(v2, served.base, recrawl(tmp_path, "second", served, v2, "ours", db, settings),
                       first["have"])
    assert first["false skips"] == 0 and first["skipped"] > 0, first
    if skip_refetches:
        assert second["false skips"] > 0 and second["groups had"] < second["groups"], second
    else:
        assert second["false skips"] == 0 and second["groups had"] == second["groups"], second
        assert second["skipped"] > 100, second  # (other forms of fetched pages still skipped)
    # WAL, and the database closed at the end (no -wal left beside it).
    conn = sqlite3.connect(db)
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert not os.path.exists(db + "-wal") or os.path.getsize(db + "-wal") == 0


def test_the_item_pipeline_drops_what_the_next_run_would_remove_and_stores_the_rest(tmp_path):
    """Issue 77: `DedupPipeline` asks `dedup_similar` of each item. A first
    crawl stores unchecked and runs at close (DEDUP_RUN_ON_CLOSE), leaving
    an index; a second crawl a month later drops each item the next run
    would remove, naming the page it copies, and stores the others. Then
    every page is stored or dropped, and the close's run removes of the
    second crawl's rows only those a page stored after them replaced (the
    answer for that later page said it would remove them)."""
    needs("scrapy")
    from recrawl_site import A_MONTH_LATER, Served, site
    v1, v2 = site(1, change=A_MONTH_LATER), site(2, change=A_MONTH_LATER)
    db = str(tmp_path / "crawl.db")
    settings = {"ITEM_PIPELINES": {"sqlite_dedup.scrapy.DedupPipeline": 300}, "DEDUP_DATABASE": db,
                "DEDUP_RUN_ON_CLOSE": True}
    with Served(v1) as served:
        first = recrawl(tmp_path, "first", served, v1, "none", db, settings)
        conn = sqlite3.connect(db)
        after_first, last_rowid = conn.execute("SELECT count(*), max(rowid) FROM pages").fetchone()
        assert first["dropped"] == [] and after_first < len(first["fetched"])  # (unchecked, then the run)
        conn.close()
        second = recrawl(tmp_path, "second", served, v2, "none", db, settings)
        base = served.base
    dropped = dict(second["dropped"])
    assert len(dropped) > 200, len(dropped)
    assert all(re.match(r"duplicate of http\S+ \(rowid \d+; phase [234]: ", reason) for reason in dropped.values()), \
        list(dropped.values())[:3]
    conn = P.connect(db)
    run = conn.execute("SELECT max(run) FROM dedup_runs").fetchone()[0]
    kept = conn.execute("SELECT count(*) FROM pages WHERE rowid > ?", (last_rowid,)).fetchone()[0]
    gone = conn.execute("SELECT dedup_rowid, dedup_survivor, dedup_phase FROM dedup_removed WHERE dedup_run = ? "
                        "AND dedup_rowid > ?", (run, last_rowid)).fetchall()
    # Every page was stored or dropped.
    assert kept + len(gone) + len(dropped) == len(second["fetched"])
    # The close's run removed of the second crawl's rows only those a page
    # stored after them took the place of (its answer then said "new").
    assert all(phase in (2, 3, 4) and survivor > rowid for rowid, survivor, phase in gone), gone[:5]
