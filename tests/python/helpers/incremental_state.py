"""What the incremental-run tests share: the table and index as seen, the
random batches of changes, and texts of their own."""
import json
import os
import random
import shutil
import sqlite3
import struct

import pipeline as P

WORDS = "harbour festival tram line library reopening newsroom letters editor corrections".split()


def demo_copy(tmp_path):
    """A copy of the demo database and a connection to it, the extension
    loaded."""
    db = str(tmp_path / "demo.db")
    shutil.copy(P.DEMO, db)
    return db, P.connect(db)


def demo_part(tmp_path, rng, n):
    """A database holding `n` of the demo's rows, drawn by `rng`, and a
    connection to it; the other rows, shuffled, as the pool new pages come
    from."""
    src = sqlite3.connect(P.DEMO)
    rows = src.execute("SELECT * FROM pages ORDER BY rowid").fetchall()
    src.close()
    rng.shuffle(rows)
    db = str(tmp_path / "inc.db")
    shutil.copy(P.DEMO, db)
    conn = P.connect(db)
    conn.execute("DELETE FROM pages")
    conn.executemany(f"INSERT INTO pages VALUES ({', '.join('?' * len(rows[0]))})", rows[:n])
    return db, conn, rows[n:]


def table_state(conn):
    """The table and the archive of the last run, exactly."""
    pages = conn.execute("SELECT rowid, * FROM pages ORDER BY rowid").fetchall()
    run = conn.execute("SELECT max(run) FROM dedup_runs").fetchone()[0]
    archived = conn.execute(
        "SELECT dedup_rowid, dedup_phase, dedup_reason, dedup_survivor, dedup_ratio, url FROM dedup_removed "
        "WHERE dedup_run = ? ORDER BY dedup_rowid", (run,)).fetchall()
    return pages, archived


def full_and_incremental(tmp_path, db, conn, settings, step):
    """Closes `conn`; runs a full run (`{"full": true}`) on a copy of `db`,
    then the run of `settings` on `db`, and checks that both leave the same
    table, archive and removals. Returns the new connection to `db` and the
    run's report."""
    conn.close()
    full_db = str(tmp_path / f"full{step}.db")
    shutil.copy(db, full_db)
    full = P.connect(full_db)
    expected = report(full, dict(settings, full=True))
    conn = P.connect(db)
    got = report(conn, settings)
    assert table_state(conn) == table_state(full), f"step {step}"
    assert got["removed"] == expected["removed"]
    full.close()
    os.remove(full_db)
    return conn, got


def report(conn, settings):
    conn.execute("SELECT dedup_run(?)", (json.dumps(settings),)).fetchone()
    return json.loads(conn.execute("SELECT report FROM dedup_runs ORDER BY run DESC LIMIT 1").fetchone()[0])


def unpack(blob):
    """The (band, key) pairs of a packed blob: 12 little-endian bytes each,
    the band in 4 (unsigned), the key in 8 (signed)."""
    return {struct.unpack("<Iq", blob[i:i + 12]) for i in range(0, len(blob or b""), 12)}


def index_band_keys(conn, settings):
    """The entries of dedup_index_bands that count (their row in dedup_index
    holds their key), and the band keys of every page with a text computed
    from the table with the public functions (none in window mode). Every
    other entry must be one of a row listed in dedup_index_bands_left."""
    held = {rid: unpack(blob) for rid, blob in conn.execute("SELECT rid, bands FROM dedup_index")}
    entries = conn.execute("SELECT band, key, rid FROM dedup_index_bands").fetchall()
    got = sorted(e for e in entries if (e[0], e[1]) in held.get(e[2], ()))
    listed = {(band, key, rid) for rid, blob in conn.execute("SELECT rid, bands FROM dedup_index_bands_left")
              for band, key in unpack(blob)}
    stale = set(entries) - set(got)
    assert stale <= listed, sorted(stale - listed)[:5]
    if settings.get("near_mode") != "lsh":
        return got, []
    if settings.get("measure") == "resemblance":
        # (docs/pipeline.md: its own word shingles without the stoplist, 128 bands of 2.)
        stoplist = settings.get("stoplist") or None
        stoplist = " ".join(stoplist) if isinstance(stoplist, list) else stoplist
        kind, size, bands, rows = "word", settings.get("ngram_size", 5), 128, 2
    else:
        stoplist, kind, size = None, settings.get("lsh_shingles", "char"), settings.get("lsh_shingle_size", 5)
        bands, rows = settings.get("lsh_bands", 32), settings.get("lsh_rows", 4)
    sketch = {"minhash": "minhash", "oph": "minhash_oph"}[settings.get("lsh_sketch", "minhash")]
    want = sorted(conn.execute(
        "SELECT DISTINCT b.band, b.key, p.rowid FROM pages AS p, "
        f"lsh_bands({sketch}(p.parsed, ?1 * ?2, ?3, ?4, ?5), ?1, ?2) AS b WHERE p.parsed <> ''",
        (bands, rows, kind, size, stoplist)))
    return got, want


def index_keys(conn):
    """The entries of dedup_index_keys, each (key, rid), as a set."""
    return set(conn.execute("SELECT key, rid FROM dedup_index_keys"))


def written_keys(conn):
    """Every row's keys in dedup_index: its url_key and hash_key, with its rowid."""
    return {(k, rid) for rid, u, h in conn.execute("SELECT rid, url_key, hash_key FROM dedup_index")
            for k in (u, h) if k is not None}


