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

import pytest

import pipeline as P
from incremental_state import demo_copy, table_state, report, index_band_keys, index_keys, written_keys, counted_keys, state_number, columns, batch, own_text, rough_batch, demo_part, full_and_incremental


@pytest.mark.parametrize("seed", [1, 2, 3])
@pytest.mark.parametrize("settings", [{}, {"n_min": 3, "distance": 12}, {"n_min": 6}, {"distance": 3},
                                      {"compat": "reference"}, {"near_mode": "lsh"},
                                      {"near_mode": "lsh", "compat": "reference"},
                                      {"near_mode": "lsh", "threshold": 0.8, "n_min": 3},
                                      {"measure": "resemblance", "distance": 8},
                                      {"measure": "resemblance", "near_mode": "lsh", "stoplist": ["the", "a"]},
                                      {"paragraphs": "dedup", "paragraph_min": 40, "distance": 6},
                                      {"near_mode": "lsh", "lsh_sketch": "oph", "lsh_bands": 16}],
                         ids=["default", "n_min-distance", "n_min-6", "distance-3", "compat", "lsh",
                              "lsh-compat", "lsh-0.8-n_min", "resemblance", "lsh-resemblance", "paragraphs",
                              "lsh-oph"])
def test_incremental_runs_equal_full_runs_after_random_batches(tmp_path, seed, settings):
    rng = random.Random(seed)
    db, conn, pool = demo_part(tmp_path, rng, 350)
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


@pytest.mark.parametrize("seed", [4, 5])
@pytest.mark.parametrize("settings", [{"distance": 4}, {"discard_params": False, "threshold": 0.8},
                                      {"near_mode": "lsh", "n_min": 2}, {"n_min": 3, "distance": 2}],
                         ids=["distance-4", "keep-params-0.8", "lsh-n_min", "n_min-3-distance-2"])
def test_incremental_runs_equal_full_runs_after_rough_batches(tmp_path, seed, settings):
    """The same property when users also edit URLs, empty texts, store a
    URL the pipeline skips, add exact copies, delete a fifth of the table,
    or restore the last run between runs (the run after a restore is full,
    and still right)."""
    rng = random.Random(seed)
    db, conn, pool = demo_part(tmp_path, rng, 300)
    report(conn, settings)
    kinds, removed = [], 0
    for step in range(6):
        if step in (2, 4):
            conn.execute("SELECT dedup_restore()").fetchone()
        batch(conn, rng, pool, step)
        rough_batch(conn, rng)
        conn, got = full_and_incremental(tmp_path, db, conn, settings, step)
        kinds.append(got["kind"])
        removed += (got["kind"] == "incremental") * sum(got["removed"].values())
    assert kinds == ["incremental", "incremental", "full", "incremental", "full", "incremental"], kinds
    assert removed > 20, removed  # the incremental runs had work to do


@pytest.mark.parametrize("seed", [11, 12, 13])
@pytest.mark.parametrize("distance", [1, 2, 3])
def test_an_incremental_archive_equals_a_full_runs_when_rowids_are_reused(tmp_path, seed, distance):
    """n_min 3 and a short distance while removed and deleted rows' rowids
    are taken again (the highest rows deleted, so that SQLite hands their
    rowids to the next inserts; near copies of kept pages on their domain):
    every archived row of each incremental run, with its survivor and
    ratio, is a full run's."""
    rng = random.Random(seed)
    db, conn, pool = demo_part(tmp_path, rng, 150)
    settings = {"n_min": 3, "distance": distance}
    report(conn, settings)
    cols = columns(conn)
    insert = f"INSERT INTO pages ({', '.join(cols)}) VALUES ({', '.join('?' * len(cols))})"
    reused = 0
    for step in range(6):
        top = conn.execute("SELECT max(rowid) FROM pages").fetchone()[0]
        conn.execute("DELETE FROM pages WHERE rowid > ?", (top - rng.randint(1, 4),))
        freed = {r[0] for r in conn.execute("SELECT dedup_rowid FROM dedup_removed")}
        batch(conn, rng, pool, step)
        for rowid in rng.sample([r[0] for r in conn.execute("SELECT rowid FROM pages")], 4):
            row = list(conn.execute(f"SELECT {', '.join(cols)} FROM pages WHERE rowid = ?", (rowid,)).fetchone())
            if row[cols.index("parsed")]:
                row[cols.index("parsed")] += " " + rng.choice(["again", "updated", "more"])
                row[cols.index("content_hash")] = None
                row[cols.index("url")] = (row[cols.index("url")] or "") + f"/copy{step}"
                conn.execute(insert, row)
        reused += conn.execute(f"SELECT count(*) FROM pages WHERE rowid IN ({','.join(map(str, freed)) or 'NULL'})").fetchone()[0]
        conn, got = full_and_incremental(tmp_path, db, conn, settings, step)
        assert got["kind"] == "incremental", got
    assert reused > 0  # rowids of archived rows were taken again


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
        conn, got = full_and_incremental(tmp_path, db, conn, settings, step)
        assert got["kind"] == "incremental"


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


