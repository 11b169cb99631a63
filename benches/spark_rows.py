#!/usr/bin/env python3
"""The Spark layer's per-row work (phase 1 on pages already in Arrow
batches, as `sqlite_dedup.spark.plan` gets them from a DataFrame), three
ways, in the same run of this script (issue 27: "measure both and keep the
faster"):

- extension, Python values: the batch into an in-memory SQLite table,
  dedup_prepare, the rows read back through Python's sqlite3 and made into
  Arrow arrays (the Spark layer until 2026-11-26);
- extension, Arrow columns: the same, but the extension writes the rows as
  Arrow columns (dedup_rows_arrow; the Spark layer until 2026-12-04);
- extension, dedup_phase1_arrow: the batch's buffers copied into a BLOB
  for the SQL function and its rows back as Arrow columns, no table
  between: phase 1's rules of `src/core/phase1.rs`, which the SQL runner's
  phase 1 runs too;
- extension, in place: the same core reading the batch where pyarrow holds
  it, through the Arrow C data interface (`src/arrow_abi.rs`, by ctypes;
  the Spark layer now);
- PyO3: a Python module over the Arrow buffers that calls the same Rust
  core (benches/pyo3_rows, built here; default settings only), the
  prototype the one-core design is measured against.

Every path gets the same batches; the PyO3 module's values must equal the
extension's, row for row. Also timed, before and now: the shard path
(dedup_prepare on the database file, then its rows), which PyO3 cannot
serve without a reader of SQLite files of its own.

    cargo build --release --features loadable_extension
    /usr/bin/python3 benches/spark_rows.py [--pages 100000] [--batch 10000] [--repeat 3]
"""
import argparse
import os
import shutil
import sqlite3
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "benches"))
sys.path.insert(0, os.path.join(ROOT, "python"))
from corpora import DATA, corpus  # noqa: E402

os.environ.setdefault("SQLITE_DEDUP_EXTENSION",
                      os.environ.get("DEDUP_EXTENSION", os.path.join(ROOT, "target", "release", "libdedup")))
from sqlite_dedup.spark import _tasks  # noqa: E402

STRINGS = ["url", "title", "content", "parsed", "content_hash", "datetime", "crawled"]


def build_pyo3():
    """Builds benches/pyo3_rows and returns the imported module."""
    target = os.path.join(DATA, "pyo3-target")
    subprocess.run(["cargo", "build", "--release", "--quiet"], cwd=os.path.join(ROOT, "benches", "pyo3_rows"),
                   env=dict(os.environ, CARGO_TARGET_DIR=target), check=True)
    shutil.copy(os.path.join(target, "release", "libpyo3_rows.so"), os.path.join(target, "pyo3_rows.so"))
    sys.path.insert(0, target)
    import pyo3_rows
    return pyo3_rows


def load(path):
    """The pages as one Arrow table: id (the rowid) and the page columns."""
    import pyarrow as pa
    conn = sqlite3.connect(path)
    have = [r[1] for r in conn.execute("PRAGMA table_info(pages)")]
    columns = [c for c in _tasks.PAGE_COLUMNS if c in have]
    rows = conn.execute(f"SELECT rowid, {', '.join(columns)} FROM pages").fetchall()
    conn.close()
    types = {"id": pa.int64(), "length": pa.int64()}
    arrays = [pa.array(col, type=types.get(name, pa.string())) for name, col in zip(["id"] + columns, zip(*rows))]
    return pa.Table.from_arrays(arrays, names=["id"] + columns), columns


def python_values(batches, columns, settings):
    """Before: the extension's rows through Python values (per cell)."""
    import pyarrow as pa
    types = [getattr(pa, t)() for _, t in _tasks.ROW_COLUMNS]
    conn = _tasks.connect(":memory:")
    out = []
    for batch in batches:
        ids = batch.column(0).to_pylist()
        values = [batch.column(batch.schema.get_field_index(c)).to_pylist() for c in columns]
        conn.execute("DROP TABLE IF EXISTS pages")
        conn.execute(f"CREATE TABLE pages ({', '.join(columns)})")
        conn.executemany(f"INSERT INTO pages (rowid, {', '.join(columns)}) VALUES ({', '.join('?' * (len(columns) + 1))})",
                         zip(ids, *values))
        conn.execute("SELECT dedup_prepare(?)", (settings,)).fetchone()
        cursor = conn.execute(f"SELECT {', '.join(c for c, _ in _tasks.ROW_COLUMNS)} FROM temp._dedup_rows")
        while rows := cursor.fetchmany(_tasks.BATCH_ROWS):
            out.append(pa.RecordBatch.from_arrays([pa.array(c, type=t) for c, t in zip(zip(*rows), types)],
                                                  names=[c for c, _ in _tasks.ROW_COLUMNS]))
    conn.close()
    return out


def prepared(batches, columns, settings, direct=True, abi=True):
    """_tasks.prepare_batches with its paths chosen (_tasks.DIRECT, _tasks.ABI)."""
    _tasks.DIRECT, _tasks.ABI = direct, abi
    try:
        return list(_tasks.prepare_batches(batches, "id", columns, settings))
    finally:
        _tasks.DIRECT = _tasks.ABI = True


def arrow_columns(batches, columns, settings):
    """Before: through an in-memory table (rows as Arrow columns)."""
    return prepared(batches, columns, settings, direct=False)


def phase1_arrow(batches, columns, settings):
    """The batches copied into a BLOB for the SQL function dedup_phase1_arrow."""
    return prepared(batches, columns, settings, abi=False)


