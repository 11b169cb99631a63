"""What Spark's tasks run on the executors: the extension on a shard (or on
an in-memory database) through Python's sqlite3 module. Nothing here imports
PySpark; pyarrow is imported where batches are built."""
import json
import os
import sqlite3

import sqlite_dedup

from . import _columns

#: The columns of each row as `dedup_prepare` leaves them (temp._dedup_rows),
#: with their Arrow types; `shard` comes first.
ROW_COLUMNS = [
    ("rid", "int64"), ("placeholder", "int32"), ("skip_reason", "string"), ("discard_reason", "string"),
    ("canonical_url", "string"), ("url_key", "string"), ("strict_url", "string"), ("extra_params", "string"),
    ("domain", "string"), ("hash_key", "string"), ("has_hash", "int32"), ("external", "int32"),
    ("https", "int32"), ("datetime_key", "binary"), ("crawled_key", "binary"), ("length_key", "binary"),
    ("url_length", "int64"), ("datetime4_key", "binary"), ("crawled4_key", "binary"),
    ("length4_key", "binary"), ("prefer_key", "binary"), ("title_key", "string"),
    ("segments", "string"), ("has_text", "int32"), ("text", "string"), ("filled", "int32"),
]

#: Rows per Arrow batch read from a shard.
BATCH_ROWS = 4096


class ShardError(RuntimeError):
    """A shard that cannot take part: the message names the file."""


def extension_path():
    """The extension the tasks load: $SQLITE_DEDUP_EXTENSION (a path without
    `.so`), else the one in this package."""
    return os.environ.get("SQLITE_DEDUP_EXTENSION") or sqlite_dedup.loadable_path()


def connect(path, readonly=False):
    """A connection to `path` with the extension loaded (no implicit
    transactions: the extension's runner makes its own)."""
    uri = f"file:{path}?mode=ro" if readonly else f"file:{path}?mode=rw"
    if path == ":memory:":
        uri = ":memory:"
    conn = sqlite3.connect(uri, uri=uri != ":memory:", isolation_level=None, check_same_thread=False)
    conn.enable_load_extension(True)
    conn.load_extension(extension_path())
    conn.enable_load_extension(False)
    return conn


def insert_many(conn, sql, rows):
    """`conn.executemany(sql, rows)` in one transaction: the connections
    here autocommit, and a transaction a row made the inserts into an
    in-memory database 7x slower (1.69 s against 0.22 s for a 44,804-row
    lsh component at 100k pages)."""
    conn.execute("BEGIN")
    try:
        conn.executemany(sql, rows)
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")


def shard_error(index, path, error):
    """A ShardError naming the shard."""
    return ShardError(f"sqlite-dedup spark: shard {index + 1} ({path}): {error}")


def shard_extent(index, path, table):
    """(rows, smallest rowid, largest rowid) of a shard's table, to cut it
    into ranges for prepare_shard; errors name the shard."""
    if not os.path.isfile(path):
        raise shard_error(index, path, "no such file")
    try:
        conn = connect(path, readonly=True)
        try:
            quoted = sqlite_dedup._quoted(table)
            return tuple(conn.execute(f"SELECT count(*), min(rowid), max(rowid) FROM main.{quoted}").fetchone())
        finally:
            conn.close()
    except sqlite3.Error as e:
        raise shard_error(index, path, f"dedup[table]: table {table!r} cannot be read: {e}") from None


def prepare_shard(index, path, settings_json, lo=None, hi=None, rules=None):
    """Phase 1 on one shard, on the rows whose rowid is in [lo, hi) (None:
    unbounded): yields Arrow record batches of its rows (the columns of
    ROW_COLUMNS after `shard`). `rules`, with the url_rules setting: the
    learned rules of every shard, their counts summed (url_rules(), below),
    which the run reads in place of the shard's own."""
    if not os.path.isfile(path):
        raise shard_error(index, path, "no such file")
    try:
        conn = connect(path, readonly=True)
        try:
            lend_rules(conn, rules)
            conn.execute("SELECT dedup_prepare(?, ?, ?)", (settings_json, lo, hi)).fetchone()
            yield from prepared_batches(conn, index, lo, hi)
        finally:
            conn.close()
    except sqlite3.Error as e:
        raise shard_error(index, path, e) from None


