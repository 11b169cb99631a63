#!/usr/bin/env python3
"""What the change log's triggers (docs/incremental.md) cost a crawler's
writes: the same inserts, updates and deletes on a deduplicated table with
the triggers a run leaves, and on a copy with them dropped, in the same run
of this script (best of --repeat, each in a fresh copy).

    cargo build --release --features loadable_extension
    /usr/bin/python3 benches/change_log.py [--pages 100000] [--rows 20000]
"""
import argparse
import os
import shutil
import sqlite3
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "benches"))
from corpora import DATA, corpus  # noqa: E402

EXTENSION = os.environ.get("DEDUP_EXTENSION", os.path.join(ROOT, "target", "release", "libdedup"))


def writes(path, rows, cols):
    """Seconds to insert the rows, update as many, delete half as many
    (each in one transaction, as a crawler's batch)."""
    conn = sqlite3.connect(path, isolation_level=None)
    seconds = {}
    start = time.perf_counter()
    conn.execute("BEGIN")
    conn.executemany(f"INSERT INTO pages ({', '.join(cols)}) VALUES ({', '.join('?' * len(cols))})", rows)
    conn.execute("COMMIT")
    seconds["insert"] = time.perf_counter() - start
    ids = [r[0] for r in conn.execute("SELECT rowid FROM pages ORDER BY rowid DESC LIMIT ?", (len(rows),))]
    start = time.perf_counter()
    conn.execute("BEGIN")
    conn.executemany("UPDATE pages SET crawled = '2040-01-01' WHERE rowid = ?", [(i,) for i in ids])
    conn.execute("COMMIT")
    seconds["update"] = time.perf_counter() - start
    start = time.perf_counter()
    conn.execute("BEGIN")
    conn.executemany("DELETE FROM pages WHERE rowid = ?", [(i,) for i in ids[: len(ids) // 2]])
    conn.execute("COMMIT")
    seconds["delete"] = time.perf_counter() - start
    conn.close()
    return seconds


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--pages", type=int, default=100000)
    ap.add_argument("--rows", type=int, default=20000)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    src = sqlite3.connect(corpus(args.pages))
    cols = [r[1] for r in src.execute("PRAGMA table_info(pages)")]
    rows = src.execute(f"SELECT {', '.join(cols)} FROM pages ORDER BY rowid DESC LIMIT ?", (args.rows,)).fetchall()
    work = os.path.join(DATA, "change-log")
    os.makedirs(work, exist_ok=True)
    base = os.path.join(work, "base.db")
    if os.path.exists(base):
        os.remove(base)
    src.execute("ATTACH ? AS out", (base,))
    src.execute("CREATE TABLE out.pages AS SELECT * FROM main.pages WHERE rowid <= ?", (args.pages - args.rows,))
    src.close()
    conn = sqlite3.connect(base, isolation_level=None)
    conn.enable_load_extension(True)
    conn.load_extension(EXTENSION)
    kept = conn.execute("SELECT dedup_run()").fetchone()[0].splitlines()[0]
    conn.close()
    best = {"with": {}, "without": {}}
    for _ in range(args.repeat):
        for kind in ("with", "without"):
            path = os.path.join(work, f"{kind}.db")
            shutil.copy(base, path)
            if kind == "without":
                c = sqlite3.connect(path)
                for t in ("insert", "update", "delete"):
                    c.execute(f"DROP TRIGGER dedup_track_{t}")
                c.commit()
                c.close()
            for step, s in writes(path, rows, cols).items():
                best[kind][step] = min(best[kind].get(step, s), s)
            os.remove(path)
    os.remove(base)
    lines = [f"`/usr/bin/python3 benches/change_log.py --pages {args.pages} --rows {args.rows}`: the table after "
             f"`{kept}`; {args.rows} builder rows inserted, as many updated, half as many deleted, each batch in "
             f"one transaction; best of {args.repeat}.", "",
             "| write | with the triggers (s) | without (s) | with / without |", "|---|---|---|---|"]
    for step in ("insert", "update", "delete"):
        w, wo = best["with"][step], best["without"][step]
        lines.append(f"| {step} | {w:.3f} | {wo:.3f} | {w / wo:.2f} |")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
