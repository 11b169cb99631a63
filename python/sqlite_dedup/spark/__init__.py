"""sqlite-dedup on Apache Spark: one dedup over many SQLite shards, with the
survivors `dedup_run()` gives on their union in one database (the shards
concatenated in the order given), each shard keeping its archive and its
restore. PySpark is imported here only inside the functions
(`pip install "<the sqlite_dedup wheel>[spark]"`, docs/scale-out.md).

    from pyspark.sql import SparkSession
    from sqlite_dedup import spark as dedup_spark
    spark = SparkSession.builder.master("local[2]").getOrCreate()
    report = dedup_spark.run(spark, ["crawl-1.db", "crawl-2.db"], {"threshold": 0.9})

Phase 1 runs in a task per shard through the extension (`dedup_prepare`);
phases 2, 3 and 5 are Spark aggregations; phase 4 scans ranges of the URL
order in tasks (window mode, see `_window`) or the connected components of
the LSH candidate graph (lsh mode, see `_lsh`), exactly; each shard's
part of the plan is kept in the shard before any is changed, then applied by
a task per shard with `dedup_apply_plan` (one transaction each). A job that
dies midway is completed by running the same command again.
"""
import json
import math
import os
import time
import uuid

from .. import _phases
from . import _shards, _tasks

__all__ = ["run", "plan", "SUPPORTED_SETTINGS", "UnsupportedSetting"]

#: The settings a Spark run takes (the others make no sense across shards
#: yet, see docs/scale-out.md).
SUPPORTED_SETTINGS = ("threshold", "distance", "discard_params", "n_min", "url_options", "near_mode", "table",
                      "compat", "columns", "busy_timeout", "lsh_bands", "lsh_rows", "lsh_election", "prefer",
                      "boilerplate", "boilerplate_min_pages", "url_rules", "lsh_shingles", "lsh_shingle_size",
                      "lsh_sketch", "measure", "ngram_size", "stoplist", "paragraphs", "paragraph_min")

#: Rows per phase-1 task at most (a shard is read by as many tasks).
PREPARE_ROWS = 20_000

#: Scan positions per phase-4 task at most, by default (fewer when that
#: gives fewer than two tasks a core).
PARTITION_ROWS = 50_000


class UnsupportedSetting(ValueError):
    """A setting the Spark run does not take (yet)."""


def _settings_json(settings):
    settings = dict(settings or {})
    unknown = sorted(set(settings) - set(SUPPORTED_SETTINGS))
    if unknown:
        raise UnsupportedSetting(
            f"sqlite-dedup spark: setting(s) {', '.join(unknown)} not supported on Spark "
            f"(supported: {', '.join(SUPPORTED_SETTINGS)})")
    return json.dumps(settings)


def _settings_value(settings_json, key, default):
    return json.loads(settings_json).get(key, default)


def _checked(settings_json):
    """Every setting as a run with these settings uses it (the extension's
    dedup_settings_checked: defaults and rules across settings applied
    once, there), with `measure_spec`."""
    conn = _tasks.connect(":memory:")
    try:
        return json.loads(conn.execute("SELECT dedup_settings_checked(?)", (settings_json,)).fetchone()[0])
    finally:
        conn.close()


def _row_schema():
    from pyspark.sql.types import (BinaryType, IntegerType, LongType, StringType, StructField, StructType)
    types = {"int64": LongType(), "int32": IntegerType(), "string": StringType(), "binary": BinaryType()}
    return StructType([StructField("shard", IntegerType())]
                      + [StructField(c, types[t]) for c, t in _tasks.ROW_COLUMNS])


def _wants_rules(settings_json):
    """Whether the settings ask for url_rules (a number above 0; a bad value
    is left to the extension, whose error names it)."""
    value = json.loads(settings_json).get("url_rules")
    return isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0


def _merged_rules(spark, paths):
    """The url_rules setting over shards: every shard's learned rules that
    drop a parameter, one row per rule with its counts summed over the
    shards (the learner saw each shard's pages apart), as the rows
    _tasks.prepare_shard gives each shard's run in place of its own."""
    from pyspark.sql import functions as F
    sc = spark.sparkContext
    rows = sc.parallelize(list(enumerate(paths)), max(1, len(paths))).flatMap(
        lambda ip: _tasks.url_rules(ip[0], ip[1]))
    if rows.isEmpty():
        return []
    df = spark.createDataFrame(
        rows, "domain string, path string, param string, value string, observations long, duplicates long")
    merged = df.groupBy("domain", "path", "param", "value").agg(
        F.sum("observations").alias("observations"), F.sum("duplicates").alias("duplicates"))
    return [tuple(r) for r in merged.collect()]