def lend_rules(conn, rules):
    """Gives a run on `conn` the rules of every shard (url_rules(), summed
    by the driver) in place of the shard's own: a temp dedup_url_rules,
    which the extension reads first. None: the shard's own."""
    if rules is None:
        return
    conn.execute("DROP TABLE IF EXISTS temp.dedup_url_rules")
    conn.execute("CREATE TEMP TABLE dedup_url_rules (domain TEXT, path TEXT, param TEXT, value TEXT, "
                 "observations INTEGER, duplicates INTEGER)")
    insert_many(conn, "INSERT INTO temp.dedup_url_rules VALUES (?, ?, ?, ?, ?, ?)", rules)


def url_rules(index, path):
    """The learned URL rules of a shard that drop a parameter (dedup_url_rules
    rows of a parameter, any value, on a domain or path), as (domain, path,
    param, value, observations, duplicates); none without the table."""
    if not os.path.isfile(path):
        raise shard_error(index, path, "no such file")
    try:
        conn = connect(path, readonly=True)
        try:
            if not conn.execute("SELECT count(*) FROM sqlite_schema WHERE name = 'dedup_url_rules' "
                                "AND type = 'table'").fetchone()[0]:
                return []
            return conn.execute(
                "SELECT domain, path, param, value, observations, duplicates FROM main.dedup_url_rules "
                "WHERE param IS NOT NULL AND value IS NULL AND (path IS NULL OR instr(path, '?') = 0)").fetchall()
        finally:
            conn.close()
    except sqlite3.Error as e:
        raise shard_error(index, path, f"its dedup_url_rules cannot be read: {e}") from None


def prepared_batches(conn, index, lo=None, hi=None):
    """The rows dedup_prepare left on `conn` (rids in [lo, hi)), as Arrow
    record batches of about BATCH_ROWS rows (the columns of ROW_COLUMNS
    after `shard`, which holds `index`): the extension writes each batch's
    columns (dedup_rows_arrow), so no Python value is made per cell."""
    import pyarrow as pa

    # Batches cut at every BATCH_ROWS-th prepared row; the first and the last
    # reach the range's ends (a placeholder may lie outside the prepared rids).
    cuts = [r for (r,) in conn.execute(
        "SELECT source_rowid FROM (SELECT source_rowid, row_number() OVER (ORDER BY source_rowid) - 1 AS k "
        "FROM temp._dedup_prepared) WHERE k > 0 AND k % ? = 0", (BATCH_ROWS,))]
    bounds = [lo] + cuts + [hi]
    names = [c for c, _ in ROW_COLUMNS]
    for a, b in zip(bounds, bounds[1:]):
        batch = _columns.record_batch(conn.execute("SELECT dedup_rows_arrow(?, ?)", (a, b)).fetchone()[0])
        if batch.schema.names != names:
            raise RuntimeError(f"sqlite-dedup spark: the extension gives the columns {batch.schema.names}, "
                               f"this package expects {names}: install the two from one release")
        if batch.num_rows:
            shard = pa.repeat(pa.scalar(index, pa.int32()), batch.num_rows)
            yield pa.RecordBatch.from_arrays([shard] + batch.columns, names=["shard"] + names)


#: Whether pages that arrive as Arrow batches go through the extension as
#: Arrow columns (dedup_phase1_arrow) where they can; False: always through
#: an in-memory table (the tests compare the two).
DIRECT = True

#: Whether those batches reach the extension through the Arrow C data
#: interface (ctypes), read in place, rather than copied into a BLOB for
#: the SQL function; False: through SQL (the tests compare the two).
ABI = True

#: The columns of pages a DataFrame may bring (the pipeline's names).
PAGE_COLUMNS = ("url", "title", "content", "parsed", "content_hash", "length", "datetime", "crawled", "category",
                "domain", "wayback")


