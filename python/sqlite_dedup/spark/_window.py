"""Phase 4, window mode, on Spark, exact: the scan order is cut into ranges
of `partition_rows` positions; each range is scanned by a task with a halo
(the `window` rows after it, which its anchors reach), assuming what
anchors before it removed among its first rows (its entry state). A range's
result is final once its assumed entry equals what the range before it
removed in its halo; ranges whose assumption was wrong are scanned again
with the right entry, round after round, until every range agrees. The
first range's entry is always right (nothing lies before it), so each round
fixes at least the first range still wrong: the result is the sequential
scan's (sql/04b_near_dups.sql), whatever the cuts."""

from . import _tasks

#: DataFrames this module cached for the plan being made (the plan drops
#: them once its decisions are computed).
CACHED = []


def scan_order(winners, placeholders, texts):
    """The scan's input: (pos, rank, shard, rid, text) for the exact winners
    with a text and the placeholders (text NULL), pos in URL order, rank in
    election order (as sql/04a_near_input.sql numbers them; pos and rank
    from 0)."""
    from pyspark import StorageLevel
    from pyspark.sql import functions as F

    live = winners.where("has_text = 1").select(
        "shard", "rid", F.lit(0).alias("placeholder"), "canonical_url", "prefer_key", "external", "datetime4_key",
        "crawled4_key", "length4_key", "https")
    holders = placeholders.select(
        "shard", "rid", F.lit(1).alias("placeholder"), "canonical_url",
        F.lit(None).cast("binary").alias("prefer_key"), F.lit(1).alias("external"),
        F.lit(None).cast("binary").alias("datetime4_key"), F.lit(None).cast("binary").alias("crawled4_key"),
        F.lit(None).cast("binary").alias("length4_key"), F.lit(0).alias("https"))
    rows = live.unionByName(holders)
    rank_order = [F.col("placeholder").asc(), F.col("prefer_key").asc(), F.col("external").asc(), F.col("datetime4_key").desc_nulls_last(),
                  F.col("crawled4_key").desc_nulls_last(), F.col("length4_key").desc(), F.col("https").desc(),
                  F.col("canonical_url").asc(), F.col("shard").asc(), F.col("rid").asc()]
    pos_order = [F.col("canonical_url").asc(), F.col("shard").asc(), F.col("rid").asc(), F.col("placeholder").asc()]
    # (The rank only orders: the sort's increasing ids serve.)
    # (Persisted: a recomputed sort could cut its partitions elsewhere.)
    ranked = rows.orderBy(*rank_order).withColumn("rank", F.monotonically_increasing_id()).persist(
        StorageLevel.MEMORY_AND_DISK)
    CACHED.append(ranked)
    placed = _numbered(ranked.orderBy(*pos_order), "pos")
    with_text = placed.join(texts, ["shard", "rid", "placeholder"], "left")
    return with_text.select("pos", "rank", "shard", "rid",
                            F.when(F.col("placeholder") == 0, F.col("text")).alias("text"))


def _numbered(df, name):
    """`df` (sorted) with a column `name`: each row's place, from 0, in the
    JVM: monotonically_increasing_id gives (partition, row in partition) of
    the sort's output, whose partitions are in order; the partitions' sizes
    (one number each, on the driver) give their offsets."""
    from pyspark import StorageLevel
    from pyspark.sql import functions as F
    tagged = df.withColumn("_mid", F.monotonically_increasing_id()).persist(StorageLevel.MEMORY_AND_DISK)
    CACHED.append(tagged)
    sizes = dict(tagged.groupBy(F.shiftright("_mid", 33).alias("p")).count().collect())
    offsets, at = [], 0
    for p in sorted(sizes):
        offsets.append((p, at))
        at += sizes[p]
    spark = df.sparkSession
    starts = spark.createDataFrame(offsets or [(0, 0)], "p long, start long")
    return (tagged.join(F.broadcast(starts), F.shiftright("_mid", 33) == F.col("p"))
            .withColumn(name, F.col("start") + F.col("_mid").bitwiseAND(F.lit((1 << 33) - 1)))
            .drop("_mid", "p", "start"))


def scan(rows, threshold, window, partition_rows, measure="levenshtein", max_rounds=10000):
    """Removals of the window scan of `rows` (from scan_order): a DataFrame
    (pos, survivor_pos, anchor_pos, ratio), the number of rounds and of
    range scans it took, and the cached RDDs behind the DataFrame (for the
    caller to unpersist once it is used)."""
    if partition_rows < max(window, 1):
        raise ValueError(f"partition_rows must be at least distance - 1 ({window}), got {partition_rows}")
    spark = rows.sparkSession
    total = rows.count()
    if total == 0 or threshold >= 1.0:
        return spark.createDataFrame([], "pos long, survivor_pos long, anchor_pos long, ratio double"), 0, 0, ()
    ranges = (total + partition_rows - 1) // partition_rows
    size = partition_rows

    def place(row):
        pos, rank, text = row[0], row[1], row[2]
        k = pos // size
        yield k, (pos, rank, text, False)
        if k > 0 and pos - k * size < window:
            yield k - 1, (pos, rank, text, True)

    parts = (rows.select("pos", "rank", "text").rdd.flatMap(place)
             .partitionBy(ranges, lambda k: k).persist())
    entries = [()] * ranges          # the entry each range was last scanned with
    exits = [()] * ranges            # what it removed in its halo then
    last = [None] * ranges           # the round whose scan of it is final
    outputs = []
    todo = list(range(ranges))
    rounds = scans = 0
    while todo:
        rounds += 1
        if rounds > max_rounds:
            raise RuntimeError("sqlite-dedup spark: phase 4 did not settle (a bug: please report it)")
        wanted = {k: entries[k] for k in todo}
        out = parts.mapPartitionsWithIndex(
            lambda k, it, wanted=wanted: _scan_range(k, it, wanted, threshold, window, measure)).persist()
        outputs.append(out)
        # (Only each range's halo removals come to the driver.)
        for k, exit_ in out.map(lambda r: (r[0], r[2])).collect():
            exits[k], last[k] = tuple(exit_), rounds - 1
            scans += 1
        todo = [k for k in range(1, ranges) if exits[k - 1] != entries[k]]
        for k in todo:
            entries[k] = exits[k - 1]
    final = None
    for r, out in enumerate(outputs):
        mine = {k for k in range(ranges) if last[k] == r}
        part = out.filter(lambda rec, mine=mine: rec[0] in mine).flatMap(lambda rec: rec[1])
        final = part if final is None else final.union(part)
    df = spark.createDataFrame(final, "pos long, survivor_pos long, anchor_pos long, ratio double")
    return df, rounds, scans, (parts, outputs)


def _scan_range(k, rows, wanted, threshold, window, measure):
    """A task: scans range `k` if it is wanted this round."""
    if k not in wanted:
        return iter(())
    rows = [row for _, row in rows]
    removed, exit_ = _tasks.scan_partition(rows, wanted[k], threshold, window, measure)
    return iter([(k, removed, exit_)])