def _prepared(spark, paths, settings_json):
    """Every shard's rows after phase 1, read by the executors (a task per
    shard), as a DataFrame with the columns of _tasks.ROW_COLUMNS."""
    schema = _row_schema()
    table = json.loads(settings_json).get("table", "pages")
    sc = spark.sparkContext
    rules = _merged_rules(spark, paths) if _wants_rules(settings_json) else None
    # (A first job reads each shard's extent, so that a big shard is
    # prepared by several tasks, each a range of its rowids.)
    extents = sc.parallelize(list(enumerate(paths)), max(1, len(paths))).map(
        lambda ip: (ip[0],) + _tasks.shard_extent(ip[0], ip[1], table)).collect()
    tasks = []
    for index, rows, low, high in sorted(extents):
        parts = max(1, math.ceil(rows / PREPARE_ROWS))
        cuts = [None] + [low + (high - low + 1) * k // parts for k in range(1, parts)] + [None]
        tasks += [(index, os.path.abspath(paths[index]), cuts[k], cuts[k + 1]) for k in range(parts)]
    ranges = spark.createDataFrame(tasks, "shard int, path string, lo long, hi long")
    ranges = ranges.repartition(len(tasks)) if len(tasks) > 1 else ranges.coalesce(1)

    def prepare(batches):
        for batch in batches:
            for index, path, lo, hi in zip(*(batch.column(k).to_pylist() for k in range(4))):
                yield from _tasks.prepare_shard(index, path, settings_json, lo, hi, rules)

    return ranges.mapInArrow(prepare, schema)


def _prepared_pages(pages, settings_json, id_column):
    """Phase 1 on the pages of a DataFrame (its columns named as the
    pipeline's: url, parsed, ...; rows ordered by `id_column`), in its
    partitions, as one shard (0)."""
    if _wants_rules(settings_json):
        raise UnsupportedSetting("sqlite-dedup spark: url_rules needs the pages in shards (their learned rules "
                                 "are read there), not a DataFrame")
    columns = [c for c in pages.columns if c in _tasks.PAGE_COLUMNS]
    if "url" not in columns:
        raise ValueError(f"sqlite-dedup spark: the pages need a url column, got {', '.join(pages.columns)}")
    if id_column not in pages.columns:
        raise ValueError(f"sqlite-dedup spark: the pages need an id column {id_column!r} (unique integers: "
                         f"their order is the database's), got {', '.join(pages.columns)}")
    source = pages.select(id_column, *columns)
    return source.mapInArrow(
        lambda batches: _tasks.prepare_batches(batches, id_column, columns, settings_json), _row_schema())


def plan(source, shard_paths=None, settings=None, partition_rows=None, id_column="id", progress=None):
    """The decisions a run would take, as a DataFrame (shard, rid, phase,
    reason, survivor_shard, survivor_rid, ratio, rewrite_url, note) — one
    row per removed row (phase 1–5) and per kept row whose URL stays apart
    (phase NULL, rewrite_url) — and the plan's figures (a dict); nothing is
    written. `source` is a SparkSession and `shard_paths` the shards
    (numbered from 0 in the order given; with `paragraphs: dedup`, the
    figures' `paragraph_cuts` is a DataFrame of the paragraph cuts: shard,
    rid, position, owner_shard, owner_rid, owner_url, owner_paragraph), or
    `source` is a DataFrame of
    pages already in Spark (Parquet, Delta, a table: `plan(pages_df,
    settings)`), with the pipeline's column names and unique integer ids
    in `id_column` (shard 0, rid = id). Phase 4 scans
    ranges of `partition_rows` positions (by default at most PARTITION_ROWS,
    and fewer when that gives fewer than two ranges a core). `progress`, a
    function of one string, is told each step as it ends."""
    from . import _lsh, _window
    keep = []
    try:
        return _plan(source, shard_paths, settings, partition_rows, id_column, progress, keep)
    except BaseException:
        # (A plan that failed midway leaves nothing cached in the session.)
        for df in keep + _window.CACHED + _lsh.CACHED:
            df.unpersist()
        _window.CACHED.clear()
        _lsh.CACHED.clear()
        raise


def _plan(source, shard_paths, settings, partition_rows, id_column, progress, keep):
    """plan()'s work; `keep` gathers what it caches."""
    from pyspark import StorageLevel
    from pyspark.sql import functions as F
    from . import _elect, _lsh, _strip, _window

    settings_json = _settings_json(settings)
    clock = [time.perf_counter()]
    seconds = {}

    def lap(name):
        now = time.perf_counter()
        seconds[name] = round(now - clock[0], 3)
        clock[0] = now
        if progress:
            progress(f"{STEPS.get(name, name)}: done in {seconds[name]:.1f} s")

    def persisted(df):
        keep.append(df)
        return df.persist(StorageLevel.MEMORY_AND_DISK)

    if hasattr(source, "mapInArrow"):  # a DataFrame of pages
        if settings is None and isinstance(shard_paths, dict):
            settings, shard_paths = shard_paths, None
        settings_json = _settings_json(settings)
        spark = source.sparkSession
        prepared = persisted(_prepared_pages(source, settings_json, id_column))
        figures = {"shards": 1, "seconds": seconds}
    else:
        spark = source
        prepared = persisted(_prepared(spark, shard_paths, settings_json))
        figures = {"shards": len(shard_paths), "seconds": seconds}
    counts = prepared.groupBy().agg(
        F.sum(F.when(F.col("placeholder") == 0, 1).otherwise(0)).alias("rows"),
        F.sum(F.when(F.col("skip_reason").isNotNull(), 1).otherwise(0)).alias("skipped")).collect()[0]
    figures.update(rows=int(counts["rows"] or 0), skipped=int(counts["skipped"] or 0))
    lap("01_prepare")
    exact, winners = _elect.exact_phases(prepared, persisted)
    winners = persisted(winners)
    winners.count()
    lap("02_03_elections")
    checked = _checked(settings_json)
    threshold, measure = float(checked["threshold"]), checked["measure_spec"]
    window = int(checked["distance"]) - 1
    texts = prepared.select("shard", "rid", "placeholder", "text")
    stripped = None
    if _settings_value(settings_json, "boilerplate", "keep") == "strip" and threshold < 1.0:
        if shard_paths is None:
            raise UnsupportedSetting("sqlite-dedup spark: boilerplate = 'strip' needs the pages in shards "
                                     "(their content is read again there), not a DataFrame")
        chrome, stripped = _strip.chrome(winners, int(_settings_value(settings_json, "boilerplate_min_pages", 5)))
        chrome, stripped = persisted(chrome), persisted(stripped)
        found = chrome.agg(F.count("*").alias("domains"), F.sum("segments").alias("segments")).collect()[0]
        figures.update(boilerplate_domains=int(found["domains"]), boilerplate_segments=int(found["segments"] or 0))
        paths = [os.path.abspath(p) for p in shard_paths]
        fresh = persisted(_strip.texts(stripped, chrome, prepared, paths, settings_json))
        texts = (texts.join(fresh, ["shard", "rid"], "left")
                 .select("shard", "rid", "placeholder", F.coalesce("stripped_text", "text").alias("text")))
        lap("04_boilerplate")
    rows = persisted(_window.scan_order(winners, prepared.where("placeholder = 1"), texts))
    total = rows.count()
    lap("04_scan_order")
    cached = ()
    if checked["near_mode"] == "lsh":
        shingling = (checked["lsh_shingles"], int(checked["lsh_shingle_size"]), checked["stoplist"] or None,
                     checked["lsh_sketch"])
        near, lsh_figures = _lsh.scan(rows, threshold, int(checked["lsh_bands"]), int(checked["lsh_rows"]),
                                      checked["lsh_election"], shingling, measure)
        figures.update(lsh_figures)
    else:
        if partition_rows is None:
            cores = spark.sparkContext.defaultParallelism
            partition_rows = max(window, 1, min(PARTITION_ROWS, math.ceil(total / (2 * cores))))
        near, rounds, scans, cached = _window.scan(rows, threshold, window, partition_rows, measure)
        figures.update(phase4_rounds=rounds, phase4_range_scans=scans, phase4_partition_rows=partition_rows)
    ids = rows.select("pos", "shard", "rid")
    near = (near.join(ids, "pos")
            .join(ids.select(F.col("pos").alias("survivor_pos"), F.col("shard").alias("survivor_shard"),
                             F.col("rid").alias("survivor_rid")), "survivor_pos")
            .select("shard", "rid", F.lit(_phases.NEAR).alias("phase"),
                    F.lit(_phases.near_reason(checked["measure"])).alias("reason"),
                    "survivor_shard", "survivor_rid", "ratio"))
    if stripped is not None:
        near = _strip.reasons(near, stripped)
    near = persisted(near)
    near.count()
    lap("04_near_dups")
    survivors = winners.join(near.select("shard", "rid"), ["shard", "rid"], "left_anti")
    removals = exact.unionByName(near)
    domains = _elect.domain_phase(survivors, int(_settings_value(settings_json, "n_min", 0)))
    if domains is not None:
        removals = removals.unionByName(domains)
        survivors = survivors.join(domains.select("shard", "rid"), ["shard", "rid"], "left_anti")
    removals = removals.withColumn("rewrite_url", F.lit(None).cast("string")).withColumn(
        "note", F.lit(None).cast("string"))
    apart = _elect.kept_apart(survivors).select(
        "shard", "rid", F.lit(None).cast("int").alias("phase"), F.lit(None).cast("string").alias("reason"),
        F.lit(None).cast("int").alias("survivor_shard"), F.lit(None).cast("long").alias("survivor_rid"),
        F.lit(None).cast("double").alias("ratio"), "rewrite_url", "note")
    decisions = removals.unionByName(apart).persist(StorageLevel.MEMORY_AND_DISK)
    if checked.get("paragraphs") == "dedup":
        from . import _paragraphs
        # (Not among `keep`: the cuts outlive what they were computed from.)
        cuts = _paragraphs.cuts(survivors, prepared, int(checked["paragraph_min"])).persist(
            StorageLevel.MEMORY_AND_DISK)
        # (Copies found; each shard confirms its own and keeps whole a page
        # the cuts would leave too short: its run's report counts the cuts.)
        figures["paragraph_copies"] = cuts.count()
        figures["paragraph_cuts"] = cuts
    per_phase = decisions.where("phase IS NOT NULL").groupBy("phase").count().collect()
    figures["removed"] = {int(r["phase"]): int(r["count"]) for r in sorted(per_phase)}
    figures["kept_apart"] = decisions.where("phase IS NULL").count()
    lap("05_06_plan")
    # (The decisions are cached: what they were computed from can go.)
    for rdd in [cached[0], *cached[1]] if cached else []:
        rdd.unpersist()
    for df in keep + _window.CACHED + _lsh.CACHED:
        df.unpersist()
    _window.CACHED.clear()
    _lsh.CACHED.clear()
    return decisions, figures


def run(spark, shard_paths, settings=None, partition_rows=None, progress=None):
    """Deduplicates the shards as one database: plans on Spark, keeps each
    shard's part of the plan in the shard (table dedup_pending_plan), then
    applies every part with dedup_apply_plan, a task per shard. Returns the
    report: the plan's figures, the job id and each shard's run report.
    A job left unfinished in these shards (a task or the driver died after
    the plan was kept) is completed first, without planning again.
    `progress`, a function of one string, is told each step as it ends."""
    settings_json = _settings_json(settings)
    paths = [os.path.abspath(p) for p in shard_paths]
    problem = _shards.repeated(paths, _settings_value(settings_json, "table", "pages"))
    if problem:
        raise ValueError(f"sqlite-dedup spark: {problem}; nothing was changed")
    sc = spark.sparkContext
    states = sc.parallelize(list(enumerate(paths)), max(1, len(paths))).map(
        lambda ip: (ip[0],) + _tasks.job_state(ip[0], ip[1])).collect()
    pending = {job for _, job, _ in states if job}
    applied = {j for _, _, done in states for j in done}
    resumed = None
    for job in sorted(pending):
        if job in applied or all(p == job for _, p, _ in states):
            resumed = job  # the plan was kept in every shard: finish it
        else:
            # (Its plan was never kept in every shard, so no shard applied it.)
            sc.parallelize([(i, p) for i, p in enumerate(paths) if states[i][1] == job], 1).foreach(
                lambda ip: _tasks.discard_pending(ip[0], ip[1]))
    report = {"shards": len(paths)}
    if resumed:
        job = resumed
        report["resumed"] = True
    else:
        if progress:
            progress(f"planning {len(paths)} shard(s) as one database")
        decisions, figures = plan(spark, paths, settings, partition_rows, progress=progress)
        cuts = figures.pop("paragraph_cuts", None)
        report.update(figures)
        job = "spark-" + uuid.uuid4().hex[:16]
        start = time.perf_counter()
        _keep_plan(decisions, paths, job, cuts)
        decisions.unpersist()
        if cuts is not None:
            cuts.unpersist()
        report["seconds"]["keep_plan"] = round(time.perf_counter() - start, 3)
        if progress:
            progress(f"the plan kept in every shard: done in {report['seconds']['keep_plan']:.1f} s")
        if os.environ.get("SQLITE_DEDUP_SPARK_FAIL") == "die-after-plan":  # tests: see _tasks._failed_once
            os._exit(70)
    report["job"] = job
    if progress:
        progress(f"applying job {job} to {len(paths)} shard(s), a transaction each")
    start = time.perf_counter()
    # (The rules every shard learned, summed, as phase 1 had them: the apply
    # canonicalizes the survivors' URLs again.)
    rules = _merged_rules(spark, paths) if _wants_rules(settings_json) else None
    runs = sc.parallelize(list(enumerate(paths)), max(1, len(paths))).map(
        lambda ip: (ip[0], _tasks.apply_pending(ip[0], ip[1], job, settings_json, rules))).collect()
    report["runs"] = [r for _, r in sorted(runs)]
    report.setdefault("seconds", {})["apply"] = round(time.perf_counter() - start, 3)
    report["rows_before"] = sum(r["rows_before"] for r in report["runs"] if r)
    report["rows_after"] = sum(r["rows_after"] for r in report["runs"] if r)
    return report


# What each step of plan() does, as progress tells it.
STEPS = {
    "01_prepare": "phase 1, every row prepared in its shard",
    "02_03_elections": "phases 2 and 3, same URL and same content elected",
    "04_boilerplate": "phase 4's boilerplate, counted over every shard and stripped in each",
    "04_scan_order": "phase 4's scan order",
    "04_near_dups": "phase 4, near duplicates",
    "05_06_plan": "phases 5 and 6, the plan",
}


def _keep_plan(decisions, paths, job, cuts=None):
    """Writes each shard's part of the plan (and of the paragraph cuts)
    into the shard, a task per shard (every shard gets one, even empty)."""
    from pyspark.sql import functions as F
    same = F.col("survivor_shard") == F.col("shard")
    where = F.concat(F.lit("survivor in shard "), (F.col("survivor_shard") + 1).cast("string"),
                     F.lit(", rowid "), F.col("survivor_rid").cast("string"))
    rows = decisions.select(
        "shard", "rid", "phase", "reason",
        F.when(same, F.col("survivor_rid")).alias("survivor"), "ratio", "rewrite_url",
        F.when(F.col("survivor_shard").isNotNull() & ~same, where).otherwise(F.col("note")).alias("note"))
    n = len(paths)
    keyed = rows.rdd.map(lambda r: (r[0], ("plan", tuple(r[1:])))).union(
        rows.sparkSession.sparkContext.parallelize([(i, None) for i in range(n)], 1))
    if cuts is not None:
        # (The owner's rowid where it is in the same shard; its URL always.)
        held = cuts.select("shard", "rid", "position",
                           F.when(F.col("owner_shard") == F.col("shard"), F.col("owner_rid")).alias("owner"),
                           "owner_url", "owner_paragraph")
        keyed = keyed.union(held.rdd.map(lambda r: (r[0], ("paragraph", tuple(r[1:])))))
    grouped = keyed.partitionBy(n, lambda k: k)

    def keep(index, items, paths=paths, job=job):
        mine, paragraphs = [], []
        for _, item in items:
            if item is not None:
                (mine if item[0] == "plan" else paragraphs).append(item[1])
        _tasks.write_pending(index, paths[index], job, mine, paragraphs)
        return iter([index])

    grouped.mapPartitionsWithIndex(keep).collect()