class _Phase1Abi:
    """The library's phase 1 over Arrow buffers in place
    (`sqlite_dedup_phase1_arrow`, src/arrow_abi.rs), through ctypes: the
    same file SQLite loads, its batches read where pyarrow holds them."""

    def __init__(self, path):
        import ctypes
        lib = ctypes.CDLL(path if path.endswith(".so") else path + ".so")
        self.ctypes = ctypes
        self.call = lib.sqlite_dedup_phase1_arrow
        self.call.restype = ctypes.c_int
        self.call.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_int,
                              ctypes.POINTER(ctypes.c_void_p), ctypes.POINTER(ctypes.c_size_t),
                              ctypes.POINTER(ctypes.c_void_p)]
        self.free = lib.sqlite_dedup_free
        self.free.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
        self.free_error = lib.sqlite_dedup_free_error
        self.free_error.argtypes = [ctypes.c_void_p]

    def prepare(self, batch, url_options, strict_options, reference):
        """The batch (a pyarrow RecordBatch) through phase 1: the output
        batch's bytes (_columns' format)."""
        import pyarrow as pa
        ct = self.ctypes
        array, schema = ct.create_string_buffer(80), ct.create_string_buffer(72)
        batch._export_to_c(ct.addressof(array), ct.addressof(schema))
        out, size, error = ct.c_void_p(), ct.c_size_t(), ct.c_void_p()
        try:
            rc = self.call(ct.addressof(array), ct.addressof(schema), url_options.encode(),
                           None if strict_options is None else strict_options.encode(), int(reference),
                           ct.byref(out), ct.byref(size), ct.byref(error))
        finally:
            # (Imported back: pyarrow releases what it exported.)
            pa.RecordBatch._import_from_c(ct.addressof(array), ct.addressof(schema))
        if rc != 0:
            message = ct.string_at(error.value).decode("utf-8", "replace")
            self.free_error(error)
            raise ValueError(f"sqlite-dedup spark: phase 1: {message}")
        try:
            return ct.string_at(out.value, size.value)
        finally:
            self.free(out, size)


def _phase1_options(conn, columns, settings_json):
    """(url_options, strict_options, reference) of a run with these
    settings, as the extension reads and checks them (dedup_prepare on an
    empty table of the columns)."""
    conn.execute("DROP TABLE IF EXISTS pages")
    conn.execute(f"CREATE TABLE pages ({', '.join(columns)})")
    conn.execute("SELECT dedup_prepare(?)", (settings_json,)).fetchone()
    return conn.execute("SELECT url_options, strict_options, compat = 'reference' FROM temp._dedup_run").fetchone()


