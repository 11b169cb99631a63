"""Drift: removed rows whose final survivor (following survivors that were
removed in turn, as dedup_why does) is at or below the threshold, measured
with lev_ratio on the texts; and the phase-4 removals of each mode.
Window mode keeps the reference's election (it drifts), and so does lsh
mode's 'chain' election; lsh_election = 'direct' (lsh mode's default) must
not. Also: what a second run of the same settings removes, and the direct
election's recall against the chain's (phase-4 removals).

    python3 benches/drift.py [DB ...]   (default: ../shared/corpus/parity-5k.db)
"""
import json
import os
import shutil
import sqlite3
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXTENSION = os.environ.get("DEDUP_EXTENSION", os.path.join(ROOT, "target", "release", "libdedup"))
MODES = [("window", {}), ("lsh, chain", {"near_mode": "lsh", "lsh_election": "chain"}),
         ("lsh, direct (default)", {"near_mode": "lsh"})]


def measure(db, settings, threshold=0.9):
    work = tempfile.mkdtemp()
    path = os.path.join(work, "c.db")
    shutil.copy(db, path)
    conn = sqlite3.connect(path, isolation_level=None)
    conn.enable_load_extension(True)
    conn.load_extension(EXTENSION)
    start = time.perf_counter()
    conn.execute("SELECT dedup_run(?)", (json.dumps(settings),)).fetchone()
    seconds = time.perf_counter() - start
    removed4 = conn.execute("SELECT count(*) FROM dedup_removed WHERE dedup_phase = 4").fetchone()[0]
    # Each phase-4 removal against its final survivor's text (the view
    # materialized once: joined, it would be evaluated per row).
    conn.execute("CREATE TEMP TABLE why AS SELECT * FROM dedup_why")
    below = conn.execute(
        """SELECT count(*), sum(w.final_survivor <> w.survivor) FROM temp.why AS w
           JOIN dedup_removed AS d ON d.dedup_rowid = w.rowid AND d.dedup_run = w.run
           JOIN pages AS p ON p.rowid = w.final_survivor
           WHERE w.phase = 4
             AND lev_ratio(coalesce(d.parsed, d.content), coalesce(p.parsed, p.content)) <= ?1""",
        (threshold,)).fetchone()
    chained = conn.execute("SELECT count(*) FROM temp.why WHERE phase = 4 AND final_survivor <> survivor").fetchone()[0]
    conn.execute("SELECT dedup_run(?)", (json.dumps(settings),)).fetchone()
    second = conn.execute("SELECT count(*) FROM dedup_removed WHERE dedup_run = 2").fetchone()[0]
    conn.close()
    shutil.rmtree(work)
    return removed4, below[0], chained, seconds, second


def main(dbs):
    print("| corpus | mode | phase-4 removals | final survivor at or below 0.9 | removals whose survivor left in turn "
          "| run (s) | a second run removes |")
    print("|---|---|---|---|---|---|---|")
    recall = []
    for db in dbs:
        found = {}
        for name, settings in MODES:
            removed4, below, chained, seconds, second = measure(db, settings)
            found[name] = removed4
            pct = 100 * below / removed4 if removed4 else 0
            print(f"| {os.path.basename(db)} | {name} | {removed4} | {below} ({pct:.1f}%) | {chained} | {seconds:.2f} "
                  f"| {second} |")
        recall.append(f"{os.path.basename(db)}: direct removes {found[MODES[2][0]] / found[MODES[1][0]]:.1%} of "
                      "the chain's phase-4 count")
    print("\nRecall against the chain election: " + "; ".join(recall) + ".")


if __name__ == "__main__":
    main(sys.argv[1:] or [os.path.join(ROOT, "..", "shared", "corpus", "parity-5k.db")])
