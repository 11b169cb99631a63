"""dedup_similar(text, url, settings, page): what the next run would do with
a fetched page, asked before the page is stored. Checked against the runs
themselves: for each page of a stream, the answer, then the page stored and
an incremental run made; the run's removals must be exactly the ones the
answer named, and asking must change nothing."""
import json
import random
import sqlite3

import pytest

import pipeline as P
from incremental_state import demo_part


def columns_of(conn):
    return [r[1] for r in conn.execute("PRAGMA table_info(pages)")]


def everything(conn):
    """The table, the extension's tables and the change log, exactly."""
    state = {}
    for (name,) in conn.execute("SELECT name FROM sqlite_schema WHERE type = 'table' ORDER BY name"):
        state[name] = sorted(map(repr, conn.execute(f'SELECT * FROM "{name}"')))
    return state


COLUMNS = ("rowid", "url", "phase", "reason", "ratio", "survivor")


def ask(conn, names, row, settings):
    """The answer of the table-valued form, checked equal to the scalar's
    JSON (the two forms of one function)."""
    page = dict(zip(names, row))
    text, url = page.pop("content"), page.pop("url")
    args = (text, url, json.dumps(settings), json.dumps(page))
    rows = [dict(zip(COLUMNS, r)) for r in conn.execute(
        "SELECT rowid, url, phase, reason, ratio, survivor FROM dedup_similar(?, ?, ?, ?)", args)]
    as_json = json.loads(conn.execute("SELECT dedup_similar(?, ?, ?, ?)", args).fetchone()[0])
    # (JSON writes a ratio with SQLite's 15 digits; the table's is the double.)
    assert [dict(m, ratio=None) for m in rows] == [dict(m, ratio=None) for m in as_json]
    assert [m["ratio"] for m in rows] == [pytest.approx(m["ratio"], rel=1e-14) for m in as_json]
    return rows


def predicted(answer, rid):
    """The archive rows (rowid, phase, reason, survivor) the answer says
    the next run writes, for the page stored as `rid`."""
    out = set()
    for m in answer:
        if m["survivor"] == "new":
            # (Phase 5: the page removed a page of the row's domain.)
            out.add((m["rowid"], m["phase"], m["reason"], rid if m["phase"] != 5 else None))
        else:
            out.add((rid, m["phase"], m["reason"], m["rowid"]))
    return out


@pytest.mark.parametrize("settings", [{}, {"near_mode": "lsh"}, {"distance": 5, "threshold": 0.8},
                                      {"near_mode": "lsh", "n_min": 3}, {"measure": "resemblance"},
                                      {"measure": "resemblance", "near_mode": "lsh", "stoplist": "the a of"}],
                         ids=["window", "lsh", "distance-5", "lsh-nmin3", "resemblance", "lsh-resemblance"])
@pytest.mark.parametrize("seed", [1, 2])
def test_the_answer_is_what_the_next_run_does_with_the_page(tmp_path, settings, seed):
    rng = random.Random(seed)
    db, conn, pool = demo_part(tmp_path, rng, 380)
    names = columns_of(conn)
    conn.execute("SELECT dedup_run(?)", (json.dumps(settings),)).fetchone()
    kinds = {"kept": 0, "new": 0, None: 0, "nothing": 0}
    for row in pool[:45]:
        before = everything(conn)
        answer = ask(conn, names, row, settings)
        assert everything(conn) == before, "asking changed the database"
        cur = conn.execute(f"INSERT INTO pages VALUES ({', '.join('?' * len(row))})", row)
        rid = cur.lastrowid
        report = conn.execute("SELECT dedup_run(?)", (json.dumps(settings),)).fetchone()[0]
        run, kind = conn.execute("SELECT run, json_extract(report, '$.kind') FROM dedup_runs "
                                 "ORDER BY run DESC LIMIT 1").fetchone()
        assert kind == "incremental", report
        removed = set(conn.execute("SELECT dedup_rowid, dedup_phase, dedup_reason, dedup_survivor "
                                   "FROM dedup_removed WHERE dedup_run = ?", (run,)))
        assert removed == predicted(answer, rid), (row[names.index("url")], answer)
        for m in answer:
            kinds[m["survivor"]] += 1
            if m["phase"] == 4:
                ratio = conn.execute("SELECT dedup_ratio FROM dedup_removed WHERE dedup_run = ? AND dedup_phase = 4 "
                                     "AND ? IN (dedup_rowid, dedup_survivor)", (run, m["rowid"])).fetchone()[0]
                assert m["ratio"] == pytest.approx(ratio)
        kinds["nothing"] += not answer
    # (The stream meets every case: kept out, replacing a stored row, a
    # rule, and nothing.)
    assert kinds["kept"] and kinds["new"] and kinds["nothing"], kinds
    conn.close()


