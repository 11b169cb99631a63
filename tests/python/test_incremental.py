"""Incremental runs (issue 26, docs/incremental.md): after random batches of
changes to a deduplicated table, the incremental run leaves exactly what a
full run of the same settings leaves (`{"full": true}` on a copy of the same
database): every row of the table, every archived row with its phase,
reason, survivor and ratio. The expected side is the full run, whose
parity with the reference is tested elsewhere."""
import json
import os
import random
import shutil
import sqlite3
import struct

import pytest

import pipeline as P

WORDS = "harbour festival tram line library reopening newsroom letters editor corrections".split()


def table_state(conn):
    """The table and the archive of the last run, exactly."""
    pages = conn.execute("SELECT rowid, * FROM pages ORDER BY rowid").fetchall()
    run = conn.execute("SELECT max(run) FROM dedup_runs").fetchone()[0]
    archived = conn.execute(
        "SELECT dedup_rowid, dedup_phase, dedup_reason, dedup_survivor, dedup_ratio, url FROM dedup_removed "
        "WHERE dedup_run = ? ORDER BY dedup_rowid", (run,)).fetchall()
    return pages, archived


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
    want = sorted(conn.execute(
        "SELECT DISTINCT b.band, b.key, p.rowid FROM pages AS p, "
        "lsh_bands(minhash(p.parsed, 128, 'char', 5), 32, 4) AS b WHERE p.parsed <> ''"))
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


@pytest.mark.parametrize("seed", [1, 2, 3])
@pytest.mark.parametrize("settings", [{}, {"n_min": 3, "distance": 12}, {"n_min": 6}, {"distance": 3},
                                      {"compat": "reference"}, {"near_mode": "lsh"},
                                      {"near_mode": "lsh", "compat": "reference"},
                                      {"near_mode": "lsh", "threshold": 0.8, "n_min": 3}],
                         ids=["default", "n_min-distance", "n_min-6", "distance-3", "compat", "lsh",
                              "lsh-compat", "lsh-0.8-n_min"])
def test_incremental_runs_equal_full_runs_after_random_batches(tmp_path, seed, settings):
    rng = random.Random(seed)
    src = sqlite3.connect(P.DEMO)
    rows = src.execute("SELECT * FROM pages ORDER BY rowid").fetchall()
    src.close()
    rng.shuffle(rows)
    start, pool = rows[:350], rows[350:]
    db = str(tmp_path / "inc.db")
    shutil.copy(P.DEMO, db)
    conn = P.connect(db)
    conn.execute("DELETE FROM pages")
    conn.executemany(f"INSERT INTO pages VALUES ({', '.join('?' * len(rows[0]))})", start)
    first = report(conn, settings)
    assert "kind" not in first  # the first run: full, nothing to say
    kinds = []
    for step in range(8):
        batch(conn, rng, pool, step)
        conn.close()
        full_db = str(tmp_path / f"full{step}.db")
        shutil.copy(db, full_db)
        full = P.connect(full_db)
        expected = report(full, dict(settings, full=True))
        assert expected["kind"] == "full" and expected["why"] == "asked for (full: true)"
        conn = P.connect(db)
        got = report(conn, settings)
        kinds.append(got["kind"])
        assert got["scanned"] is None, got  # the change log named the batch's rows
        # The log starts again with the unsettled rows (which the next run takes as changed).
        assert sorted(conn.execute("SELECT rid FROM dedup_changes")) == sorted(
            conn.execute("SELECT rid FROM dedup_index WHERE fp = 0"))
        assert table_state(conn) == table_state(full), f"step {step}"
        assert got["removed"] == expected["removed"]
        # lsh mode: the index's band keys are the kept rows', after an
        # incremental run as after a full one.
        keys, want = index_band_keys(conn, settings)
        assert keys == want and index_band_keys(full, settings) == (want, want), f"step {step}"
        # Every row's URL and hash keys are found by its look-ups; the
        # index's rows are counted right (the next run's rows_before).
        counted, held = counted_keys(conn)
        assert counted == held, f"step {step}"
        assert state_number(conn, "rows") == conn.execute("SELECT count(*) FROM dedup_index").fetchone()[0]
        assert got["rows_before"] == expected["rows_before"]
        full.close()
        os.remove(full_db)
    assert kinds == ["incremental"] * 8, kinds


@pytest.mark.parametrize("seed,distance,mode", [(1, 50, "window"), (2, 4, "window"), (3, 3, "window"),
                                               (4, 50, "lsh")])
def test_incremental_runs_equal_full_runs_on_the_corpus(tmp_path, seed, distance, mode):
    """The same property at the scale where the benchmark found a missed
    merge: parity-5k, 4,000 rows kept first, then batches of held-out rows,
    copies, edits and deletions (phase 3 then removes kept rows for newer
    copies, which brings rows closer in the window; a short distance leaves
    many near pairs just out of each other's window for that)."""
    rng = random.Random(seed)
    db = P.copy_corpus(tmp_path)
    conn = P.connect(db)
    conn.execute("CREATE TABLE held AS SELECT * FROM pages WHERE rowid % 5 = ?", (seed,))
    conn.execute("DELETE FROM pages WHERE rowid IN (SELECT rowid FROM held)")
    pool = conn.execute("SELECT * FROM held").fetchall()
    conn.execute("DROP TABLE held")
    settings = {"distance": distance, "near_mode": mode}
    report(conn, settings)
    for step in range(4):
        batch(conn, rng, pool, step)
        cols = columns(conn)
        insert = f"INSERT INTO pages ({', '.join(cols)}) VALUES ({', '.join('?' * len(cols))})"
        for _ in range(40):
            if pool:
                conn.execute(insert, pool.pop())
        # Newer copies of kept pages under other URLs: phase 3 removes the kept row.
        for rowid in rng.sample([r[0] for r in conn.execute("SELECT rowid FROM pages")], 15):
            row = list(conn.execute(f"SELECT {', '.join(cols)} FROM pages WHERE rowid = ?", (rowid,)).fetchone())
            row[cols.index("url")] = f"https://newer.example.com/{step}/{rowid}"
            row[cols.index("crawled")] = "2033-01-01"
            row[cols.index("datetime")] = "2033-01-01"
            conn.execute(insert, row)
        conn.close()
        full_db = str(tmp_path / f"full{step}.db")
        shutil.copy(db, full_db)
        full = P.connect(full_db)
        expected = report(full, dict(settings, full=True))
        conn = P.connect(db)
        got = report(conn, settings)
        assert got["kind"] == "incremental"
        assert table_state(conn) == table_state(full), f"step {step}"
        assert got["removed"] == expected["removed"]
        full.close()
        os.remove(full_db)


