"""What phase 1 would cost without SQL's machinery: the bound a plan held in
memory would start from (issue 29, target 1).

For each builder corpus (bench-data/N.db, seed 7) and with the extension's
own functions, fastest of --repeat:
- the read of every column phase 1 reads (one statement, no function);
- the same read with phase 1's text check and URL functions under the
  default settings (canonical and strict URL, domain, discard reason,
  Wayback form), on one core;
- the same split over two processes (rowid % 2), started together: the
  wall clock of that work on both cores (process start included, about
  0.03 s each here).
Phase 1's own statement, for comparison, is in DEDUP_TRACE's
`WITH checked AS (` line and in benches/pipeline.py's 01_canonicalize.

    /usr/bin/python3 benches/plan_bounds.py --sizes 100000,1000000
"""
import argparse
import os
import sqlite3
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from corpora import corpus  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXT = os.path.join(ROOT, "target", "release", "libdedup")

# (Each text is loaded by taking its length in bytes: length() of a TEXT
# value counts its characters, a pass over its bytes that phase 1 does not
# make; length(CAST(... AS BLOB)) loads the value and counts nothing.)
READ = ("SELECT sum(length(CAST(url AS BLOB))), sum(length(CAST(content AS BLOB))),"
        " sum(length(CAST(parsed AS BLOB))), count(title),"
        " count(content_hash), count(datetime), count(crawled), count(category), count(length)"
        " FROM pages {where}")
# (The default settings' options, as temp._dedup_run holds them: url_options
# '' and strict_options 'keep_params,'.)
FUNCTIONS = ("SELECT count(dedup_invalid_text(url, content, parsed)), count(canonical_url(url, '')),"
             " count(url_domain(url, '')), count(url_wayback(url)), count(url_discard_reason(url, '')),"
             " count(canonical_url(url, 'keep_params,')), sum(length(CAST(content AS BLOB))), count(title),"
             " count(content_hash), count(datetime), count(crawled), count(category), count(length)"
             " FROM pages {where}")


def connect(db):
    c = sqlite3.connect(db)
    c.enable_load_extension(True)
    c.load_extension(EXT)
    return c


def timed(db, sql, repeat):
    c = connect(db)
    best = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        c.execute(sql).fetchall()
        best = min(best, time.perf_counter() - t)
    c.close()
    return best


def two_cores(db, repeat):
    best = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        halves = [subprocess.Popen([sys.executable, __file__, "--half", db, str(k)]) for k in (0, 1)]
        if any(p.wait() != 0 for p in halves):
            raise SystemExit("a half failed")
        best = min(best, time.perf_counter() - t)
    return best


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="20000,100000")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--half", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.half:
        db, k = args.half
        connect(db).execute(FUNCTIONS.format(where=f"WHERE rowid % 2 = {int(k)}")).fetchall()
        return
    print("| pages | read of phase 1's columns (s) | with phase 1's functions, one core (s) |"
          " the same on two cores (s) |")
    print("|---|---|---|---|")
    for n in args.sizes.split(","):
        db = corpus(n)
        read = timed(db, READ.format(where=""), args.repeat)
        one = timed(db, FUNCTIONS.format(where=""), args.repeat)
        two = two_cores(db, args.repeat)
        print(f"| {int(n):,} | {read:.3f} | {one:.3f} | {two:.3f} |")


if __name__ == "__main__":
    main()