def test_a_copy_is_named_with_its_row_and_an_ignored_url_by_its_rule(tmp_path):
    db, conn, pool = demo_part(tmp_path, random.Random(5), 600)
    conn.execute("SELECT dedup_run()").fetchone()
    rowid, title, content, parsed, url = conn.execute(
        "SELECT rowid, title, content, parsed, url FROM pages WHERE length(content) > 200 ORDER BY rowid LIMIT 1").fetchone()
    # (Hand-checked: the same text at another host is phase 3's exact copy
    # (its parsed text given, so its hash is the stored row's); older, the
    # page loses the election.)
    answer = json.loads(conn.execute(
        "SELECT dedup_similar(?, 'https://elsewhere.example/copy', NULL, "
        "json_object('title', ?, 'parsed', ?, 'datetime', '1990-01-01', 'crawled', '1990-01-01'))",
        (content, title, parsed)).fetchone()[0])
    assert answer == [{"rowid": rowid, "url": url, "phase": 3, "reason": "same content hash", "ratio": 1.0,
                       "survivor": "kept"}], answer
    answer = json.loads(conn.execute(
        "SELECT dedup_similar('A text of its own.', 'https://elsewhere.example/user/profile')").fetchone()[0])
    assert answer == [{"rowid": None, "url": None, "phase": 1, "reason": "ignored: /user/", "ratio": None,
                       "survivor": None}]
    assert json.loads(conn.execute(
        "SELECT dedup_similar('A text nobody else wrote, about the river and its bridges.', 'https://new.example/x')"
    ).fetchone()[0]) == []
    conn.close()


def test_inside_the_callers_transaction_only_the_page_is_taken_back(tmp_path):
    db, conn, pool = demo_part(tmp_path, random.Random(6), 300)
    conn.execute("SELECT dedup_run()").fetchone()
    kept = conn.execute("SELECT count(*) FROM pages").fetchone()[0]
    conn.execute("BEGIN")
    conn.execute("INSERT INTO pages (url, content) VALUES ('https://mine.example/a', 'My own page, not yet committed.')")
    conn.execute("SELECT dedup_similar('Some text', 'https://new.example/b')").fetchone()
    assert conn.execute("SELECT count(*) FROM pages WHERE url = 'https://mine.example/a'").fetchone()[0] == 1
    assert conn.execute("SELECT count(*) FROM pages WHERE url = 'https://new.example/b'").fetchone()[0] == 0
    conn.execute("COMMIT")
    assert conn.execute("SELECT count(*) FROM pages").fetchone()[0] == kept + 1
    conn.close()


