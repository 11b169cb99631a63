#!/usr/bin/env python3
"""The list path (`sqlite_dedup.dedup(pages)`, the reference's
`Deduplicator()(pages)`) against a table run of the same pages
(`dedup_run()` on a database file holding them, in the same order), in
one process, alternated: wall seconds, and the same survivors. Pages from
the builder corpus (benches/corpora.py, seed 7) at each size, as dicts of
the reference's keys (the list path's input is in memory; the table run's
database is on disk, written before its clock starts).

    python3 benches/list_path.py [--pages 6000 36600] [--reps 3]
"""
import argparse
import os
import shutil
import sqlite3
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path = [p for p in sys.path if os.path.abspath(p or ".") != HERE]
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(ROOT, "tests", "python", "helpers"))
from corpora import DATA, corpus  # noqa: E402
import pipeline as P  # noqa: E402

sys.path.insert(0, P.package(os.path.join(DATA, "list-path-pkg")))
import sqlite_dedup  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--pages", type=int, nargs="+", default=[6000, 36600])
    ap.add_argument("--reps", type=int, default=3)
    args = ap.parse_args()
    print("# The list path against a table run of the same pages\n")
    print(f"`python3 benches/list_path.py --pages {' '.join(map(str, args.pages))} --reps {args.reps}`; "
          f"load average before: {os.getloadavg()[0]:.2f}.\n")
    print("| pages | table run, median s | list path, median s | list / table | same survivors |")
    print("|---|---|---|---|---|")
    for n in args.pages:
        src = corpus(n)
        conn = sqlite3.connect(src)
        conn.row_factory = sqlite3.Row
        pages = [dict(r) for r in conn.execute("SELECT * FROM pages ORDER BY rowid")]
        conn.close()
        table, listed, same = [], [], True
        for rep in range(args.reps):
            for which in (("table", "list") if rep % 2 == 0 else ("list", "table")):
                if which == "table":
                    db = os.path.join(DATA, f"list-path-{n}.db")
                    shutil.copy(src, db)
                    began = time.perf_counter()
                    c = P.connect(db)
                    c.execute("SELECT dedup_run()").fetchone()
                    kept = [r for (r,) in c.execute("SELECT rowid FROM pages ORDER BY rowid")]
                    c.close()
                    table.append(time.perf_counter() - began)
                    os.remove(db)
                else:
                    began = time.perf_counter()
                    out = sqlite_dedup.dedup(pages)
                    listed.append(time.perf_counter() - began)
                    got = [p["_index"] + 1 for p in out["kept"]]
            same = same and got == kept
        t, lp = statistics.median(table), statistics.median(listed)
        print(f"| {n:,} | {t:.2f} | {lp:.2f} | {lp / t:.2f}x | {'yes' if same else 'NO'} |")


if __name__ == "__main__":
    main()