def own_text(i, n=60):
    rng = random.Random(i)
    return " ".join("".join(rng.choice("abcdefghijklmnop") for _ in range(rng.randint(2, 8))) for _ in range(n))


@pytest.mark.parametrize("how", ["a new copy wins phase 3", "the user deletes it", "the user edits its URL"])
def test_rows_that_come_closer_when_a_kept_row_leaves_are_compared(tmp_path, how):
    """Two kept near-copies exactly `distance` rows apart (never compared) with
    a kept row between them; when that row leaves the scan order this run
    (a newer copy under another URL wins phase 3, or the user deletes or
    moves it), the two come within the window: a full run merges them, and
    so must the incremental one."""
    db = str(tmp_path / "close.db")
    conn = P.connect(db)
    conn.execute("CREATE TABLE pages (url TEXT, parsed TEXT, crawled TEXT)")
    near = own_text(100)
    rows = [(f"https://a.example/p{i:02d}", own_text(i), "2026-01-01") for i in range(12)]
    rows[2] = ("https://a.example/p02", near, "2026-01-01")
    rows[7] = ("https://a.example/p07", near + " and one more word", "2026-01-02")
    conn.executemany("INSERT INTO pages VALUES (?, ?, ?)", rows)
    settings = {"distance": 5}
    first = report(conn, settings)
    assert first.get("removed") == {}, first  # p02 and p07 are 5 rows apart: never compared
    if how == "a new copy wins phase 3":
        conn.execute("INSERT INTO pages VALUES ('https://z.example/copy', ?, '2026-03-01')", (rows[4][1],))
    elif how == "the user deletes it":
        conn.execute("DELETE FROM pages WHERE url = 'https://a.example/p04'")
    else:
        conn.execute("UPDATE pages SET url = 'https://z.example/moved' WHERE url = 'https://a.example/p04'")
    conn.close()
    shutil.copy(db, db + ".full")
    full = P.connect(db + ".full")
    expected = report(full, dict(settings, full=True))
    assert expected["removed"].get("4") == 1, expected  # they are merged now
    conn = P.connect(db)
    got = report(conn, settings)
    assert got["kind"] == "incremental"
    assert table_state(conn) == table_state(full)


def test_band_keys_of_rows_that_left_count_for_nothing_until_swept(tmp_path):
    """lsh mode: a row that leaves keeps its entries in dedup_index_bands,
    listed in dedup_index_bands_left, until the rows listed are an eighth of
    the kept rows; meanwhile a rowid reused by a new page (a near copy of a
    kept one) finds and is found by its own keys only. After each batch the
    table equals a full run's, and then the sweep leaves exactly the kept
    rows' keys."""
    db = str(tmp_path / "bands.db")
    conn = P.connect(db)
    conn.execute("CREATE TABLE pages (url TEXT, parsed TEXT, crawled TEXT)")
    conn.executemany("INSERT INTO pages VALUES (?, ?, ?)",
                     [(f"https://a.example/p{i:02d}", own_text(i), "2026-01-01") for i in range(40)])
    settings = {"near_mode": "lsh"}
    assert report(conn, settings).get("removed") == {}

    def run_and_compare(step):
        nonlocal conn
        conn.close()
        shutil.copy(db, db + ".full")
        full = P.connect(db + ".full")
        report(full, dict(settings, full=True))
        conn = P.connect(db)
        got = report(conn, settings)
        assert got["kind"] == "incremental", got
        assert table_state(conn) == table_state(full), step
        keys, want = index_band_keys(conn, settings)
        assert keys == want, step
        full.close()
        return conn.execute("SELECT count(*) FROM dedup_index_bands").fetchone()[0] - len(want)

    conn.execute("DELETE FROM pages WHERE rowid IN (3, 4, 40)")
    assert run_and_compare("three deleted") > 0  # their entries stay, not counted
    assert conn.execute("SELECT count(*) FROM dedup_index_bands_left").fetchone()[0] == 3
    # Rowid 40 again, a near copy of p05 (rowid 6; a word added): one of them goes.
    conn.execute("INSERT INTO pages (rowid, url, parsed, crawled) VALUES (40, 'https://b.example/copy', ?, '2026-02-01')",
                 (own_text(5) + " again",))
    run_and_compare("rowid 40 reused")
    pair = conn.execute("SELECT dedup_rowid, dedup_survivor FROM dedup_removed WHERE dedup_run = 3").fetchall()
    assert len(pair) == 1 and set(pair[0]) == {6, 40}, pair
    assert conn.execute("SELECT count(*) FROM dedup_index_bands_left").fetchone()[0] == 4
    # Rowid 6 again, a page of its own, kept: its keys count, its old ones do not.
    conn.execute("INSERT INTO pages (rowid, url, parsed, crawled) VALUES (6, 'https://b.example/own', ?, '2026-02-02')",
                 (own_text(77),))
    run_and_compare("rowid 6 reused and kept")
    assert conn.execute("SELECT url FROM pages WHERE rowid = 6").fetchone()[0] == "https://b.example/own"
    assert conn.execute("SELECT count(*) FROM dedup_index_bands_left").fetchone()[0] == 4  # 4 * 8 <= 38 kept
    conn.execute("DELETE FROM pages WHERE rowid IN (10, 11)")  # now more than an eighth
    assert run_and_compare("swept") == 0
    assert conn.execute("SELECT count(*) FROM dedup_index_bands_left").fetchone()[0] == 0