@pytest.mark.parametrize("sql, args, message", [
    ("SELECT dedup_similar()", (), "dedup_similar[argument]: expected 1 to 4 arguments, got 0"),
    ("SELECT dedup_similar(1, 'https://a.example/')", (), "dedup_similar[argument]: text must be TEXT, got integer 1"),
    ("SELECT dedup_similar('t', 'https://a.example/', '{\"treshold\": 0.8}')", (),
     "unknown setting in the settings argument, got 'treshold' (did you mean threshold?)"),
    ("SELECT dedup_similar('t', 'https://a.example/', NULL, '[1]')", (),
     "dedup_similar[argument]: page must be a JSON object of the page's columns, got '[1]'"),
    ("SELECT dedup_similar('t', 'https://a.example/', NULL, '{\"nosuch\": 1}')", (),
     "dedup_similar[argument]: page names a column \"pages\" does not have, got 'nosuch'"),
    ("SELECT dedup_similar(content, url) FROM pages LIMIT 1", (),
     "dedup_similar[state]: must be a statement of its own with its arguments as values"),
    ("SELECT * FROM dedup_similar()", (), "dedup_similar[argument]: text is required, got no argument"),
    ("SELECT * FROM dedup_similar(1, 'https://a.example/')", (), "dedup_similar[argument]: text must be TEXT, got integer 1"),
    ("SELECT * FROM dedup_similar('t', 'https://a.example/', '{\"treshold\": 0.8}')", (),
     "unknown setting in the settings argument, got 'treshold' (did you mean threshold?)"),
    ("SELECT * FROM dedup_similar('t', 'https://a.example/', NULL, '[1]')", (),
     "dedup_similar[argument]: page must be a JSON object of the page's columns, got '[1]'"),
    # (Taking the plan back would abort the statement's read of pages.)
    ("SELECT s.* FROM pages AS p, dedup_similar(p.content, p.url) AS s", (),
     "dedup_similar[state]: must be a statement of its own with its arguments as values"),
    ("SELECT * FROM dedup_similar((SELECT content FROM pages LIMIT 1), 'https://a.example/')", (),
     "dedup_similar[state]: must be a statement of its own with its arguments as values"),
    ("INSERT INTO pages (url, content) SELECT url, reason FROM dedup_similar('t', 'https://a.example/user/')", (),
     "dedup_similar[state]: must be a statement of its own with its arguments as values"),
])
def test_bad_calls_are_named_and_change_nothing(tmp_path, sql, args, message):
    db, conn, pool = demo_part(tmp_path, random.Random(7), 100)
    conn.execute("SELECT dedup_run()").fetchone()
    before = everything(conn)
    with pytest.raises(sqlite3.OperationalError) as e:
        conn.execute(sql, args).fetchone()
    assert message in str(e.value)
    assert everything(conn) == before


def test_without_an_index_it_says_to_run_once(tmp_path):
    db, conn, pool = demo_part(tmp_path, random.Random(8), 100)
    with pytest.raises(sqlite3.OperationalError, match="no incremental index yet.*run SELECT dedup_run\\(\\) once"):
        conn.execute("SELECT dedup_similar('t', 'https://a.example/')").fetchone()
    assert conn.execute("SELECT count(*) FROM pages").fetchone()[0] == 100


@pytest.mark.parametrize("where", ["dedup_settings", "argument"])
def test_settings_whose_runs_keep_no_index_are_named_instead_of_run_once(tmp_path, where):
    """A database whose dedup_settings hold prefer: every run is full and
    keeps no index, so "run once" would not help; the error names the
    setting. The same for one given in the call's settings."""
    db, conn, pool = demo_part(tmp_path, random.Random(9), 100)
    prefer = json.dumps(["crawled DESC"])
    if where == "dedup_settings":
        conn.execute("CREATE TABLE dedup_settings (key TEXT PRIMARY KEY, value)")
        conn.execute("INSERT INTO dedup_settings VALUES ('prefer', ?)", (prefer,))
        conn.execute("SELECT dedup_run()").fetchone()
        args = ()
    else:
        args = (json.dumps({"prefer": json.loads(prefer)}),)
    before = everything(conn)
    call = "SELECT dedup_similar('t', 'https://a.example/'" + (", ?)" if args else ")")
    with pytest.raises(sqlite3.OperationalError, match="no incremental index, got settings whose runs keep none: "
                                                       "prefer .* makes every run full"):
        conn.execute(call, args).fetchone()
    assert everything(conn) == before


def test_a_read_only_connection_is_told_so(tmp_path):
    db, conn, pool = demo_part(tmp_path, random.Random(9), 100)
    conn.execute("SELECT dedup_run()").fetchone()
    conn.close()
    ro = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    ro.enable_load_extension(True)
    ro.load_extension(P.EXTENSION)
    with pytest.raises(sqlite3.OperationalError, match="readonly"):
        ro.execute("SELECT dedup_similar('t', 'https://a.example/')").fetchone()


