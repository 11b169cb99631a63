"""Phases 1, 2, 3 and 5 as Spark aggregations over the prepared rows, with
the tie-break rules of sql/02_url_winners.sql, sql/03_content_winners.sql
and sql/05_domains.sql. Rows are (shard, rid); shard order then rowid is the
single database's order. The sort keys are dedup_sort_key BLOBs: their
byte order is SQLite's order of the values; `prefer_key`, first in each
election, is the prefer setting's order over every shard (NULL without
it)."""


from .. import _phases


def _window(key, order):
    from pyspark.sql import Window
    return Window.partitionBy(key).orderBy(*order).rowsBetween(Window.unboundedPreceding, Window.currentRow)


def _elect(rows, key, order):
    """Each row with its group's first row by `order` (survivor_shard,
    survivor_rid)."""
    from pyspark.sql import functions as F
    w = _window(key, order)
    return (rows.withColumn("survivor_shard", F.first("shard").over(w))
                .withColumn("survivor_rid", F.first("rid").over(w)))


def exact_phases(prepared, persisted):
    """(removals of phases 1–3, the exact winners): removals as (shard, rid,
    phase, reason, survivor_shard, survivor_rid, ratio); winners with every
    column of `prepared` but the text. `persisted` caches a DataFrame and
    takes it back when the plan is done."""
    from pyspark.sql import functions as F

    live = prepared.where("placeholder = 0 AND skip_reason IS NULL").drop("text")
    ratio = F.lit(None).cast("double")
    phase1 = (live.where("canonical_url IS NULL")
                  .select("shard", "rid", F.lit(_phases.UNUSABLE).alias("phase"), F.col("discard_reason").alias("reason"),
                          F.lit(None).cast("int").alias("survivor_shard"),
                          F.lit(None).cast("long").alias("survivor_rid"), ratio.alias("ratio")))
    urls = _elect(live.where("canonical_url IS NOT NULL"), "url_key", [
        F.col("prefer_key").asc(), F.col("external").asc(), F.col("datetime_key").desc_nulls_last(), F.col("crawled_key").desc_nulls_last(),
        F.col("length_key").desc_nulls_last(), F.col("https").desc(), F.col("shard").asc(), F.col("rid").asc()])
    urls = persisted(urls)
    url_lost = urls.where("survivor_shard <> shard OR survivor_rid <> rid")
    phase2 = url_lost.select("shard", "rid", F.lit(_phases.SAME_URL).alias("phase"), F.lit(_phases.reason(_phases.SAME_URL)).alias("reason"),
                             "survivor_shard", "survivor_rid", ratio.alias("ratio"))
    url_winners = urls.where("survivor_shard = shard AND survivor_rid = rid").drop("survivor_shard", "survivor_rid")
    contents = _elect(url_winners.where("has_hash = 1"), "hash_key", [
        F.col("prefer_key").asc(), F.col("external").asc(), F.col("datetime_key").desc_nulls_last(), F.col("crawled_key").desc_nulls_last(),
        F.col("url_length").asc(), F.col("https").desc(), F.col("shard").asc(), F.col("rid").asc()])
    phase3 = (contents.where("survivor_shard <> shard OR survivor_rid <> rid")
                      .select("shard", "rid", F.lit(_phases.SAME_CONTENT).alias("phase"), F.lit(_phases.reason(_phases.SAME_CONTENT)).alias("reason"),
                              "survivor_shard", "survivor_rid", ratio.alias("ratio")))
    winners = (contents.where("survivor_shard = shard AND survivor_rid = rid").drop("survivor_shard", "survivor_rid")
               .unionByName(url_winners.where("has_hash = 0")))
    return phase1.unionByName(phase2).unionByName(phase3), winners


def domain_phase(survivors, n_min):
    """Phase 5: the survivors of domains with fewer than `n_min` of them
    (NULL domains stay), as removals; none when n_min is 0."""
    from pyspark.sql import functions as F
    if n_min <= 0:
        return None
    counts = survivors.where("domain IS NOT NULL").groupBy("domain").agg(F.count("*").alias("pages"))
    small = counts.where(F.col("pages") < n_min)
    quoted = F.concat(F.lit("'"), F.regexp_replace("domain", "'", "''"), F.lit("'"))
    return (survivors.join(small, "domain")
            .select("shard", "rid", F.lit(_phases.SMALL_DOMAIN).alias("phase"),
                    F.concat(F.lit("domain "), quoted, F.lit(" has "), F.col("pages").cast("string"),
                             F.lit(" page(s), fewer than n_min")).alias("reason"),
                    F.lit(None).cast("int").alias("survivor_shard"), F.lit(None).cast("long").alias("survivor_rid"),
                    F.lit(None).cast("double").alias("ratio")))


def kept_apart(survivors):
    """Phase 6's pages kept apart: survivors that share a canonical URL
    (phase 2 kept them apart by their strict URLs) keep their strict URL;
    with the note explain shows (as sql/06_removals.sql words it), naming
    the parameters that tell the group's pages apart as
    `dedup_differing_params` does: of those a page's canonical URL dropped
    (`extra_params`, `name=value` joined by `&`), each whose values (sorted,
    per page) are not the same on every page of the group, a page without
    it counting as one more value."""
    from pyspark.sql import functions as F
    apart = survivors.where("strict_url IS NOT NULL AND canonical_url IS NOT NULL")
    sizes = apart.groupBy("canonical_url").agg(F.count("*").alias("pages")).where("pages > 1")
    pairs = (apart.join(sizes, "canonical_url")
             .where("extra_params != ''")
             .select("canonical_url", "pages", "shard", "rid",
                     F.explode(F.split("extra_params", "&")).alias("pair"))
             .select("canonical_url", "pages", "shard", "rid",
                     F.substring_index("pair", "=", 1).alias("name"),
                     F.expr("substr(pair, length(substring_index(pair, '=', 1)) + 2)").alias("value")))
    # One value list per page and name; a name differs when two pages'
    # lists differ or some page lacks it.
    per_page = (pairs.groupBy("canonical_url", "pages", "shard", "rid", "name")
                .agg(F.array_sort(F.collect_list("value")).alias("values")))
    differing = (per_page.groupBy("canonical_url", "pages", "name")
                 .agg(F.count("*").alias("having"), F.countDistinct("values").alias("lists"))
                 .where("lists > 1 OR having < pages"))
    groups = (sizes.join(differing.groupBy("canonical_url").agg(
                  F.array_join(F.array_sort(F.collect_list("name")), ",").alias("params")), "canonical_url", "left")
              .select("canonical_url", "pages", F.coalesce(F.col("params"), F.lit("")).alias("params")))
    params = F.when(F.col("params") == "", F.lit("?")).otherwise(F.col("params"))
    note = F.concat(
        F.lit("kept apart from "), (F.col("pages") - 1).cast("string"),
        F.lit(" other page(s) that share the URL "), F.col("canonical_url"), F.lit(" without "),
        F.when(F.instr(params, ",") > 0, F.lit("parameters ")).otherwise(F.lit("parameter ")),
        F.lit("`"), F.regexp_replace(params, ",", "`, `"), F.lit("`"),
        F.lit(": their texts differ, so the parameter changes content on "),
        F.coalesce(F.col("domain"), F.lit("this site")))
    return apart.join(groups, "canonical_url").select("shard", "rid", F.col("strict_url").alias("rewrite_url"),
                                                      note.alias("note"))
