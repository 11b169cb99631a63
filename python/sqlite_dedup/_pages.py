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
# What a run may rewrite or fill in a surviving row: columns of every run's
# table here, so that each kept page has them (the Wayback wrapper kept in
# `wayback` when the URL becomes the archived one).
REWRITTEN = ["url", "domain", "wayback", "parsed", "content_hash", "length"]


def dedup(pages, **settings):
    """Deduplicates `pages`, a list of dicts with the reference's `web_page`
    keys (url, title, content or parsed, datetime, crawled, category, ...;
    others are carried along), with the settings of `dedup_run` (threshold,
    distance, near_mode, compat, ...): the same answer as a run on a table
    holding the pages in this order, nothing written anywhere.

    Returns a dict: `kept`, the surviving pages in their order (each a copy,
    with `_index`, its index in `pages`, the URL, domain and wayback the
    run gave it, and parsed, content_hash and length: the page's own, or
    filled by the run); `removed`, one dict per removed page in its order
    (`index` in `pages`, `page`, the dict given, `phase`, `reason`,
    `survivor` and `final_survivor`, indexes in `pages` or None, `ratio`);
    `report`, the run's report.

    A datetime or date value is stored as Python's sqlite3 adapter writes
    it (`str(value)`); a list or dict as JSON. Raises TypeError for pages
    that are not dicts of such values, or have no `url` key (naming the
    page and key), and the run's error for a page it refuses (naming the
    page as `pages[i]`)."""
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
        conn.executemany(insert, rows)
        conn.execute("COMMIT")
        try:
            conn.execute("SELECT dedup_run(?)", (json.dumps(settings),)).fetchone()
        except Exception as e:
            raise type(e)(_in_list_words(str(e))) from None
        report = json.loads(conn.execute("SELECT report FROM dedup_runs ORDER BY run DESC LIMIT 1").fetchone()[0])
        kept = []
        at = {n: k + 1 for k, n in enumerate(names)}
        for row in conn.execute(f"SELECT rowid, {', '.join(map(_quoted, names))} FROM pages ORDER BY rowid"):
            rowid = row[0]
            page, given = dict(pages[rowid - 1]), rows[rowid - 1]
            for name in REWRITTEN:
                value = row[at[name]]
                if value != given[at[name]] or (name not in page and value is not None):
                    page[name] = value
            page["_index"] = rowid - 1
            kept.append(page)
        # (Each removal's final survivor: its survivors followed while they
        # were removed in turn, in the same or a later phase, as dedup_why
        # follows them; read from the archive once, not per row.)
        archived = conn.execute("SELECT dedup_rowid, dedup_phase, dedup_reason, dedup_survivor, dedup_ratio "
                                "FROM dedup_removed ORDER BY dedup_rowid").fetchall()
        by_rowid = {r[0]: r for r in archived}
        removed = []
        for rowid, phase, reason, survivor, ratio in archived:
            final, depth, last_phase = survivor, 0, phase
            while final in by_rowid and by_rowid[final][1] >= last_phase and depth < 100:
                last_phase, final = by_rowid[final][1], by_rowid[final][3]
                depth += 1
            removed.append({"index": rowid - 1, "page": pages[rowid - 1], "phase": phase, "reason": reason,
                            "survivor": None if survivor is None else survivor - 1,
                            "final_survivor": None if final is None else final - 1, "ratio": ratio})
        return {"kept": kept, "removed": removed, "report": report}
    finally:
        conn.close()


def _in_list_words(message):
    """A run's error as the list's: `pages[i]` for the row whose rowid is
    i + 1, and no table the caller never made."""
    import re
    message = re.sub(r"\b(?:the row whose rowid is|rowid) (\d+)",
                     lambda m: f"pages[{int(m.group(1)) - 1}]", message)
    return message.replace('table "pages"', "the list of pages").replace("table 'pages'", "the list of pages")


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
    for i, page in enumerate(pages):
        if not any(isinstance(k, str) and k.lower() == "url" for k in page):
            raise TypeError(f"dedup: pages[{i}] has no 'url' key: each page needs its URL (None for none)")
    known = [n for n, _ in REFERENCE_COLUMNS if n in seen or n in REWRITTEN]
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
