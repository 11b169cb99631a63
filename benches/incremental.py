#!/usr/bin/env python3
"""Incremental runs against full runs, in the same run of this script
(docs/incremental.md).

A builder corpus of N pages, less the rows held out for the batches, is
deduplicated once (a full run: the kept table). Then for each batch size
(a share of the kept table): half new pages (held out from the corpus),
half copies of kept pages under other URLs (a mirror host; every other one
with a word added: a near copy). The database with the batch is copied;
one copy runs incrementally (the default), the other `{"full": true}`; each
run in its own process (seconds of dedup_run, peak RSS). Both must leave
the same table and archive. Also: the index's size on disk per kept page.
With `--also OTHER` (another build of the extension, e.g. the last
commit's), a third copy runs incrementally with that build, in the same
pair, and must leave the same table and archive too: this build's time
against that one's. Each pair also times the batch's write floor (issue
29's, benches/floors.py: the incremental run's own removals archived and
deleted and its URL rewrites, as plain SQL in one transaction) on a third
copy read into the page cache alike, after the full run: what any
implementation must write for this batch, whatever it computes. Disk: the
corpus, the kept table, the batch and three copies of it (four with
`--also`); at 1M pages each is 7.4 GB.

    cargo build --release --features loadable_extension
    /usr/bin/python3 benches/incremental.py [--pages 100000] [--batches 0.01,0.1] [--mode lsh] [--repeat 3] [--also /tmp/old/libdedup]
"""
import argparse
import hashlib
import json
import os
import random
import shutil
import statistics
import sqlite3
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "benches"))
from corpora import DATA, corpus, evict, warm  # noqa: E402
from floors import floor_write  # noqa: E402

EXTENSION = os.environ.get("DEDUP_EXTENSION", os.path.join(ROOT, "target", "release", "libdedup"))

RUN = r"""
import json, resource, sqlite3, sys, time
conn = sqlite3.connect(sys.argv[1], isolation_level=None)
conn.enable_load_extension(True)
conn.load_extension(sys.argv[2])
start = time.perf_counter()
conn.execute("SELECT dedup_run(?)", (sys.argv[3],)).fetchone()
seconds = time.perf_counter() - start
report = json.loads(conn.execute("SELECT report FROM dedup_runs ORDER BY run DESC LIMIT 1").fetchone()[0])
print(json.dumps({"seconds": seconds, "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                  "report": report}))
"""


def run(path, settings, extension=EXTENSION):
    out = subprocess.run([sys.executable, "-c", RUN, path, extension, json.dumps(settings)],
                         check=True, capture_output=True, text=True)
    sys.stderr.write(out.stderr)  # (DEDUP_TRACE=1: the extension's seconds per step)
    return json.loads(out.stdout)


def writes(path):
    """The last run's removed rowids and its survivors' new URLs (what the
    write floor writes again)."""
    conn = sqlite3.connect(path)
    last = conn.execute("SELECT max(run) FROM dedup_runs").fetchone()[0]
    removed = [r for (r,) in conn.execute("SELECT dedup_rowid FROM dedup_removed WHERE dedup_run = ?", (last,))]
    rewritten = conn.execute("SELECT w.dedup_rowid, p.url FROM dedup_rewritten AS w JOIN pages AS p "
                             "ON p.rowid = w.dedup_rowid WHERE w.name = 'url' AND w.dedup_run = ?",
                             (last,)).fetchall()
    conn.close()
    return removed, rewritten


