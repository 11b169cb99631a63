"""The list path: a list of page dicts deduplicated in memory, as the
reference's `Deduplicator()(pages)` does, by the same run a table gets (an
in-memory database holds the pages for the run's length)."""
import datetime
import json
import sqlite3

from ._loader import ExtensionLoadError, load
from ._sql import quoted as _quoted

# The reference's `web_page` keys, as its `pages` table declares them.
REFERENCE_COLUMNS = [
    ("title", "TEXT"), ("url", "TEXT"), ("domain", "TEXT"), ("date", "TEXT"), ("content", "TEXT"),
    ("excerpt", "TEXT"), ("h1", "LIST"), ("h2", "LIST"), ("lang", "TEXT"), ("category", "TEXT"),
    ("datetime", "DATETIME"), ("length", "INTEGER"), ("parsed", "TEXT"), ("tokenized", "LIST"),
    ("stemmed", "LIST"), ("vectorized", "ARRAY"), ("wayback", "TEXT"), ("crawled", "DATETIME"),
    ("content_hash", "TEXT"),
]
# What a run may rewrite or fill in a surviving row.
REWRITTEN = ["url", "domain", "wayback", "parsed", "content_hash", "length"]


def dedup(pages, **settings):
    """Deduplicates `pages`, a list of dicts with the reference's `web_page`
    keys (url, title, content or parsed, datetime, crawled, category, ...;
    others are carried along), with the settings of `dedup_run` (threshold,
    distance, near_mode, compat, ...): the same answer as a run on a table
    holding the pages in this order, nothing written anywhere.

    Returns a dict: `kept`, the surviving pages in their order (each a copy,
    with the URL, domain and wayback the run gave it, and parsed,
    content_hash and length filled where they were missing); `removed`, one
    dict per removed page in its order (`index` in `pages`, `page`, the
    dict given, `phase`, `reason`, `survivor` and `final_survivor`, indexes
    in `pages` or None, `ratio`); `report`, the run's report.

    A datetime or date value is stored as Python's sqlite3 adapter writes
    it (`str(value)`); a list or dict as JSON. Raises TypeError for pages
    that are not dicts of such values (naming the page and key) and the
    run's error (naming the page as a rowid, `index + 1`) for a page it
    refuses."""
    if isinstance(pages, (str, bytes, dict)) or not hasattr(pages, "__iter__"):
        raise TypeError(f"dedup: pages must be a list of dicts, got {type(pages).__name__}")
    pages = list(pages)
    if "table" in settings:
        raise TypeError("dedup: the table setting names a table of a database; the list path has none")
    names = _columns(pages)
    conn = _memory()
    try:
        declared = dict(REFERENCE_COLUMNS)
        conn.execute("CREATE TABLE pages (" + ", ".join(
            f"{_quoted(n)} {declared.get(n, '')}".rstrip() for n in names) + ")")
        rows = [[i + 1] + [_value(i, n, page.get(n)) for n in names] for i, page in enumerate(pages)]
        insert = (f"INSERT INTO pages (rowid, {', '.join(map(_quoted, names))}) "
                  f"VALUES ({', '.join('?' * (len(names) + 1))})")
        conn.execute("BEGIN")
        for row in rows:
            conn.execute(insert, row)
        conn.execute("COMMIT")
        conn.execute("SELECT dedup_run(?)", (json.dumps(settings),)).fetchone()
        report = json.loads(conn.execute("SELECT report FROM dedup_runs ORDER BY run DESC LIMIT 1").fetchone()[0])
        rewritten = [n for n in REWRITTEN if n in names]
        kept = []
        for rowid, *values in conn.execute(
                f"SELECT rowid, {', '.join(map(_quoted, rewritten)) or 'NULL'} FROM pages ORDER BY rowid"):
            page, given = dict(pages[rowid - 1]), rows[rowid - 1]
            for name, value in zip(rewritten, values):
                if value != given[names.index(name) + 1]:
                    page[name] = value
            kept.append(page)
        removed = []
        for rowid, phase, reason, survivor, final, ratio in conn.execute(
                "SELECT d.dedup_rowid, d.dedup_phase, d.dedup_reason, d.dedup_survivor, w.final_survivor, d.dedup_ratio "
                "FROM dedup_removed AS d LEFT JOIN dedup_why AS w ON w.rowid = d.dedup_rowid AND w.run = d.dedup_run "
                "ORDER BY d.dedup_rowid"):
            removed.append({"index": rowid - 1, "page": pages[rowid - 1], "phase": phase, "reason": reason,
                            "survivor": None if survivor is None else survivor - 1,
                            "final_survivor": None if final is None else final - 1, "ratio": ratio})
        return {"kept": kept, "removed": removed, "report": report}
    finally:
        conn.close()


def _columns(pages):
    """The table's columns: the reference's keys the pages use, in its
    order, then the others in the order they first appear."""
    seen = {}
    for i, page in enumerate(pages):
        if not isinstance(page, dict):
            raise TypeError(f"dedup: pages[{i}] must be a dict of the page's values, got {type(page).__name__}")
        for key in page:
            if not isinstance(key, str):
                raise TypeError(f"dedup: pages[{i}] has a key that is not a str: {key!r}")
            seen.setdefault(key.lower(), key)
    known = [n for n, _ in REFERENCE_COLUMNS if n in seen]
    return known + [k for low, k in seen.items() if low not in dict(REFERENCE_COLUMNS)]


def _value(i, name, value):
    """A page's value as SQLite stores it."""
    if value is None or isinstance(value, (str, int, float, bytes)):
        return value
    if isinstance(value, (datetime.datetime, datetime.date)):
        return str(value)
    if isinstance(value, (list, tuple, dict)):
        try:
            return json.dumps(value)
        except TypeError as e:
            raise TypeError(f"dedup: pages[{i}][{name!r}] cannot be stored as JSON: {e}") from None
    raise TypeError(f"dedup: pages[{i}][{name!r}] must be a str, number, bytes, date, list or None, "
                    f"got {type(value).__name__}")


def _memory():
    """An in-memory database with the extension: the standard sqlite3
    module's when it can load extensions, else apsw's."""
    conn = sqlite3.connect(":memory:", isolation_level=None)
    if hasattr(conn, "enable_load_extension"):
        load(conn)
        return conn
    conn.close()
    try:
        import apsw
    except ModuleNotFoundError:
        raise ExtensionLoadError(
            "dedup: this Python's sqlite3 module cannot load extensions and apsw is not installed "
            "(`pip install apsw`, or use Debian/Ubuntu's /usr/bin/python3)") from None
    conn = apsw.Connection(":memory:")
    load(conn)
    return conn
