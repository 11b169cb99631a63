#!/usr/bin/env python3
"""A new crawl against last month's database: through that database's
index against copying its pages, in one run of this script.

Last month: the N-page builder corpus (seed 7), deduplicated once (its
index written). This week: M pages, half another seed's pages, half near
copies of last month's kept pages (a sentence appended, another URL). Each
run is `dedup_run('{"against": ...}')` on a fresh copy of this week's table,
in a process of its own: against last month's file as it is (planned there,
through its index), and against a copy of it whose index is dropped (its
pages copied and compared as one table with this week's), the two
alternated. Both must leave the same pages and archive; last month's file
must be byte for byte as before.

  cargo build --release --features loadable_extension
  /usr/bin/python3 benches/against.py [--pages 310000] [--new 10000] [--reps 2] [--mode window]
"""
import argparse
import hashlib
import json
import os
import random
import shutil
import sqlite3
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "python", "helpers"))
import pipeline as P  # noqa: E402
from corpora import DATA, corpus  # noqa: E402
from similar import other_corpus  # noqa: E402

RUN = r"""
import json, sqlite3, sys, time
c = sqlite3.connect(sys.argv[1], isolation_level=None)
c.enable_load_extension(True)
c.load_extension(sys.argv[2])
t = time.perf_counter()
c.execute("SELECT dedup_run(?)", (sys.argv[3],)).fetchone()
print(json.dumps([time.perf_counter() - t, c.execute("SELECT report FROM dedup_runs").fetchone()[0]]))
"""


def digest(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(1 << 24):
            h.update(block)
    return h.hexdigest()


def state(path):
    c = sqlite3.connect(path)
    out = (c.execute("SELECT dedup_rowid, dedup_phase, dedup_survivor, round(dedup_ratio, 12) FROM dedup_removed "
                     "ORDER BY 1").fetchall(),
           c.execute("SELECT rowid, url FROM pages ORDER BY rowid").fetchall())
    c.close()
    return hashlib.sha1(repr(out).encode()).hexdigest()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--pages", type=int, default=310000)
    ap.add_argument("--new", type=int, default=10000)
    ap.add_argument("--reps", type=int, default=2)
    ap.add_argument("--mode", default="window")
    args = ap.parse_args()
    work = os.path.join(DATA, "against")
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    settings = {"near_mode": args.mode}
    old = os.path.join(work, "last-month.db")
    shutil.copy(corpus(args.pages), old)
    conn = P.connect(old)
    began = time.perf_counter()
    conn.execute("SELECT dedup_run(?)", (json.dumps(settings),)).fetchone()
    first = time.perf_counter() - began
    kept = conn.execute("SELECT count(*) FROM pages").fetchone()[0]
    names = [r[1] for r in conn.execute("PRAGMA table_info(pages)")]
    copies = conn.execute(f"SELECT {', '.join(names)} FROM pages WHERE length(content) > 200 ORDER BY random() "
                          "LIMIT ?", (args.new // 2,)).fetchall()
    conn.close()
    copied = os.path.join(work, "last-month-copied.db")
    shutil.copy(old, copied)
    with sqlite3.connect(copied) as c:
        c.execute("DROP TABLE dedup_index_state")
    other = sqlite3.connect(other_corpus(max(1000, args.new)))
    fresh = other.execute(f"SELECT {', '.join(names)} FROM pages ORDER BY random() LIMIT ?",
                          (args.new - len(copies),)).fetchall()
    other.close()
    week = os.path.join(work, "this-week.db")
    c = sqlite3.connect(week)
    c.execute(f"CREATE TABLE pages ({', '.join(names)})")
    rows = []
    for row in copies:
        page = dict(zip(names, row))
        page["url"] = page["url"] + "?week=1"
        page["content"] = page["content"] + " One more sentence, added this week."
        page["parsed"] = page["content_hash"] = page["length"] = None
        rows.append([page[n] for n in names])
    rows += [list(r) for r in fresh]
    random.Random(1).shuffle(rows)
    c.executemany(f"INSERT INTO pages VALUES ({', '.join('?' * len(names))})", rows)
    c.commit()
    c.close()
    before = digest(old)
    seconds = {"through its index": [], "copied": []}
    states = {}
    for rep in range(args.reps):
        order = [("through its index", old), ("copied", copied)]
        for label, there in (order if rep % 2 == 0 else order[::-1]):
            db = os.path.join(work, "run.db")
            shutil.copy(week, db)
            out = subprocess.run([sys.executable, "-c", RUN, db, P.EXTENSION, json.dumps(dict(settings, against=there))],
                                 capture_output=True, text=True)
            if out.returncode:
                raise SystemExit(out.stderr)
            s, report = json.loads(out.stdout)
            assert json.loads(report)["against"]["index"] == (label == "through its index"), report
            seconds[label].append(s)
            states[label] = state(db)
    assert digest(old) == before, "last month's file changed"
    same = states["through its index"] == states["copied"]
    med = {k: sorted(v)[len(v) // 2] for k, v in seconds.items()}
    print(f"# A new crawl against last month's database ({time.strftime('%Y-%m-%d')})\n")
    print(f"Last month: the {args.pages:,}-page builder corpus, {args.mode} mode, {kept:,} pages kept "
          f"(its first run {first:.0f} s). This week: {args.new:,} pages, half near copies of last month's.\n")
    print("| against | seconds (each run) | median | / through its index |")
    print("|---|---|---|---|")
    for k, v in seconds.items():
        print(f"| {k} | {', '.join(f'{x:.2f}' for x in v)} | {med[k]:.2f} | {med[k] / med['through its index']:.1f} |")
    print(f"\nSame pages and archive both ways: {'yes' if same else 'NO'}; last month's file unchanged: yes.")
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
