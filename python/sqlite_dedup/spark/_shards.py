"""The shards of one job, each once: a file named twice (by any path, a
link, a byte-identical copy, or a copy by content: after a VACUUM, say)
would make every page of it a duplicate of itself in the other, and each
copy's rows would be removed."""
import hashlib
import os
import sqlite3


def _digest(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def repeated(paths, table="pages"):
    """The first problem with `paths` as one job's shards, as a sentence, or
    None: two paths to one file (same device and inode), two files of the
    same bytes (compared only where the sizes agree), or two copies of one
    database by content (the same runs, or the same rows of `table`)."""
    seen = {}
    by_size = {}
    for path in paths:
        try:
            st = os.stat(path)
        except OSError:
            continue  # (the caller names a missing file)
        key = (st.st_dev, st.st_ino)
        if key in seen:
            return (f"shard {path} is the same file as shard {seen[key]}: each shard must be given once "
                    "(its pages would remove each other)")
        seen[key] = path
        by_size.setdefault(st.st_size, []).append(path)
    for same in by_size.values():
        if len(same) > 1:
            digests = {}
            for path in same:
                d = _digest(path)
                if d in digests:
                    return (f"shard {path} is a byte-identical copy of shard {digests[d]}: each shard must "
                            "be given once (its pages would remove each other)")
                digests[d] = path
    signatures = {}
    for path in paths:
        for sig in _content(path, table):
            if sig in signatures:
                return (f"shard {path} is a copy of shard {signatures[sig]} by content ({sig[0]}): each shard "
                        "must be given once (its pages would remove each other)")
            signatures[sig] = path
    return None


def _content(path, table):
    """What tells a copy of a shard by content (a VACUUM changes its bytes):
    its runs in dedup_runs, and its table's row count with 64 rows spread
    over its rowids (rowid, url and texts); each a hashable key, none for an
    empty shard or one that cannot be read (the caller names that)."""
    keys = []
    try:
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    except sqlite3.Error:
        return keys
    try:
        names = {r[0] for r in conn.execute("SELECT name FROM sqlite_schema WHERE type = 'table'")}
        if "dedup_runs" in names:
            # (With each run's row counts: the shards of one job share its
            # run number, time and settings, never all their counts.)
            runs = tuple(conn.execute("SELECT run, finished, rows_before, rows_after, settings FROM dedup_runs "
                                      "ORDER BY run"))
            if runs:
                keys.append(("the same runs in dedup_runs", runs))
        if table in names:
            q = '"' + table.replace('"', '""') + '"'
            cols = {r[1].lower() for r in conn.execute(f"PRAGMA table_info({q})")}
            wanted = ", ".join(c if c in cols else "NULL" for c in ("url", "content", "parsed"))
            n, low, high = conn.execute(f"SELECT count(*), min(rowid), max(rowid) FROM {q}").fetchone()
            if n:
                sample = tuple(conn.execute(f"SELECT rowid, {wanted} FROM {q} WHERE rowid >= ? ORDER BY rowid "
                                            "LIMIT 1", (low + (high - low) * i // 63,)).fetchone()
                               for i in range(64))
                keys.append(("the same rows", n, hashlib.sha256(repr(sample).encode()).hexdigest()))
                # (A VACUUM renumbers the rowids of a table with gaps, keeping
                # its rows' order: its first and last rows, without rowids.)
                ends = tuple(conn.execute(f"SELECT {wanted} FROM {q} ORDER BY rowid LIMIT 32")) + tuple(
                    conn.execute(f"SELECT {wanted} FROM {q} ORDER BY rowid DESC LIMIT 32"))
                keys.append(("the same rows in the same order", n, hashlib.sha256(repr(ends).encode()).hexdigest()))
    except sqlite3.Error:
        return []
    finally:
        conn.close()
    return keys