def prepare_batches(batches, id_column, columns, settings_json):
    """Phase 1 on pages that arrive as Arrow batches (a DataFrame's
    partition), as dedup_prepare's rows (shard 0), the `id_column` values
    their rowids. Each batch goes through the extension's phase 1 as Arrow
    columns (dedup_phase1_arrow, the rules the SQL runner's phase 1 runs),
    with no table between; with `prefer` (its terms are SQL over a table),
    or a column of another type than text, bytes or integers, through an
    in-memory `pages` table and dedup_prepare instead."""
    import pyarrow as pa
    import pyarrow.compute as pc

    conn = connect(":memory:")
    direct = DIRECT and not json.loads(settings_json).get("prefer")
    abi, options = None, None
    if direct and ABI:
        try:
            abi = _Phase1Abi(extension_path())
        except (OSError, AttributeError):
            abi = None  # (a library without the entry point: through SQL)
    try:
        for batch in batches:
            ids = batch.column(batch.schema.get_field_index(id_column))
            if ids.null_count or not pa.types.is_integer(ids.type):
                bad = next(v for v in ids.to_pylist() if not isinstance(v, int))
                k = ids.to_pylist().index(bad)
                raise ValueError(f"sqlite-dedup spark: the id column {id_column!r} must hold integers, "
                                 f"got {bad!r} (in the row with url {batch.column(batch.schema.get_field_index('url'))[k]})")
            if len(pc.unique(ids)) != len(ids):
                raise ValueError(f"sqlite-dedup spark: the id column {id_column!r} must be unique")
            arrays = [(c, batch.column(batch.schema.get_field_index(c))) for c in columns]
            if direct and all(_columns.writable(a.type) for _, a in arrays):
                named = dict(arrays)
                if abi is None and "parsed" in named and pa.types.is_string(named.get("content", pa.array([])).type):
                    # (Phase 1 reads a text content only where parsed is NULL:
                    # the others' need not be copied.)
                    named["content"] = pc.if_else(pc.is_null(named["parsed"]), named["content"],
                                                  pa.scalar(None, pa.string()))
                arrays = [("rid", ids.cast(pa.int64()))] + [
                    (c, a.cast(pa.string()) if str(a.type) == "large_string" else
                     a.cast(pa.binary()) if str(a.type) == "large_binary" else a) for c, a in named.items()]
                if abi is not None:
                    if options is None:
                        options = _phase1_options(conn, columns, settings_json)
                    blob = abi.prepare(pa.RecordBatch.from_arrays([a for _, a in arrays], names=[c for c, _ in arrays]),
                                       *options)
                else:
                    blob = conn.execute("SELECT dedup_phase1_arrow(?, ?)",
                                        (_columns.batch_bytes(arrays), settings_json)).fetchone()[0]
                out = _columns.record_batch(blob)
                if out.num_rows:
                    shard = pa.repeat(pa.scalar(0, pa.int32()), out.num_rows)
                    yield pa.RecordBatch.from_arrays([shard] + out.columns, names=["shard"] + out.schema.names)
                continue
            values = [a.to_pylist() for _, a in arrays]
            conn.execute("DROP TABLE IF EXISTS pages")
            conn.execute(f"CREATE TABLE pages ({', '.join(columns)})")
            marks = ", ".join("?" * (len(columns) + 1))
            insert_many(conn, f"INSERT INTO pages (rowid, {', '.join(columns)}) VALUES ({marks})",
                        zip(ids.to_pylist(), *values))
            conn.execute("SELECT dedup_prepare(?)", (settings_json,)).fetchone()
            yield from prepared_batches(conn, 0)
    finally:
        conn.close()


def _column(conn, table, columns, name):
    """The quoted column of `table` for the pipeline's `name`: the `columns`
    setting's, else the column of that name (case-insensitive, as the
    extension's Source reads them); None when the table has none."""
    mapped = {k.lower(): v for k, v in columns.items()}
    real = mapped.get(name)
    if real is None:
        have = [r[1] for r in conn.execute(f"SELECT * FROM pragma_table_info(?)", (table,))]
        real = next((c for c in have if c.lower() == name), None)
    return None if real is None else sqlite_dedup._quoted(real)


def strip_batches(batches, paths, settings_json):
    """boilerplate = 'strip' (see _strip): for each (shard, rid, hashes) of
    the batches, the row's text as phase 4 compares it stripped of its
    domain's chrome (sql/04b_near_dups.sql's expression), read from its
    shard; yields Arrow batches (shard, rid, stripped_text)."""
    import pyarrow as pa

    settings = json.loads(settings_json)
    table = settings.get("table", "pages")
    columns = settings.get("columns") or {}
    if isinstance(columns, str):
        columns = json.loads(columns)
    conns, statements = {}, {}
    try:
        for batch in batches:
            shards, rids, hashes = (batch.column(k).to_pylist() for k in range(3))
            out = []
            for shard, rid, h in zip(shards, rids, hashes):
                if shard not in conns:
                    try:
                        conns[shard] = conn = connect(paths[shard], readonly=True)
                        title = _column(conn, table, columns, "title") or "NULL"
                        content = _column(conn, table, columns, "content")
                        statements[shard] = (
                            f"SELECT normalize_text(coalesce({title}, '') || char(10, 10) "
                            f"|| nullif(strip_segments({content}, ?2), {content})) "
                            f"FROM main.{sqlite_dedup._quoted(table)} WHERE rowid = ?1")
                    except sqlite3.Error as e:
                        raise shard_error(shard, paths[shard], e) from None
                try:
                    row = conns[shard].execute(statements[shard], (rid, h)).fetchone()
                except sqlite3.Error as e:
                    raise shard_error(shard, paths[shard], e) from None
                out.append(row[0] if row else None)
            yield pa.RecordBatch.from_arrays(
                [pa.array(shards, pa.int32()), pa.array(rids, pa.int64()), pa.array(out, pa.string())],
                names=["shard", "rid", "stripped_text"])
    finally:
        for conn in conns.values():
            conn.close()


