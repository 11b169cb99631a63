"""`paragraphs: dedup` on Spark: each kept page's paragraphs keyed in its
task (`paragraph_keys`, the extension's), each key's owner elected over
every shard in the order the paragraph step reads the kept pages
(src/sqlite/pipeline/run/paragraphs.rs: phase 4's election order, then the
paragraph's position), and each later copy sent to its shard with the
owner's paragraph (`paragraph_at`), which the shard's apply confirms on the
copy's text before it cuts it (dedup_apply_plan's paragraph cuts)."""

from ._lsh import _through_sqlite

#: The kept pages' order (sql/04a_near_input.sql's rank; shard then rid is
#: the one database's rowid order).
RANK = ["prefer_key", "external", "datetime4_key", "crawled4_key", "length4_key", "https", "canonical_url",
        "shard", "rid"]


def _keys(batches, minimum):
    """A task: (shard, rid, position, key) of each paragraph of
    `minimum` characters of the Arrow batches (shard, rid, text, filled)."""
    import pyarrow as pa
    return _through_sqlite(
        batches, "shard INTEGER, rid INTEGER, text TEXT, filled INTEGER",
        "SELECT t.shard, t.rid, json_extract(j.value, '$[0]'), json_extract(j.value, '$[1]') "
        "FROM t, json_each(paragraph_keys(t.text, t.filled, ?)) AS j", (minimum,),
        [pa.field("shard", pa.int32()), pa.field("rid", pa.int64()), pa.field("position", pa.int32()),
         pa.field("key", pa.int64())])


def _paragraphs(batches):
    """A task: (shard, rid, position, paragraph) of the Arrow batches
    (shard, rid, position, text, filled)."""
    import pyarrow as pa
    return _through_sqlite(
        batches, "shard INTEGER, rid INTEGER, position INTEGER, text TEXT, filled INTEGER",
        "SELECT shard, rid, position, paragraph_at(text, filled, position) FROM t", (),
        [pa.field("shard", pa.int32()), pa.field("rid", pa.int64()), pa.field("position", pa.int32()),
         pa.field("paragraph", pa.string())])


def cuts(survivors, prepared, minimum):
    """The paragraph cuts of the kept pages (`survivors`, with the texts
    of `prepared`): a DataFrame (shard, rid, position, owner_shard,
    owner_rid, owner_url, owner_paragraph), one row for each paragraph a
    page before it in the order holds."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F
    texts = prepared.where("placeholder = 0").select("shard", "rid", "text")
    kept = (survivors.where("has_text = 1").join(texts, ["shard", "rid"])
            .select("shard", "rid", "text", "filled", *RANK[:-2],
                    F.coalesce("strict_url", "canonical_url").alias("url")))
    keys = kept.select("shard", "rid", "text", "filled").mapInArrow(
        lambda batches: _keys(batches, minimum), "shard int, rid long, position int, key long")
    order = [F.col(c).asc() for c in ("prefer_key", "external")] + [
        F.col(c).desc_nulls_last() for c in ("datetime4_key", "crawled4_key")] + [
        F.col("length4_key").desc(), F.col("https").desc(), F.col("canonical_url").asc(),
        F.col("shard").asc(), F.col("rid").asc(), F.col("position").asc()]
    first = Window.partitionBy("key").orderBy(*order).rowsBetween(Window.unboundedPreceding, Window.currentRow)
    ranked = keys.join(kept.drop("text"), ["shard", "rid"])
    owned = ranked.select(
        "shard", "rid", "position", "filled",
        F.first("shard").over(first).alias("owner_shard"), F.first("rid").over(first).alias("owner_rid"),
        F.first("position").over(first).alias("owner_position"), F.first("url").over(first).alias("owner_url"))
    copies = owned.where("NOT (owner_shard = shard AND owner_rid = rid)")
    # The owners' paragraphs, to confirm each copy on its text.
    wanted = (copies.select(F.col("owner_shard").alias("shard"), F.col("owner_rid").alias("rid"),
                            F.col("owner_position").alias("position")).distinct()
              .join(kept.select("shard", "rid", "text", "filled"), ["shard", "rid"])
              .select("shard", "rid", "position", "text", "filled"))
    theirs = wanted.mapInArrow(_paragraphs, "shard int, rid long, position int, paragraph string").select(
        F.col("shard").alias("owner_shard"), F.col("rid").alias("owner_rid"),
        F.col("position").alias("owner_position"), F.col("paragraph").alias("owner_paragraph"))
    return copies.join(theirs, ["owner_shard", "owner_rid", "owner_position"]).select(
        "shard", "rid", "position", "owner_shard", "owner_rid", "owner_url", "owner_paragraph")
