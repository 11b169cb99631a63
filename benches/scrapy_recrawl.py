#!/usr/bin/env python3
"""A re-crawl with the Scrapy middleware: two link-following crawls of a
local site that changed between them (tests/python/helpers/recrawl_site.py:
new threads and products on the first index pages, edited threads, new
prices), the second into the same database, scored on the second: requests,
skips, false skips (a skipped URL whose content neither crawl fetched: new or
changed content lost), the content groups the crawler has after both, and the crawl's wall seconds. Contenders, alternated
in one run: no middleware (what is there to reach), ours as it ships
(refetches fetched, WAL), ours skipping refetches (the earlier default),
ours with the file's own journal (rollback), and MaybeDont (its model lives
in its process: each crawl starts empty). Writes Markdown to stdout.

  cargo build --release --features loadable_extension
  /usr/bin/python3 benches/scrapy_recrawl.py [--reps 3] > benches/results/scrapy-recrawl-<date>.md
"""
import argparse
import json
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
HELPERS = os.path.join(HERE, "..", "tests", "python", "helpers")
sys.path.insert(0, HELPERS)
import pipeline as P  # noqa: E402
from recrawl_site import A_DAY_LATER, A_MONTH_LATER, Served, score, site  # noqa: E402

PYTHON = os.environ.get("DEDUP_PYTHON", "/usr/bin/python3")
CONTENDERS = {
    "no middleware": ("none", {}),
    "ours (refetches fetched, WAL)": ("ours", {}),
    "ours, refetches skipped (the earlier default)": ("ours", {"AVOID_DUP_CONTENT_SKIP_REFETCHES": True}),
    "ours, the file's journal (rollback)": ("ours", {"AVOID_DUP_CONTENT_JOURNAL": "keep"}),
    "MaybeDont 0.1.1": ("maybedont", {}),
}


def crawl(work, which, db, base, extra, tag):
    out = work / f"{tag}.json"
    settings = work / f"{tag}.settings.json"
    settings.write_text(json.dumps(extra))
    subprocess.run([PYTHON, os.path.join(HELPERS, "scrapy_recrawl.py"), base + "/", which, db, str(out),
                    P.package(work), str(settings)], check=True, timeout=1800,
                   env=dict(os.environ, PYTHONHASHSEED="0"))
    return json.loads(out.read_text())


def recrawl(work, which, extra, served, v1, v2):
    """(first crawl's score, second crawl's score)."""
    db = str(work / "crawl.db") if which == "ours" else ""
    served.serve(v1)
    first = score(v1, served.base, crawl(work, which, db, served.base, extra, "first"))
    served.serve(v2)
    second = score(v2, served.base, crawl(work, which, db, served.base, extra, "second"), first["have"])
    return first, second


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=3)
    args = ap.parse_args()
    print(f"# A re-crawl with the Scrapy middleware, {args.reps} alternated runs\n")
    for label, change in (("a month later", A_MONTH_LATER), ("a day later", A_DAY_LATER)):
        v1, v2 = site(1, change=change), site(2, change=change)
        runs = {name: [] for name in CONTENDERS}
        with tempfile.TemporaryDirectory() as tmp, Served(v1) as served:
            for rep in range(args.reps):
                names = list(CONTENDERS) if rep % 2 == 0 else list(reversed(CONTENDERS))
                for k, name in enumerate(names):
                    work = pathlib.Path(tmp) / f"{rep}-{k}"
                    work.mkdir()
                    which, extra = CONTENDERS[name]
                    runs[name].append(recrawl(work, which, extra, served, v1, v2))
        new, _, edited, _, _ = change
        print(f"## The site {label}: {new} new threads, {edited:.1%} of the threads edited\n")
        print(f"{len(v1)} URLs in version 1, {len(v2)} in version 2 ({len({p[2] for p in v2.values()})} content "
              "groups); every link followed, one request at a time, exploration off. The second crawl into the "
              "first one's database (ours; MaybeDont's model lives in its process). False skips: skipped URLs "
              "whose content neither crawl fetched (new or changed content lost). Medians.\n")
        print("| contender | 1st crawl: requests, skips | 2nd crawl: requests | skipped | false skips | "
              "groups had after both (of all) | wall s, 2nd crawl | in the hooks s |")
        print("|---|---|---|---|---|---|---|---|")
        for name, pairs in runs.items():
            first = [f for f, _ in pairs]
            second = [s for _, s in pairs]
            med = lambda rows, k: statistics.median(r[k] for r in rows)  # noqa: E731
            print(f"| {name} | {med(first, 'requests'):.0f}, {med(first, 'skipped'):.0f} | "
                  f"{med(second, 'requests'):.0f} | {med(second, 'skipped'):.0f} | "
                  f"{med(second, 'false skips'):.0f} | {med(second, 'groups had'):.0f} of {second[0]['groups']} | "
                  f"{med(second, 'seconds'):.2f} | {med(second, 'hook seconds'):.2f} |")
        print()


if __name__ == "__main__":
    main()
