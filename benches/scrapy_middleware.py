#!/usr/bin/env python3
"""The Scrapy middleware (`sqlite_dedup.scrapy.AvoidDupContentMiddleware`)
against MaybeDont's own `AvoidDupContentMiddleware`, in real Scrapy crawls of
tests/python/helpers/scrapy_site.py's local site (127.0.0.1; 1,117 requests, one at a
time, exploration off), alternated: fetches avoided, false skips, and the
seconds spent inside each middleware's two hooks (per request: ours /
MaybeDont's, below 1× ours is cheaper). Writes a Markdown table to stdout.

  cargo build --release --features loadable_extension
  /usr/bin/python3 -m pip install --break-system-packages scrapy MaybeDont
  /usr/bin/python3 benches/scrapy_middleware.py [--reps 3] > benches/results/scrapy-<date>.md
"""
import argparse
import os
import pathlib
import statistics
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "python", "helpers"))
from scrapy_site import Site, crawl, score, site_rows  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=3)
    args = ap.parse_args()
    rows = site_rows()
    runs = {"ours": [], "maybedont": []}
    with tempfile.TemporaryDirectory() as tmp, Site(rows) as site:
        urls = [site.base + path for path, _, _, _ in rows]
        for rep in range(args.reps):
            for which in ("ours", "maybedont") if rep % 2 == 0 else ("maybedont", "ours"):
                work = pathlib.Path(tmp) / f"{which}-{rep}"
                work.mkdir()
                db = str(work / "crawl.db") if which == "ours" else ""
                runs[which].append(score(rows, site.base, crawl(work, which, urls, db, which)))
    ratio = statistics.median(o["seconds"] / m["seconds"] for o, m in zip(runs["ours"], runs["maybedont"]))
    print(f"# Scrapy middleware against MaybeDont's, {args.reps} alternated pairs\n")
    print("| middleware | requests | could be avoided | avoided | false skips | seconds in the hooks (median) |")
    print("|---|---|---|---|---|---|")
    for which, name in (("ours", "sqlite_dedup.scrapy"), ("maybedont", "MaybeDont 0.1.1")):
        r = runs[which]
        print(f"| {name} | {r[0]['requests']} | {r[0]['possible']} | {r[0]['avoided']} | {r[0]['false']} | "
              f"{statistics.median(x['seconds'] for x in r):.2f} |")
    print(f"\nCost per request, ours / MaybeDont's (median of the pairs): {ratio:.2f}x")


if __name__ == "__main__":
    main()
