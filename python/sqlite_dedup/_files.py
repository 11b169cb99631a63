"""Corpus files in and out: a JSONL file (`.jsonl`, `.jsonl.gz`) or a Parquet
file (when pyarrow is installed) deduplicated by the same run a table gets,
through an SQLite file of the user's choice or a temporary one; the kept
records written out whole, in their order (docs/clients/command.md,
"sqlite-dedup dedup").

Each record is a JSON object (a Parquet row); its fields named as the
pipeline's columns (url, title, content, parsed, datetime, crawled,
category, length, content_hash, domain, wayback) are the page, the others
carried along. `fields` maps a pipeline name to another field
(`{"parsed": "text"}`); a record with no content or parsed field but a
`text` field is read with `text` as its parsed text (the shape of C4,
Dolma and RefinedWeb). A JSONL record is written out byte for byte as read
(the run's URL rewrites stay in the database); a Parquet file's kept rows
are the input's rows, every column kept. With `paragraphs: dedup`, a record
whose text the run cut is written with its cut text in the field its text
was read from (`parsed` added when it was made from `content`)."""
import gzip
import json
import os
import sys
import tempfile

PIPELINE = ("url", "title", "content", "parsed", "datetime", "crawled", "category", "length",
            "content_hash", "domain", "wayback")
TYPES = {"length": "INTEGER"}


class FileError(ValueError):
    """A corpus file the command cannot read or write, named with its line."""


def kind_of(path):
    """'jsonl', 'jsonl.gz' or 'parquet' by the file's name; FileError else."""
    low = path.lower()
    for kind in ("jsonl.gz", "jsonl", "parquet"):
        if low.endswith("." + kind) or (kind == "jsonl" and low == "-"):
            return kind
    if low.endswith(".json.gz") or low.endswith(".ndjson.gz"):
        return "jsonl.gz"
    if low.endswith(".json") or low.endswith(".ndjson"):
        return "jsonl"
    raise FileError(f"{path}: a corpus file must be .jsonl, .jsonl.gz or .parquet, got {os.path.basename(path)!r}")


#: Values stored as they are (not bool, a subclass of int).
_PLAIN = (str, int, float)


def _cell(where, name, value):
    """A record's value as SQLite stores it."""
    if value is None or type(value) in _PLAIN:
        return value
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, (list, dict)):
        return json.dumps(value, ensure_ascii=False)
    return str(value)


def _names(record, fields):
    """The record's field of each pipeline name it maps otherwise."""
    if "text" in record and "content" not in fields and "parsed" not in fields \
            and "content" not in record and "parsed" not in record:
        return {**fields, "parsed": "text"}
    return fields


def _page(where, record, fields):
    """The pipeline's columns of one record."""
    if not isinstance(record, dict):
        raise FileError(f"{where}: must be a JSON object of the page's fields, got {type(record).__name__}")
    names = _names(record, fields)
    url = names.get("url", "url")
    if url not in record:
        raise FileError(f"{where}: has no {url!r} field: each page needs its URL (null for none; "
                        f"another field: --columns '{{\"url\": \"FIELD\"}}')")
    get = record.get
    return [_cell(where, p, get(names.get(p, p))) for p in PIPELINE]


def _jsonl_rows(path, kind, fields):
    """(rowid, page values..., line) of each record of a JSONL file."""
    opened = sys.stdin.buffer if path == "-" else (gzip.open(path, "rb") if kind == "jsonl.gz" else open(path, "rb"))
    try:
        n = 0
        for number, raw in enumerate(opened, 1):
            line = raw.rstrip(b"\r\n")
            if not line.strip():
                continue
            where = f"{path} line {number}"
            try:
                # (Parsed from the bytes, which are also what is kept and
                # written back: each line is decoded once, by the parser.)
                record = json.loads(line)
            except (UnicodeDecodeError, ValueError) as e:
                raise FileError(f"{where}: not a JSON object ({e})") from None
            n += 1
            yield (n, *_page(where, record, fields), line)
    finally:
        if opened is not sys.stdin.buffer:
            opened.close()


def _parquet_table(path):
    try:
        import pyarrow.parquet as pq
    except ImportError:
        raise FileError(f"{path}: reading Parquet needs pyarrow (pip install pyarrow)") from None
    return pq.read_table(path)


def _parquet_rows(table, path, fields):
    for i, record in enumerate(table.to_pylist()):
        yield (i + 1, *_page(f"{path} row {i + 1}", record, fields), None)


