"""`boilerplate = 'strip'` on Spark, as sql/04b_near_dups.sql and
sql/06_removals.sql have it on one database, with the counts taken over
every shard: a domain's chrome is the segments (lines) found on at least
`boilerplate_min_pages` of its rows that phase 4 compares (the exact
winners with a text), with as many distinct titles; each such row that
holds some of its domain's chrome is compared as normalize_text(title,
blank line, content without those lines), made in its shard by the
extension's own functions; a near removal of such a row, or for one, says
"(boilerplate stripped)". Each row's segment hashes and title come from
phase 1 (`segments`, `title_key`, sql/external/01_rows.sql)."""

from . import _tasks

#: What a near removal's reason gains when either row was compared stripped.
STRIPPED = " (boilerplate stripped)"


def chrome(winners, min_pages):
    """(chrome, stripped): each domain's chrome as (domain, segments,
    hashes: a JSON array, as strip_segments takes it), and the rows that
    hold some of it as (shard, rid)."""
    from pyspark.sql import functions as F
    found = (winners.where("has_text = 1 AND segments IS NOT NULL")
             .select("shard", "rid", "domain", "title_key",
                     F.explode(F.split("segments", ",")).alias("hash"))
             .withColumn("hash", F.col("hash").cast("long")))
    common = (found.groupBy("domain", "hash")
              .agg(F.countDistinct("shard", "rid").alias("pages"), F.countDistinct("title_key").alias("titles"))
              .where((F.col("pages") >= min_pages) & (F.col("titles") >= min_pages))
              .select("domain", "hash"))
    chrome = common.groupBy("domain").agg(
        F.count("*").alias("segments"),
        F.concat(F.lit("["), F.array_join(F.array_sort(F.collect_list("hash")).cast("array<string>"), ","),
                 F.lit("]")).alias("hashes"))
    stripped = found.join(F.broadcast(common), ["domain", "hash"]).select("shard", "rid").distinct()
    return chrome, stripped


def texts(stripped, chrome, prepared, paths, settings_json):
    """The stripped text of each row of `stripped`, as (shard, rid,
    stripped_text), read and made in its shard (a task per shard)."""
    from pyspark.sql import functions as F
    rows = (stripped.join(prepared.select("shard", "rid", "domain"), ["shard", "rid"])
            .join(F.broadcast(chrome.select("domain", "hashes")), "domain")
            .select("shard", "rid", "hashes"))
    rows = rows.repartition(max(1, len(paths)), "shard")
    return rows.mapInArrow(lambda batches: _tasks.strip_batches(batches, paths, settings_json),
                           "shard int, rid long, stripped_text string")


def reasons(near, stripped):
    """`near` (shard, rid, ..., survivor_shard, survivor_rid, reason) with
    STRIPPED added to the reason of each removal whose row or survivor is
    in `stripped`."""
    from pyspark.sql import functions as F
    mark = stripped.select("shard", "rid", F.lit(1).alias("_row_stripped"))
    other = stripped.select(F.col("shard").alias("survivor_shard"), F.col("rid").alias("survivor_rid"),
                            F.lit(1).alias("_survivor_stripped"))
    marked = near.join(mark, ["shard", "rid"], "left").join(other, ["survivor_shard", "survivor_rid"], "left")
    either = F.col("_row_stripped").isNotNull() | F.col("_survivor_stripped").isNotNull()
    return (marked.withColumn("reason", F.when(either, F.concat("reason", F.lit(STRIPPED))).otherwise(F.col("reason")))
            .select(*near.columns))