@pytest.mark.parametrize("edit", ["DELETE FROM dedup_removed WHERE dedup_phase IN (4, 5)",
                                  "UPDATE dedup_removed SET url = 'https://z.example/gone' || dedup_rowid "
                                  "WHERE dedup_phase = 4"])
def test_a_purged_archive_makes_the_next_run_full(tmp_path, edit):
    """Rows removed in phase 4 keep their window slots (placeholders, read
    from the archive). Two near-copies kept with more than the window of
    such slots between them were never compared; once the user purges (or
    edits) those archived rows, a full run compares and merges them. The
    index cannot see that edit but through the archive's triggers: the run
    is full, says why, and leaves what a full run leaves (before this, an
    incremental run merged nothing here)."""
    db = str(tmp_path / "purge.db")
    conn = P.connect(db)
    conn.execute("CREATE TABLE pages (url TEXT, parsed TEXT, crawled TEXT)")
    near, chain = own_text(100), own_text(200)
    rows = [("https://a.example/a", near, "2026-01-01")]
    # (b00 is kept; b01-b07 are near copies of it, removed in phase 4.)
    rows += [(f"https://a.example/b{i:02d}", chain + f" and copy {i}" * (i > 0), "2026-01-01") for i in range(8)]
    rows += [("https://a.example/c", near + " and one more word", "2026-01-02")]
    conn.executemany("INSERT INTO pages VALUES (?, ?, ?)", rows)
    settings = {"distance": 5}
    first = report(conn, settings)
    kept = [r for (r,) in conn.execute("SELECT url FROM pages ORDER BY url")]
    # (a and c are 9 slots apart: never compared, both kept.)
    assert kept[0] == "https://a.example/a" and kept[-1] == "https://a.example/c", kept
    assert first["removed"]["4"] == 10 - len(kept), first
    conn.executescript(edit)
    conn.close()
    shutil.copy(db, db + ".full")
    full = P.connect(db + ".full")
    expected = report(full, dict(settings, full=True))
    # (a and c, within the window now, merged: c, the later crawl, stays.)
    gone = dict(full.execute("SELECT url, dedup_survivor FROM dedup_removed WHERE dedup_run = 2"))
    c = full.execute("SELECT rowid FROM pages WHERE url = 'https://a.example/c'").fetchone()
    assert c and gone.get("https://a.example/a") == c[0], gone
    conn = P.connect(db)
    second = report(conn, settings)
    assert (second["kind"], second["why"]) == (
        "full", "rows of dedup_removed that keep a window slot (phases 4-5) were deleted, changed or added "
                "since run 1"), second
    assert table_state(conn) == table_state(full)
    # (A purge of rows of phases 1-3, which keep no slot, leaves the next
    # run incremental.)
    conn.execute("INSERT INTO pages VALUES ('https://a.example/c?utm_source=x', ?, '2026-01-01')",
                 (near + " and one more word",))
    assert report(conn, settings)["removed"] == {"2": 1}
    conn.execute("DELETE FROM dedup_removed WHERE dedup_phase = 2")
    conn.execute("INSERT INTO pages VALUES ('https://n.example/new', ?, '2026-01-04')", (own_text(300),))
    assert report(conn, settings)["kind"] == "incremental"


@pytest.mark.parametrize("edit", ["DELETE FROM dedup_domains WHERE domain = 'requests.readthedocs.io'",
                                  "UPDATE dedup_domains SET pages = 1"])