def test_a_band_key_of_a_row_that_left_makes_no_pair_with_its_reused_rowid(tmp_path):
    """Rowid 40 leaves (its entries stay), comes back with another text, and
    then a new page has rowid 40's old text: the page shares keys with the
    old entries only, so no pair; a full run compares nothing either. (The
    two texts are 0.41 alike: at threshold 0.35 a pair would remove one.)"""
    db = str(tmp_path / "reused.db")
    conn = P.connect(db)
    conn.execute("CREATE TABLE pages (url TEXT, parsed TEXT, crawled TEXT)")
    conn.executemany("INSERT INTO pages VALUES (?, ?, ?)",
                     [(f"https://a.example/p{i:02d}", own_text(i), "2026-01-01") for i in range(40)])
    settings = {"near_mode": "lsh", "threshold": 0.35}
    assert conn.execute("SELECT lev_ratio(?, ?)", (own_text(39), own_text(77))).fetchone()[0] > 0.35
    assert report(conn, settings).get("removed") == {}
    for change in ("DELETE FROM pages WHERE rowid = 40",
                   f"INSERT INTO pages (rowid, url, parsed, crawled) VALUES (40, 'https://b.example/own', '{own_text(77)}', '2026-02-01')",
                   f"INSERT INTO pages (url, parsed, crawled) VALUES ('https://c.example/old-text', '{own_text(39)}', '2026-03-01')"):
        conn.execute(change)
        conn.close()
        shutil.copy(db, db + ".full")
        full = P.connect(db + ".full")
        expected = report(full, dict(settings, full=True))
        conn = P.connect(db)
        got = report(conn, settings)
        assert got["kind"] == "incremental" and got["removed"] == expected["removed"] == {}, (change, got)
        assert table_state(conn) == table_state(full), change
        full.close()


def test_url_and_hash_keys_of_rows_that_left_count_for_nothing_until_written_whole(tmp_path):
    """A row that leaves keeps its entries in dedup_index_keys, and a new
    row's go to dedup_index_keys_new (but those dedup_index_keys holds
    already), until the entries added and two per row that left are a
    quarter of those written whole (80 here: 40 pages, a URL and a hash
    key each). Meanwhile rowids reused find their groups by their own keys
    only: a row back with its old URL is found by it in dedup_index_keys,
    a new copy of a kept page's text by the hash there, and a URL a row
    left is not found in it. After each batch the table equals a full
    run's; then the keys are written whole."""
    db = str(tmp_path / "keys.db")
    conn = P.connect(db)
    conn.execute("CREATE TABLE pages (url TEXT, parsed TEXT, crawled TEXT)")
    conn.executemany("INSERT INTO pages VALUES (?, ?, ?)",
                     [(f"https://a.example/p{i:02d}", own_text(i), "2026-01-01") for i in range(40)])
    assert report(conn, {}).get("removed") == {}
    written = index_keys(conn)
    assert written == written_keys(conn) and len(written) == 80
    assert (state_number(conn, "keys_written"), state_number(conn, "keys_left")) == (80, 0)

    def run_and_compare(step, removed):
        nonlocal conn
        conn.close()
        shutil.copy(db, db + ".full")
        full = P.connect(db + ".full")
        expected = report(full, {"full": True})
        conn = P.connect(db)
        got = report(conn, {})
        assert got["kind"] == "incremental", got
        assert got["removed"] == expected["removed"] == removed, step
        assert table_state(conn) == table_state(full), step
        counted, held = counted_keys(conn)
        assert counted == held, step
        full.close()
        return conn.execute("SELECT count(*) FROM dedup_index_keys_new").fetchone()[0]

    conn.execute("DELETE FROM pages WHERE rowid IN (3, 4, 40)")
    assert run_and_compare("three deleted", {}) == 0
    assert index_keys(conn) == written  # their entries stay, not counted
    assert state_number(conn, "keys_left") == 3
    # Rowid 3 back as it was (its entries count again, none added); rowid
    # 40 a copy of p05's text under another URL, crawled later (phase 3
    # finds rowid 6 by its hash in dedup_index_keys: the later crawl stays); a new page at rowid 4's old URL
    # (rowid 4's entry left: nothing to find).
    conn.execute("INSERT INTO pages (rowid, url, parsed, crawled) VALUES (3, 'https://a.example/p02', ?, '2026-01-01')",
                 (own_text(2),))
    conn.execute("INSERT INTO pages (rowid, url, parsed, crawled) VALUES (40, 'https://b.example/copy', ?, '2026-02-01')",
                 (own_text(5),))
    conn.execute("INSERT INTO pages (rowid, url, parsed, crawled) VALUES (41, 'https://a.example/p03', ?, '2026-02-01')",
                 (own_text(41),))
    assert run_and_compare("rowids reused", {"3": 1}) == 4  # rowids 40 and 41's URL and hash keys
    assert conn.execute("SELECT dedup_rowid, dedup_survivor FROM dedup_removed WHERE dedup_run = 3").fetchall() == [(6, 40)]
    assert state_number(conn, "keys_left") == 4  # and rowid 6, removed
    # A new page at rowid 3's URL with another text, crawled later: phase 2
    # finds rowid 3 by its entry in dedup_index_keys; rowid 3 goes.
    conn.execute("INSERT INTO pages (rowid, url, parsed, crawled) VALUES (42, 'https://a.example/p02', ?, '2026-03-01')",
                 (own_text(2) + " updated",))
    assert run_and_compare("a new crawl of a URL", {"2": 1}) == 6
    assert conn.execute("SELECT dedup_rowid, dedup_survivor FROM dedup_removed WHERE dedup_run = 4").fetchall() == [(3, 42)]
    assert (state_number(conn, "keys_written"), state_number(conn, "keys_left")) == (80, 5)
    # 6 added and 2 * 5 left: 16 * 4 <= 80. Three more rows leave: 22 * 4 > 80.
    conn.execute("DELETE FROM pages WHERE rowid IN (10, 11, 12)")
    assert run_and_compare("written whole", {}) == 0
    assert index_keys(conn) == written_keys(conn)
    assert (state_number(conn, "keys_written"), state_number(conn, "keys_left")) == (len(written_keys(conn)), 0)


