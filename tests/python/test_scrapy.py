"""`sqlite_dedup.scrapy.AvoidDupContentMiddleware` in a real Scrapy crawl of
a local site (127.0.0.1 only), against MaybeDont's own middleware on the
same site in the same run: a forum whose URLs carry parameters that never
change content (session ids, `start=0`, print views) and one that always
does (thread ids), and a shop whose product pages are mostly chrome. Each URL's
content group is known, so a skip is counted as avoided (its content was
fetched before) or false (it was not)."""
import json
import os
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
    assert out == ["dedup: threshold must be in [0.0, 1.0], got 'high'", "[0, 0]", "[1, 1]"]