def scan_partition(rows, entry_dead, threshold, window, measure="levenshtein"):
    """Phase 4's window scan of one range of the scan order, through the
    extension's near_dups on an in-memory database. `rows` are (pos, rank,
    text, halo) in any order: the range's own rows, then its halo (the
    `window` rows after it, compared with but never anchors); `entry_dead`
    the positions of its own rows that anchors before the range removed
    (they keep their slot, never compared). Returns the removals (pos,
    survivor pos, anchor pos, ratio) and the positions of the halo it
    removed (what the next range must take as its entry)."""
    conn = connect(":memory:")
    try:
        conn.execute("CREATE TABLE scan (pos INTEGER PRIMARY KEY, id INTEGER, text TEXT, rank INTEGER, settled INTEGER)")
        dead = set(entry_dead)
        insert_many(
            conn, "INSERT INTO scan VALUES (?1, ?1, ?2, ?3, ?4)",
            ((pos, None if pos in dead else text, rank, 1 if halo else None) for pos, rank, text, halo in rows))
        removed = conn.execute(
            "SELECT id, survivor, anchor, ratio FROM near_dups('scan', ?, ?, ?)", (threshold, window, measure)).fetchall()
        halo = {pos for pos, _, _, h in rows if h}
        return removed, sorted(pos for pos, _, _, _ in removed if pos in halo)
    finally:
        conn.close()


PENDING = "dedup_pending_plan"
#: The shard's part of the job's paragraph cuts (paragraphs: dedup).
PENDING_PARAGRAPHS = "dedup_pending_paragraphs"


