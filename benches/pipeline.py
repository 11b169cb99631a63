#!/usr/bin/env python3
"""The whole pipeline at scale: per-phase seconds against the read and write
floors, comparisons done and avoided by each filter, the scan on one thread
and on all, peak memory and temp disk, and the reference algorithm's time on
the same databases, in one run.

  cargo build --release --features loadable_extension
  /usr/bin/python3 -m pip install --break-system-packages levenshtein   # the reference's ratio
  /usr/bin/python3 benches/pipeline.py [--sizes 5000,ref20k,20000,100000,1000000] [--reference-max 20000]
                                      [--repeat 3] [--modes window,lsh] [--threads] [--secure-delete fast]

Corpora are built once into bench-data/ (git-ignored) with the corpus builder
(seed 7; ref20k is the reference's timing corpus, seed 20240601). The reference time is the independent Python model of the reference
(tests/python/helpers/reference_model.py) comparing every window pair with a full
Levenshtein.ratio, as the reference does; it also gives the survivors our run
must equal (on our canonical URLs). Sizes above --reference-max skip it.
The 'lsh' mode (near_mode = 'lsh') runs on the same copies; its table adds
the band rows and candidate pairs, and what it finds that the window misses:
phase-4 removals, those whose survivor is on another domain, and the groups
(survivors) they form. --secure-delete sets PRAGMA secure_delete on every
connection that writes, the pipeline's and the write floor's alike (Debian's
SQLite is built with it on: deleted and overwritten rows are zeroed).
"""
import argparse
import json
import os
import resource
import shutil
import sqlite3
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "python", "helpers"))
import pipeline as P  # noqa: E402  phase runner shared with the tests
from corpora import DATA, corpus, evict, pages, warm  # noqa: E402
from floors import floor_write  # noqa: E402

# The steps a run's report times (dedup_runs.report's "seconds"), then the commit.
PHASE_NAMES = ["00_changes", "01_canonicalize", "02_url_winners", "03_content_winners", "04_near_dups",
               "05_domains", "06_removals", "apply", "commit"]


def fresh_copy(n, tag):
    dst = os.path.join(DATA, f"run-{n}-{tag}.db")
    shutil.copy(corpus(n), dst)
    # Flushed, so that the copy's writeback does not land on the timed
    # run's fsyncs.
    os.sync()
    return dst


def ready_copy(n, tag):
    """A fresh copy read whole into the OS page cache, the corpus dropped
    from it: the pipeline's runs and the write floor's start alike."""
    dst = fresh_copy(n, tag)
    evict(corpus(n), dst)
    warm(dst)
    return dst


def child(db, mode, secure_delete):
    """One run through the product path (dedup_plan, then dedup_apply: what
    dedup_run does), timed; per-phase seconds from the run's report; prints
    JSON."""
    conn = P.connect(db)
    if secure_delete:
        conn.execute(f"PRAGMA secure_delete = {secure_delete}")
    settings = json.dumps({"near_mode": mode})
    start = time.perf_counter()
    conn.execute("SELECT dedup_plan(?)", (settings,)).fetchone()
    planned = time.perf_counter() - start
    temp_mb = conn.execute("SELECT page_count * page_size FROM pragma_page_count('temp'), "
                           "pragma_page_size('temp')").fetchone()[0] / 1e6
    stats = conn.execute("SELECT near_dups_stats()").fetchone()[0]
    # Band rows, and the pair rows a self-join on (band, key) would give. Not timed.
    lsh = conn.execute("SELECT (SELECT count(*) FROM _dedup_lsh_bands), "
                       "(SELECT sum(c * (c - 1) / 2) FROM (SELECT count(*) AS c FROM _dedup_lsh_bands "
                       "GROUP BY band, key))").fetchone()
    start = time.perf_counter()
    conn.execute("SELECT dedup_apply()").fetchone()
    total = planned + time.perf_counter() - start
    # Peak memory of the run itself, before this script's own bookkeeping.
    with open("/proc/self/status") as f:
        run_peak_mb = next(int(l.split()[1]) for l in f if l.startswith("VmHWM:")) / 1024
    times = json.loads(conn.execute("SELECT report FROM dedup_runs ORDER BY run DESC LIMIT 1").fetchone()[0])["seconds"]
    times["commit"] = max(total - sum(times.values()), 0.0)
    survivors = sorted(r[0] for r in conn.execute("SELECT rowid FROM pages"))
    domains = dict(conn.execute("SELECT rowid, url_domain(url) FROM pages"))
    domains.update(conn.execute("SELECT dedup_rowid, url_domain(url) FROM dedup_removed"))
    near = [(r, s, domains.get(r), domains.get(s)) for r, s in
            conn.execute("SELECT dedup_rowid, dedup_survivor FROM dedup_removed WHERE dedup_phase = 4")]
    removed = [r for (r,) in conn.execute("SELECT dedup_rowid FROM dedup_removed")]
    # The survivors whose URL the run rewrote, with their new URL (the write floor rewrites them too).
    rewritten = conn.execute("SELECT w.dedup_rowid, p.url FROM dedup_rewritten AS w JOIN pages AS p "
                             "ON p.rowid = w.dedup_rowid WHERE w.name = 'url'").fetchall()
    print(json.dumps({"times": times, "stats": json.loads(stats) if stats else None,
                      "survivors": survivors, "lsh": lsh, "near": near, "removed": removed,
                      "rewritten": rewritten,
                      "temp_mb": temp_mb, "run_peak_mb": run_peak_mb}))