def test_a_placeholder_keeps_the_slot_its_row_had(tmp_path):
    """Two pages kept apart share a canonical URL (their `id` differs, their
    texts too); run 1 removes the one with the lower rowid in phase 4, for
    a later row. In run 2 it is a placeholder, and must keep its slot before
    its sibling: sorted after it, it moved the sibling one slot closer to a
    row 3 slots before, its near copy, and a second full run merged them."""
    db = str(tmp_path / "slot.db")
    conn = P.connect(db)
    conn.execute("CREATE TABLE pages (url TEXT, parsed TEXT, crawled TEXT)")
    x, r = own_text(1), own_text(2)
    rows = [(1, "https://a.example/a", x, "2026-01-01"),
            (2, "https://a.example/b", own_text(3), "2026-01-01"),
            (3, "https://a.example/c?id=2", r, "2026-01-01"),
            (5, "https://a.example/c?id=1", x + " and one more word", "2026-01-01"),
            (6, "https://a.example/d", r + " and more", "2026-02-01")]
    conn.executemany("INSERT INTO pages (rowid, url, parsed, crawled) VALUES (?, ?, ?, ?)", rows)
    first = report(conn, {"distance": 3})
    assert first["removed"] == {"4": 1}, first
    assert conn.execute("SELECT dedup_rowid, dedup_survivor FROM dedup_removed").fetchall() == [(3, 6)]
    shutil.copy(db, db + ".full")
    full = P.connect(db + ".full")
    assert report(full, {"distance": 3, "full": True})["removed"] == {}  # a second run removes nothing
    assert report(conn, {"distance": 3})["removed"] == {}
    assert table_state(conn) == table_state(full)


def test_a_full_run_writes_the_placeholders_the_next_full_run_takes(tmp_path):
    """The rows a full run removes in phases 4 and 5 are the next run's
    placeholders: the index writes them from the run's own values, and the
    next full run takes them from the archive (sql/04_placeholders.sql).
    Both must name the same rows at the same places. Phase 5 (n_min 4)
    removes a small domain's rows: one with parsed text, one whose HTML
    content gives an empty text (a placeholder: it had a text column), one
    with an empty parsed text and no content (not one). Phase 4 removes a
    near copy."""
    db = str(tmp_path / "slots.db")
    conn = P.connect(db)
    conn.execute("CREATE TABLE pages (url TEXT, title TEXT, content TEXT, parsed TEXT, crawled TEXT)")
    big = [(f"https://big.example/p{i}?utm_source=x", None, None, own_text(10 + i), "2026-01-01") for i in range(5)]
    big.append(("https://big.example/p9", None, None, own_text(10) + " and one more", "2026-02-01"))
    small = [("https://small.example/text", None, None, own_text(30), "2026-01-01"),
             ("https://small.example/empty-html", "", "<html><body><script>x()</script></body></html>", None,
              "2026-01-01"),
             ("https://small.example/empty", None, None, "", "2026-01-01")]
    conn.executemany("INSERT INTO pages VALUES (?, ?, ?, ?, ?)", big + small)
    first = report(conn, {"n_min": 4})
    assert first["removed"] == {"4": 1, "5": 3}, first
    written = set(conn.execute("SELECT url, id FROM dedup_index_order WHERE placeholder = 1"))
    conn.execute("SELECT dedup_plan(?)", (json.dumps({"n_min": 4, "full": True}),)).fetchone()
    taken = set(conn.execute("SELECT url, id FROM temp._dedup_placeholders"))
    # (by hand: the near copy p0 (rowid 1, for p9), and small.example's
    # rows 7 and 8, not 9)
    assert taken == {("https://big.example/p0", 1), ("https://small.example/text", 7),
                     ("https://small.example/empty-html", 8)}
    assert written == taken


def test_a_second_run_with_nothing_new_compares_nothing(tmp_path):
    db = str(tmp_path / "demo.db")
    shutil.copy(P.DEMO, db)
    conn = P.connect(db)
    report(conn, {})
    # Row 470's URL has two `lang` parameters: its strict URL (by which
    # phase 2 groups) keeps both, but the run rewrote it to its canonical
    # URL, whose strict URL keeps one. The index marks such a row unsettled:
    # the next run takes it as changed (counted apart, as checked again).
    # Nothing else is looked at.
    unsettled = [r for (r,) in conn.execute("SELECT rid FROM dedup_index WHERE fp = 0")]
    assert unsettled == [470]
    second = report(conn, {})
    assert (second["kind"], second["dirty"], second["gone"], second["recheck"], second.get("removed")) == \
        ("incremental", 0, 0, 1, {})
    assert json.loads(conn.execute("SELECT near_dups_stats()").fetchone()[0])["rows"] > 0
    third = report(conn, {})
    assert (third["kind"], third["dirty"], third["gone"], third["recheck"], third.get("removed")) == \
        ("incremental", 0, 0, 0, {})
    assert json.loads(conn.execute("SELECT near_dups_stats()").fetchone()[0])["rows"] == 0