def test_an_edited_dedup_domains_makes_the_next_run_full(tmp_path, edit):
    """An incremental run's phase 5 counts only the domains a batch touches,
    from the counts the last run left in dedup_domains. Edited by hand, those
    counts would drop a domain's pages as a small domain (31 of them here,
    before the triggers on dedup_domains): the next run is full instead,
    says why, and leaves what a full run leaves."""
    db, conn = demo_copy(tmp_path)
    settings = {"n_min": 3}
    report(conn, settings)
    conn.execute(edit)
    conn.execute("INSERT INTO pages (url, parsed, crawled) VALUES ('https://requests.readthedocs.io/en/new/', "
                 "'A new page about sessions and adapters, with a text of its own.', '2030-01-01')")
    conn, got = full_and_incremental(tmp_path, db, conn, settings, 1)
    assert (got["kind"], got["why"]) == (
        "full", "dedup_domains (the counts phase 5 starts from) was edited since run 1"), got
    assert "5" not in got["removed"], got


@pytest.mark.parametrize("edit", [
    "DELETE FROM dedup_changes",
    "UPDATE dedup_index SET content_hash = 'x' WHERE rid = (SELECT min(rid) FROM dedup_index)",
    "DELETE FROM dedup_index WHERE rid IN (SELECT rid FROM dedup_index ORDER BY rid LIMIT 5)",
    "DELETE FROM dedup_index_order WHERE id IN (SELECT id FROM dedup_index_order ORDER BY url LIMIT 20)",
    "UPDATE dedup_index_order SET url = 'zzz' || url WHERE id IN (SELECT id FROM dedup_index_order LIMIT 3)",
])
def test_an_edited_incremental_index_makes_the_next_run_full(tmp_path, edit):
    """The change log and the index are what an incremental run trusts: a
    deleted log row hides a change, an edited index compares against values
    the table does not hold (before these triggers: a duplicate kept, 3-83
    rows other than a full run's). The next run is full, says why, and
    leaves what a full run leaves."""
    db, conn = demo_copy(tmp_path)
    report(conn, {})
    # A copy of a kept page, then the edit (which may hide it from the log).
    conn.execute("INSERT INTO pages (url, parsed, crawled) SELECT url || '?copy=1', parsed, '2031-01-01' "
                 "FROM pages WHERE parsed IS NOT NULL ORDER BY rowid LIMIT 1")
    conn.execute(edit)
    conn, got = full_and_incremental(tmp_path, db, conn, {}, 1)
    assert (got["kind"], got["why"]) == (
        "full", "the incremental index was edited (rows of dedup_changes deleted or changed, or dedup_index or "
                "dedup_index_order written) since run 1"), got
    assert sum(got["removed"].values()) >= 1, got


def test_a_dropped_own_table_trigger_makes_the_next_run_full(tmp_path):
    """Without the triggers on its archive and domain counts the index
    cannot know those are as it left them: the next run is full, says why,
    and puts the triggers back."""
    db, conn = demo_copy(tmp_path)
    report(conn, {})
    conn.execute("DROP TRIGGER dedup_track_archive_delete")
    second = report(conn, {})
    assert (second["kind"], second["why"]) == (
        "full", "the triggers on the extension's own tables (dedup_track_archive_*, _domains_*, _changes_*, "
                "_index_*, _order_*) were dropped or changed since run 1"), second
    assert report(conn, {})["kind"] == "incremental"


def test_a_second_run_with_nothing_new_compares_nothing(tmp_path):
    db, conn = demo_copy(tmp_path)
    report(conn, {})
    # (Before survivors were rewritten to their strict URL, row 470, whose
    # URL has two `lang` parameters, was rewritten to a canonical URL whose
    # strict URL kept one: it was unsettled and checked again. The strict
    # URL is its own strict URL: nothing is unsettled now.)
    unsettled = [r for (r,) in conn.execute("SELECT rid FROM dedup_index WHERE fp = 0")]
    assert unsettled == []
    for _ in range(2):
        again = report(conn, {})
        assert (again["kind"], again["dirty"], again["gone"], again["recheck"], again.get("removed")) == \
            ("incremental", 0, 0, 0, {})
    assert json.loads(conn.execute("SELECT near_dups_stats()").fetchone()[0])["rows"] == 0


@pytest.mark.parametrize("change,why", [
    ({"threshold": 0.85}, "the settings differ from run 1's"),
    ({"near_mode": "lsh"}, "the settings differ from run 1's"),
    ({"boilerplate": "strip"}, "boilerplate = 'strip' (the chrome is counted over every row)"),
    ({"full": True}, "asked for (full: true)"),
])
def test_the_report_says_why_a_run_was_full(tmp_path, change, why):
    db, conn = demo_copy(tmp_path)
    report(conn, {})
    second = report(conn, change)
    assert (second["kind"], second["why"]) == ("full", why)
    text = conn.execute("SELECT dedup_run(?)", (json.dumps(change),)).fetchone()[0]
    assert "  full run: " in text or "  incremental since run 2" in text