def scan_alone(db, repeat):
    """After dedup_plan, the window scan's statement by itself (the near_dups
    table-valued function over the texts phase 4 reads), fastest of
    `repeat`; prints JSON with the removed ids."""
    conn = P.connect(db)
    conn.execute("SELECT dedup_plan()").fetchone()
    best, ids = float("inf"), None
    for _ in range(repeat):
        start = time.perf_counter()
        ids = [r for (r,) in conn.execute(
            "SELECT n.id FROM _dedup_run AS r, near_dups('_dedup_near_texts', r.threshold, r.distance - 1) AS n")]
        best = min(best, time.perf_counter() - start)
    print(json.dumps({"seconds": best, "removed": ids}))


def scan_alone_interleaved(db, repeat, rounds=3):
    """The scan alone on one thread and on every core, alternating child
    processes `rounds` times (this machine class slows down for seconds at a
    time: measuring one setting after the other lets a slow spell fall on
    one); the fastest of each, and whether every run removed the same ids."""
    runs = [(run_scan_alone(db, repeat, threads=1), run_scan_alone(db, repeat)) for _ in range(rounds)]
    one = min((r[0] for r in runs), key=lambda r: r["seconds"])
    default = min((r[1] for r in runs), key=lambda r: r["seconds"])
    same = all(r["removed"] == one["removed"] for pair in runs for r in pair)
    return one, default, same