@pytest.mark.parametrize("change,why", [
    ({"threshold": 0.85}, "the settings differ from run 1's"),
    ({"near_mode": "lsh"}, "the settings differ from run 1's"),
    ({"boilerplate": "strip"}, "boilerplate = 'strip' (the chrome is counted over every row)"),
    ({"full": True}, "asked for (full: true)"),
])
def test_the_report_says_why_a_run_was_full(tmp_path, change, why):
    db = str(tmp_path / "demo.db")
    shutil.copy(P.DEMO, db)
    conn = P.connect(db)
    report(conn, {})
    second = report(conn, change)
    assert (second["kind"], second["why"]) == ("full", why)
    text = conn.execute("SELECT dedup_run(?)", (json.dumps(change),)).fetchone()[0]
    assert "  full run: " in text or "  incremental since run 2" in text


def test_an_index_of_another_version_makes_the_run_full(tmp_path):
    db = str(tmp_path / "demo.db")
    shutil.copy(P.DEMO, db)
    conn = P.connect(db)
    report(conn, {})
    version = conn.execute("SELECT value FROM dedup_index_state WHERE key = 'version'").fetchone()[0]
    assert version == "9 " + conn.execute("SELECT dedup_version()").fetchone()[0].lstrip("v"), version
    conn.execute("UPDATE dedup_index_state SET value = '3 0.1.0' WHERE key = 'version'")
    again = report(conn, {})
    assert (again["kind"], again["why"]) == ("full", "the index is from another version")
    assert report(conn, {})["kind"] == "incremental"  # rebuilt
    # The first format's table (fingerprints and places only) is replaced.
    conn.executescript("""
        DROP TABLE dedup_index;
        CREATE TABLE dedup_index (rid INTEGER PRIMARY KEY, fp INTEGER NOT NULL, pos_url TEXT);
        INSERT INTO dedup_index SELECT rowid, 0, url FROM pages;
        UPDATE dedup_index_state SET value = '1 0.2.0' WHERE key = 'version';""")
    again = report(conn, {})
    assert (again["kind"], again["why"]) == ("full", "the index is from another version")
    assert report(conn, {})["kind"] == "incremental"
    # The fourth format's order (no lengths) and URL-key index are replaced.
    conn.executescript("""
        DROP TABLE dedup_index_order;
        CREATE TABLE dedup_index_order (url TEXT NOT NULL, id INTEGER NOT NULL, placeholder INTEGER NOT NULL,
                                        PRIMARY KEY (url, id, placeholder)) WITHOUT ROWID;
        CREATE INDEX dedup_index_key ON dedup_index (coalesce(strict_url, canonical_url));
        UPDATE dedup_index_state SET value = '4 0.2.0' WHERE key = 'version';""")
    again = report(conn, {})
    assert (again["kind"], again["why"]) == ("full", "the index is from another version")
    assert "tlen" in [r[1] for r in conn.execute("PRAGMA table_info(dedup_index_order)")]
    assert conn.execute("SELECT count(*) FROM sqlite_schema WHERE name = 'dedup_index_key'").fetchone()[0] == 0
    # Each kept row's length in the order is its text's, as is its histogram in the index.
    lengths = conn.execute("""SELECT o.tlen, length(coalesce(p.parsed, '')), x.hist = dedup_histogram(p.parsed)
                              FROM dedup_index_order AS o JOIN pages AS p ON p.rowid = o.id
                              JOIN dedup_index AS x ON x.rid = o.id
                              WHERE o.placeholder = 0""").fetchall()
    assert lengths and all(a == b and same for a, b, same in lengths), [x for x in lengths if x[0] != x[1]][:3]
    assert report(conn, {})["kind"] == "incremental"
    # The fifth format's index (no band keys) is replaced, and lsh runs fill the keys.
    conn.executescript("""
        DROP TABLE dedup_index_bands;
        DROP INDEX IF EXISTS dedup_index_canonical;
        DROP INDEX IF EXISTS dedup_index_hash;
        ALTER TABLE dedup_index DROP COLUMN hash_key;
        ALTER TABLE dedup_index DROP COLUMN url_key;
        ALTER TABLE dedup_index DROP COLUMN bands;
        CREATE INDEX dedup_index_canonical ON dedup_index (canonical_url);
        CREATE INDEX dedup_index_hash ON dedup_index (content_hash);
        UPDATE dedup_index_state SET value = '5 0.2.0' WHERE key = 'version';""")
    again = report(conn, {"near_mode": "lsh"})
    assert (again["kind"], again["why"]) == ("full", "the index is from another version")
    assert conn.execute("SELECT count(*) FROM dedup_index WHERE bands IS NOT NULL").fetchone()[0] > 0
    assert conn.execute("SELECT count(*) FROM dedup_index_bands").fetchone()[0] > 0
    assert report(conn, {"near_mode": "lsh"})["kind"] == "incremental"
    # The seventh format's index (canonical URLs and content hashes indexed
    # as texts) is replaced by one on their 8-byte keys.
    conn.executescript("""
        DROP INDEX IF EXISTS dedup_index_canonical;
        DROP INDEX IF EXISTS dedup_index_hash;
        ALTER TABLE dedup_index DROP COLUMN url_key;
        ALTER TABLE dedup_index DROP COLUMN hash_key;
        CREATE INDEX dedup_index_canonical ON dedup_index (canonical_url);
        CREATE INDEX dedup_index_hash ON dedup_index (content_hash);
        UPDATE dedup_index_state SET value = '7 0.2.0' WHERE key = 'version';""")
    again = report(conn, {})
    assert (again["kind"], again["why"]) == ("full", "the index is from another version")
    assert index_keys(conn) == written_keys(conn)
    # Equal texts have equal keys, distinct texts distinct ones, NULL none.
    for text, key in (("canonical_url", "url_key"), ("content_hash", "hash_key")):
        pairs = conn.execute(f"SELECT DISTINCT {text}, {key} FROM dedup_index").fetchall()
        assert len(pairs) > 100
        assert all((t is None) == (k is None) and (k is None or isinstance(k, int)) for t, k in pairs)
        assert len({t for t, _ in pairs}) == len({k for _, k in pairs}) == len(pairs), (text, len(pairs))
    assert report(conn, {})["kind"] == "incremental"
    # The eighth format's indexes on those keys are replaced by dedup_index_keys.
    conn.executescript("""
        DROP TABLE dedup_index_keys;
        DROP TABLE dedup_index_keys_new;
        CREATE INDEX dedup_index_canonical ON dedup_index (url_key);
        CREATE INDEX dedup_index_hash ON dedup_index (hash_key);
        UPDATE dedup_index_state SET value = '8 0.2.0' WHERE key = 'version';""")
    again = report(conn, {})
    assert (again["kind"], again["why"]) == ("full", "the index is from another version")
    assert conn.execute("SELECT count(*) FROM sqlite_schema WHERE name IN ('dedup_index_canonical', 'dedup_index_hash')"
                        ).fetchone()[0] == 0
    assert index_keys(conn) == written_keys(conn)
    assert report(conn, {})["kind"] == "incremental"