def test_a_setting_that_decides_nothing_keeps_the_run_incremental(tmp_path):
    """busy_timeout only says how long to wait for a lock: a run with another
    one is still incremental (and is not recorded in the run's settings)."""
    db, conn = demo_copy(tmp_path)
    report(conn, {"busy_timeout": 100})
    conn.execute("INSERT INTO pages (url, parsed) VALUES ('https://new.example/a', 'a page of its own')")
    second = report(conn, {"busy_timeout": 2500})
    assert (second["kind"], second["dirty"]) == ("incremental", 1), second
    assert all("busy_timeout" not in json.loads(s) for (s,) in conn.execute("SELECT settings FROM dedup_runs"))


def test_an_index_of_another_version_makes_the_run_full(tmp_path):
    db, conn = demo_copy(tmp_path)
    report(conn, {})
    version = conn.execute("SELECT value FROM dedup_index_state WHERE key = 'version'").fetchone()[0]
    assert version == "13 " + conn.execute("SELECT dedup_version()").fetchone()[0].lstrip("v"), version
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
    db, conn = demo_copy(tmp_path)
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
    db, conn = demo_copy(tmp_path)
    with pytest.raises(sqlite3.OperationalError, match=r"dedup\[setting\]: full must be true or false \(1 or 0\), got 'yes'"):
        conn.execute("""SELECT dedup_run('{"full": "yes"}')""").fetchone()


def test_an_incremental_runs_domain_counts_equal_a_full_runs(tmp_path):
    """A domain whose every page is deleted between runs: the incremental
    run left its count as 0 in dedup_domains, where a full run has no row."""
    db, conn = demo_copy(tmp_path)
    report(conn, {})
    domain = conn.execute("SELECT domain FROM dedup_domains ORDER BY pages, domain LIMIT 1").fetchone()[0]
    conn.execute("DELETE FROM pages WHERE domain = ?", (domain,))
    conn, got = full_and_incremental(tmp_path, db, conn, {}, 1)
    assert got["kind"] == "incremental", got
    counts = conn.execute("SELECT domain, pages FROM dedup_domains ORDER BY domain").fetchall()
    assert all(n > 0 for _, n in counts) and domain not in dict(counts), counts
    full_db = str(tmp_path / "full-domains.db")
    conn.close()
    shutil.copy(db, full_db)
    full = P.connect(full_db)
    report(full, {"full": True})
    assert full.execute("SELECT domain, pages FROM dedup_domains ORDER BY domain").fetchall() == counts


@pytest.mark.parametrize("trigger,written", [
    # The survivor's own row, when its URL is rewritten: a later crawl date.
    ("CREATE TRIGGER stamp AFTER UPDATE OF url ON pages BEGIN "
     "UPDATE pages SET datetime = '2040-01-01' WHERE rowid = new.rowid; END",
     "datetime = '2040-01-01'"),
    # Another row, when a page is deleted: its text changes.
    ("CREATE TRIGGER touch AFTER DELETE ON pages BEGIN "
     "UPDATE pages SET parsed = parsed || ' (seen again)' WHERE rowid = "
     "(SELECT min(rowid) FROM pages WHERE domain = old.domain AND parsed IS NOT NULL); END",
     "parsed LIKE '% (seen again)'"),
    # A new row, when a page is deleted (once per URL).
    ("CREATE TRIGGER again AFTER DELETE ON pages WHEN old.url NOT LIKE '%#again' BEGIN "
     "INSERT INTO pages (url, parsed, datetime) VALUES (old.url || '#again', old.parsed, old.datetime); END",
     "url LIKE '%#again'"),
], ids=["stamp", "touch", "again"])
def test_what_a_trigger_writes_during_a_run_is_a_change_for_the_next(tmp_path, trigger, written):
    """The run's own writes are not logged as changes (its trackers are
    off while it deletes and rewrites), so what a user's trigger writes then
    was hidden from the next run (before: the index kept the values from
    before, and the next run elected otherwise than a full one). Each row
    a trigger wrote is logged: the next runs are incremental, take those
    rows as changed, and leave what a full run leaves."""
    db, conn = demo_copy(tmp_path)
    conn.execute(trigger)
    report(conn, {})
    rows = {r for (r,) in conn.execute(f"SELECT rowid FROM pages WHERE {written}")}
    logged = {r for (r,) in conn.execute("SELECT rid FROM dedup_changes")}
    assert rows and rows <= logged, (len(rows), len(rows & logged))
    for step in (1, 2):
        conn.execute("INSERT INTO pages (url, parsed, crawled) SELECT url || ?, parsed, '2031-01-01' "
                     "FROM pages WHERE parsed IS NOT NULL ORDER BY rowid LIMIT 1", (f"?copy={step}",))
        conn, got = full_and_incremental(tmp_path, db, conn, {}, step)
        assert got["kind"] == "incremental", got


