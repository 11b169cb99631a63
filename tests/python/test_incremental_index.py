"""The incremental runs' index (issue 26, docs/incremental.md): what it keeps
of the rows that left until it is swept or written whole, the placeholders
of rows removed in phases 4-5, what it holds of each kept row; an
incremental run leaves the index a full run makes."""
import json
import shutil

import pytest

import pipeline as P
from incremental_state import demo_copy, table_state, report, unpack, index_band_keys, index_keys, written_keys, counted_keys, state_number, own_text


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


def test_band_entries_unpack_packed_keys_in_the_b_trees_order(tmp_path):
    """dedup_band_entries(table): every (band, key, rid) of the rows' packed
    keys, ascending, as dedup_index_bands orders them; a row whose bands
    are not a BLOB has none; a rid that is not an integer is an error."""
    conn = P.connect(str(tmp_path / "e.db"))
    keys = {7: [(0, 5), (1, -3), (2, 9)], 3: [(0, 5), (1, 4)], 9: [(1, -3), (0, 2**62)]}
    conn.execute("CREATE TABLE k (rid INTEGER, band INTEGER, key INTEGER)")
    conn.executemany("INSERT INTO k VALUES (?, ?, ?)", [(r, b, k) for r, ks in keys.items() for b, k in ks])
    conn.execute("CREATE TABLE b AS SELECT rid, dedup_pack_keys(band, key) AS bands FROM k GROUP BY rid")
    conn.execute("INSERT INTO b VALUES (11, NULL), (12, 'text')")
    got = conn.execute("SELECT band, key, rid FROM dedup_band_entries('b')").fetchall()
    assert got == sorted((b, k, r) for r, ks in keys.items() for b, k in ks)
    conn.execute("INSERT INTO b VALUES ('x', NULL)")
    with pytest.raises(Exception, match=r"dedup_band_entries.*rid in 'b' must be an integer"):
        conn.execute("SELECT * FROM dedup_band_entries('b')").fetchall()
    with pytest.raises(Exception, match=r"dedup_band_entries.*columns rid and bands"):
        conn.execute("SELECT * FROM dedup_band_entries('k')").fetchall()


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


def test_the_index_by_domain_is_kept_only_for_n_min(tmp_path):
    """Only n_min reads the index by domain: without it the index has none
    (one write fewer per row); a run with n_min makes it, a run without
    drops it, and each is full (the settings changed)."""
    db, conn = demo_copy(tmp_path)

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