def test_after_a_restore_the_next_run_is_full_and_right(tmp_path):
    db = str(tmp_path / "demo.db")
    shutil.copy(P.DEMO, db)
    conn = P.connect(db)
    report(conn, {})
    conn.execute("INSERT INTO pages (url, parsed, crawled) VALUES ('https://new.example.org/a', 'a new page of its own', '2030-01-01')")
    assert report(conn, {})["kind"] == "incremental"
    conn.execute("SELECT dedup_restore()").fetchone()
    again = report(conn, {})
    assert (again["kind"], again["why"]) == ("full", "no index yet (the first run, or a restore since the last)")
    # Restoring every run leaves no index table behind.
    while conn.execute("SELECT count(*) FROM sqlite_schema WHERE name = 'dedup_runs'").fetchone()[0]:
        conn.execute("SELECT dedup_restore()").fetchone()
    assert not conn.execute("SELECT name FROM sqlite_schema WHERE name LIKE 'dedup_index%'").fetchall()


def test_a_bad_full_value_is_refused(tmp_path):
    db = str(tmp_path / "demo.db")
    shutil.copy(P.DEMO, db)
    conn = P.connect(db)
    with pytest.raises(sqlite3.OperationalError, match=r"dedup: full must be true or false \(1 or 0\), got 'yes'"):
        conn.execute("""SELECT dedup_run('{"full": "yes"}')""").fetchone()


def run_both(tmp_path, db, settings=None):
    """An incremental run on db and a full run on a copy: their reports,
    and whether they leave the same table and archive."""
    settings = settings or {}
    full_db = str(tmp_path / "full-copy.db")
    shutil.copy(db, full_db)
    full = P.connect(full_db)
    expected = report(full, dict(settings, full=True))
    conn = P.connect(db)
    got = report(conn, settings)
    same = table_state(conn) == table_state(full)
    conn.close()
    full.close()
    os.remove(full_db)
    return got, expected, same


def test_the_change_log_names_what_users_write_and_not_what_runs_write(tmp_path):
    db = str(tmp_path / "demo.db")
    shutil.copy(P.DEMO, db)
    conn = P.connect(db)
    report(conn, {})
    # The run's own deletes and rewrites are not logged (only rows the next
    # run must look at again: the unsettled ones).
    unsettled = conn.execute("SELECT count(*) FROM dedup_index WHERE fp = 0").fetchone()[0]
    assert conn.execute("SELECT count(*) FROM dedup_changes").fetchone()[0] == unsettled
    conn.execute("DELETE FROM dedup_changes")
    kept = [r[0] for r in conn.execute("SELECT rowid FROM pages ORDER BY rowid LIMIT 3")]
    conn.execute("INSERT INTO pages (url, parsed, crawled) VALUES ('https://new.example.org/a', 'a page of its own', '2030-01-01')")
    new = conn.execute("SELECT last_insert_rowid()").fetchone()[0]
    conn.execute("UPDATE pages SET crawled = '2031-01-01' WHERE rowid = ?", (kept[0],))
    conn.execute("UPDATE pages SET rowid = ? WHERE rowid = ?", (new + 10, kept[1]))
    conn.execute("DELETE FROM pages WHERE rowid = ?", (kept[2],))
    assert sorted(r[0] for r in conn.execute("SELECT rid FROM dedup_changes")) == sorted(
        [new, kept[0], kept[1], new + 10, kept[2]])
    conn.close()
    got, expected, same = run_both(tmp_path, db)
    assert got["kind"] == "incremental" and got["scanned"] is None
    assert same and got["removed"] == expected["removed"]


