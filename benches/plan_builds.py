#!/usr/bin/env python3
"""Two or more builds of the extension on the same plan, alternating: each
run is `SELECT dedup_plan()` in a new process on the same database, with
the seconds of each phase script (`DEDUP_TRACE=1`). A plan writes only temp
tables, so every run reads the same file and no copy is needed; the
builds alternate so that a slow spell of the machine falls on all of them.

    /usr/bin/python3 benches/plan_builds.py bench-data/1000000.db --repeat 4 \\
        --build before=/tmp/old/libdedup --build after=target/release/libdedup

Prints one line a run, then each build's median plan and phases.
"""
import argparse
import os
import re
import statistics
import subprocess
import sys

CHILD = r'''
import sqlite3, sys, time
c = sqlite3.connect(sys.argv[1], isolation_level=None)
c.enable_load_extension(True)
c.load_extension(sys.argv[2])
t = time.perf_counter()
c.execute("SELECT dedup_plan()").fetchone()
print("PLAN", time.perf_counter() - t)
'''

PYTHON = "/usr/bin/python3"  # Debian's: it loads extensions


def plan_once(db, extension):
    """(plan seconds, {phase script: seconds}) of one run in a new process."""
    env = dict(os.environ, DEDUP_TRACE="1")
    out = subprocess.run([PYTHON, "-c", CHILD, db, extension], capture_output=True, text=True, env=env)
    found = re.search(r"^PLAN ([0-9.]+)$", out.stdout, re.M)
    if out.returncode != 0 or not found:
        sys.exit(f"plan_builds: the run with {extension} failed: {out.stderr[-500:]}")
    phases = {m.group(1): float(m.group(2))
              for m in re.finditer(r"^TRACE (\S+\.sql) ([0-9.]+)$", out.stderr, re.M)}
    return float(found.group(1)), phases


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("db")
    parser.add_argument("--build", action="append", required=True, metavar="NAME=PATH",
                        help="an extension build (its path without .so is fine); give two or more")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    builds = [b.split("=", 1) for b in args.build]
    runs = {name: [] for name, _ in builds}
    for rep in range(args.repeat):
        for name, path in builds:
            plan, phases = plan_once(args.db, path)
            runs[name].append((plan, phases))
            shown = {k: round(v, 2) for k, v in phases.items() if v >= 0.5}
            print(f"{rep} {name} plan {plan:.2f} s {shown}", flush=True)
    print("\n| build | plan, median (s) | plans (s) | phases over 0.5 s, medians (s) |\n|---|---|---|---|")
    for name, got in runs.items():
        plans = [p for p, _ in got]
        keys = sorted({k for _, ph in got for k in ph})
        medians = {k: statistics.median(ph.get(k, 0.0) for _, ph in got) for k in keys}
        shown = ", ".join(f"{k.removesuffix('.sql')} {v:.2f}" for k, v in medians.items() if v >= 0.5)
        print(f"| {name} | {statistics.median(plans):.2f} | {', '.join(f'{p:.2f}' for p in plans)} | {shown} |")


if __name__ == "__main__":
    main()