def test_the_command_says_it_in_words(tmp_path):
    import os
    import subprocess
    import sys
    db, conn, pool = demo_part(tmp_path, random.Random(10), 300)
    conn.execute("SELECT dedup_run()").fetchone()
    url, title, content = conn.execute(
        "SELECT url, title, content FROM pages WHERE length(content) > 200 AND datetime IS NOT NULL "
        "ORDER BY rowid LIMIT 1").fetchone()
    rowid = conn.execute("SELECT rowid FROM pages WHERE url = ?", (url,)).fetchone()[0]
    conn.close()
    env = dict(os.environ, PYTHONPATH=P.package(tmp_path))
    run = [os.environ.get("DEDUP_PYTHON", "/usr/bin/python3"), "-m", "sqlite_dedup", "similar", db]
    # (A re-crawl of the same URL without a date: the stored row, which
    # has one, wins phase 2's election, whose first key is the date.)
    out = subprocess.run(run + [url + "#top", "--title", title], input=content + " More.", capture_output=True,
                         text=True, env=env)
    assert out.returncode == 0, out.stderr
    assert out.stdout == f"removed by rowid {rowid} ({url}), phase 2: same canonical URL\n", out.stdout
    out = subprocess.run(run + ["https://new.example/x"], input="Nothing like it anywhere.", capture_output=True,
                         text=True, env=env)
    assert out.stdout == "new: no stored page decides its fate\n", out.stdout
    out = subprocess.run(run + ["https://new.example/x", str(tmp_path / "missing.html")], capture_output=True,
                         text=True, env=env)
    assert out.returncode == 1 and "cannot read the page from" in out.stderr


def test_a_prefer_term_the_index_recorded_is_held_to_a_schemas_rules(tmp_path):
    """The recorded settings are the database's: a prefer term there that
    reads another table is refused, as one in dedup_settings is; the same
    term given in the call's argument is the caller's own SQL."""
    db, conn, pool = demo_part(tmp_path, random.Random(11), 100)
    conn.execute("SELECT dedup_run()").fetchone()
    term = "(SELECT count(*) FROM sqlite_schema) DESC"
    conn.execute("UPDATE dedup_index_state SET value = json_set(value, '$.prefer', json_array(?)) "
                 "WHERE key = 'settings'", (term,))
    before = everything(conn)
    with pytest.raises(sqlite3.OperationalError, match="may use only the columns of \"pages\".*got a "):
        conn.execute("SELECT dedup_similar('t', 'https://a.example/')").fetchone()
    assert everything(conn) == before
    assert json.loads(conn.execute("SELECT dedup_similar('t', 'https://a.example/', ?)",
                                   (json.dumps({"prefer": [term]}),)).fetchone()[0]) == []


def test_the_table_form_filters_and_takes_back_only_the_page_in_the_callers_transaction(tmp_path):
    db, conn, pool = demo_part(tmp_path, random.Random(12), 300)
    conn.execute("SELECT dedup_run()").fetchone()
    rowid, title, content, parsed = conn.execute(
        "SELECT rowid, title, content, parsed FROM pages WHERE length(content) > 200 ORDER BY rowid LIMIT 1").fetchone()
    conn.execute("BEGIN")
    conn.execute("INSERT INTO pages (url, content) VALUES ('https://mine.example/a', 'My own page, not yet committed.')")
    # (Hand-checked, as above: an older copy of the stored text elsewhere
    # is phase 3's, kept out by the stored row.)
    rows = conn.execute(
        "SELECT rowid, phase, survivor, ratio FROM dedup_similar(?, 'https://elsewhere.example/copy', NULL, "
        "json_object('title', ?, 'parsed', ?, 'datetime', '1990-01-01', 'crawled', '1990-01-01')) "
        "WHERE survivor = 'kept' ORDER BY phase", (content, title, parsed)).fetchall()
    assert rows == [(rowid, 3, "kept", 1.0)]
    assert conn.execute("SELECT count(*) FROM pages WHERE url = 'https://mine.example/a'").fetchone()[0] == 1
    assert conn.execute("SELECT count(*) FROM pages WHERE url = 'https://elsewhere.example/copy'").fetchone()[0] == 0
    conn.execute("COMMIT")
    # (A plan of dedup_plan() pending: its temp tables cannot be replaced
    # under the statement that asks, which reads.)
    conn.execute("SELECT dedup_plan()").fetchone()
    with pytest.raises(sqlite3.OperationalError, match="a plan of dedup_plan\\(\\) still pending"):
        conn.execute("SELECT * FROM dedup_similar('t', 'https://a.example/')").fetchall()
    conn.close()


