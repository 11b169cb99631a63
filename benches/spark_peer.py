#!/usr/bin/env python3
"""The Spark layer against text-dedup's MinHash Spark job on the same
documents and shards, `local[2]`, in one run: wall and CPU seconds, peak
memory of each process tree, and quality against the verified truth of
benches/peers.py.

The documents: benches/peers.py's (every page of the N-page builder corpus
with a non-empty text), cut into `--shards` contiguous parts of unequal
sizes. Ours: `sqlite_dedup.spark.run` over the parts as SQLite shards
(`pages(url, parsed)`, a URL of its own a document) in lsh mode. The peer:
text-dedup's `minhash_spark.py` as its authors wrote it (the last version
whose connected components are pure Spark, large-star/small-star: commit
6bb8e89 of github.com/ChenghaoMou/text-dedup; later ones need GraphFrames),
given as `--peer PATH` (this repository ships none of its code) and run
unmodified with `spark-submit --master local[2]` over the same parts as
parquet files, with `--index_column id`, once with its defaults and once with its threshold at 0.9. Each run is its
own process tree, the JVM's start included.

  cargo build --release --features loadable_extension
  /usr/bin/python3 benches/spark_peer.py --peer /path/to/text_dedup/minhash_spark.py [--pages 100000] [--shards 4]
"""
import argparse
import json
import os
import shutil
import sqlite3
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "benches"))
from corpora import DATA  # noqa: E402
from peers import documents, quality, truth  # noqa: E402
from spark import EXTENSION, timed  # noqa: E402

#: The peer's runs: its defaults (threshold 0.7 on word 5-grams, 250
#: permutations), and its threshold at ours.
PEER_SETTINGS = [[], ["--threshold", "0.9"]]

OURS = r"""
import json, sys
from pyspark.sql import SparkSession
from sqlite_dedup import spark as dedup_spark
spark = (SparkSession.builder.master("local[2]").config("spark.ui.showConsoleProgress", "false")
         .config("spark.driver.memory", "8g").config("spark.sql.shuffle.partitions", "8").getOrCreate())
spark.sparkContext.setLogLevel("ERROR")
report = dedup_spark.run(spark, sys.argv[2:], json.loads(sys.argv[1]))
spark.stop()
print(json.dumps({k: v for k, v in report.items() if k != "runs"}))
"""


def parts(docs, n):
    """The documents' ids cut into n contiguous parts of unequal sizes (1, 2, ..., n)."""
    c = sqlite3.connect(docs)
    ids = [r[0] for r in c.execute("SELECT id FROM docs ORDER BY id")]
    c.close()
    weights = list(range(1, n + 1))
    bounds, acc = [0], 0
    for w in weights:
        acc += w
        bounds.append(len(ids) * acc // sum(weights))
    return [(ids[bounds[i]], ids[bounds[i + 1] - 1]) for i in range(n)]


def shards(docs, cuts, folder):
    paths = []
    for i, (lo, hi) in enumerate(cuts):
        path = os.path.join(folder, f"shard-{i + 1}.db")
        c = sqlite3.connect(path)
        c.execute("CREATE TABLE pages (url TEXT, parsed TEXT)")
        c.execute("ATTACH ? AS d", (docs,))
        c.execute("INSERT INTO pages (rowid, url, parsed) SELECT id, 'https://peers.example/doc/' || id, text "
                  "FROM d.docs WHERE id BETWEEN ? AND ? ORDER BY id", (lo, hi))
        c.commit()
        c.close()
        paths.append(path)
    return paths


def parquet(docs, cuts, folder):
    import pyarrow as pa
    import pyarrow.parquet as pq
    c = sqlite3.connect(docs)
    os.makedirs(folder)
    for i, (lo, hi) in enumerate(cuts):
        rows = c.execute("SELECT id, text FROM docs WHERE id BETWEEN ? AND ? ORDER BY id", (lo, hi)).fetchall()
        table = pa.table({"id": pa.array([r[0] for r in rows], pa.int64()),
                          "content": pa.array([r[1] for r in rows], pa.string())})
        pq.write_table(table, os.path.join(folder, f"part-{i + 1}.parquet"))
    c.close()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--peer", required=True, help="text-dedup's minhash_spark.py (commit 6bb8e89)")
    ap.add_argument("--pages", type=int, default=100000)
    ap.add_argument("--shards", type=int, default=4)
    args = ap.parse_args()
    docs = documents(args.pages)
    t = truth(docs, 200)
    cuts = parts(docs, args.shards)
    work = tempfile.mkdtemp(dir=DATA)
    try:
        pkg = os.path.join(work, "pkg")
        shutil.copytree(os.path.join(ROOT, "python", "sqlite_dedup"), os.path.join(pkg, "sqlite_dedup"))
        shutil.copy(EXTENSION + ".so", os.path.join(pkg, "sqlite_dedup", "dedup0.so"))
        env = dict(os.environ, PYTHONPATH=pkg, PYSPARK_PYTHON=sys.executable, SQLITE_DEDUP_EXTENSION=EXTENSION)
        ours_dir = os.path.join(work, "ours")
        os.makedirs(ours_dir)
        paths = shards(docs, cuts, ours_dir)
        o_s, o_mb, o_cpu, _ = timed([sys.executable, "-c", OURS, json.dumps({"near_mode": "lsh"}), *paths], env)
        kept_ours = set()
        for p in paths:
            c = sqlite3.connect(p)
            kept_ours |= {r[0] for r in c.execute("SELECT rowid FROM pages")}
            c.close()
        parquet(docs, cuts, os.path.join(work, "input"))
        peer_env = dict(os.environ, PYSPARK_PYTHON=sys.executable)
        import glob
        import pyarrow.parquet as pq
        peer_runs = []
        for k, extra in enumerate(PEER_SETTINGS):
            out = os.path.join(work, f"out-{k}")
            p_s, p_mb, p_cpu, _ = timed(["spark-submit", "--master", "local[2]", "--driver-memory", "8g", args.peer,
                                         "--input", os.path.join(work, "input"), "--output", out,
                                         "--index_column", "id", *extra], peer_env)
            kept_peer = set()
            for f in glob.glob(os.path.join(out, "**", "*.parquet"), recursive=True):
                kept_peer |= set(pq.read_table(f, columns=["id"]).column("id").to_pylist())
            peer_runs.append((" ".join(extra) or "its defaults", p_s, p_mb, p_cpu, kept_peer))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"# Spark against text-dedup's MinHash Spark job: {args.pages:,}-page builder corpus's documents in "
          f"{args.shards} parts, local[2]\n")
    print("| job | wall s (JVM start included) | / text-dedup, its defaults | CPU s, process tree | peak MB, process tree | "
          "documents kept | texts removed | recall | precision |")
    print("|---|---|---|---|---|---|---|---|---|")
    base = peer_runs[0][1]
    rows = [("sqlite-dedup spark run, lsh mode", o_s, o_mb, o_cpu, kept_ours)] + [
        (f"text-dedup minhash_spark.py (6bb8e89, {label})", s, mb, cpu, kept) for label, s, mb, cpu, kept in peer_runs]
    for name, s, mb, cpu, kept in rows:
        recall, precision, removed = quality(docs, kept, t["pairs"])
        print(f"| {name} | {s:.1f} | {s / base:.2f} | {cpu:.0f} | {mb:.0f} | {len(kept):,} | {removed:,} | "
              f"{recall:.4f} | {precision:.4f} |")


if __name__ == "__main__":
    main()
