"""Phase 4, lsh mode, on Spark, exact: every text's minhash signature and
band keys are computed in tasks through the extension (minhash,
lsh_bands: the single database's functions); rows that share a band and
key are candidates, and the candidate graph is cut into its connected
components (stars of the (band, key) groups, labels passed in Spark
rounds while the graph left is large, then labelled whole by one task;
never on the driver). The single database's scan (near_dups_among,
sql/04b_near_dups.sql) compares a row only with its candidates, so its
removals in one component never depend on another: each component is
scanned by a task with the same function over its rows in their
positions (texts and signatures sent as Arrow columns), which gives the
whole scan's removals."""

from . import _tasks

#: Up to this many labelled rows, the components' joins send every task
#: the labels whole (a broadcast, built on the driver: tens of MB) instead
#: of shuffling the edges.
BROADCAST_LABELS = 1_000_000

#: The candidate graph one task labels whole (in memory: under 100 bytes
#: an edge at its peak, so about 2 GB here) once no more than this many
#: edges join different labels; above it, Spark rounds shrink that graph
#: first.
TASK_EDGES = 20_000_000

#: DataFrames this module cached for the plan being made (the plan drops
#: them once its decisions are computed).
CACHED = []


def _through_sqlite(batches, columns, select, params, out):
    """A task's loop: each Arrow batch into table `t` (`columns`, its SQL
    column definitions) of an in-memory connection with the extension,
    then `select`'s rows out as an Arrow batch of the fields `out`."""
    import pyarrow as pa
    conn = _tasks.connect(":memory:")
    try:
        conn.execute(f"CREATE TABLE t ({columns})")
        marks = ", ".join("?" * len(columns.split(",")))
        for batch in batches:
            conn.execute("DELETE FROM t")
            _tasks.insert_many(conn, f"INSERT INTO t VALUES ({marks})", zip(*(c.to_pylist() for c in batch.columns)))
            rows = conn.execute(select, params).fetchall()
            if rows:
                yield pa.RecordBatch.from_arrays(
                    [pa.array(values, field.type) for values, field in zip(zip(*rows), out)],
                    schema=pa.schema(out))
    finally:
        conn.close()


# The SQL function of each lsh_sketch (as src/sqlite/settings/choices.rs names them).
SKETCH_FUNCTIONS = {"minhash": "minhash", "oph": "minhash_oph"}


def signatures(batches, permutations, shingling):
    """A task: (pos, sig) for the Arrow batches (pos, text): each text's
    minhash signature, as sql/04b_near_dups.sql computes it (`shingling`:
    the checked settings lsh_shingles, lsh_shingle_size, stoplist and
    lsh_sketch)."""
    import pyarrow as pa
    kind, size, stoplist, sketch = shingling
    function = SKETCH_FUNCTIONS[sketch]
    return _through_sqlite(batches, "pos INTEGER PRIMARY KEY, text TEXT",
                           f"SELECT pos, {function}(text, ?, ?, ?, ?) FROM t", (permutations, kind, size, stoplist),
                           [pa.field("pos", pa.int64()), pa.field("sig", pa.binary())])


def band_keys(batches, bands, rows):
    """A task: (pos, band, key) of every signature of the Arrow batches
    (pos, sig), as sql/04b_near_dups.sql computes them (lsh_bands)."""
    import pyarrow as pa
    return _through_sqlite(batches, "pos INTEGER PRIMARY KEY, sig BLOB",
                           "SELECT t.pos, b.band, b.key FROM t JOIN lsh_bands(t.sig, ?1, ?2) AS b", (bands, rows),
                           [pa.field("pos", pa.int64()), pa.field("band", pa.int64()), pa.field("key", pa.int64())])


def star_edges(keys):
    """The candidate graph cut down to the edges that keep its components:
    a (band, key) group of two rows or more joins its smallest pos `a` to
    each other member `b` (a star); the stars of every band, without
    repeats (near-copies share many bands, so far fewer edges than the
    groups have rows)."""
    from pyspark.sql import functions as F
    stars = keys.groupBy("band", "key").agg(F.count("*").alias("n"), F.min("pos").alias("a")).where("n > 1")
    return keys.join(stars, ["band", "key"]).where("pos <> a").select("a", F.col("pos").alias("b")).distinct()


