#!/usr/bin/env python3
"""Two builds of the extension, alternated on the same corpus: a whole
`dedup_run()` (default settings, or --settings) on a fresh copy read into
the page cache first, each run in its own process, the builds taking turns
(A B, B A, ...), so that the machine's drift falls on both. Prints each
run and the medians, and checks that both builds keep the same rows and
remove the same number of rows in each phase.

    cargo build --release --features loadable_extension
    git worktree add /tmp/before <commit> && (cd /tmp/before && cargo build --release --features loadable_extension)
    /usr/bin/python3 benches/builds.py --pages 100000 \\
        before=/tmp/before/target/release/libdedup after=target/release/libdedup [--reps 4]

A build is a path without `.so` whose file is named libdedup.so (SQLite
derives the entry point from the file's name).
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys

from corpora import DATA, corpus, html_corpus, warm

RUN = r'''
import json, sqlite3, sys, time
c = sqlite3.connect(sys.argv[1], isolation_level=None)
c.enable_load_extension(True)
c.load_extension(sys.argv[2])
t = time.perf_counter()
c.execute("SELECT dedup_run(?)", (sys.argv[3],)).fetchone()
seconds = time.perf_counter() - t
kept = c.execute("SELECT count(*) FROM pages").fetchone()[0]
phases = dict(c.execute("SELECT dedup_phase, count(*) FROM dedup_removed GROUP BY 1"))
print(json.dumps([seconds, kept, phases]))
'''


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("builds", nargs=2, metavar="NAME=PATH", help="two builds, e.g. before=/tmp/before/target/release/libdedup")
    ap.add_argument("--pages", default="100000", help="the builder corpus (benches/corpora.py), e.g. 100000 or ref20k")
    ap.add_argument("--reps", type=int, default=4, help="runs of each build")
    ap.add_argument("--settings", default="{}", help="dedup_run's settings, as JSON")
    ap.add_argument("--html", action="store_true",
                    help="the corpus as a crawler stores it: HTML content to parse, no parsed text (corpora.html_corpus)")
    args = ap.parse_args()
    builds = [b.split("=", 1) for b in args.builds]
    src = html_corpus(args.pages) if args.html else corpus(args.pages)
    work = os.path.join(DATA, "builds")
    runs = {name: [] for name, _ in builds}
    for rep in range(args.reps):
        for name, path in (builds if rep % 2 == 0 else builds[::-1]):
            shutil.rmtree(work, ignore_errors=True)
            os.makedirs(work)
            db = os.path.join(work, "run.db")
            shutil.copy(src, db)
            warm(db)
            out = subprocess.run([sys.executable, "-c", RUN, db, path, args.settings], capture_output=True, text=True)
            if out.returncode:
                sys.exit(f"{name}: {out.stderr.strip()}")
            seconds, kept, phases = json.loads(out.stdout)
            runs[name].append((seconds, kept, phases))
            print(f"{name}: {seconds:.2f} s, {kept} rows kept, removed by phase {phases}", flush=True)
    results = {name: (set(k for _, k, _ in r), {json.dumps(p, sort_keys=True) for _, _, p in r}) for name, r in runs.items()}
    same = len({json.dumps([sorted(k), sorted(p)]) for k, p in results.values()}) == 1
    (a, _), (b, _) = builds
    med = {name: statistics.median(s for s, _, _ in r) for name, r in runs.items()}
    print(f"median {a} {med[a]:.2f} s, {b} {med[b]:.2f} s: {b} / {a} = {med[b] / med[a]:.2f}; "
          f"same rows kept and removed by phase: {'yes' if same else 'NO'}")
    shutil.rmtree(work, ignore_errors=True)
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