@pytest.mark.parametrize("how,why", [
    # INSERT OR REPLACE deletes the row with the same URL without a delete trigger firing.
    ("replace", "rows changed that the change log does not name (INSERT OR REPLACE deleting another row, VACUUM)"),
    ("dropped trigger", "the change log's triggers were dropped or changed"),
    ("added column", "the schema of \"pages\" changed"),
])
def test_changes_the_log_cannot_see_make_the_run_read_every_row(tmp_path, how, why):
    db = str(tmp_path / "demo.db")
    shutil.copy(P.DEMO, db)
    conn = P.connect(db)
    # One URL per row first, so that a unique index on url can be made.
    conn.execute("DELETE FROM pages WHERE rowid NOT IN (SELECT min(rowid) FROM pages GROUP BY url)")
    conn.execute("CREATE UNIQUE INDEX by_url ON pages (url)")
    report(conn, {})
    rowid, url, parsed = conn.execute(
        "SELECT rowid, url, parsed FROM pages WHERE parsed <> '' ORDER BY rowid LIMIT 1").fetchone()
    if how == "replace":
        conn.execute("INSERT OR REPLACE INTO pages (url, parsed, crawled) VALUES (?, ?, '2035-01-01')",
                     (url, parsed + " and a line more"))
        assert conn.execute("SELECT count(*) FROM pages WHERE rowid = ?", (rowid,)).fetchone()[0] == 0
    elif how == "dropped trigger":
        conn.execute("DROP TRIGGER dedup_track_update")
        conn.execute("UPDATE pages SET parsed = parsed || ' and a line more', content_hash = NULL WHERE rowid = ?",
                     (rowid,))
    else:
        conn.execute("ALTER TABLE pages ADD COLUMN note TEXT DEFAULT 'x'")
    conn.close()
    got, expected, same = run_both(tmp_path, db)
    assert (got["kind"], got["scanned"]) == ("incremental", why)
    assert same and got["removed"] == expected["removed"]
    # The run put the log back: the next one reads it again.
    conn = P.connect(db)
    assert report(conn, {})["scanned"] is None


@pytest.mark.parametrize("how", ["vacuum", "replace by rowid", "other schema change"])
def test_a_table_without_an_index_is_trusted_only_while_no_vacuum_came_between(tmp_path, how):
    """Without an index on the table its rowids are not read when the schema
    cookie is the last run's (no constraint can delete a row unlogged); a
    VACUUM, which renumbers the rowids of a table without INTEGER PRIMARY
    KEY, changes the cookie and the run reads them again."""
    db = str(tmp_path / "demo.db")
    shutil.copy(P.DEMO, db)
    conn = P.connect(db)
    assert conn.execute("SELECT count(*) FROM pragma_index_list('pages')").fetchone()[0] == 0
    report(conn, {})
    first, second = conn.execute("SELECT rowid FROM pages ORDER BY rowid LIMIT 2").fetchall()
    url, parsed = conn.execute("SELECT url, parsed FROM pages WHERE rowid = ?", second).fetchone()
    if how == "vacuum":
        conn.execute("DELETE FROM pages WHERE rowid = ?", first)  # (logged)
        before = conn.execute("SELECT rowid FROM pages ORDER BY rowid").fetchall()
        conn.execute("VACUUM")
        # The rows after the gaps (the first run's removals, the delete)
        # moved down: the log does not name them.
        after = conn.execute("SELECT rowid FROM pages ORDER BY rowid").fetchall()
        assert len(after) == len(before) and after != before
        why = "rows changed that the change log does not name (INSERT OR REPLACE deleting another row, VACUUM)"
    elif how == "replace by rowid":
        conn.execute("INSERT OR REPLACE INTO pages (rowid, url, parsed, crawled) VALUES (?, ?, ?, '2035-01-01')",
                     (second[0], url, parsed + " and a line more"))
        why = None
    else:
        conn.execute("CREATE TABLE notes (x)")
        conn.execute("DELETE FROM pages WHERE rowid = ?", first)
        why = None
    conn.close()
    got, expected, same = run_both(tmp_path, db)
    assert (got["kind"], got["scanned"]) == ("incremental", why)
    assert same and got["removed"] == expected["removed"]
    assert got["rows_before"] == expected["rows_before"]


def test_restore_takes_the_change_log_away(tmp_path):
    db = str(tmp_path / "demo.db")
    shutil.copy(P.DEMO, db)
    conn = P.connect(db)
    report(conn, {})
    report(conn, {})
    conn.execute("SELECT dedup_restore()").fetchone()
    assert conn.execute("SELECT name FROM sqlite_schema WHERE type = 'trigger'").fetchall() == []
    assert conn.execute("SELECT count(*) FROM dedup_changes").fetchone()[0] == 0
    conn.execute("SELECT dedup_restore()").fetchone()
    assert conn.execute("SELECT name FROM sqlite_schema WHERE name LIKE 'dedup%'").fetchall() == []


def test_a_trigger_of_the_users_writing_to_the_log_is_refused(tmp_path):
    db = str(tmp_path / "demo.db")
    shutil.copy(P.DEMO, db)
    conn = P.connect(db)
    report(conn, {})
    conn.execute("CREATE TRIGGER mine AFTER INSERT ON pages BEGIN INSERT OR IGNORE INTO dedup_changes VALUES (new.rowid + 1); END")
    with pytest.raises(sqlite3.OperationalError, match=r'trigger "mine" \(on "pages"\) is on or writes to'):
        conn.execute("SELECT dedup_run()").fetchone()


def test_the_index_by_domain_is_kept_only_for_n_min(tmp_path):
    """Only n_min reads the index by domain: without it the index has none
    (one write fewer per row); a run with n_min makes it, a run without
    drops it, and each is full (the settings changed)."""
    db = str(tmp_path / "demo.db")
    shutil.copy(P.DEMO, db)
    conn = P.connect(db)

    def has_domain_index():
        return conn.execute("SELECT count(*) FROM sqlite_schema WHERE name = 'dedup_index_domain'").fetchone()[0] == 1

    report(conn, {})
    assert not has_domain_index()
    conn.execute("INSERT INTO pages (url, parsed, crawled) VALUES ('https://new.example.org/a', 'a page of its own', '2030-01-01')")
    assert report(conn, {})["kind"] == "incremental"
    assert report(conn, {"n_min": 3})["kind"] == "full"
    assert has_domain_index()
    conn.execute("INSERT INTO pages (url, parsed, crawled) VALUES ('https://lonely.example.org/a', 'one page alone', '2030-01-01')")
    again = report(conn, {"n_min": 3})
    assert again["kind"] == "incremental" and again["removed"].get("5") == 1, again["removed"]
    assert report(conn, {})["kind"] == "full"
    assert not has_domain_index()