def smallest_linked(x, y):
    """For the edges x[i]–y[i] (numpy int64 arrays): (nodes, label), every
    node once in increasing order and the smallest node of its connected
    component. Vectorized: each pass gives both ends of every edge the
    smaller of their labels, then labels take their labels' labels until
    that changes nothing, until no edge joins two labels."""
    import numpy as np
    nodes, inverse = np.unique(np.concatenate([x, y]), return_inverse=True)
    xi, yi = inverse[:len(x)], inverse[len(x):]
    label = np.arange(len(nodes))
    while True:
        m = np.minimum(label[xi], label[yi])
        new = label.copy()
        np.minimum.at(new, xi, m)
        np.minimum.at(new, yi, m)
        while True:
            jumped = new[new]
            if np.array_equal(jumped, new):
                break
            new = jumped
        if np.array_equal(new, label):
            return nodes, nodes[label]
        label = new


def _merge_task(batches):
    """A task: the labels (x, y) of every edge left between two labels,
    whole; (label, final) for each label whose component has a smaller one."""
    import numpy as np
    import pyarrow as pa
    xs, ys = [], []
    for batch in batches:
        xs.append(batch.column(0).to_numpy())
        ys.append(batch.column(1).to_numpy())
    if not xs:
        return
    nodes, final = smallest_linked(np.concatenate(xs), np.concatenate(ys))
    moved = nodes != final
    yield pa.RecordBatch.from_arrays([pa.array(nodes[moved]), pa.array(final[moved])], names=["label", "final"])


def components(keys, max_rounds=10000):
    """(pos, label) for every row that shares a band key with another: the
    label is the smallest pos of its connected component; the Spark rounds
    it took; and the edges one task merged at the end (0: none).

    Each row starts labelled with its smallest neighbour in the stars
    ([`star_edges`]). The edges whose ends have different labels, as pairs
    of labels, are a smaller graph with the same components of labels;
    while it has more than TASK_EDGES edges, a round moves each label to
    its smallest neighbour's there (and that one's), every row to its
    label's, and then to its new label's label (pointer jumping: a chain
    halves each round); then one task labels that graph whole
    ([`smallest_linked`]). Never on the driver."""
    from pyspark import StorageLevel
    from pyspark.sql import functions as F

    edges = star_edges(keys).persist(StorageLevel.MEMORY_AND_DISK)
    CACHED.append(edges)
    # (Edges go from smaller to larger pos.)
    labels = (edges.select(F.col("a").alias("pos"), F.col("a").alias("label"))
              .unionByName(edges.select(F.col("b").alias("pos"), F.col("a").alias("label")))
              .groupBy("pos").agg(F.min("label").alias("label"))
              .localCheckpoint(eager=True))
    # (While the labels are few, every task gets them whole instead of a
    # shuffle of the edges each round.)
    small = labels.count() <= BROADCAST_LABELS
    rounds = 0
    while True:
        shared = F.broadcast(labels) if small else labels
        cross = (edges.join(shared.select(F.col("pos").alias("a"), F.col("label").alias("la")), "a")
                 .join(shared.select(F.col("pos").alias("b"), F.col("label").alias("lb")), "b")
                 .where("la <> lb")
                 .select(F.least("la", "lb").alias("x"), F.greatest("la", "lb").alias("y")).distinct()
                 .localCheckpoint(eager=True))
        left = cross.count()
        if left == 0:
            return labels, rounds, 0
        if left <= TASK_EDGES:
            final = cross.repartition(1).mapInArrow(_merge_task, "label long, final long")
            labels = (labels.join(F.broadcast(final) if small else final, "label", "left")
                      .select("pos", F.coalesce("final", "label").alias("label"))
                      .localCheckpoint(eager=True))
            return labels, rounds, left
        rounds += 1
        if rounds > max_rounds:
            raise RuntimeError("sqlite-dedup spark: lsh components did not settle (a bug: please report it)")
        ends = cross.select(F.col("x").alias("n"), F.col("y").alias("m")).unionByName(
            cross.select(F.col("y").alias("n"), F.col("x").alias("m")))
        moves = ends.groupBy("n").agg(F.least(F.min("m"), F.col("n")).alias("m"))
        further = moves.select(F.col("n").alias("m"), F.col("m").alias("further"))
        moves = (moves.join(further, "m", "left")
                 .select(F.col("n").alias("label"), F.least("m", F.coalesce("further", "m")).alias("to")))
        moved = (labels.join(F.broadcast(moves) if small else moves, "label", "left")
                 .select("pos", F.coalesce("to", "label").alias("label")))
        # (And each row takes its label's label: chains of labels halve.)
        jump = moved.select(F.col("pos").alias("label"), F.col("label").alias("further"))
        labels = (moved.join(F.broadcast(jump) if small else jump, "label", "left")
                  .select("pos", F.least("label", F.coalesce("further", "label")).alias("label"))
                  .localCheckpoint(eager=True))


