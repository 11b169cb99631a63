#!/usr/bin/env python3
"""A corpus file through `sqlite-dedup dedup` against a table run on the
same rows (issue 79's goal: within 1.5x at 100k): the builder corpus
exported as JSONL once, then, alternated, each in its own process, wall
seconds of (a) `dedup_run()` on a copy of the table, and (b) the command
from the JSONL file to a JSONL file (reading, the run through a temporary
database, writing). Checks both keep the same rows.

    cargo build --release --features loadable_extension
    /usr/bin/python3 benches/files.py --pages 100000 [--reps 3]
"""
import argparse
import json
import os
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time

from corpora import DATA, ROOT, corpus

EXTENSION = os.path.join(ROOT, "target", "release", "libdedup")
TABLE = r'''
import sqlite3, sys, time
c = sqlite3.connect(sys.argv[1], isolation_level=None)
c.enable_load_extension(True)
c.load_extension(sys.argv[2])
t = time.perf_counter()
c.execute("SELECT dedup_run()").fetchone()
print(time.perf_counter() - t, c.execute("SELECT count(*) FROM pages").fetchone()[0])
'''


def export(db, path):
    conn = sqlite3.connect(db)
    cols = [r[1] for r in conn.execute("PRAGMA table_info(pages)")]
    with open(path, "w", encoding="utf-8") as f:
        for row in conn.execute("SELECT * FROM pages ORDER BY rowid"):
            f.write(json.dumps(dict(zip(cols, row)), ensure_ascii=False) + "\n")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--pages", type=int, default=100000)
    ap.add_argument("--reps", type=int, default=3)
    args = ap.parse_args()
    db = corpus(args.pages)
    jsonl = os.path.join(DATA, f"{args.pages}.jsonl")
    if not os.path.exists(jsonl):
        export(db, jsonl)
    package = tempfile.mkdtemp()
    shutil.copytree(os.path.join(ROOT, "python", "sqlite_dedup"), os.path.join(package, "sqlite_dedup"))
    shutil.copy(EXTENSION + ".so", os.path.join(package, "sqlite_dedup", "dedup0.so"))
    env = dict(os.environ, PYTHONPATH=package)
    work = tempfile.mkdtemp(dir=DATA)
    times = {"table": [], "file": []}
    kept = {}
    print(f"load average {os.getloadavg()[0]:.2f}; {args.pages} pages, {os.path.getsize(jsonl) / 1e6:.0f} MB of JSONL")
    for rep in range(args.reps):
        for which in (("table", "file") if rep % 2 == 0 else ("file", "table")):
            if which == "table":
                copy = os.path.join(work, "t.db")
                shutil.copy(db, copy)
                out = subprocess.run([sys.executable, "-c", TABLE, copy, EXTENSION], capture_output=True,
                                     text=True, check=True).stdout.split()
                seconds, kept["table"] = float(out[0]), int(out[1])
                os.remove(copy)
            else:
                out = os.path.join(work, "out.jsonl")
                t = time.perf_counter()
                subprocess.run([sys.executable, "-m", "sqlite_dedup", "dedup", jsonl, "-o", out], env=env,
                               check=True, capture_output=True)
                seconds = time.perf_counter() - t
                with open(out, encoding="utf-8") as f:
                    kept["file"] = sum(1 for _ in f)
                os.remove(out)
            times[which].append(seconds)
            print(f"{which}: {seconds:.2f} s, {kept[which]} kept")
    a, b = statistics.median(times["table"]), statistics.median(times["file"])
    print(f"median table run {a:.2f} s, file {b:.2f} s: file / table = {b / a:.2f}; "
          f"same rows kept: {'yes' if kept['table'] == kept['file'] else 'NO'}")
    print(f"load average {os.getloadavg()[0]:.2f}")
    shutil.rmtree(work)
    shutil.rmtree(package)


if __name__ == "__main__":
    main()