def test_the_python_api_returns_the_table_forms_rows(sqlite_dedup, tmp_path):
    db, conn, pool = demo_part(tmp_path, random.Random(13), 300)
    sqlite_dedup.run(conn)
    names = columns_of(conn)
    seen = 0
    for row in pool[:12]:
        page = dict(zip(names, row))
        text, url = page.pop("content"), page.pop("url")
        got = sqlite_dedup.similar(conn, text, url, page=page)
        want = [dict(zip(COLUMNS, r)) for r in conn.execute(
            "SELECT * FROM dedup_similar(?, ?, NULL, ?)", (text, url, json.dumps(page)))]
        assert got == want
        seen += len(got)
    assert seen, "the stream met no stored row"
    conn.close()


@pytest.mark.parametrize("journal", ["delete", "wal"])
def test_no_copy_of_the_asked_page_is_left_in_the_file_or_its_wal(tmp_path, journal):
    """Issue 76: a large page's text stayed in free pages of the file after
    the rollback (the cache spilled it there; 112,064 copies of a marker
    here), or in the -wal while the connection was open. The cache does
    not spill during the call now: no byte of the page is written."""
    import os
    import shutil
    db = str(tmp_path / "demo.db")
    shutil.copy(P.DEMO, db)
    conn = P.connect(db)
    conn.execute(f"PRAGMA journal_mode = {journal}")
    conn.execute("SELECT dedup_run()").fetchone()
    spill = conn.execute("PRAGMA cache_spill").fetchone()[0]
    marker = "QZXJMARKER"
    text = " ".join(f"word{i} {marker}" for i in range(400000))  # (about 8 MB: several times the cache)

    def copies():
        return sum(open(f, "rb").read().count(marker.encode())
                   for f in (db, db + "-wal", db + "-journal") if os.path.exists(f))

    rows = conn.execute("SELECT count(*) FROM dedup_similar(?, 'https://marker.example/p')", (text,)).fetchone()
    assert rows == (0,)
    assert copies() == 0
    assert conn.execute("PRAGMA cache_spill").fetchone()[0] == spill  # (put back)
    conn.close()
    assert copies() == 0


def test_the_command_takes_every_setting_and_the_pages_columns_and_answers_as_the_api(tmp_path, sqlite_dedup):
    """Issue 77: `sqlite-dedup similar` had only --title and --json, so it
    answered otherwise than the Python API for the same page. It takes every
    setting `run` takes and the page's columns (--page), and answers as
    `sqlite_dedup.similar` does. A light edit of a stored page on another
    host: in window mode it is never compared (new); with --near-mode lsh,
    the index's mode here, it is removed for the stored page."""
    import os
    import subprocess
    db, conn, pool = demo_part(tmp_path, random.Random(12), 300)
    conn.execute("""SELECT dedup_run('{"near_mode": "lsh"}')""").fetchone()
    # (The stored page first in URL order, the copy's URL last: in window
    # mode far more than `distance` rows apart.)
    rowid, url, content = conn.execute(
        "SELECT rowid, url, content FROM pages WHERE length(content) > 2000 ORDER BY url LIMIT 1").fetchone()
    copy = content + " A line the mirror adds."
    page = {"crawled": "2031-01-01 00:00:00", "category": "external"}
    env = dict(os.environ, PYTHONPATH=P.package(tmp_path))
    run = [os.environ.get("DEDUP_PYTHON", "/usr/bin/python3"), "-m", "sqlite_dedup", "similar", db,
           "https://zzz-mirror.example.org/elsewhere", "--page", json.dumps(page), "--json"]
    for flags, settings in (([], {}), (["--near-mode", "window"], {"near_mode": "window"}),
                            (["--threshold", "0.95", "--near-mode", "lsh"], {"threshold": 0.95, "near_mode": "lsh"})):
        out = subprocess.run(run + flags, input=copy, capture_output=True, text=True, env=env)
        assert out.returncode == 0, out.stderr
        api = sqlite_dedup.similar(conn, copy, "https://zzz-mirror.example.org/elsewhere", page=page, **settings)
        assert json.loads(out.stdout) == api, (flags, out.stdout, api)
        if settings.get("near_mode") == "window":
            assert api == [], api
        else:
            assert [(m["rowid"], m["phase"], m["survivor"]) for m in api] == [(rowid, 4, "kept")], api
    bad = subprocess.run(run[:-3] + ["--page", "[1, 2]"], input=copy, capture_output=True, text=True, env=env)
    assert bad.returncode == 1 and "--page must be a JSON object of the page's columns" in bad.stderr
