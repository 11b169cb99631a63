"""What restore's checks cost: `dedup_restore()` of this build against a
baseline build (`--base`, e.g. the build of the commit before the checks),
each on a fresh copy of the state its own default run left, alternated,
REPS times; with the share of each restore that finds the survivors again
(`restore: locate survivors` in DEDUP_TRACE's profile: each survivor
matched by rowid, the values the run wrote and, since issue 76, the digest
of the page the run left), and of the run's apply that records them
(`apply: written`). Then this build's restore after a VACUUM (every
survivor found again by its digest, every row's digest computed). On the
100k builder corpus (benches/corpora.py), in the sqlite3 shell.

    python3 benches/restore.py [--pages 100000] [--reps 5] [--base /path/to/libdedup]
"""
import argparse
import os
import shutil
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path = [p for p in sys.path if os.path.abspath(p or ".") != HERE]
sys.path.insert(0, HERE)
from corpora import DATA, corpus  # noqa: E402

EXTENSION = os.environ.get("DEDUP_EXTENSION", os.path.join(ROOT, "target", "release", "libdedup"))


def traced(extension, db, sql):
    """The TRACE lines of `sql` run in the shell on `db`: label -> seconds."""
    out = subprocess.run(["sqlite3", db, f".load {extension}", sql], capture_output=True, text=True, check=True,
                         env=dict(os.environ, DEDUP_TRACE="1"))
    steps = {}
    for line in out.stderr.splitlines():
        if line.startswith("TRACE "):
            label, seconds = line[6:].rsplit(" ", 1)
            steps[label] = steps.get(label, 0.0) + float(seconds)
    return steps, out.stdout


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--pages", type=int, default=100000)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--base", help="the baseline build's library (without .so)")
    args = ap.parse_args()
    builds = {"this build": EXTENSION}
    if args.base:
        builds["baseline"] = args.base
    after, runs = {}, {}
    for name, ext in builds.items():
        after[name] = os.path.join(DATA, f"restore-{args.pages}-{len(after)}.db")
        shutil.copy(corpus(args.pages), after[name])
        runs[name], report = traced(ext, after[name], "SELECT dedup_run();")
    work = os.path.join(DATA, "restore-work.db")
    totals = {n: [] for n in builds}
    locates = {n: [] for n in builds}
    said = ""
    for _ in range(args.reps):
        for name, ext in builds.items():
            shutil.copy(after[name], work)
            steps, said = traced(ext, work, "SELECT dedup_restore();")
            totals[name].append(steps["restore"])
            locates[name].append(steps["restore: locate survivors"])
    vacuumed = []
    for _ in range(max(1, args.reps // 2)):
        shutil.copy(after["this build"], work)
        subprocess.run(["sqlite3", work, "VACUUM"], check=True)
        steps, vsaid = traced(EXTENSION, work, "SELECT dedup_restore();")
        vacuumed.append((steps["restore"], steps["restore: locate survivors"]))
    os.remove(work)
    for path in after.values():
        os.remove(path)
    print(f"# Restore's checks, {args.pages:,} builder pages, one default run\n")
    print(f"Run: {report.splitlines()[0]}; restore: {said.strip().splitlines()[0][:120]}\n")
    print("| build | restore, median s | locate survivors, median s | its share | apply: written s (share of apply) |")
    print("|---|---|---|---|---|")
    for name in builds:
        apply = sum(v for k, v in runs[name].items() if k.startswith("apply: "))
        whole = statistics.median(totals[name])
        locate = statistics.median(locates[name])
        print(f"| {name} | {whole:.3f} | {locate:.3f} | {locate / whole:.1%} | "
              f"{runs[name].get('apply: written', 0.0):.3f} ({runs[name].get('apply: written', 0.0) / apply:.1%}) |")
    if args.base:
        ratio = statistics.median(totals["this build"]) / statistics.median(totals["baseline"])
        print(f"\nThis build's restore / the baseline's: {ratio:.3f}x (medians of {args.reps}, alternated)")
    whole = statistics.median(v[0] for v in vacuumed)
    locate = statistics.median(v[1] for v in vacuumed)
    print(f"\nAfter a VACUUM (this build): restore {whole:.3f} s, locate survivors {locate:.3f} s "
          f"({locate / whole:.1%}); {vsaid.strip().splitlines()[0][:120]}")


if __name__ == "__main__":
    main()