def state(path):
    """A hash of the table and of the last run's archive."""
    conn = sqlite3.connect(path)
    h = hashlib.sha1()
    for row in conn.execute("SELECT rowid, * FROM pages ORDER BY rowid"):
        h.update(repr(row).encode())
    last = conn.execute("SELECT max(run) FROM dedup_runs").fetchone()[0]
    for row in conn.execute("SELECT dedup_rowid, dedup_phase, dedup_reason, dedup_survivor, dedup_ratio "
                            "FROM dedup_removed WHERE dedup_run = ? ORDER BY dedup_rowid", (last,)):
        h.update(repr(row).encode())
    return h.hexdigest()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--pages", type=int, default=100000)
    ap.add_argument("--batches", default="0.01,0.1")
    ap.add_argument("--mode", default="window", choices=["window", "lsh"], help="near_mode")
    ap.add_argument("--repeat", type=int, default=1,
                    help="pairs of runs per batch, each on fresh copies (this machine class is noisy)")
    ap.add_argument("--also", help="another build of the extension (its path without .so): "
                    "an incremental run with it too, on a third copy, in each pair")
    args = ap.parse_args()
    settings = {"near_mode": args.mode}
    shares = [float(x) for x in args.batches.split(",")]
    work = os.path.join(DATA, "incremental")
    os.makedirs(work, exist_ok=True)
    base = os.path.join(work, f"kept-{args.pages}.db")
    held = max(shares) * args.pages / 2
    shutil.copy(corpus(args.pages), base)
    conn = sqlite3.connect(base, isolation_level=None)
    cols = [r[1] for r in conn.execute("PRAGMA table_info(pages)")]
    # Held out for the batches' new pages: the last rows (the builder's order is random).
    top = conn.execute("SELECT max(rowid) FROM pages").fetchone()[0]
    cut = int(top - held)
    conn.execute("CREATE TABLE held AS SELECT * FROM pages WHERE rowid > ?", (cut,))
    conn.execute("DELETE FROM pages WHERE rowid > ?", (cut,))
    conn.close()
    first = run(base, settings)
    kept = first["report"]["rows_after"]
    conn = sqlite3.connect(base)
    index_bytes = sum(r[0] for r in conn.execute(
        "SELECT sum(pgsize) FROM dbstat WHERE name LIKE 'dedup_index%'"))
    conn.close()
    lines = [f"# Incremental runs ({time.strftime('%Y-%m-%d')})", "",
             f"`/usr/bin/python3 benches/incremental.py --pages {args.pages} --mode {args.mode} --repeat {args.repeat}`: "
             f"near_mode {args.mode}, builder corpus of {args.pages} pages "
             f"(seed 7), {int(held)} held out; the first (full) run keeps {kept} pages in {first['seconds']:.1f} s. "
             f"Index: {index_bytes / kept:.0f} bytes per kept page ({index_bytes / 1e6:.1f} MB).", "",
             "| batch | rows added | incremental run (s) | full run (s) | incremental / full | write floor (s) "
             "| incremental / write floor | write floor / full | peak RSS incr / full (MB) "
             "| removed (incr) | same table and archive |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for share in shares:
        n = int(share * kept)
        rng = random.Random(int(share * 1000))
        path = os.path.join(work, f"batch-{share}.db")
        shutil.copy(base, path)
        conn = sqlite3.connect(path, isolation_level=None)
        conn.execute("BEGIN")
        conn.execute(f"INSERT INTO pages ({', '.join(cols)}) SELECT {', '.join(cols)} FROM held LIMIT ?", (n // 2,))
        ids = [r[0] for r in conn.execute("SELECT rowid FROM pages WHERE rowid <= ?", (cut,))]
        for k, rowid in enumerate(rng.sample(ids, n - n // 2)):
            row = list(conn.execute(f"SELECT {', '.join(cols)} FROM pages WHERE rowid = ?", (rowid,)).fetchone())
            row[cols.index("url")] = f"https://mirror.example.net/{k}/" + (row[cols.index("url")] or "").split("/")[-1]
            if k % 2 and row[cols.index("parsed")]:
                row[cols.index("parsed")] += " mirrored"
                row[cols.index("content_hash")] = None
            conn.execute(f"INSERT INTO pages ({', '.join(cols)}) VALUES ({', '.join('?' * len(cols))})", row)
        conn.execute("COMMIT")
        conn.close()
        ratios, against, over_floor, floor_share = [], [], [], []
        for rep in range(args.repeat):
            inc_path, full_path = path + ".inc.db", path + ".full.db"
            shutil.copy(path, inc_path)
            shutil.copy(path, full_path)
            # (The copies written out first: the runs' commits would flush
            # them. Then both runs start from the same page cache: their
            # databases read whole into it, the base and the batch dropped.
            # Four copies of a 1M-page database are more than this
            # machine's memory: without this, the incremental run's random
            # reads went to the disk while the full run read from the cache.)
            evict(base, path, inc_path, full_path)
            if args.also:
                # (The other build's copy is run first, from the same page
                # cache; dropped before the full run's copy is read in. The
                # copy reads the batch into the cache: dropped too, or the
                # two copies read in next would no longer fit beside it.)
                other_path = path + ".other.db"
                shutil.copy(path, other_path)
                evict(path, other_path)
                warm(other_path)
                other = run(other_path, settings, args.also)
                evict(other_path)
            warm(inc_path, full_path)
            inc = run(inc_path, settings)
            full = run(full_path, dict(settings, full=True))
            assert inc["report"]["kind"] == "incremental", inc["report"]
            same = state(inc_path) == state(full_path)
            # (The write floor on a third copy, read into the cache once
            # the full run's copy is dropped from it.)
            removed_ids, rewritten = writes(inc_path)
            floor_path = path + ".floor.db"
            shutil.copy(path, floor_path)
            evict(path, inc_path, full_path, floor_path)
            warm(floor_path)
            floor = floor_write(floor_path, removed_ids, rewritten, None)
            over_floor.append(inc["seconds"] / floor)
            floor_share.append(floor / full["seconds"])
            if args.also:
                same = same and state(other_path) == state(full_path)
                os.remove(other_path)
                against.append(inc["seconds"] / other["seconds"])
            removed = sum(inc["report"]["removed"].values())
            ratios.append(inc["seconds"] / full["seconds"])
            label = f"{share * 100:g}% of the kept table" if rep == 0 else f"(again, {rep + 1})"
            lines.append(f"| {label} | {n} | {inc['seconds']:.2f} | {full['seconds']:.2f} | "
                         f"{ratios[-1]:.3f} | {floor:.2f} | {over_floor[-1]:.2f} | {floor_share[-1]:.3f} | "
                         f"{inc['rss_mb']:.0f} / {full['rss_mb']:.0f} | {removed} | {same} |")
            phases = ", ".join(f"{k} {inc['report']['seconds'][k]:.2f}/{full['report']['seconds'][k]:.2f}"
                               for k in inc["report"]["seconds"])
            lines.append(f"| | seconds per phase, incremental/full: {phases} | | | | | | | | | |")
            if args.also:
                lines.append(f"| | this build / `--also` build, incremental: {inc['seconds']:.2f} / "
                             f"{other['seconds']:.2f} s = {against[-1]:.2f} | | | | | | | | | |")
            os.remove(inc_path)
            os.remove(full_path)
        if len(ratios) > 1:
            lines.append(f"| {share * 100:g}%: median of {len(ratios)} pairs | | | | "
                         f"{statistics.median(ratios):.3f} | | {statistics.median(over_floor):.2f} | "
                         f"{statistics.median(floor_share):.3f} | | | |")
        if against:
            lines.append(f"| {share * 100:g}%: this build / `--also` build, median of {len(against)} | | | | "
                         f"{statistics.median(against):.2f} | | | | | | |")
        os.remove(path)
    print("\n".join(lines))


if __name__ == "__main__":
    main()
