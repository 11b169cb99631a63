"""Phase 4, lsh mode, on Spark, exact: every text's band keys are computed
in tasks through the extension (minhash, lsh_bands: the single database's
functions); rows that share a band and key are candidates, and the
candidate graph is cut into its connected components in Spark (labels
propagated through the (band, key) groups, with pointer jumping, until none
changes; never on the driver). The single database's scan (near_dups_among, sql/04b_near_dups.sql)
compares a row only with its candidates, so its removals in one component
never depend on another: each component is scanned by a task with the same
function over its rows in their positions, which gives the whole scan's
removals."""

from . import _tasks

#: DataFrames this module cached for the plan being made (the plan drops
#: them once its decisions are computed).
CACHED = []


def band_keys(batches, bands, rows):
    """A task: (pos, band, key) of every text of the Arrow batches (pos,
    text), as sql/04b_near_dups.sql computes them."""
    import pyarrow as pa
    conn = _tasks.connect(":memory:")
    try:
        conn.execute("CREATE TABLE t (pos INTEGER PRIMARY KEY, text TEXT)")
        for batch in batches:
            conn.execute("DELETE FROM t")
            conn.executemany("INSERT INTO t VALUES (?, ?)",
                             zip(batch.column(0).to_pylist(), batch.column(1).to_pylist()))
            out = conn.execute(
                "SELECT t.pos, b.band, b.key FROM t JOIN lsh_bands(minhash(t.text, ?1 * ?2, 'char', 5), ?1, ?2) AS b",
                (bands, rows)).fetchall()
            if out:
                pos, band, key = zip(*out)
                yield pa.RecordBatch.from_arrays(
                    [pa.array(pos, pa.int64()), pa.array(band, pa.int64()), pa.array(key, pa.int64())],
                    names=["pos", "band", "key"])
    finally:
        conn.close()


def components(keys, max_rounds=10000):
    """(pos, label) for every row that shares a band key with another: the
    label is the smallest pos of its connected component; and the rounds
    it took."""
    from pyspark import StorageLevel
    from pyspark.sql import functions as F

    # (Only groups of two rows or more make candidates.)
    sizes = keys.groupBy("band", "key").agg(F.count("*").alias("n"), F.min("pos").alias("label"))
    groups = keys.join(sizes.where("n > 1"), ["band", "key"]).select("pos", "band", "key", "label")
    groups = groups.persist(StorageLevel.MEMORY_AND_DISK)
    CACHED.append(groups)
    members = groups.select("pos", "band", "key")
    labels = groups.groupBy("pos").agg(F.min("label").alias("label")).persist(StorageLevel.MEMORY_AND_DISK)
    CACHED.append(labels)
    rounds = 0
    while True:
        rounds += 1
        if rounds > max_rounds:
            raise RuntimeError("sqlite-dedup spark: lsh components did not settle (a bug: please report it)")
        group_label = members.join(labels, "pos").groupBy("band", "key").agg(F.min("label").alias("label"))
        passed = members.join(group_label, ["band", "key"]).groupBy("pos").agg(F.min("label").alias("label"))
        # (Pointer jumping: a row also takes its label's label, a row of
        # its component, so long chains settle in about log rounds.)
        jumped = passed.join(passed.select(F.col("pos").alias("label"), F.col("label").alias("further")),
                             "label", "left")
        new = (jumped.select("pos", F.least("label", F.coalesce("further", "label")).alias("label"))
               .localCheckpoint(eager=True))
        changed = new.join(labels.withColumnRenamed("label", "old"), "pos").where("label < old").count()
        labels = new
        if changed == 0:
            return labels, rounds


def _scan_component(rows, threshold, election):
    """A task: the single database's lsh scan (near_dups_among) over one
    component's rows: ('t', pos, rank, text) and ('k', pos, band, key)."""
    conn = _tasks.connect(":memory:")
    try:
        conn.execute("CREATE TABLE copy (pos INTEGER PRIMARY KEY, id INTEGER, rank INTEGER, text TEXT)")
        conn.execute("CREATE TABLE bands (band INTEGER, key INTEGER, id INTEGER)")
        texts = [(r[1], r[2], r[3]) for r in rows if r[0] == "t"]
        conn.executemany("INSERT INTO copy VALUES (?1, ?1, ?2, ?3)", texts)
        conn.executemany("INSERT INTO bands VALUES (?2, ?3, ?1)", [r[1:] for r in rows if r[0] == "k"])
        return conn.execute("SELECT id, survivor, anchor, ratio FROM near_dups_among('copy', 'bands', ?, ?)",
                            (threshold, election)).fetchall()
    finally:
        conn.close()


def scan(rows, threshold, bands, band_rows, election):
    """Removals of the lsh scan of `rows` (from scan_order): a DataFrame
    (pos, survivor_pos, anchor_pos, ratio), and figures."""
    from pyspark import StorageLevel
    spark = rows.sparkSession
    empty = spark.createDataFrame([], "pos long, survivor_pos long, anchor_pos long, ratio double")
    if threshold >= 1.0:
        return empty, {"lsh_components": 0, "lsh_rounds": 0}
    texts = rows.where("text IS NOT NULL").select("pos", "rank", "text")
    keys = texts.select("pos", "text").mapInArrow(
        lambda batches: band_keys(batches, bands, band_rows), "pos long, band long, key long")
    keys = keys.persist(StorageLevel.MEMORY_AND_DISK)
    CACHED.append(keys)
    labels, rounds = components(keys)
    labelled_texts = texts.join(labels, "pos").rdd.map(lambda r: (r["label"], ("t", r["pos"], r["rank"], r["text"])))
    labelled_keys = keys.join(labels, "pos").rdd.map(lambda r: (r["label"], ("k", r["pos"], r["band"], r["key"])))
    parts = max(1, spark.sparkContext.defaultParallelism * 2)
    removed = (labelled_texts.union(labelled_keys).groupByKey(parts)
               .flatMap(lambda kv: _scan_component(list(kv[1]), threshold, election)))
    figures = {"lsh_components": labels.select("label").distinct().count(), "lsh_rounds": rounds}
    return spark.createDataFrame(removed, "pos long, survivor_pos long, anchor_pos long, ratio double"), figures