def dedup_file(connect, src, out, db=None, settings=None, fields=None, run=None, say=None):
    """Deduplicates the corpus file `src` into `out` (the same kinds), through
    the SQLite file `db` (a new file, kept) or a temporary one (removed).
    `connect(path)` opens a connection with the extension; `run(conn, sql,
    params)` runs the statement and returns its text (the command's progress
    display; default: plainly); `say(text)` shows progress while reading.
    Returns {"read", "kept", "report", "db"}. Raises FileError for a file it
    cannot read or write, naming the line, and the run's error for a run
    it refuses; `out` is written only when the run succeeded."""
    kind, out_kind = kind_of(src), kind_of(out)
    if (kind == "parquet") != (out_kind == "parquet"):
        raise FileError(f"{out}: the output is written as the input is read ({kind} in, {out_kind} out)")
    if src != "-" and not os.path.exists(src):
        raise FileError(f"{src}: no such file")
    if db is not None and os.path.exists(db) and os.path.getsize(db) > 0:
        raise FileError(f"{db}: --db must name a new file (it keeps this run's pages), got an existing one")
    settings = dict(settings or {})
    for name in ("table", "against", "columns"):
        if name in settings:
            raise FileError(f"the setting {name} has no meaning for a corpus file (its pages are a table of their own)")
    folder = None
    if db is None:
        folder = tempfile.mkdtemp(prefix="sqlite-dedup-")
        path = os.path.join(folder, "pages.db")
    else:
        path = db
    try:
        conn = connect(path)
        try:
            return _through(conn, kind, src, out, out_kind, path if folder is None else None,
                            settings, fields or {}, run, say)
        finally:
            conn.close()
    finally:
        if folder is not None:
            for name in os.listdir(folder):
                os.remove(os.path.join(folder, name))
            os.rmdir(folder)


def _through(conn, kind, src, out, out_kind, kept_db, settings, fields, run, say):
    # (A temporary file protects nothing: no journal, no sync.)
    conn.execute("PRAGMA journal_mode = " + ("OFF" if kept_db is None else "WAL"))
    conn.execute("PRAGMA synchronous = " + ("OFF" if kept_db is None else "NORMAL"))
    columns = ", ".join(f"{c} {TYPES.get(c, 'TEXT')}" for c in PIPELINE)
    conn.execute(f"CREATE TABLE pages (rowid_ INTEGER PRIMARY KEY, {columns}, _record BLOB)")
    table = _parquet_table(src) if kind == "parquet" else None
    rows = _parquet_rows(table, src, fields) if table is not None else _jsonl_rows(src, kind, fields)
    marks = ", ".join("?" * (len(PIPELINE) + 2))
    read = 0
    conn.execute("BEGIN")
    batch = []
    for row in rows:
        batch.append(row)
        if len(batch) == 10_000:
            conn.executemany(f"INSERT INTO pages VALUES ({marks})", batch)
            read += len(batch)
            batch = []
            if say:
                say(f"read {read} records")
    conn.executemany(f"INSERT INTO pages VALUES ({marks})", batch)
    read += len(batch)
    conn.execute("COMMIT")
    if say:
        say(f"read {read} records")
    sql, params = "SELECT dedup_run(?)", (json.dumps(settings),)
    report = run(conn, sql, params) if run else conn.execute(sql, params).fetchone()[0]
    kept = conn.execute("SELECT count(*) FROM pages").fetchone()[0]
    # (paragraphs: dedup: the texts the run cut, by rowid.)
    cut = dict(conn.execute(
        "SELECT rowid_, parsed FROM pages WHERE rowid_ IN (SELECT dedup_rowid FROM dedup_paragraphs)")) if conn.execute(
        "SELECT count(*) FROM sqlite_schema WHERE name = 'dedup_paragraphs'").fetchone()[0] else {}

    def lines():
        if not cut:
            return (line + b"\n" for (line,) in conn.execute("SELECT _record FROM pages ORDER BY rowid_"))
        return edited()

    def edited():
        for rowid, line in conn.execute("SELECT rowid_, _record FROM pages ORDER BY rowid_"):
            if rowid in cut:
                record = json.loads(line)
                record[_names(record, fields).get("parsed", "parsed")] = cut[rowid]
                line = json.dumps(record, ensure_ascii=False).encode()
            yield line + b"\n"

    part = out + ".part"
    try:
        if table is not None:
            import pyarrow as pa
            import pyarrow.parquet as pq
            rows = [r for (r,) in conn.execute("SELECT rowid_ FROM pages ORDER BY rowid_")]
            kept_table = table.take(pa.array([r - 1 for r in rows], type=pa.int64()))
            if cut:
                name = _names(dict.fromkeys(table.column_names), fields).get("parsed", "parsed")
                old = (kept_table.column(name).to_pylist() if name in kept_table.column_names
                       else [None] * len(rows))
                new = pa.array([cut.get(r, v) for r, v in zip(rows, old)], type=pa.string())
                kept_table = (kept_table.set_column(kept_table.column_names.index(name), name, new)
                              if name in kept_table.column_names else kept_table.append_column(name, new))
            pq.write_table(kept_table, part)
        elif out == "-":
            sys.stdout.buffer.writelines(lines())
            sys.stdout.buffer.flush()
        else:
            opened = gzip.open(part, "wb") if out_kind == "jsonl.gz" else open(part, "wb")
            with opened as f:
                f.writelines(lines())
        if out != "-":
            os.replace(part, out)
    except OSError as e:
        if os.path.exists(part):
            os.remove(part)
        raise FileError(f"{out}: cannot be written: {e.strerror or e}") from None
    return {"read": read, "kept": kept, "report": report, "db": kept_db}