def run_scan_alone(db, repeat, threads=None):
    env = dict(os.environ)
    if threads:
        env["DEDUP_THREADS"] = str(threads)
    out = subprocess.run([sys.executable, os.path.abspath(__file__), "--child", db, "--scan-alone",
                          "--repeat", str(repeat)], env=env, capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


def run_child(db, mode, secure_delete, threads=None):
    env = dict(os.environ)
    if threads:
        env["DEDUP_THREADS"] = str(threads)
    extra = ["--secure-delete", secure_delete] if secure_delete else []
    proc = subprocess.Popen([sys.executable, os.path.abspath(__file__), "--child", db, "--modes", mode] + extra,
                            stdout=subprocess.PIPE, text=True, env=env)
    out = proc.stdout.read()
    _, status, usage = os.wait4(proc.pid, 0)
    if status != 0:
        sys.exit(f"pipeline run failed on {db}")
    result = json.loads(out)
    result["peak_mb"] = result["run_peak_mb"]
    return result


def floor_scan(db):
    conn = sqlite3.connect(db)
    best = float("inf")
    for _ in range(3):
        start = time.perf_counter()
        conn.execute("SELECT sum(length(parsed)) FROM pages").fetchone()
        best = min(best, time.perf_counter() - start)
    return best


def reference(db):
    """The reference algorithm on our canonical URLs: (seconds, survivors)."""
    import reference_model
    conn = P.connect(db)
    rows = conn.execute(
        "SELECT rowid, canonical_url(url), url_domain(url), content_hash, datetime, crawled, "
        "length, category, parsed FROM pages").fetchall()
    keys = ["rowid", "url", "domain", "content_hash", "datetime", "crawled", "length", "category", "parsed"]
    rows = [dict(zip(keys, r)) for r in rows]
    start = time.perf_counter()
    survivors = reference_model.run(rows, score_cutoff=False)
    return time.perf_counter() - start, sorted(survivors)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="5000,ref20k,20000,100000",
                        help="builder corpora (seed 7) by size; ref20k is the reference's timing corpus")
    parser.add_argument("--reference-max", type=int, default=20000)
    parser.add_argument("--repeat", type=int, default=3, help="runs per size; the fastest is shown")
    parser.add_argument("--modes", default="window,lsh")
    parser.add_argument("--child")
    parser.add_argument("--threads", action="store_true",
                        help="also time the window scan on one thread (DEDUP_THREADS=1)")
    parser.add_argument("--scan-alone", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--secure-delete", choices=["0", "1", "fast"],
                        help="PRAGMA secure_delete for the pipeline and the write floor (default: SQLite's)")
    args = parser.parse_args()
    if args.child and args.scan_alone:
        return scan_alone(args.child, args.repeat)
    if args.child:
        return child(args.child, args.modes, args.secure_delete)
    sizes = [s if s == "ref20k" else int(s) for s in args.sizes.split(",")]
    modes = args.modes.split(",")
    rows, lsh_rows, floors, threads = [], [], [], []
    for n in sizes:
        best, writes, pairs = {}, [], []
        for mode in modes:
            runs = []
            for _ in range(args.repeat):
                db = ready_copy(n, "ours")
                floor = floor_scan(db)
                runs.append((floor, run_child(db, mode, args.secure_delete)))
                os.remove(db)
                if mode == modes[0]:
                    # (The write floor right after each run of the first
                    # mode, from the same cache state, with that run's
                    # removals: the two alternate, so that a slow spell of
                    # the disk falls on both.)
                    r = runs[-1][1]
                    writes.append(floor_write(ready_copy(n, "floor"), r["removed"], r["rewritten"],
                                              args.secure_delete))
                    pairs.append(sum(r["times"].values()) / (floor + writes[-1]))
            floor = min(f for f, _ in runs)
            best[mode] = min((r for _, r in runs), key=lambda r: sum(r["times"].values()))
            assert all(r["survivors"] == best[mode]["survivors"] for _, r in runs)
        floors.append((n, floor, min(writes), best, pairs))
        if "window" in best and args.threads:
            one = min((run_child(fresh_copy(n, "ours"), "window", args.secure_delete, threads=1) for _ in range(args.repeat)),
                      key=lambda r: r["times"]["04_near_dups"])
            db = fresh_copy(n, "ours")
            tries = max(args.repeat, 5)
            alone = scan_alone_interleaved(db, tries)
            threads.append((n, one, best["window"], alone))
        if "window" in best:
            ref = reference(fresh_copy(n, "ref")) if pages(n) <= args.reference_max else None
            rows.append((n, floor, best["window"], ref))
        if "lsh" in best:
            lsh_rows.append((n, floor, best["lsh"], best.get("window")))
        for tag in ("ours", "ref", "floor"):
            path = os.path.join(DATA, f"run-{n}-{tag}.db")
            if os.path.exists(path):
                os.remove(path)
    if floors:
        report_floors(floors, args.repeat, args.secure_delete)
    if threads:
        report_threads(threads)
    if rows:
        report_window(rows, args.repeat)
    if lsh_rows:
        report_lsh(lsh_rows, args.repeat)