def test_a_run_whose_writes_fire_no_writing_trigger_keeps_the_next_run_incremental(tmp_path):
    """A trigger that writes nothing during the run's writes (here: one on
    INSERT only) leaves the next run incremental."""
    db, conn = demo_copy(tmp_path)
    conn.execute("CREATE TABLE log (url TEXT)")
    conn.execute("CREATE TRIGGER logged AFTER INSERT ON pages BEGIN INSERT INTO log VALUES (new.url); END")
    report(conn, {})
    conn.execute("INSERT INTO pages (url, parsed, crawled) SELECT url || '?copy=1', parsed, '2031-01-01' "
                 "FROM pages WHERE parsed IS NOT NULL ORDER BY rowid LIMIT 1")
    conn, got = full_and_incremental(tmp_path, db, conn, {}, 1)
    assert got["kind"] == "incremental", got


def reinsert_removed(conn, phase=None):
    """Re-crawls under their old rowids the rows the last run removed (in
    `phase`, or any): each archived row inserted again as it was. Returns
    how many."""
    cols = columns(conn)
    run = conn.execute("SELECT max(run) FROM dedup_runs").fetchone()[0]
    rows = conn.execute(
        f"SELECT dedup_rowid, {', '.join(cols)} FROM dedup_removed WHERE dedup_run = ? "
        f"AND (?2 IS NULL OR dedup_phase = ?2) AND dedup_rowid NOT IN (SELECT rowid FROM pages)",
        (run, phase)).fetchall()
    conn.executemany(f"INSERT INTO pages (rowid, {', '.join(cols)}) VALUES ({', '.join('?' * (len(cols) + 1))})",
                     rows)
    return len(rows)


def test_a_rowid_removed_twice_keeps_both_window_slots(tmp_path):
    """Issue 76: a rowid removed in phase 4, re-crawled under the same rowid
    and removed again has two archived rows, so a full run gives it two
    window slots; the index kept one (its key was (url, id, 1)), and the
    third run removed 30 pages where a full run removed 27. Each archived
    removal is now a slot of its own in the index too."""
    db, conn = demo_copy(tmp_path)
    settings = {"distance": 4}
    report(conn, settings)
    for step in (1, 2):
        assert reinsert_removed(conn, phase=4) > 20
        conn, got = full_and_incremental(tmp_path, db, conn, settings, step)
        assert got["kind"] == "incremental", got
    twice = conn.execute("SELECT count(*) FROM (SELECT dedup_rowid FROM dedup_removed WHERE dedup_phase = 4 "
                         "GROUP BY dedup_rowid HAVING count(DISTINCT dedup_run) = 3)").fetchone()[0]
    assert twice > 0
    slots = conn.execute("SELECT max(placeholder) FROM dedup_index_order").fetchone()[0]
    assert slots >= 2, slots


TOUCH = ("CREATE TRIGGER touch AFTER UPDATE OF url ON pages BEGIN "
         "UPDATE pages SET crawled = '2040-0' || (new.rowid % 9 + 1) || '-01' WHERE rowid = new.rowid; END")


@pytest.mark.parametrize("seed", [1, 2])
@pytest.mark.parametrize("settings", [{}, {"distance": 4}, {"near_mode": "lsh"}], ids=["default", "distance-4", "lsh"])
def test_a_touch_trigger_on_the_rewritten_url_is_seen_by_the_next_run(tmp_path, seed, settings):
    """Issue 76: a user's trigger that stamps a row whose URL the run
    rewrites (`AFTER UPDATE OF url ... SET crawled = ...`) left the index with
    the crawl date from before the rewrite and the row's fingerprint from
    after, so the next run took the row as settled and elected otherwise
    than a full run (every one of 15 histories differed). A row a trigger
    wrote during the run is now unsettled in the index."""
    rng = random.Random(seed)
    db, conn, pool = demo_part(tmp_path, rng, 350)
    conn.execute(TOUCH)
    report(conn, settings)
    stamped = conn.execute("SELECT count(*) FROM pages WHERE crawled LIKE '2040-%'").fetchone()[0]
    assert stamped > 10
    assert conn.execute("SELECT count(*) FROM dedup_index WHERE fp = 0").fetchone()[0] >= stamped
    for step in range(3):
        batch(conn, rng, pool, step)
        conn, got = full_and_incremental(tmp_path, db, conn, settings, step)
        assert got["kind"] == "incremental", got