@pytest.mark.parametrize("settings", [{}, {"compat": "reference"}, {"url_options": "keep_params,strip_www,https"}],
                         ids=["default", "compat", "keep-params-www-https"])
def test_the_index_holds_what_phase_1_makes_of_each_row_after_the_run(tmp_path, settings):
    """A run rewrites its survivors (their URLs, and the text columns it
    filled), and the index keeps what phase 1 makes of each row as it is
    after the run. Expected: a full plan of the table afterwards, which runs
    phase 1 from scratch on every row. Rows whose text the run filled (HTML
    content, no parsed) are among them, as are rows whose URL alone changed."""
    db = P.copy_corpus(tmp_path)
    conn = P.connect(db)
    conn.executemany(
        "INSERT INTO pages (url, title, content, crawled) VALUES (?, ?, ?, '2030-01-01')",
        [(f"http://www.html-{i}.example/a/page/?id={i}&utm_source=feed", f"Page {i}",
          f"<html><body><p>{own_text(i)}</p></body></html>") for i in range(20)])
    conn.execute("SELECT dedup_run(?)", (json.dumps(settings),)).fetchone()
    run = conn.execute("SELECT max(run) FROM dedup_runs").fetchone()[0]
    rewritten = dict(conn.execute("SELECT name, count(*) FROM dedup_rewritten WHERE dedup_run = ? GROUP BY name",
                                  (run,)).fetchall())
    assert rewritten.get("url", 0) > 500 and rewritten.get("parsed") == 20, rewritten
    conn.execute("SELECT dedup_plan(?)", (json.dumps(dict(settings, full=True)),)).fetchone()
    cols = "skip_reason, canonical_url, strict_url, domain, content_hash, datetime, crawled, length, category, has_text, https"
    index = {r[0]: r[1:] for r in conn.execute(f"SELECT rid, {cols} FROM dedup_index")}
    now = {r[0]: r[1:] for r in conn.execute(f"SELECT source_rowid, {cols} FROM temp._dedup_prepared")}
    assert len(index) == conn.execute("SELECT count(*) FROM pages").fetchone()[0] > 500
    assert {rid: values for rid, values in index.items() if values != now[rid]} == {}


@pytest.mark.parametrize("settings", [{}, {"near_mode": "lsh"}], ids=["window", "lsh"])
def test_an_incremental_run_leaves_the_index_a_full_run_makes(tmp_path, settings):
    """After an incremental run (kept rows edited: texts, dates; new rows
    whose URLs the run rewrites), the index holds, column by column, what a
    full run of the same table then makes from scratch (which removes and
    rewrites nothing). The fingerprint alone may differ: 0 marks a row the
    next run looks at again (its URL rewritten now)."""
    db = P.copy_corpus(tmp_path)
    conn = P.connect(db)
    assert "kind" not in report(conn, settings)  # the first run: full
    kept = [r[0] for r in conn.execute(
        "SELECT rowid FROM pages WHERE parsed <> '' AND content_hash IS NOT NULL ORDER BY rowid LIMIT 40")]
    conn.executemany(
        "UPDATE pages SET parsed = parsed || ' An added sentence of its own, number ' || ?, crawled = '2031-01-01'"
        " WHERE rowid = ?", [(i, r) for i, r in enumerate(kept[:20])])
    conn.executemany("UPDATE pages SET crawled = '2031-02-02' WHERE rowid = ?", [(r,) for r in kept[20:]])
    conn.executemany(
        "INSERT INTO pages (url, parsed, crawled) VALUES (?, ?, '2030-01-01')",
        [(f"http://www.fresh-{i}.example/a/?id={i}&utm_source=feed", own_text(i)) for i in range(20)])
    assert report(conn, settings)["kind"] == "incremental"
    cols = [r[1] for r in conn.execute("PRAGMA table_info(dedup_index)")]
    assert {"tlen", "hist", "datetime", "crawled", "fp", "pos_url"} <= set(cols)
    after = {r[0]: r for r in conn.execute("SELECT * FROM dedup_index")}
    order_bands = "SELECT * FROM dedup_index_order ORDER BY 1, 2, 3", "SELECT * FROM dedup_index_bands ORDER BY 1, 2, 3"
    after_order, after_bands = (conn.execute(q).fetchall() for q in order_bands)
    edited = [after[r] for r in kept[:20]]
    assert all(row[cols.index("crawled")] == "2031-01-01" for row in edited)
    full = report(conn, dict(settings, full=True))
    assert full["kind"] == "full" and sum(full["removed"].values()) == 0, full
    fresh = {r[0]: r for r in conn.execute("SELECT * FROM dedup_index")}
    assert len(fresh) == conn.execute("SELECT count(*) FROM pages").fetchone()[0]
    # (every column of each row, and the scan order and band keys whole)
    differ = {rid: [c for c, a, b in zip(cols, row, fresh.get(rid, ())) if a != b and c != "fp"]
              for rid, row in after.items() if row != fresh.get(rid)}
    differ = {rid: c for rid, c in differ.items() if c}
    assert differ == {} and set(after) == set(fresh)
    fresh_order, fresh_bands = (conn.execute(q).fetchall() for q in order_bands)
    # (window mode reads the scan order, lsh mode the band keys; an entry
    # of dedup_index_bands counts while its row holds its key: those of rows
    # that left are deleted later, together)
    if "near_mode" in settings:
        held = {rid: unpack(row[cols.index("bands")]) for rid, row in after.items()}
        counted = {(b, k, rid) for b, k, rid in after_bands if (b, k) in held.get(rid, ())}
        assert len(counted) > 500 and counted ^ set(fresh_bands) == set()
    else:
        assert len(after_order) > 500 and set(after_order) ^ set(fresh_order) == set()
