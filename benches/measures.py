"""Which measure suits which crawl: `lev_ratio > 0.9` (the default) against
Text::DeDuper's resemblance (5-word shingles, > 0.2), in window and lsh
mode, on the same corpora, in one run.

For each corpus and setting: the run's time (best of `--reps`), the rows
phase 4 removes, and for those removals, each measured with the other
measure against the row it was compared with (its anchor, or its
survivor): how many the other measure would also call near, and how much
longer the longer text of the pair is (median; 1.0 is one length). A
corpus: parity-5k (../shared/corpus, real revisions and syndicated copies
with chrome), and any `--db` given (e.g. the builder's 20k corpus).

    /usr/bin/python3 benches/measures.py [--db bench-data/open-20k.db] [--out benches/results/measures-DATE.md]
"""
import argparse
import json
import os
import shutil
import sqlite3
import statistics
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXTENSION = os.environ.get("DEDUP_EXTENSION", os.path.join(ROOT, "target", "release", "libdedup"))
CORPUS = os.path.join(ROOT, "..", "shared", "corpus", "parity-5k.db")

SETTINGS = [
    ("window, lev_ratio > 0.9", {}),
    ("window, resemblance > 0.2", {"measure": "resemblance"}),
    ("lsh, lev_ratio > 0.9", {"near_mode": "lsh"}),
    ("lsh, resemblance > 0.2", {"measure": "resemblance", "near_mode": "lsh"}),
]


def connect(path):
    conn = sqlite3.connect(path, isolation_level=None)
    conn.enable_load_extension(True)
    conn.load_extension(EXTENSION)
    return conn


def measure(source, settings, reps, scratch):
    best = None
    for _ in range(reps):
        db = os.path.join(scratch, "run.db")
        shutil.copy(source, db)
        conn = connect(db)
        started = time.perf_counter()
        conn.execute("SELECT dedup_run(?)", (json.dumps(settings),)).fetchone()
        took = time.perf_counter() - started
        best = took if best is None else min(best, took)
        if _ + 1 < reps:
            conn.close()
    resemblance = settings.get("measure") == "resemblance"
    # Each phase-4 removal against the row its ratio was measured with.
    pairs = conn.execute(
        "SELECT d.dedup_rowid, d.dedup_ratio, coalesce(d.parsed, ''), coalesce(s.parsed, a.parsed, '') "
        "FROM dedup_removed AS d LEFT JOIN pages AS s ON s.rowid = d.dedup_survivor "
        "LEFT JOIN dedup_removed AS a ON a.dedup_rowid = d.dedup_survivor AND a.dedup_run = d.dedup_run "
        "WHERE d.dedup_phase = 4").fetchall()
    also, lengths = 0, []
    for _, _, a, b in pairs:
        if resemblance:
            other = conn.execute("SELECT lev_ratio(?, ?)", (a, b)).fetchone()[0] > 0.9
        else:
            other = conn.execute("SELECT shingle_resemblance(?, ?, 5)", (a, b)).fetchone()[0] > 0.2
        also += other
        lengths.append(max(len(a), len(b)) / max(1, min(len(a), len(b))))
    conn.close()
    return best, len(pairs), also, statistics.median(lengths) if lengths else float("nan")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", action="append", default=[], help="another corpus (a pages table)")
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--out", help="write the table here too (Markdown)")
    args = parser.parse_args()
    corpora = [CORPUS] + args.db
    lines = ["| corpus | setting | best s | phase-4 removals | the other measure agrees | median length ratio |",
             "|---|---|---|---|---|---|"]
    with tempfile.TemporaryDirectory() as scratch:
        for corpus in corpora:
            for name, settings in SETTINGS:
                took, removed, also, ratio = measure(corpus, settings, args.reps, scratch)
                lines.append(f"| {os.path.basename(corpus)} | {name} | {took:.2f} | {removed} | "
                             f"{also} ({also / max(removed, 1):.0%}) | {ratio:.2f} |")
                print(lines[-1], flush=True)
    load = os.getloadavg()
    text = "\n".join(lines) + f"\n\nLoad average at the end: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}.\n"
    if args.out:
        with open(args.out, "w") as f:
            f.write(text)
    print(text)


if __name__ == "__main__":
    main()
