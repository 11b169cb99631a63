"""Segments and boilerplate (docs/learning.md): segments, strip_segments,
dedup_segments, the learner of chrome segments and the boilerplate setting.
Expected values are hand-computed or come from the standard library
(hashlib), never from the code under test."""
import hashlib
import json
import os
import sqlite3

import pytest

from pipeline import EXTENSION, ROOT, connect, copy_corpus, crawl_db
from sites import chrome_site

SEGMENTS = os.path.join(ROOT, "sql", "learn_segments.sql")


def python_hash(line):
    digest = hashlib.sha1(" ".join(line.split()).lower().encode()).digest()
    return int.from_bytes(digest[:8], "big", signed=True)


def test_segments_and_their_hashes(tmp_path):
    conn = connect(":memory:")
    text = "  Skip to main content \r\n\r\nЗаголовок   СТАТЬИ\rBody line one.\n\n\tBack to TOP\n"
    got = conn.execute("SELECT position, segment, hash FROM segments(?)", (text,)).fetchall()
    lines = ["Skip to main content", "Заголовок   СТАТЬИ", "Body line one.", "Back to TOP"]
    assert got == [(i + 1, line, python_hash(line)) for i, line in enumerate(lines)]
    assert conn.execute("SELECT count(*) FROM segments('')").fetchone() == (0,)
    assert conn.execute("SELECT count(*) FROM segments(NULL)").fetchone() == (0,)
    with pytest.raises(sqlite3.OperationalError, match=r"segments\[argument\]: text must be TEXT, got"):
        conn.execute("SELECT * FROM segments(x'41')").fetchall()
    chrome = json.dumps([python_hash("skip to main content"), python_hash("back to top")])
    assert conn.execute("SELECT strip_segments(?, ?)", (text, chrome)).fetchone()[0] == \
        "Заголовок   СТАТЬИ\nBody line one."
    assert conn.execute("SELECT strip_segments(?, '[]')", (text,)).fetchone()[0] == text
    with pytest.raises(sqlite3.OperationalError, match=r"strip_segments\[argument\]: hashes must be a JSON array of integers"):
        conn.execute("SELECT strip_segments('a', '[1, \"x\"]')").fetchone()


def test_dedup_segments_counts_pages_per_domain(tmp_path):
    rows = chrome_site(n_pages=12, n_copies=3)
    conn = crawl_db(tmp_path, rows)
    conn.execute("INSERT INTO pages VALUES ('https://other.example/x', 'X', 'Back to top\nElsewhere', NULL)")
    with open(SEGMENTS) as f:
        conn.executescript(f.read())
    got = {(d, h): (p, t) for d, h, p, t in conn.execute("SELECT domain, hash, pages, titles FROM dedup_segments")}
    # By hand: every note page carries each header and footer line; the
    # copies share their original's title.
    assert got[("news.example.org", python_hash("Back to top"))] == (15, 12)
    assert got[("other.example", python_hash("Back to top"))] == (1, 1)
    body = rows[0][2].split("\n\n")[1]
    assert got[("news.example.org", python_hash(body))] == (1, 1)
    # Rebuilt, not added to.
    with open(SEGMENTS) as f:
        conn.executescript(f.read())
    again = {(d, h): (p, t) for d, h, p, t in conn.execute("SELECT domain, hash, pages, titles FROM dedup_segments")}
    assert again == got


def test_learn_segments_failing_midway_keeps_the_last_counts(tmp_path):
    """The script in the sqlite3 shell without -bail and in Python's
    executescript: when its insert fails, dedup_segments is as before."""
    import subprocess
    conn = crawl_db(tmp_path, chrome_site(n_pages=6, n_copies=0))
    with open(SEGMENTS) as f:
        script = f.read()
    conn.executescript(script)
    before = sorted(conn.execute("SELECT * FROM dedup_segments"))
    assert before
    conn.execute("ALTER TABLE pages DROP COLUMN title")  # the insert now fails
    with pytest.raises(sqlite3.OperationalError, match="no such column: title"):
        conn.executescript(script)
    assert sorted(conn.execute("SELECT * FROM dedup_segments")) == before
    conn.close()
    path = os.path.join(str(tmp_path), "crawl.db")
    out = subprocess.run(["sqlite3", path], input=f".load {EXTENSION}\n{script}", capture_output=True, text=True)
    assert "no such column: title" in out.stderr
    check = sqlite3.connect(path)
    assert sorted(check.execute("SELECT * FROM dedup_segments")) == before