def in_place(batches, columns, settings):
    """Now: the batches read in place through the Arrow C data interface
    (sqlite_dedup_phase1_arrow, the same core)."""
    return prepared(batches, columns, settings)


def pyo3_path(module, options):
    def run(batches, columns, settings):
        from sqlite_dedup.spark import _columns
        import pyarrow as pa
        out = []

        def u8(buffer):
            return None if buffer is None else memoryview(buffer).cast("B")
        for batch in batches:
            def strings(name):
                i = batch.schema.get_field_index(name)
                arr = batch.column(i) if i >= 0 else pa.nulls(batch.num_rows, pa.string())
                v, o, d = arr.buffers()
                return (u8(v), u8(o), u8(d if d is not None else pa.py_buffer(b"")), arr.offset)

            def ints(name):
                arr = batch.column(batch.schema.get_field_index(name))
                v, d = arr.buffers()
                return (u8(v), u8(d), arr.offset)
            blob = module.prepare(batch.num_rows, ints("id"), [strings(c) for c in STRINGS], ints("length"), *options)
            out.append(_columns.record_batch(blob))
        return out
    return run


def shard_path(path, settings):
    """Now: _tasks.prepare_shard on the database file (rows as Arrow columns)."""
    return list(_tasks.prepare_shard(0, path, settings))


def shard_python_values(path, settings):
    """Before: the same, with the rows read back through Python values."""
    import pyarrow as pa
    types = [getattr(pa, t)() for _, t in _tasks.ROW_COLUMNS]
    conn = _tasks.connect(path, readonly=True)
    conn.execute("SELECT dedup_prepare(?)", (settings,)).fetchone()
    cursor = conn.execute(f"SELECT {', '.join(c for c, _ in _tasks.ROW_COLUMNS)} FROM temp._dedup_rows")
    out = []
    while rows := cursor.fetchmany(_tasks.BATCH_ROWS):
        out.append(pa.RecordBatch.from_arrays([pa.array(c, type=t) for c, t in zip(zip(*rows), types)],
                                              names=[c for c, _ in _tasks.ROW_COLUMNS]))
    conn.close()
    return out


def same_values(extension, pyo3):
    """Row by row, every value the PyO3 module computes equals the extension's."""
    import pyarrow as pa
    ext = pa.Table.from_batches(extension).sort_by("rid")
    got = pa.Table.from_batches(pyo3).sort_by("rid")
    assert ext.num_rows == got.num_rows, (ext.num_rows, got.num_rows)
    for name in ["rid", "discard_reason", "canonical_url", "strict_url", "domain", "https", "datetime_key",
                 "crawled_key", "length_key", "url_length", "has_text", "text"]:
        a, b = ext.column(name).to_pylist(), got.column(name).to_pylist()
        bad = [k for k in range(len(a)) if a[k] != b[k]]
        assert not bad, f"{name} differs in {len(bad)} rows, first rid {ext.column('rid')[bad[0]]}: {a[bad[0]]!r} != {b[bad[0]]!r}"
    hashes = ["NULL" if h is None else f"'{h}'" for h in got.column("content_hash").to_pylist()]
    assert hashes == ext.column("hash_key").to_pylist(), "content hashes differ"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pages", type=int, default=100000)
    ap.add_argument("--batch", type=int, default=10000, help="rows per Arrow batch (Spark's default)")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    path = corpus(args.pages)
    table, columns = load(path)
    batches = table.to_batches(max_chunksize=args.batch)
    settings = "{}"
    conn = _tasks.connect(":memory:")
    conn.execute("CREATE TABLE pages (url TEXT, parsed TEXT)")
    conn.execute("SELECT dedup_prepare(?)", (settings,)).fetchone()
    options = conn.execute("SELECT url_options, strict_options FROM temp._dedup_run").fetchone()
    conn.close()
    module = build_pyo3()
    paths = {
        "extension, Python values (before)": python_values,
        "extension, Arrow columns (before)": arrow_columns,
        "extension, dedup_phase1_arrow, a BLOB through SQL": phase1_arrow,
        "extension, in place through the Arrow C data interface (now)": in_place,
        "PyO3 over Arrow": pyo3_path(module, options),
    }
    import pyarrow as pa
    table = pa.Table.from_batches(arrow_columns(batches, columns, settings)).sort_by("rid")
    for direct in (phase1_arrow, in_place):
        assert table.equals(pa.Table.from_batches(direct(batches, columns, settings)).sort_by("rid")), direct.__name__
    same_values(arrow_columns(batches, columns, settings), paths["PyO3 over Arrow"](batches, columns, settings))
    shards = {"shard file, Python values (before)": shard_python_values,
              "shard file, Arrow columns (now)": shard_path}
    seconds = {name: [] for name in list(paths) + list(shards)}
    for _ in range(args.repeat):
        for name, run in paths.items():
            t = time.perf_counter()
            run(batches, columns, settings)
            seconds[name].append(time.perf_counter() - t)
        for name, run in shards.items():
            t = time.perf_counter()
            run(path, settings)
            seconds[name].append(time.perf_counter() - t)
    now = statistics.median(seconds["PyO3 over Arrow"])
    print(f"{args.pages} builder pages (seed 7), batches of {args.batch} rows, median of {args.repeat} runs "
          "in this process; the PyO3 module's values equal the extension's in every row, and the extension paths' "
          "rows are equal")
    print()
    print("| path | seconds (median) | runs | / PyO3 over Arrow |")
    print("|---|---|---|---|")
    for name, s in seconds.items():
        m = statistics.median(s)
        print(f"| {name} | {m:.2f} | {', '.join(f'{x:.2f}' for x in s)} | {m / now:.2f} |")


if __name__ == "__main__":
    main()