def counted_keys(conn):
    """The entries of dedup_index_keys and dedup_index_keys_new that count
    (their row in dedup_index holds their key), after checking that no entry
    is in both tables."""
    written, added = index_keys(conn), set(conn.execute("SELECT key, rid FROM dedup_index_keys_new"))
    assert not written & added, sorted(written & added)[:5]
    held = written_keys(conn)
    return (written | added) & held, held


def state_number(conn, key):
    return int(conn.execute("SELECT value FROM dedup_index_state WHERE key = ?", (key,)).fetchone()[0])


def columns(conn):
    return [r[1] for r in conn.execute("PRAGMA table_info(pages)")]


def batch(conn, rng, pool, step):
    """One batch of what crawlers and users do to a deduplicated table."""
    cols = columns(conn)
    kept = [r[0] for r in conn.execute("SELECT rowid FROM pages")]
    insert = f"INSERT INTO pages ({', '.join(cols)}) VALUES ({', '.join('?' * len(cols))})"
    row_of = lambda rowid: list(conn.execute(f"SELECT {', '.join(cols)} FROM pages WHERE rowid = ?", (rowid,)).fetchone())
    at = {c: i for i, c in enumerate(cols)}
    for _ in range(rng.randint(3, 12)):  # new pages
        if pool:
            conn.execute(insert, pool.pop())
    for rowid in rng.sample(kept, min(len(kept), rng.randint(1, 6))):  # copies under other URLs
        row = row_of(rowid)
        url = row[at["url"]] or ""
        url = url.decode("utf-8", "replace") if isinstance(url, bytes) else url  # (rough_batch's BLOB)
        row[at["url"]] = f"https://mirror{rng.randint(1, 3)}.example.net/{step}/{rng.randint(0, 99)}/" + url.split("/")[-1]
        if rng.random() < 0.5 and row[at["parsed"]]:
            row[at["parsed"]] = row[at["parsed"]] + " " + rng.choice(WORDS)  # a near copy
            row[at["content_hash"]] = None
        row[at["crawled"]] = f"2031-0{1 + step % 9}-01"
        conn.execute(insert, row)
    for rowid in rng.sample(kept, min(len(kept), rng.randint(0, 4))):  # refetches of kept URLs
        row = row_of(rowid)
        row[at["crawled"]] = f"2032-0{1 + step % 9}-02"
        row[at["datetime"]] = f"2032-0{1 + step % 9}-02"
        if rng.random() < 0.5 and row[at["parsed"]]:
            row[at["parsed"]] = rng.choice(WORDS) + " " + row[at["parsed"]]
            row[at["content_hash"]] = None
        conn.execute(insert, row)
    for rowid in rng.sample(kept, min(len(kept), rng.randint(0, 3))):  # edits of kept rows
        conn.execute("UPDATE pages SET parsed = parsed || ' ' || ?, content_hash = NULL WHERE rowid = ?",
                     (rng.choice(WORDS), rowid))
    for rowid in rng.sample(kept, min(len(kept), rng.randint(0, 3))):  # deletions by the user
        conn.execute("DELETE FROM pages WHERE rowid = ?", (rowid,))
    # Rowid reuse: a new row under the highest freed rowid.
    free = conn.execute("SELECT max(dedup_rowid) FROM dedup_removed "
                        "WHERE dedup_rowid NOT IN (SELECT rowid FROM pages)").fetchone()[0]
    if free is not None and pool and rng.random() < 0.7:
        conn.execute(f"INSERT INTO pages (rowid, {', '.join(cols)}) VALUES (?, {', '.join('?' * len(cols))})",
                     (free, *pool.pop()))


def own_text(i, n=60):
    rng = random.Random(i)
    return " ".join("".join(rng.choice("abcdefghijklmnop") for _ in range(rng.randint(2, 8))) for _ in range(n))


def rough_batch(conn, rng):
    """What users do besides crawling: edit kept URLs (a tracking parameter,
    a trailing slash, another page), empty texts, store a URL as a BLOB (a
    row the pipeline skips; the next rough batch turns it back into text), add
    exact copies under the same URL, and now and then delete a fifth of the
    table."""
    cols = columns(conn)
    kept = [r[0] for r in conn.execute("SELECT rowid FROM pages")]
    at = {c: i for i, c in enumerate(cols)}
    insert = f"INSERT INTO pages ({', '.join(cols)}) VALUES ({', '.join('?' * len(cols))})"
    conn.execute("UPDATE pages SET url = CAST(url AS TEXT) WHERE typeof(url) = 'blob'")
    for rowid in rng.sample(kept, min(len(kept), rng.randint(0, 3))):
        conn.execute("UPDATE pages SET url = url || ? WHERE rowid = ?",
                     (rng.choice(["?utm_source=x", "/", "?page=2", "#frag", "x"]), rowid))
    for rowid in rng.sample(kept, min(len(kept), rng.randint(0, 2))):
        conn.execute("UPDATE pages SET parsed = '', content_hash = NULL WHERE rowid = ?", (rowid,))
    for rowid in rng.sample(kept, min(len(kept), rng.randint(0, 3))):
        row = list(conn.execute(f"SELECT {', '.join(cols)} FROM pages WHERE rowid = ?", (rowid,)).fetchone())
        if rng.random() < 0.5:
            row[at["crawled"]] = "2035-01-01"
        conn.execute(insert, row)
    if rng.random() < 0.3 and kept:
        conn.execute("UPDATE pages SET url = CAST(url AS BLOB) WHERE rowid = ?", (rng.choice(kept),))
    if rng.random() < 0.15:
        conn.execute("DELETE FROM pages WHERE rowid % 5 = ?", (rng.randint(0, 4),))