def report_floors(floors, repeat, secure_delete):
    print("## Against the floor: what no implementation can avoid, measured on the same database in the same run\n")
    print("Read floor: `SELECT sum(length(parsed)) FROM pages` (every text read once). Write floor: the rows "
          "the run removes copied into an archive table and deleted, and the survivors whose URL the run "
          "rewrites: their old URL kept and the new one written, one transaction "
          "(`INSERT INTO archive SELECT * ... WHERE rowid IN (removed)`, `DELETE ...`, "
          "`CREATE TABLE old_url AS SELECT rowid, url ... WHERE rowid IN (rewritten)`, `UPDATE ... WHERE rowid IN "
          "(rewritten)`, `COMMIT`; issue 29's floor). "
          f"Pipeline: dedup_plan + dedup_apply, default settings, fastest of {repeat}; the write floor "
          f"fastest of {repeat}, each measured right after a run of the first mode, on a fresh copy read "
          "whole into the page cache as the run's was (the last column: each such pair's ratio). "
          + (f"`PRAGMA secure_delete = {secure_delete}` on the pipeline's and the write floor's connections.\n"
             if secure_delete else "`secure_delete` as SQLite was built (Debian: on), for both.\n"))
    print("| pages | mode | pipeline s | read floor s | write floor s | pipeline / (read + write) "
          "| s per 1,000 pages | peak RSS MB | temp MB | each pair |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for n, read, write, best, pairs in floors:
        for k, (mode, r) in enumerate(best.items()):
            total = sum(r["times"].values())
            each = ", ".join(f"{p:.2f}x" for p in pairs) if k == 0 else ""
            print(f"| {n} | {mode} | {total:.2f} | {read:.2f} | {write:.2f} | {total / (read + write):.2f}x | "
                  f"{total / pages(n) * 1000:.3f} | {r['peak_mb']:.0f} | {r['temp_mb']:.0f} | {each} |")


def report_threads(threads):
    print("\n## Near-duplicate scan: one thread (DEDUP_THREADS=1) against the default (every core), window mode\n")
    print("Phase 04 is the whole phase from the run's report (building its input in SQL, then the scan); "
          "the scan alone is the `near_dups` statement over the same texts after `dedup_plan`, fastest of "
          "5 (or --repeat) in one process, one thread and every core alternating three times (fastest of each; "
          "same removals: every run of either).\n")
    print("| pages | phase 04, 1 thread s | default s | speed-up | same survivors "
          "| scan alone, 1 thread s | default s | speed-up | same removals |")
    print("|---|---|---|---|---|---|---|---|---|")
    for n, one, best, (a1, ad, same) in threads:
        a, b = one["times"]["04_near_dups"], best["times"]["04_near_dups"]
        print(f"| {n} | {a:.2f} | {b:.2f} | {a / b:.2f}x | {'yes' if one['survivors'] == best['survivors'] else 'NO'} "
              f"| {a1['seconds']:.3f} | {ad['seconds']:.3f} | {a1['seconds'] / ad['seconds']:.2f}x "
              f"| {'yes' if same else 'NO'} |")
    print()


def report_window(rows, repeat):
    print("## Whole pipeline, window mode (dedup_plan + dedup_apply = dedup_run, Debian SQLite "
          f"{sqlite3.sqlite_version}): seconds, fastest of {repeat} runs on fresh copies\n")
    print("| pages | " + " | ".join(PHASE_NAMES) + " | total | floor scan | total / floor | peak RSS MB "
          "| reference algorithm | speed-up | same survivors |")
    print("|---" * (len(PHASE_NAMES) + 8) + "|")
    for n, floor, ours, ref in rows:
        total = sum(ours["times"].values())
        cells = [f"{ours['times'].get(p, 0.0):.2f}" for p in PHASE_NAMES]
        if ref:
            ref_cells = [f"{ref[0]:.1f}", f"{ref[0] / total:.0f}x",
                         "yes" if ref[1] == ours["survivors"] else "NO"]
        else:
            ref_cells = ["not run", "", ""]
        print(f"| {n} | " + " | ".join(cells) + f" | {total:.2f} | {floor * 1000:.0f} ms | "
              f"{total / floor:.0f}x | {ours['peak_mb']:.0f} | " + " | ".join(ref_cells) + " |")

    print("\n## Near-duplicate scan (phase 04): window pairs and the filters that decided them\n")
    print("| pages | rows scanned | window pairs | rejected by length | rejected by histogram "
          "| reached the LCS kernel | above threshold | pairs decided without the kernel |")
    print("|---|---|---|---|---|---|---|---|")
    for n, _, ours, _ in rows:
        s = ours["stats"]
        avoided = (s["rejected_by_length"] + s["rejected_by_histogram"]) / max(s["pairs"], 1)
        print(f"| {n} | {s['rows']} | {s['pairs']} | {s['rejected_by_length']} | "
              f"{s['rejected_by_histogram']} | {s['levenshtein']} | {s['matches']} | {avoided:.1%} |")
    print(f"\nSurvivors: " + ", ".join(f"{n}: {len(o['survivors'])}" for n, _, o, _ in rows))


def report_lsh(rows, repeat):
    print("\n## Whole pipeline, lsh mode (near_mode = 'lsh', 32 bands x 4 rows, char 5-grams): "
          f"seconds, fastest of {repeat} runs\n")
    print("| pages | " + " | ".join(PHASE_NAMES) + " | total | total / floor | peak RSS MB | band rows "
          "| candidate pair rows (one per shared band) | pairs compared | reached the LCS kernel | phase-4 removals (window mode) "
          "| removed only by lsh | of them cross-domain | cross-domain groups only lsh finds |")
    print("|---" * (len(PHASE_NAMES) + 11) + "|")
    for n, floor, ours, window in rows:
        total = sum(ours["times"].values())
        cells = [f"{ours['times'].get(p, 0.0):.2f}" for p in PHASE_NAMES]
        s = ours["stats"]
        near = {r: (s_, dr, ds) for r, s_, dr, ds in ours["near"]}
        base = {r for r, *_ in window["near"]} if window else set()
        only = [r for r in near if r not in base]
        cross = [r for r in only if near[r][1] != near[r][2]]
        groups = {near[r][0] for r in cross}
        print(f"| {n} | " + " | ".join(cells) + f" | {total:.2f} | {total / floor:.0f}x | {ours['peak_mb']:.0f} | "
              f"{ours['lsh'][0]} | {ours['lsh'][1]} | {s['pairs']} | {s['levenshtein']} | "
              f"{len(near)} ({len(base) if window else '?'}) | {len(only)} | {len(cross)} | {len(groups)} |")


if __name__ == "__main__":
    main()