def test_boilerplate_strip_on_a_site_of_short_pages(tmp_path):
    rows = chrome_site(n_pages=40, n_copies=10)
    groups = {r[0]: r[4] for r in rows}

    def run(mode):
        conn = crawl_db(tmp_path, rows, f"{mode}.db")
        report = conn.execute("SELECT dedup_run(json_object('boilerplate', ?))", (mode,)).fetchone()[0]
        kept_groups = {groups[u] for (u,) in conn.execute("SELECT url FROM pages")}
        return conn, report, kept_groups

    keep, keep_report, keep_groups = run("keep")
    strip, strip_report, strip_groups = run("strip")
    # The default compares whole texts: the shared chrome merges distinct pages.
    assert len(keep_groups) < 10
    # Stripped, every distinct page survives and every near-copy is merged.
    assert strip_groups == set(groups.values())
    assert strip.execute("SELECT count(*) FROM pages").fetchone()[0] == 40
    assert "boilerplate stripped: 17 segment(s) of 1 domain(s)" in strip_report
    reasons = {r for (r,) in strip.execute("SELECT DISTINCT dedup_reason FROM dedup_removed")}
    assert reasons == {"near duplicate: lev_ratio above threshold (boilerplate stripped)"}
    report = json.loads(strip.execute("SELECT report FROM dedup_runs").fetchone()[0])
    assert report["boilerplate"] == {"segments": 17, "domains": 1}
    assert json.loads(strip.execute("SELECT settings FROM dedup_runs").fetchone()[0])["boilerplate"] == "strip"
    # Every merge is verified on the compared (stripped) texts: the stored
    # ratio is lev_ratio of the two texts without the chrome.
    for ratio, content, title, survivor_content in strip.execute(
            "SELECT d.dedup_ratio, d.content, d.title, p.content FROM dedup_removed AS d "
            "JOIN pages AS p ON p.rowid = d.dedup_survivor"):
        chrome = json.dumps([python_hash(line) for line in (content.split("\n\n")[0] + "\n" +
                                                            content.split("\n\n")[2]).split("\n")])
        a, b = strip.execute(
            "SELECT normalize_text(?3 || char(10, 10) || strip_segments(?1, ?4)), "
            "normalize_text(?3 || char(10, 10) || strip_segments(?2, ?4))",
            (content, survivor_content, title, chrome)).fetchone()
        assert strip.execute("SELECT lev_ratio(?, ?)", (a, b)).fetchone()[0] == pytest.approx(ratio)
        assert ratio > 0.9
    # Too few pages for chrome: nothing stripped, the reference's behaviour.
    few = crawl_db(tmp_path, rows[:3], "few.db")
    out = few.execute("SELECT dedup_run(json_object('boilerplate', 'strip'))").fetchone()[0]
    assert "boilerplate stripped: 0 segment(s) of 0 domain(s)" in out


def test_strip_on_the_corpus_keeps_most_merges(tmp_path):
    conn = connect(copy_corpus(tmp_path))
    (tmp_path / "keep").mkdir()
    keep = connect(copy_corpus(tmp_path / "keep"))
    keep.execute("SELECT dedup_run()").fetchone()
    conn.execute("SELECT dedup_run(json_object('boilerplate', 'strip'))").fetchone()
    near = lambda c: {r for (r,) in c.execute("SELECT dedup_rowid FROM dedup_removed WHERE dedup_phase = 4")}
    k, s = near(keep), near(conn)
    # Measured (benches/results/learning-*.md): strip loses the merges of the
    # license page's 18 translations (its English license text repeats across
    # titles: chrome by the rule) and gains one; everything else is equal.
    assert len(k - s) <= 15 and len(s - k) >= 1
    assert len(k & s) >= 0.95 * len(k)
