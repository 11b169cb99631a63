"""The list path, `sqlite_dedup.dedup(pages, **settings)`: a list of page
dicts deduplicated in memory. Checked against the reference pipeline's own
outputs (compat: reference on parity-5k) and against a table run of the
same pages (the demo)."""
import csv
import datetime
import os
import shutil
import sqlite3

import pytest

import pipeline as P

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))



def pages_of(path):
    conn = sqlite3.connect(path)
    conn.row_factory = sqlite3.Row
    rows = conn.execute("SELECT rowid, * FROM pages ORDER BY rowid").fetchall()
    conn.close()
    assert [r["rowid"] for r in rows] == list(range(1, len(rows) + 1))
    return [{k: r[k] for k in r.keys() if k != "rowid"} for r in rows]


@pytest.mark.parametrize("variant, settings", [("t090.d50", {}), ("t090.d50.nmin3", {"n_min": 3}),
                                               ("t100", {"threshold": 1.0})])
def test_compat_keeps_the_references_survivors_with_its_urls(sqlite_dedup, variant, settings):
    P.require_corpus()
    pages = pages_of(os.path.join(P.CORPUS, "parity-5k.db"))
    with open(os.path.join(P.CORPUS, "expected", f"parity-5k.{variant}.survivors.tsv"), newline="") as f:
        expected = {int(r["original_rowid"]): r["canonical_url"] for r in csv.DictReader(f, delimiter="\t")}
    out = sqlite_dedup.dedup(pages, compat="reference", **settings)
    positions = {id(p): i for i, p in enumerate(pages)}
    assert all(id(p) not in positions for p in out["kept"]), "kept pages are copies"
    kept = {}
    removed = {r["index"] for r in out["removed"]}
    survivors = [i for i in range(len(pages)) if i not in removed]
    assert len(survivors) == len(out["kept"])
    for i, page in zip(survivors, out["kept"]):
        kept[i + 1] = page["url"]
    assert kept == expected, sorted(set(kept.items()) ^ set(expected.items()))[:6]
    assert out["report"]["rows_after"] == len(expected)


def test_the_answer_is_a_table_runs(sqlite_dedup, tmp_path):
    pages = pages_of(P.DEMO)
    out = sqlite_dedup.dedup(pages, near_mode="lsh")
    db = str(tmp_path / "demo.db")
    shutil.copy(P.DEMO, db)
    conn = P.connect(db)
    conn.execute("SELECT dedup_run('{\"near_mode\": \"lsh\"}')").fetchone()
    table = conn.execute("SELECT rowid, url, domain, wayback, parsed FROM pages ORDER BY rowid").fetchall()
    archive = conn.execute("SELECT dedup_rowid - 1, dedup_phase, dedup_reason, dedup_survivor - 1, dedup_ratio "
                           "FROM dedup_removed ORDER BY dedup_rowid").fetchall()
    kept_at = [i for i in range(len(pages)) if i not in {r["index"] for r in out["removed"]}]
    assert [(i + 1, p["url"], p["domain"], p["wayback"], p["parsed"]) for i, p in zip(kept_at, out["kept"])] == table
    assert [(r["index"], r["phase"], r["reason"], r["survivor"], r["ratio"]) for r in out["removed"]] == archive
    assert all(r["page"] is pages[r["index"]] for r in out["removed"])
    assert len(out["kept"]) < len(pages) and out["report"]["rows_after"] == len(out["kept"])


