"""`sqlite-dedup spark run SHARD.db...`: the dedup of many SQLite shards as
one database, on Apache Spark (local[N], or a cluster through --master or
spark-submit)."""
import argparse
import json
import os
import sys

from sqlite_dedup._options import add_near_mode_options, add_setting_flags, database_problem, given_settings
from sqlite_dedup import _phases
from sqlite_dedup.spark._shards import repeated


def parser():
    """The command's arguments."""
    p = argparse.ArgumentParser(prog="sqlite-dedup spark", description=__doc__)
    sub = p.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="deduplicate the shards as one database (each shard: one transaction)")
    run.add_argument("shards", nargs="+", metavar="SHARD.db",
                     help="the shards, in the order of the one database they make")
    run.add_argument("--master", help="Spark master URL (default: local[*], or what spark-submit gives)")
    run.add_argument("--partition-rows", type=int, default=None, metavar="N",
                     help="scan positions per phase-4 task (default 50000; at least distance - 1)")
    # (Every setting the table gives a flag but against and action (a job of
    # shards compares no other file and labels nothing yet); the help of those
    # a shard reads differently.)
    add_setting_flags(run, skip={"against", "action"}, helps={
        "table": "the table of pages in every shard (default pages)",
        "columns": "the table's columns for the pipeline's names",
        "boilerplate": "'strip': compare texts without the lines a site repeats, counted over every shard",
        "url_rules": "drop parameters every shard's learned rules, their counts summed, say never change "
                     "content with probability >= P (0: never)",
        "busy_timeout": "milliseconds each shard's apply waits for another connection's lock (default 5000)"})
    run.add_argument("--keep-params", action="store_true",
                     help="keep all but tracking query parameters (setting discard_params = 0)")
    run.add_argument("--prefer", action="append", metavar="TERM",
                     help="an SQL ordering term every election puts first, ranked over every shard "
                          "(repeat for more: each one term, such as \"url LIKE 'https:%%' DESC\")")
    add_near_mode_options(run)
    run.add_argument("--json", action="store_true", help="print the report as JSON")
    return p


def settings_of(args):
    """The run's settings from the parsed options (the ones given)."""
    return {**given_settings(args), **{k: v for k, v in {
        "discard_params": 0 if args.keep_params else None, "near_mode": args.mode, "prefer": args.prefer,
        "lsh_election": args.lsh_election}.items() if v is not None}}


def main(argv=None):
    """`sqlite-dedup spark`: parses `argv`, runs the job on the shards named
    and returns its exit code."""
    args = parser().parse_args(argv)
    settings = settings_of(args)
    problems = [p for p in map(database_problem, args.shards) if p] or [
        p for p in [repeated(args.shards, settings.get("table") or "pages")] if p]
    if problems:
        print(f"sqlite-dedup spark: {problems[0]}; nothing was changed", file=sys.stderr)
        return 1
    try:
        from pyspark.sql import SparkSession
    except ImportError:
        print('sqlite-dedup spark: PySpark is not installed: pip install "<the sqlite_dedup wheel>[spark]" '
              "(PySpark >= 4.0, pyarrow, pandas 2; docs/scale-out.md) and Java 17: "
              "apt-get install openjdk-17-jre-headless", file=sys.stderr)
        return 2
    from sqlite_dedup import spark as dedup_spark
    # Workers run this interpreter unless told otherwise (in local mode).
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    builder = SparkSession.builder.appName("sqlite-dedup")
    # (Under spark-submit, SPARK_ENV_LOADED is set and the master is its own.)
    master = args.master or ("" if os.environ.get("SPARK_ENV_LOADED") else "local[*]")
    if master:
        builder = builder.master(master)
    if master.startswith("local"):
        # (Spark's 200 shuffle partitions cost more than they split on one machine.)
        builder = builder.config("spark.sql.shuffle.partitions", str(4 * (os.cpu_count() or 2)))
    spark = builder.config("spark.ui.showConsoleProgress", "false").getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    try:
        kw = {"partition_rows": args.partition_rows} if args.partition_rows else {}
        # (Each step on standard error as it ends: a job runs for minutes.)
        report = dedup_spark.run(spark, args.shards, settings,
                                 progress=lambda m: print(f"sqlite-dedup spark: {m}", file=sys.stderr, flush=True),
                                 **kw)
    except (dedup_spark.UnsupportedSetting, ValueError) as e:
        print(str(e), file=sys.stderr)
        return 1
    except Exception as e:  # a task's error arrives wrapped: its last line says what is wrong
        lines = [line for line in str(e).splitlines() if "sqlite-dedup spark:" in line or "dedup" in line]
        print(lines[-1].split("ShardError: ")[-1] if lines else str(e), file=sys.stderr)
        return 1
    finally:
        spark.stop()
    if args.json:
        print(json.dumps(report, indent=1))
    else:
        print(text(report))
    return 0


def text(report):
    """The report in words."""
    lines = [f"spark job {report['job']}: {report['shards']} shard(s), "
             f"{report['rows_before']} rows -> {report['rows_after']} rows"
             + (" (a job left unfinished, completed)" if report.get("resumed") else "")]
    for phase, n in sorted((int(k), v) for k, v in report.get("removed", {}).items()):
        lines.append(f"  phase {phase} ({_phases.name(phase)}): {n} removed")
    if report.get("kept_apart"):
        lines.append(f"  kept apart: {report['kept_apart']} page(s) whose URLs differ in a parameter that changes content")
    if report.get("phase4_rounds"):
        lines.append(f"  phase 4: {report['phase4_range_scans']} range scan(s) in {report['phase4_rounds']} round(s)")
    for i, r in enumerate(report.get("runs", [])):
        if r:
            lines.append(f"  shard {i + 1}: run {r['run']}, {r['rows_before']} -> {r['rows_after']} rows")
        else:
            lines.append(f"  shard {i + 1}: already applied by this job")
    return "\n".join(lines)