def scan_component(table, threshold, election, bands, rows, measure="levenshtein"):
    """A task: the single database's lsh scan (near_dups_among) over one
    component's rows, an Arrow table (label, pos, rank, text, sig): their
    texts copied in scan order and their band keys made again from the
    signatures (lsh_bands), as sql/04b_near_dups.sql does; the removals as
    an Arrow table (pos, survivor_pos, anchor_pos, ratio)."""
    import pyarrow as pa
    conn = _tasks.connect(":memory:")
    try:
        conn.execute("CREATE TABLE copy (pos INTEGER PRIMARY KEY, id INTEGER, rank INTEGER, text TEXT)")
        conn.execute("CREATE TABLE sigs (id INTEGER PRIMARY KEY, sig BLOB)")
        for batch in table.to_batches():
            pos = batch.column("pos").to_pylist()
            _tasks.insert_many(conn, "INSERT INTO copy VALUES (?1, ?1, ?2, ?3)",
                               zip(pos, batch.column("rank").to_pylist(), batch.column("text").to_pylist()))
            _tasks.insert_many(conn, "INSERT INTO sigs VALUES (?, ?)", zip(pos, batch.column("sig").to_pylist()))
        conn.execute("CREATE TABLE bands AS SELECT b.band, b.key, s.id FROM sigs AS s "
                     "JOIN lsh_bands(s.sig, ?1, ?2) AS b", (bands, rows))
        out = conn.execute("SELECT id, survivor, anchor, ratio FROM near_dups_among('copy', 'bands', ?, ?, ?)",
                           (threshold, election, measure)).fetchall()
    finally:
        conn.close()
    columns = list(zip(*out)) if out else [(), (), (), ()]
    return pa.Table.from_arrays(
        [pa.array(columns[0], pa.int64()), pa.array(columns[1], pa.int64()), pa.array(columns[2], pa.int64()),
         pa.array(columns[3], pa.float64())], names=["pos", "survivor_pos", "anchor_pos", "ratio"])


def scan(rows, threshold, bands, band_rows, election, shingling=("char", 5, None, "minhash"), measure="levenshtein"):
    """Removals of the lsh scan of `rows` (from scan_order): a DataFrame
    (pos, survivor_pos, anchor_pos, ratio), and figures (the components,
    the rounds and task that found them, seconds of each step)."""
    import time
    from pyspark import StorageLevel
    spark = rows.sparkSession
    seconds = {}
    start = time.perf_counter()
    empty = spark.createDataFrame([], "pos long, survivor_pos long, anchor_pos long, ratio double")
    if threshold >= 1.0:
        return empty, {"lsh_components": 0, "lsh_rounds": 0, "lsh_task_edges": 0, "lsh_seconds": {}}
    texts = rows.where("text IS NOT NULL").select("pos", "rank", "text")
    sigs = texts.select("pos", "text").mapInArrow(
        lambda batches: signatures(batches, bands * band_rows, shingling), "pos long, sig binary")
    sigs = sigs.persist(StorageLevel.MEMORY_AND_DISK)
    CACHED.append(sigs)
    keys = sigs.mapInArrow(lambda batches: band_keys(batches, bands, band_rows), "pos long, band long, key long")
    keys = keys.persist(StorageLevel.MEMORY_AND_DISK)
    CACHED.append(keys)
    keys.count()
    seconds["band_keys"], start = round(time.perf_counter() - start, 3), time.perf_counter()
    labels, rounds, merged = components(keys)
    seconds["components"], start = round(time.perf_counter() - start, 3), time.perf_counter()
    # (Each component's rows go to its task as Arrow columns; the task
    # makes their band keys again from the signatures.)
    removed = (texts.join(sigs, "pos").join(labels, "pos").groupBy("label")
               .applyInArrow(lambda table: scan_component(table, threshold, election, bands, band_rows, measure),
                             "pos long, survivor_pos long, anchor_pos long, ratio double")
               .localCheckpoint(eager=True))
    seconds["scan"] = round(time.perf_counter() - start, 3)
    figures = {"lsh_components": labels.select("label").distinct().count(), "lsh_rounds": rounds,
               "lsh_task_edges": merged, "lsh_seconds": seconds}
    return removed, figures
