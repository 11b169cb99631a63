#!/usr/bin/env python3
"""The Spark layer against dedup_run() on the same pages, in the same run of
this script (docs/scale-out.md).

A builder corpus of N pages is cut into shards of unequal sizes (contiguous
rowid ranges, rowids kept: the shards in order are the database). Each run
is its own process, timed from its start (the JVM's start included for
Spark): dedup_run() on the whole database, then `sqlite_dedup.spark.run` on
copies of the shards in local[1] and local[2]. For Spark: bytes shuffled
(written) per page, from Spark's monitoring API, and the peak memory and the
CPU seconds of the whole process tree (driver, JVM, Python workers),
sampled: CPU seconds over seconds is the cores a run kept busy. A run that
needs at least local[1]'s CPU seconds cannot, on a machine of C cores, go
faster than C / (local[1]'s cores busy) times local[1]. Every run must
leave the same pages and archive as dedup_run().

    cargo build --release --features loadable_extension
    /usr/bin/python3 benches/spark.py [--pages 100000] [--shards 4] [--masters 'local[1],local[2]']
"""
import argparse
import hashlib
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "benches"))
from corpora import DATA, corpus  # noqa: E402

EXTENSION = os.environ.get("DEDUP_EXTENSION", os.path.join(ROOT, "target", "release", "libdedup"))

SINGLE = r"""
import sqlite3, sys
conn = sqlite3.connect(sys.argv[1], isolation_level=None)
conn.enable_load_extension(True)
conn.load_extension(sys.argv[2])
conn.execute("SELECT dedup_run(?)", (sys.argv[3],)).fetchone()
"""

SPARK = r"""
import json, os, sys, urllib.request
from pyspark.sql import SparkSession
from sqlite_dedup import spark as dedup_spark
master, settings, shards = sys.argv[1], json.loads(sys.argv[2]), sys.argv[3:]
cores = int(master[6:-1])
spark = (SparkSession.builder.master(master).config("spark.ui.port", "4140")
         .config("spark.ui.showConsoleProgress", "false").config("spark.driver.memory", "8g")
         .config("spark.sql.shuffle.partitions", str(4 * cores)).getOrCreate())
spark.sparkContext.setLogLevel("ERROR")
report = dedup_spark.run(spark, shards, settings)
app = spark.sparkContext.applicationId
stages = json.load(urllib.request.urlopen(f"{spark.sparkContext.uiWebUrl}/api/v1/applications/{app}/stages"))
report["shuffle_write_bytes"] = sum(s.get("shuffleWriteBytes", 0) for s in stages)
spark.stop()
print(json.dumps({k: v for k, v in report.items() if k != "runs"}))
"""


def tree(pid):
    """`pid` and its descendants, now."""
    children = {}
    for p in os.listdir("/proc"):
        if p.isdigit():
            try:
                with open(f"/proc/{p}/stat") as f:
                    ppid = int(f.read().rsplit(")", 1)[1].split()[1])
                children.setdefault(ppid, []).append(int(p))
            except OSError:
                pass
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        todo += children.get(p, [])
    return out


def tree_rss(pids):
    """Resident MB of the processes `pids`, now."""
    total = 0
    for p in pids:
        try:
            with open(f"/proc/{p}/statm") as f:
                total += int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
        except OSError:
            pass
    return total / 1e6