def history_step(conn, rng, pool, step):
    """One random step of a living crawl's history: new pages, re-crawls of
    removed rows under their old rowids, refetches, deletions, a user's
    trigger made or dropped, and now and then a VACUUM."""
    what = rng.choice(["batch", "recrawl", "recrawl", "delete", "trigger", "vacuum"])
    if what == "batch":
        batch(conn, rng, pool, step)
    elif what == "recrawl":
        reinsert_removed(conn)
        if rng.random() < 0.5:
            conn.execute("UPDATE pages SET crawled = ? WHERE rowid IN (SELECT rowid FROM pages ORDER BY random() LIMIT 5)",
                         (f"2033-0{1 + step % 9}-03",))
    elif what == "delete":
        conn.execute("DELETE FROM pages WHERE rowid IN (SELECT rowid FROM pages ORDER BY rowid DESC LIMIT ?)",
                     (rng.randint(1, 5),))
        batch(conn, rng, pool, step)
    elif what == "trigger":
        has = conn.execute("SELECT count(*) FROM sqlite_schema WHERE name = 'touch'").fetchone()[0]
        conn.execute("DROP TRIGGER touch" if has else TOUCH)
        batch(conn, rng, pool, step)
    else:
        conn.execute("VACUUM")
        batch(conn, rng, pool, step)
    return what


@pytest.mark.parametrize("seed", [21, 22, 23, 24])
@pytest.mark.parametrize("settings", [{"distance": 4}, {"near_mode": "lsh", "n_min": 2},
                                      {"measure": "resemblance", "ngram_size": 3, "threshold": 0.3, "distance": 4},
                                      {"paragraphs": "dedup", "paragraph_min": 40, "near_mode": "lsh"},
                                      {"near_mode": "lsh", "lsh_sketch": "oph"}],
                         ids=["window", "lsh", "resemblance", "paragraphs", "lsh-oph"])
def test_incremental_equals_full_over_random_histories(tmp_path, seed, settings):
    """Issue 76's property: over random histories of inserts, re-crawls
    under old rowids, deletions, VACUUM and a user's trigger, every run
    leaves the table and the archive a full run on a copy leaves."""
    rng = random.Random(seed)
    db, conn, pool = demo_part(tmp_path, rng, 300)
    report(conn, settings)
    done, kinds = [], []
    for step in range(7):
        done.append(history_step(conn, rng, pool, step))
        conn, got = full_and_incremental(tmp_path, db, conn, settings, step)
        kinds.append(got["kind"])
    assert len(set(done)) >= 3, done
    assert kinds.count("incremental") >= 3, list(zip(done, kinds))


def test_an_index_edited_behind_its_trackers_is_named_not_a_type_error(tmp_path):
    """Issue 76: an index edited outside the extension, its edit mark
    removed too, failed with `Invalid column type Text at index: 1, name:
    id`. The error now says what holds what, how to rebuild, and that
    nothing changed; a full run rebuilds it."""
    db, conn = demo_copy(tmp_path)
    report(conn, {})
    conn.executescript("UPDATE dedup_index_order SET id = 'x' || id; "
                       "DELETE FROM dedup_index_state WHERE key = 'index';")
    conn.execute("INSERT INTO pages (url, parsed) VALUES ('https://jlevy.github.io/the-art-of-command-line/zz', 'hi')")
    before = P.fingerprint(db)
    with pytest.raises(sqlite3.OperationalError) as e:
        conn.execute("SELECT dedup_run()").fetchone()
    said = str(e.value)
    assert "the incremental index" in said and "column id holds a value of type Text" in said, said
    assert '{"full": true} rebuilds it; nothing was changed' in said
    assert P.fingerprint(db) == before
    assert report(conn, {"full": True})["kind"] == "full"
    assert report(conn, {})["kind"] == "incremental"
