#!/usr/bin/env python3
"""Copies found when the chrome differs from page to page: the shop of
tests/python/helpers/sites.py (each product page and a mirror copy whose
header, menu, "customers also viewed" box and footer differ), deduplicated
(1) as HTML with the defaults (html_text), (2) as HTML with
boilerplate = 'strip' (main_text), (3) after trafilatura's extract() put
each page's main text in `parsed` (its default settings). Seconds are the
run's, plus the extraction's for trafilatura, in the same run.

    cargo build --release --features loadable_extension
    bench-data/venv/bin/python benches/main_text.py [--products 500]
    (a venv of Debian's python3 with trafilatura: pip install trafilatura lxml_html_clean)
"""
import argparse
import os
import sqlite3
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# (A bench named html.py would shadow the standard library's html: benches/html_text.py.)
sys.path = [p for p in sys.path if os.path.abspath(p or ".") != os.path.join(ROOT, "benches")]
sys.path.insert(0, os.path.join(ROOT, "tests", "python", "helpers"))
from sites import shop_with_changing_boxes  # noqa: E402

EXTENSION = os.environ.get("DEDUP_EXTENSION", os.path.join(ROOT, "target", "release", "libdedup"))


def connect(path):
    conn = sqlite3.connect(path, isolation_level=None)
    conn.enable_load_extension(True)
    conn.load_extension(EXTENSION)
    return conn


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--products", type=int, default=500)
    args = ap.parse_args()
    n = args.products
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name, settings, extract in [("HTML, defaults (html_text)", "{}", False),
                                        ("HTML, boilerplate = 'strip' (main_text)", '{"boilerplate": "strip"}', False),
                                        ("trafilatura extract() into parsed, defaults", "{}", True)]:
            db = shop_with_changing_boxes(os.path.join(tmp, f"{len(rows)}.db"), products=n)
            conn = connect(db)
            extra = 0.0
            if extract:
                import trafilatura
                conn.execute("ALTER TABLE pages ADD COLUMN parsed TEXT")
                pages = conn.execute("SELECT rowid, content FROM pages").fetchall()
                start = time.perf_counter()
                texts = [(trafilatura.extract(html) or "", rowid) for rowid, html in pages]
                extra = time.perf_counter() - start
                conn.executemany("UPDATE pages SET parsed = ? WHERE rowid = ?", texts)
            start = time.perf_counter()
            conn.execute("SELECT dedup_run(?)", (settings,)).fetchone()
            seconds = time.perf_counter() - start
            merged = conn.execute("SELECT count(*) FROM dedup_removed WHERE dedup_phase IN (3, 4)").fetchone()[0]
            wrong = conn.execute(
                "SELECT count(*) FROM dedup_removed AS d JOIN pages AS p ON p.rowid = d.dedup_survivor "
                "WHERE substr(d.url, instr(d.url, '/p/')) <> substr(p.url, instr(p.url, '/p/'))").fetchone()[0]
            rows.append((name, merged, wrong, extra, seconds))
    print(f"# Chrome that differs per page (2026-11-24)\n\n`benches/main_text.py --products {n}`: {n} product pages "
          f"and {n} mirror copies (same product text, other header, menu, box and footer).\n")
    print("| text compared | copies found | wrong merges | extraction (s) | dedup_run (s) |")
    print("|---|---|---|---|---|")
    for name, merged, wrong, extra, seconds in rows:
        print(f"| {name} | {merged} of {n} | {wrong} | {extra:.2f} | {seconds:.2f} |")


if __name__ == "__main__":
    main()