def cpu_seconds(pid):
    """User and system CPU seconds process `pid` has used so far (its own,
    not its children's), or None once it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def timed(argv, env):
    """(seconds, peak MB of the process tree, CPU seconds of the process
    tree, stdout) of a command. CPU seconds: each process's last reading,
    sampled every 0.5 s (a process that ends loses at most its last half
    second), so CPU seconds / seconds is the cores the run kept busy."""
    start = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    peak = [0.0]
    used = {}

    def sample():
        while proc.poll() is None:
            pids = tree(proc.pid)
            peak[0] = max(peak[0], tree_rss(pids))
            for p in pids:
                c = cpu_seconds(p)
                if c is not None:
                    used[p] = max(used.get(p, 0.0), c)
            time.sleep(0.5)

    t = threading.Thread(target=sample)
    t.start()
    out, err = proc.communicate()
    seconds = time.perf_counter() - start
    t.join()
    if proc.returncode:
        raise SystemExit(f"{argv[:3]} failed:\n{err[-3000:]}")
    return seconds, peak[0], sum(used.values()), out


def split(src, folder, n):
    """n shards of unequal sizes (1, 2, ..., n parts), rowids kept."""
    s = sqlite3.connect(src)
    ddl = s.execute("SELECT sql FROM sqlite_schema WHERE name = 'pages'").fetchone()[0]
    ids = [r[0] for r in s.execute("SELECT rowid FROM pages ORDER BY rowid")]
    cols = ", ".join(f'"{r[1]}"' for r in s.execute("PRAGMA table_info(pages)"))
    s.close()
    weights = list(range(1, n + 1))
    bounds, acc = [0], 0
    for w in weights:
        acc += w
        bounds.append(len(ids) * acc // sum(weights))
    paths = []
    for i in range(n):
        path = os.path.join(folder, f"shard-{i + 1}.db")
        c = sqlite3.connect(path)
        c.execute(ddl)
        c.execute("ATTACH ? AS src", (src,))
        hi = ids[bounds[i + 1]] if bounds[i + 1] < len(ids) else ids[-1] + 1
        c.execute(f"INSERT INTO pages (rowid, {cols}) SELECT rowid, {cols} FROM src.pages "
                  "WHERE rowid >= ? AND rowid < ?", (ids[bounds[i]], hi))
        c.commit()
        c.close()
        paths.append(path)
    return paths


def state(paths):
    """A hash of the pages (by rowid) and of the archive, over the shards."""
    pages, removed = [], []
    for p in paths:
        c = sqlite3.connect(p)
        pages += c.execute("SELECT rowid, url, parsed FROM pages").fetchall()
        elsewhere = dict(c.execute("SELECT dedup_rowid, note FROM dedup_notes WHERE kind = 'survivor elsewhere'")
                         if c.execute("SELECT 1 FROM sqlite_schema WHERE name = 'dedup_notes'").fetchone() else [])
        for rid, ph, sv, ra in c.execute("SELECT dedup_rowid, dedup_phase, dedup_survivor, dedup_ratio FROM dedup_removed"):
            removed.append((rid, ph, int(elsewhere[rid].rsplit(" ", 1)[1]) if rid in elsewhere else sv,
                            None if ra is None else round(ra, 12)))
        c.close()
    h = hashlib.sha1(repr(sorted(pages)).encode())
    h.update(repr(sorted(removed)).encode())
    return h.hexdigest()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--pages", type=int, default=100000)
    ap.add_argument("--shards", type=int, default=4)
    ap.add_argument("--masters", default="local[1],local[2]")
    ap.add_argument("--settings", default="{}", help="the settings of every run, as JSON (e.g. near_mode lsh)")
    args = ap.parse_args()
    src = corpus(args.pages)
    work = os.path.join(DATA, "spark")
    os.makedirs(work, exist_ok=True)
    pkg = tempfile.mkdtemp(dir=work)
    shutil.copytree(os.path.join(ROOT, "python", "sqlite_dedup"), os.path.join(pkg, "sqlite_dedup"))
    shutil.copy(EXTENSION + ".so", os.path.join(pkg, "sqlite_dedup", "dedup0.so"))
    env = dict(os.environ, PYTHONPATH=pkg, PYSPARK_PYTHON=sys.executable, SQLITE_DEDUP_EXTENSION=EXTENSION)
    whole = os.path.join(work, "whole.db")
    shutil.copy(src, whole)
    base = os.path.join(work, "base")
    shutil.rmtree(base, ignore_errors=True)
    os.makedirs(base)
    shards = split(src, base, args.shards)
    single_s, single_mb, single_cpu, _ = timed([sys.executable, "-c", SINGLE, whole, EXTENSION, args.settings], env)
    expected = state([whole])
    rows = []
    for master in args.masters.split(","):
        run_dir = os.path.join(work, master.replace("[", "-").replace("]", ""))
        shutil.rmtree(run_dir, ignore_errors=True)
        os.makedirs(run_dir)
        copies = []
        for p in shards:
            copies.append(os.path.join(run_dir, os.path.basename(p)))
            shutil.copy(p, copies[-1])
        seconds, mb, cpu, out = timed([sys.executable, "-c", SPARK, master, args.settings, *copies], env)
        report = json.loads(out.strip().splitlines()[-1])
        rows.append((master, seconds, mb, cpu, report, state(copies) == expected))
    lines = [f"# Spark against one database ({time.strftime('%Y-%m-%d')})", "",
             f"`/usr/bin/python3 benches/spark.py --pages {args.pages} --shards {args.shards} --settings "
             f"'{args.settings}'`: builder corpus of "
             f"{args.pages} pages (seed 7) in {args.shards} shards of unequal sizes; dedup_run() on the whole "
             f"database: {single_s:.1f} s, peak {single_mb:.0f} MB, {single_cpu / single_s:.2f} cores busy.", "",
             "| master | seconds (JVM start included) | / dedup_run() | speed-up over local[1] | shuffle written per page "
             "| peak memory, process tree (MB) | CPU seconds, process tree (cores busy) "
             "| phase-4 range scans (rounds) or lsh components (rounds) | same pages and archive |",
             "|---|---|---|---|---|---|---|---|---|"]
    one = next((s for m, s, *_ in rows if m == "local[1]"), None)
    for master, seconds, mb, cpu, report, same in rows:
        lines.append(f"| {master} | {seconds:.1f} | {seconds / single_s:.2f} | "
                     f"{(one / seconds) if one else float('nan'):.2f} | "
                     f"{report['shuffle_write_bytes'] / args.pages:.0f} B | {mb:.0f} | {cpu:.0f} ({cpu / seconds:.2f}) | "
                     f"{report.get('phase4_range_scans', report.get('lsh_components'))} "
                     f"({report.get('phase4_rounds', report.get('lsh_rounds'))}) | {'yes' if same else 'NO'} |")
    lines += ["", "Seconds per step (the driver's clock; `01_prepare` includes reading the shards):", "",
              "| master | " + " | ".join(rows[0][4].get("seconds", {})) + " |",
              "|---|" + "---|" * len(rows[0][4].get("seconds", {}))]
    for master, _, _, _, report, _ in rows:
        lines.append(f"| {master} | " + " | ".join(f"{v:.1f}" for v in report.get("seconds", {}).values()) + " |")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