def test_python_values_and_hand_checked_survivors(sqlite_dedup):
    text = "A page about the harbour and the boats that leave it every morning for the islands."
    pages = [
        {"url": "https://a.example/harbour?utm_source=feed", "title": "Harbour", "content": text,
         "crawled": datetime.datetime(2026, 1, 2, 3, 4, 5), "h1": ["Harbour"]},
        {"url": "https://a.example/harbour", "title": "Harbour", "content": text,
         "crawled": datetime.datetime(2025, 1, 1), "h1": ["Harbour"], "note": "mine"},
        {"url": "https://b.example/other", "title": "Other", "content": "Another text, about trams.",
         "crawled": datetime.date(2026, 1, 1)},
    ]
    out = sqlite_dedup.dedup(pages)
    # (Hand-checked: both harbour URLs have one canonical URL; the newer
    # crawl survives and takes the canonical URL.)
    assert [p["url"] for p in out["kept"]] == ["https://a.example/harbour", "https://b.example/other"]
    assert out["kept"][0]["h1"] == ["Harbour"] and out["kept"][0]["crawled"] == pages[0]["crawled"]
    assert [(r["index"], r["phase"], r["reason"], r["survivor"]) for r in out["removed"]] == [
        (1, 2, "same canonical URL", 0)]
    assert out["removed"][0]["page"]["note"] == "mine"
    assert pages[0]["url"].endswith("utm_source=feed"), "the pages given are not changed"


@pytest.mark.parametrize("pages, settings, error, message", [
    ("https://a.example/", {}, TypeError, "dedup: pages must be a list of dicts, got str"),
    ([{"url": "https://a.example/"}, 7], {}, TypeError, r"dedup: pages\[1\] must be a dict"),
    ([{"url": "https://a.example/", "h1": {1, 2}}], {}, TypeError,
     r"dedup: pages\[0\]\['h1'\] must be a str, number, bytes, date, list or None, got set"),
    ([{"url": "https://a.example/"}], {"table": "x"}, TypeError, "the list path has none"),
    ([{"url": "https://a.example/", "content": "x"}], {"treshold": 0.8}, sqlite3.OperationalError,
     r"unknown setting in the settings argument, got 'treshold' \(did you mean threshold\?\)"),
    # (Issue 77: a missing url was an error about a table the user never made.)
    ([{"url": "https://a.example/", "content": "x"}, {"content": "no url"}], {}, TypeError,
     r"dedup: pages\[1\] has no 'url' key"),
])
def test_bad_pages_are_named(sqlite_dedup, pages, settings, error, message):
    with pytest.raises(error, match=message):
        sqlite_dedup.dedup(pages, **settings)


def test_the_docs_example_runs(sqlite_dedup):
    import re
    text = open(os.path.join(ROOT, "docs", "crawl-time.md")).read()
    blocks = [b for b in re.findall(r"```python\n(.*?)```", text, re.S) if "sqlite_dedup.dedup(" in b]
    assert blocks
    for block in blocks:
        exec(compile(block, "docs/crawl-time.md", "exec"), {})


def test_kept_pages_carry_their_index_and_every_column_the_run_fills(sqlite_dedup):
    """Issue 77: the kept dicts lacked the `domain`, `parsed`,
    `content_hash` and `length` the docs promise, carried no index back to
    the input, and a Wayback URL lost its archive address. Hand-checked:
    the archived page's URL becomes the one it wraps and `wayback` keeps the
    wrapper; parsed is the visible text, its hash the SHA-1 of the
    normalized text."""
    import hashlib
    wrapped = "https://web.archive.org/web/20160225130000/https://a.example/history"
    pages = [{"url": wrapped, "content": "<p>The history of the harbour.</p>"},
             {"url": "https://b.example/trams", "content": "Trams run every six minutes."}]
    out = sqlite_dedup.dedup(pages)
    first, second = out["kept"]
    assert (first["_index"], second["_index"]) == (0, 1)
    assert first["url"] == "https://a.example/history" and first["wayback"] == wrapped
    assert first["domain"] == "a.example" and second["domain"] == "b.example"
    assert first["parsed"] == "the history of the harbour."  # (normalized, as the reference prepares it)
    assert second["content_hash"] == hashlib.sha1(b"trams run every six minutes.").hexdigest()
    assert (first["length"], second["length"]) == (len("the history of the harbour."),
                                                   len("trams run every six minutes."))
    assert "_index" not in pages[0] and "wayback" not in pages[0]