def write_pending(index, path, job, rows, paragraphs=()):
    """Keeps a shard's part of a job's plan in the shard (table
    dedup_pending_plan, and its paragraph cuts in dedup_pending_paragraphs),
    in one transaction, before any shard is changed: a job that dies later
    is completed from these tables."""
    try:
        conn = connect(path)
        try:
            conn.execute("BEGIN IMMEDIATE")
            conn.execute(f"CREATE TABLE IF NOT EXISTS {PENDING} (job TEXT, rid INTEGER, phase INTEGER, reason TEXT, "
                         "survivor INTEGER, ratio REAL, rewrite_url TEXT, note TEXT)")
            conn.execute(f"DELETE FROM {PENDING}")
            # A row with rid NULL marks the shard's part as complete (even empty).
            conn.executemany(f"INSERT INTO {PENDING} VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                             [(job,) + tuple(r) for r in rows] + [(job, None, None, None, None, None, None, None)])
            conn.execute(f"CREATE TABLE IF NOT EXISTS {PENDING_PARAGRAPHS} (job TEXT, rid INTEGER, position INTEGER, "
                         "owner INTEGER, owner_url TEXT, owner_paragraph TEXT)")
            conn.execute(f"DELETE FROM {PENDING_PARAGRAPHS}")
            conn.executemany(f"INSERT INTO {PENDING_PARAGRAPHS} VALUES (?, ?, ?, ?, ?, ?)",
                             [(job,) + tuple(r) for r in paragraphs])
            conn.execute("COMMIT")
        finally:
            conn.close()
    except sqlite3.Error as e:
        raise shard_error(index, path, e) from None


def job_state(index, path, job=None):
    """(pending job or None, jobs recorded in the shard's dedup_runs)."""
    try:
        conn = connect(path, readonly=True)
        try:
            have = {r[0] for r in conn.execute(
                "SELECT name FROM sqlite_schema WHERE name IN (?, 'dedup_runs') AND type = 'table'", (PENDING,))}
            pending = None
            if PENDING in have:
                row = conn.execute(f"SELECT job FROM {PENDING} WHERE rid IS NULL LIMIT 1").fetchone()
                pending = row[0] if row else None
            done = set()
            if "dedup_runs" in have:
                done = {r[0] for r in conn.execute(
                    "SELECT json_extract(settings, '$.job') FROM dedup_runs WHERE json_valid(settings) "
                    "AND json_extract(settings, '$.job') IS NOT NULL")}
            return pending, sorted(done)
        finally:
            conn.close()
    except sqlite3.Error as e:
        raise shard_error(index, path, e) from None


def apply_pending(index, path, job, settings_json, rules=None):
    """Applies the shard's part of `job` (its dedup_pending_plan) with
    dedup_apply_plan, one transaction: returns the run's report (a dict),
    or None when the shard's dedup_runs already has the job (a rerun).
    `rules`: as for prepare_shard (the survivors' rewritten URLs are
    canonicalized again here)."""
    inject = os.environ.get("SQLITE_DEDUP_SPARK_FAIL", "")
    if inject == f"apply:{index + 1}:always" or (inject == f"apply:{index + 1}" and not _failed_once(path)):
        raise RuntimeError(f"sqlite-dedup spark: failure injected before applying shard {index + 1}")
    try:
        conn = connect(path)
        try:
            pending, done = job_state(index, path)
            if job in done:
                conn.execute(f"DROP TABLE IF EXISTS {PENDING}")
                conn.execute(f"DROP TABLE IF EXISTS {PENDING_PARAGRAPHS}")
                return None
            if pending != job:
                raise shard_error(index, path, f"holds no plan of job {job} (got {pending})")
            settings = dict(json.loads(settings_json), job=job)
            sqlite_dedup._lend_busy_timeout(conn, settings.get("busy_timeout"))
            conn.execute(
                "CREATE TEMP TABLE plan AS SELECT rid, phase, reason, survivor, ratio, rewrite_url, note "
                f"FROM {PENDING} WHERE rid IS NOT NULL AND job = ?", (job,))
            lend_rules(conn, rules)
            if settings.get("paragraphs") == "dedup":
                conn.execute(
                    "CREATE TEMP TABLE plan_paragraphs AS SELECT rid, position, owner, owner_url, owner_paragraph "
                    f"FROM {PENDING_PARAGRAPHS} WHERE job = ?", (job,))
                conn.execute("SELECT dedup_apply_plan('temp.plan', ?, 'temp.plan_paragraphs')",
                             (json.dumps(settings),)).fetchone()
            else:
                conn.execute("SELECT dedup_apply_plan('temp.plan', ?)", (json.dumps(settings),)).fetchone()
            # (Applied: the pending part goes; if this step is lost, the
            # next run sees the job in dedup_runs and drops it.)
            conn.execute(f"DROP TABLE IF EXISTS {PENDING}")
            conn.execute(f"DROP TABLE IF EXISTS {PENDING_PARAGRAPHS}")
            row = conn.execute("SELECT report FROM dedup_runs ORDER BY run DESC LIMIT 1").fetchone()
            return json.loads(row[0])
        finally:
            conn.close()
    except sqlite3.Error as e:
        raise shard_error(index, path, e) from None


def discard_pending(index, path):
    """Drops a pending plan of a job that never finished writing its plan
    (so never applied any shard)."""
    try:
        conn = connect(path)
        try:
            conn.execute(f"DROP TABLE IF EXISTS {PENDING}")
            conn.execute(f"DROP TABLE IF EXISTS {PENDING_PARAGRAPHS}")
        finally:
            conn.close()
    except sqlite3.Error as e:
        raise shard_error(index, path, e) from None


def _failed_once(path):
    """For the failures injected by $SQLITE_DEDUP_SPARK_FAIL (tests only):
    `apply:N` fails the first attempt to apply shard N (a marker file
    beside it remembers it), so that Spark's retry succeeds; `apply:N:always`
    fails every attempt; `die-after-plan` ends the driver once the plan is
    kept in every shard. True after the first time for this shard."""
    marker = path + ".spark-fail-injected"
    if os.path.exists(marker):
        return True
    open(marker, "w").close()
    return False
