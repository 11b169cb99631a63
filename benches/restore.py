"""What restore's checks cost (issue 63): the share of `dedup_restore()`
that finds the survivors again before writing their old values back
(`restore: locate survivors` in DEDUP_TRACE's profile: each survivor
matched by rowid and by what the run wrote, `dedup_rewritten.written`),
and the share of the run's apply that records what it wrote (`apply:
written`). On the 100k builder corpus (benches/corpora.py), after one
default run; each restore on a fresh copy of that state, in the sqlite3
shell, REPS times; the same run's trace gives both steps and the whole.

    python3 benches/restore.py [--pages 100000] [--reps 5]
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


def traced(db, sql):
    """The TRACE lines of `sql` run in the shell on `db`: label -> seconds."""
    out = subprocess.run(["sqlite3", db, f".load {EXTENSION}", sql], capture_output=True, text=True, check=True,
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
    args = ap.parse_args()
    after = os.path.join(DATA, f"restore-{args.pages}.db")
    shutil.copy(corpus(args.pages), after)
    run, report = traced(after, "SELECT dedup_run();")
    work = os.path.join(DATA, "restore-work.db")
    shares, locates, totals = [], [], []
    for _ in range(args.reps):
        shutil.copy(after, work)
        steps, said = traced(work, "SELECT dedup_restore();")
        locates.append(steps["restore: locate survivors"])
        totals.append(steps["restore"])
        shares.append(locates[-1] / totals[-1])
    os.remove(work)
    print(f"# Restore's checks, {args.pages:,} builder pages, one default run\n")
    print(f"Run: {report.splitlines()[0]}; restore: {said.strip().splitlines()[0][:120]}\n")
    print("| step | median s | of the whole |")
    print("|---|---|---|")
    print(f"| restore: locate survivors (the checks) | {statistics.median(locates):.3f} | "
          f"{statistics.median(shares):.1%} of restore ({statistics.median(totals):.3f} s; min {min(shares):.1%}, max {max(shares):.1%}, {args.reps} restores) |")
    apply = sum(v for k, v in run.items() if k.startswith("apply: "))
    print(f"| apply: written (what the run wrote, recorded) | {run.get('apply: written', 0.0):.3f} | "
          f"{run.get('apply: written', 0.0) / apply:.1%} of the run's apply ({apply:.3f} s, its steps summed) |")


if __name__ == "__main__":
    main()
