"""The `sqlite-dedup` command from the source tree (the package with the
release build beside it, as the wheel lays it out), run in a subprocess."""
import json
import os
import shutil
import sqlite3
import subprocess

import pytest

import pipeline as P

PYTHON = os.environ.get("DEDUP_PYTHON", "/usr/bin/python3")
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def package(tmp_path):
    """The Python package with the extension where the wheel puts it."""
    return P.package(tmp_path)


def unique_urls(db):
    """Raw URLs that one row of `db` carries."""
    conn = sqlite3.connect(db)
    urls = {u for (u,) in conn.execute("SELECT url FROM pages WHERE typeof(url) = 'text' GROUP BY url HAVING count(*) = 1")}
    conn.close()
    return urls


def occurrences(path, text):
    with open(path, "rb") as f:
        return f.read().count(text.encode())


def test_secure_delete_decides_whether_removed_rows_are_zeroed_where_they_were(tmp_path):
    # A removed row stays whole in dedup_removed. With secure_delete on, its
    # old place in pages is zeroed: its URL is in the file as often as before
    # the run (the archive's copy for the old one), but for the few copies
    # SQLite leaves behind when it rebalances pages (5% of the rows here).
    # With it off, the freed space keeps the old bytes: once more for most.
    before = {u: occurrences(P.DEMO, u) for u in unique_urls(P.DEMO)}
    env = {**os.environ, "PYTHONPATH": package(tmp_path)}
    more = {}
    for mode in ("on", "off"):
        db = str(tmp_path / f"{mode}.db")
        shutil.copy(P.DEMO, db)
        run = subprocess.run([PYTHON, "-m", "sqlite_dedup", "run", db, "--secure-delete", mode],
                             capture_output=True, text=True, env=env)
        assert run.returncode == 0, run.stderr
        assert run.stdout.startswith("run 1: 600 rows -> 245 rows")
        conn = sqlite3.connect(db)
        removed = [u for (u,) in conn.execute("SELECT url FROM dedup_removed") if u in before]
        conn.close()
        assert len(removed) > 200
        more[mode] = sum(occurrences(db, u) > before[u] for u in removed) / len(removed)
    assert more["on"] < 0.1 and more["off"] > 0.5, more


def test_a_bad_secure_delete_value_is_refused_before_anything_runs(tmp_path):
    db = str(tmp_path / "demo.db")
    shutil.copy(P.DEMO, db)
    run = subprocess.run([PYTHON, "-m", "sqlite_dedup", "run", db, "--secure-delete", "maybe"],
                         capture_output=True, text=True, env={**os.environ, "PYTHONPATH": package(tmp_path)})
    assert run.returncode == 2 and "invalid choice: 'maybe'" in run.stderr
    assert sqlite3.connect(db).execute("SELECT count(*) FROM pages").fetchone()[0] == 600


def test_the_new_settings_from_the_command(tmp_path):
    """--prefer, --compat and --columns reach the run and are recorded."""
    import json
    import test_real_crawls as R
    db = R.crawl(str(tmp_path / "crawl.db"))
    raw = sqlite3.connect(db)
    raw.execute("ALTER TABLE pages RENAME COLUMN url TO link")
    raw.commit()
    raw.close()
    env = dict(os.environ, PYTHONPATH=package(tmp_path))
    run = subprocess.run([PYTHON, "-m", "sqlite_dedup", "run", db, "--columns", '{"url": "link"}',
                          "--prefer", "link LIKE 'https://docs.example.org/%' DESC", "--compat", "reference"],
                         capture_output=True, text=True, env=env, timeout=120)
    assert run.returncode == 0, run.stderr
    conn = sqlite3.connect(db)
    settings = json.loads(conn.execute("SELECT settings FROM dedup_runs").fetchone()[0])
    assert settings["compat"] == "reference" and settings["columns"] == {"url": "link"}
    assert settings["prefer"] == ["link LIKE 'https://docs.example.org/%' DESC"]
    links = {r[0] for r in conn.execute("SELECT link FROM pages")}
    assert "https://docs.example.org/guide" in links and R.TUTORIAL in links
    bad = subprocess.run([PYTHON, "-m", "sqlite_dedup", "run", db, "--columns", '{"url": "link"}', "--prefer", "nosuch"],
                         capture_output=True, text=True, env=env, timeout=120)
    assert bad.returncode == 1 and "prefer term 1" in bad.stderr and "Traceback" not in bad.stderr, bad.stderr


def test_every_setting_is_a_flag_of_run_and_plan(tmp_path):
    """Each setting the extension knows (its own list) has its flag in
    `sqlite-dedup run` and `plan`, and the flags added last reach the run:
    recorded in its settings, or, for busy_timeout, waited by."""
    expected = P.flags_expected()
    assert len(expected) >= 18 and "boilerplate_min_pages" in expected, expected
    for command in ("run", "plan"):
        out = cli(tmp_path, command, "--help")
        flags = {w.strip("[],") for w in out.stdout.split() if w.startswith(("--", "[--"))}
        missing = {k: f for k, f in expected.items() if f not in flags}
        assert out.returncode == 0 and not missing, (command, missing)
    db = str(tmp_path / "demo.db")
    shutil.copy(P.DEMO, db)
    out = cli(tmp_path, "run", db, "--boilerplate", "strip", "--boilerplate-min-pages", "3", "--busy-timeout", "2000")
    assert out.returncode == 0, out.stderr
    conn = sqlite3.connect(db)
    recorded = json.loads(conn.execute("SELECT settings FROM dedup_runs").fetchone()[0])
    assert (recorded["boilerplate"], recorded["boilerplate_min_pages"]) == ("strip", 3), recorded
    # --busy-timeout 0: no wait for a lock another connection holds (Python's
    # own 5 s timeout would have waited out the 3 s this one is held), for a
    # run and for restore.
    for command in (["run", db, "--full"], ["restore", db]):
        holder = P.hold_write_lock(db, 3)
        try:
            before = P.fingerprint(db)
            out = cli(tmp_path, *command, "--busy-timeout", "0")
            assert out.returncode == 1 and "locked" in out.stderr and "Traceback" not in out.stderr, out.stderr
            assert P.fingerprint(db) == before
        finally:
            holder.wait(timeout=60)
    out = cli(tmp_path, "run", db, "--busy-timeout", "-1")
    assert out.returncode == 1 and "busy_timeout must be milliseconds" in out.stderr, out.stderr
    out = cli(tmp_path, "restore", db, "--busy-timeout", "-1")
    assert out.returncode == 1 and "--busy-timeout must be milliseconds >= 0, got -1" in out.stderr, out.stderr
    out = cli(tmp_path, "restore", db, "--busy-timeout", "1000")
    assert out.returncode == 0 and out.stdout.startswith("restored run 1:"), (out.stdout, out.stderr)


def test_a_busy_timeout_given_to_run_is_that_calls_wait(tmp_path, sqlite_dedup):
    """sqlite_dedup.run(conn, busy_timeout=0) on a database another
    connection is writing fails at once (the connection's own 5 s would
    have waited out the lock), changes nothing, and leaves the connection's
    own timeout as it was; plan() likewise."""
    db = str(tmp_path / "demo.db")
    shutil.copy(P.DEMO, db)
    before = P.fingerprint(db)
    conn = sqlite3.connect(db, isolation_level=None, timeout=5.0)
    sqlite_dedup.load(conn)
    holder = P.hold_write_lock(db, 3)
    try:
        # (The error says what held it, how long the call waited, and how
        # to wait longer.)
        with pytest.raises(sqlite3.OperationalError,
                           match=r"database is locked \(another connection held the database's lock longer than this "
                                 r"call waits, 0 ms: .* e\.g\. \{\"busy_timeout\": 60000\}"):
            sqlite_dedup.run(conn, busy_timeout=0)
        assert conn.execute("PRAGMA busy_timeout").fetchone()[0] == 5000
        assert P.fingerprint(db) == before
    finally:
        holder.wait(timeout=60)
    assert sqlite_dedup.run(conn, busy_timeout=1000)["rows_after"] == 245
    assert conn.execute("PRAGMA busy_timeout").fetchone()[0] == 5000
    conn.close()


def test_every_setting_a_spark_run_takes_is_a_flag_of_spark_run(tmp_path):
    """`sqlite-dedup spark run` has a flag for each setting the Spark layer
    takes, and passes it on (no PySpark needed to parse them)."""
    import sys as _sys
    _sys.path.insert(0, package(tmp_path))
    from sqlite_dedup.spark import SUPPORTED_SETTINGS
    from sqlite_dedup.spark.cli import parser, settings_of
    out = cli(tmp_path, "spark", "run", "--help")
    flags = {w.strip("[],") for w in out.stdout.split() if w.startswith(("--", "[--"))}
    expected = {k: P.FLAG_OF_SETTING.get(k, "--" + k.replace("_", "-")) for k in SUPPORTED_SETTINGS}
    missing = {k: f for k, f in expected.items() if f not in flags}
    assert not missing, missing
    args = parser().parse_args(["run", "a.db", "--busy-timeout", "100", "--keep-params", "--mode", "lsh"])
    assert settings_of(args) == {"busy_timeout": 100, "discard_params": 0, "near_mode": "lsh"}


def cli(tmp_path, *args, **kw):
    env = dict(os.environ, PYTHONPATH=package(tmp_path))
    return subprocess.run([PYTHON, "-m", "sqlite_dedup", *args], capture_output=True, text=True, env=env,
                          timeout=120, **kw)


def test_a_missing_or_broken_library_is_a_one_line_error_and_nothing_runs(tmp_path):
    db = str(tmp_path / "crawl.db")
    shutil.copy(P.DEMO, db)
    library = os.path.join(package(tmp_path), "sqlite_dedup", "dedup0.so")
    os.remove(library)  # a source checkout before the build is copied there
    out = cli(tmp_path, "run", db)
    assert out.returncode == 1 and "Traceback" not in out.stderr, out.stderr
    assert out.stderr.strip().splitlines() == [
        f"sqlite-dedup: cannot load the extension: the extension's library is not installed: no {library}. "
        "Install the package from its wheel, which carries it; in a source checkout, copy "
        "target/release/libdedup.so there as dedup0.so after `cargo build --release --features loadable_extension`."]
    with open(library, "w") as f:  # not a shared library
        f.write("not a library\n")
    out = cli(tmp_path, "run", db)
    assert out.returncode == 1 and "Traceback" not in out.stderr, out.stderr
    assert out.stderr.startswith(f"sqlite-dedup: cannot load the extension: {library}"), out.stderr
    conn = sqlite3.connect(db)
    assert conn.execute("SELECT count(*) FROM pages").fetchone()[0] == 600
    assert conn.execute("SELECT count(*) FROM sqlite_schema WHERE name LIKE 'dedup%'").fetchone()[0] == 0
    conn.close()


def test_a_missing_file_is_an_error_not_a_new_database(tmp_path):
    db = str(tmp_path / "nonexist.db")
    out = cli(tmp_path, "run", db)
    assert out.returncode == 1 and "no database file" in out.stderr and not os.path.exists(db), out.stderr


@pytest.mark.parametrize("command", [["run"], ["plan"], ["stats"], ["report"], ["restore"], ["explain", "-", "1"]])
def test_a_folder_or_a_file_not_a_database_is_named_as_such(tmp_path, command):
    """Every command that takes a database names the path and what is wrong
    with it, on one line, and leaves the file as it was; an empty file is an
    empty database (SQLite's own view), refused for its lack of a table."""
    folder = tmp_path / "crawl.db"
    folder.mkdir()
    text = tmp_path / "notes.db"
    text.write_text("not a database\n")
    empty = tmp_path / "empty.db"
    empty.write_bytes(b"")
    said = {str(folder): f"sqlite-dedup: {str(folder)!r} is a folder, not a database file",
            str(text): f"sqlite-dedup: {str(text)!r} is not a SQLite database (it does not begin with SQLite's header)"}
    for path, line in said.items():
        args = [path if a == "-" else a for a in command] if "-" in command else command + [path]
        out = cli(tmp_path, *args, cwd=str(tmp_path))
        assert out.returncode == 1 and out.stderr.strip().splitlines() == [line], out.stderr
    assert text.read_text() == "not a database\n" and not os.listdir(folder)
    if command == ["run"]:
        out = cli(tmp_path, "run", str(empty))
        assert out.returncode == 1 and "table 'pages' not found, got no table in this database" in out.stderr, out


def test_a_spark_run_names_a_shard_that_is_no_database_before_spark_starts(tmp_path):
    """`sqlite-dedup spark run` checks every shard as the other commands
    check their file, and stops before starting Spark, changing nothing."""
    good = str(tmp_path / "a.db")
    shutil.copy(P.DEMO, good)
    before = P.fingerprint(good)
    notes = tmp_path / "notes.db"
    notes.write_text("not a database\n")
    for shard, said in [(str(notes), f"{str(notes)!r} is not a SQLite database (it does not begin with SQLite's header)"),
                        (str(tmp_path / "gone.db"), f"no database file {str(tmp_path / 'gone.db')!r}"),
                        (str(tmp_path), f"{str(tmp_path)!r} is a folder, not a database file")]:
        out = cli(tmp_path, "spark", "run", good, shard)
        assert out.returncode == 1 and out.stderr.strip().splitlines() == \
            [f"sqlite-dedup spark: {said}; nothing was changed"], out.stderr
    assert P.fingerprint(good) == before and not os.path.exists(tmp_path / "gone.db")


def test_plan_gives_what_a_run_would_remove_per_phase_and_domain(tmp_path, sqlite_dedup):
    """`sqlite-dedup plan` and Python's plan(): the counts a run then removes,
    per phase and per domain (counted here from the run's archive), with
    examples; the database unchanged."""
    db = str(tmp_path / "demo.db")
    shutil.copy(P.DEMO, db)
    before = P.fingerprint(db)
    out = cli(tmp_path, "plan", db)
    assert out.returncode == 0, out.stderr
    assert P.fingerprint(db) == before
    assert out.stdout.startswith("plan for run 1: 600 rows -> 245 rows")
    assert "phase 2: 144 row(s) would go; most from jlevy.github.io 87, requests.readthedocs.io 31" in out.stdout
    assert "phase 1: 58 row(s) would go; most from requests.readthedocs.io" in out.stdout, out.stdout
    conn = P.connect(db)
    planned = sqlite_dedup.plan(conn)
    conn.execute("SELECT dedup_apply()").fetchone()
    by_domain = {}
    for phase, domain in conn.execute("SELECT dedup_phase, url_domain(url, 'ignore=') FROM dedup_removed"):
        by_domain.setdefault(phase, {}).setdefault(domain, 0)
        by_domain[phase][domain] += 1
    assert planned["removed"] == {p: sum(d.values()) for p, d in by_domain.items()}
    for phase, top in planned["domains"].items():
        assert all(by_domain[phase][d] == n for d, n in top)
        assert [n for _, n in top] == sorted(by_domain[phase].values(), reverse=True)[:len(top)]
    assert all(len(e) == 3 for e in planned["examples"].values())


def test_dry_run_changes_nothing_and_lists_what_would_go(tmp_path):
    db = str(tmp_path / "demo.db")
    shutil.copy(P.DEMO, db)
    before = P.fingerprint(db)
    out = cli(tmp_path, "run", db, "--dry-run")
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("plan for run 1: 600 rows -> 245 rows") and "would remove rowid" in out.stdout
    assert P.fingerprint(db) == before


def test_explain_tells_kept_from_never_existed(tmp_path):
    db = str(tmp_path / "demo.db")
    shutil.copy(P.DEMO, db)
    assert cli(tmp_path, "run", db).returncode == 0
    kept = sqlite3.connect(db).execute("SELECT min(rowid) FROM pages").fetchone()[0]
    out = cli(tmp_path, "explain", db, str(kept))
    assert out.returncode == 0 and "kept (it is in pages" in out.stdout, (out.stdout, out.stderr)
    out = cli(tmp_path, "explain", db, "99999")
    assert out.returncode == 1 and "not in pages, and no run removed it" in out.stderr


def test_explain_before_any_run_says_so(tmp_path, sqlite_dedup):
    """Before the first run there is no dedup_why view: explain says a page
    is kept, or that no run is recorded (it said "no such table:
    dedup_why"); Python's explain() gives None, as for a page no run
    removed. The database is unchanged."""
    db = str(tmp_path / "demo.db")
    shutil.copy(P.DEMO, db)
    before = P.fingerprint(db)
    out = cli(tmp_path, "explain", db, "5")
    assert out.returncode == 0 and out.stdout.startswith("rowid 5: kept (it is in pages"), (out.stdout, out.stderr)
    for page in ("99999", "https://nowhere.example/"):
        out = cli(tmp_path, "explain", db, page)
        assert out.returncode == 1, (out.stdout, out.stderr)
        assert out.stderr.strip() == \
            f"sqlite-dedup: no page {page!r}: not in pages, and no run is recorded in this database"
    conn = P.connect(db)
    assert sqlite_dedup.explain(conn, 5) is None and sqlite_dedup.explain(conn, "x") is None
    # (A page that is neither a rowid nor a URL is an error, not "not removed";
    # so is a rowid that is not an int, and a count of examples that is not one.)
    for page in (None, 1.5, b"x", True):
        with pytest.raises(TypeError, match=r"^explain: page must be a rowid \(int\) or a URL \(str\), got "):
            sqlite_dedup.explain(conn, page)
        with pytest.raises(TypeError, match=r"^kept_apart: rowid must be an int, got "):
            sqlite_dedup.kept_apart(conn, page)
    for examples in ("3", -1, None):
        with pytest.raises(TypeError, match=r"^plan: examples must be an int >= 0, got "):
            sqlite_dedup.plan(conn, examples=examples)
    conn.close()
    assert P.fingerprint(db) == before


def test_the_python_api_takes_a_connection_and_loads_the_extension_itself(tmp_path, sqlite_dedup):
    """run, plan and restore load the extension into a connection that has
    not (they failed with "no such function: dedup_run"); each function
    given a path, None or another object instead of a connection raises a
    TypeError naming what it got (it was an AttributeError about execute)."""
    import pathlib
    db = str(tmp_path / "demo.db")
    shutil.copy(P.DEMO, db)
    before = P.fingerprint(db)
    calls = [(sqlite_dedup.run, ()), (sqlite_dedup.plan, ()), (sqlite_dedup.restore, ()),
             (sqlite_dedup.explain, (5,)), (sqlite_dedup.kept_apart, (5,)), (sqlite_dedup.stats, ())]
    for function, args in calls:
        for bad in (db, pathlib.Path(db), None, 42):
            with pytest.raises(TypeError, match=rf"^{function.__name__}: conn must be a sqlite3.Connection or "
                                                rf"an apsw.Connection, got {type(bad).__name__} "):
                function(bad, *args)
    assert P.fingerprint(db) == before
    # (The demo's figures from its README: 600 rows, 245 left.)
    conn = sqlite3.connect(db, isolation_level=None)
    planned = sqlite_dedup.plan(conn)
    assert sum(planned["removed"].values()) == 600 - 245, planned["removed"]
    report = sqlite_dedup.run(conn)
    assert (report["rows_before"], report["rows_after"]) == (600, 245), report
    conn.close()
    conn = sqlite3.connect(db, isolation_level=None)
    assert sqlite_dedup.restore(conn).startswith('restored run 1: 355 row(s) back in "pages"')
    conn.close()
    assert P.fingerprint(db) == before


def test_explain_looks_for_a_kept_page_in_the_table_the_runs_use(tmp_path):
    """With the table and its URL column renamed (`table`, `columns` in
    dedup_settings), explain finds a kept page by rowid or URL in that table,
    before the first run and after it (it looked in `pages` only)."""
    db = str(tmp_path / "docs.db")
    conn = sqlite3.connect(db)
    conn.executescript("""
        CREATE TABLE docs (link TEXT, body TEXT);
        INSERT INTO docs VALUES ('https://a.example/one', 'the first text of its own'),
                                ('https://a.example/one?utm_source=x', 'the first text of its own'),
                                ('https://b.example/two', 'a second text, unlike the first');
        CREATE TABLE dedup_settings (key TEXT PRIMARY KEY, value);
        INSERT INTO dedup_settings VALUES ('table', 'docs'), ('columns', '{"url": "link", "content": "body"}');
    """)
    conn.commit()
    conn.close()
    for when in ("before", "after"):
        out = cli(tmp_path, "explain", db, "3")
        assert out.returncode == 0 and out.stdout.startswith("rowid 3: kept (it is in docs;"), (when, out)
        out = cli(tmp_path, "explain", db, "https://b.example/two")
        assert out.returncode == 0 and out.stdout.startswith("url https://b.example/two: kept (it is in docs;"), \
            (when, out)
        out = cli(tmp_path, "explain", db, "99")
        assert out.returncode == 1 and "not in docs, and" in out.stderr, (when, out)
        if when == "before":
            assert cli(tmp_path, "run", db).returncode == 0
    out = cli(tmp_path, "explain", db, "2")
    assert out.returncode == 0 and out.stdout.startswith("rowid 2 (https://a.example/one?utm_source=x): removed by run 1"), out


def test_explain_names_the_parameter_a_kept_page_was_kept_apart_by(tmp_path):
    """On the demo, two jlevy.github.io pages differ only in a repeated
    `lang` parameter and in their texts: explain says why both stayed."""
    db = str(tmp_path / "demo.db")
    shutil.copy(P.DEMO, db)
    assert cli(tmp_path, "run", db).returncode == 0
    apart = [r[0] for r in sqlite3.connect(db).execute(
        "SELECT rowid FROM pages WHERE url LIKE 'https://jlevy.github.io/the-art-of-command-line/basics?lang=cs%'")]
    assert len(apart) == 2
    for rowid in apart:
        out = cli(tmp_path, "explain", db, str(rowid))
        assert out.returncode == 0, out.stderr
        assert ("kept apart from 1 other page(s) that share the URL "
                "https://jlevy.github.io/the-art-of-command-line/basics?lang=cs without parameter `lang`: "
                "their texts differ, so the parameter changes content on jlevy.github.io") in out.stdout, out.stdout


def test_explain_gives_the_ratio_to_the_final_survivor(tmp_path, sqlite_dedup):
    """A phase-4 removal whose survivor was removed in turn: explain prints
    the ratio to the final survivor, equal to python-Levenshtein's on the
    texts phase 4 compared (parsed here)."""
    import Levenshtein
    db = str(tmp_path / "demo.db")
    shutil.copy(P.DEMO, db)
    assert cli(tmp_path, "run", db).returncode == 0
    conn = P.connect(db)
    rows = conn.execute(
        "SELECT w.rowid, w.final_ratio, w.final_note, d.parsed, p.parsed FROM dedup_why AS w "
        "JOIN dedup_removed AS d ON d.dedup_rowid = w.rowid JOIN pages AS p ON p.rowid = w.final_survivor "
        "WHERE w.phase = 4 AND w.final_survivor <> w.survivor").fetchall()
    measured = [r for r in rows if r[1] is not None]
    below = [r for r in rows if r[1] is None]
    assert measured and below  # the demo has both (its report: drift 2)
    for rowid, final_ratio, note, a, b in measured:
        assert final_ratio == pytest.approx(Levenshtein.ratio(a, b), abs=1e-12) and final_ratio > 0.9 and note is None
    for rowid, final_ratio, note, a, b in below:
        assert Levenshtein.ratio(a, b) <= 0.9 and note == "at or below the threshold 0.9 (not measured further)"
    out = cli(tmp_path, "explain", db, str(measured[0][0]))
    assert f"ratio to it {measured[0][1]:.4f}" in out.stdout, out.stdout
    # Below the threshold, the ratio is measured when explained.
    for rowid, _, _, a, b in below:
        assert sqlite_dedup.explain(conn, rowid)["final_ratio"] == pytest.approx(Levenshtein.ratio(a, b), abs=1e-12)
    out = cli(tmp_path, "explain", db, str(below[0][0]))
    expected = f"ratio to it {Levenshtein.ratio(below[0][3], below[0][4]):.4f} (at or below the threshold 0.9"
    assert expected in out.stdout, out.stdout


def test_full_runs_every_comparison_and_the_report_says_so(tmp_path):
    db = str(tmp_path / "demo.db")
    shutil.copy(P.DEMO, db)
    assert cli(tmp_path, "run", db).returncode == 0
    second = cli(tmp_path, "run", db)
    assert "incremental since run 1: 0 new or changed row(s), 0 gone or changed" in second.stdout, second.stdout
    third = cli(tmp_path, "run", db, "--full")
    assert third.returncode == 0 and "full run: asked for (full: true)" in third.stdout, third.stdout


def test_the_missing_table_hint_names_the_option(tmp_path):
    db = str(tmp_path / "other.db")
    sqlite3.connect(db).execute("CREATE TABLE docs (url TEXT, content TEXT)")
    out = cli(tmp_path, "run", db)
    assert out.returncode == 1 and "--table NAME" in out.stderr, out.stderr
    assert "table 'pages' not found, got table 'docs' in this database" in out.stderr, out.stderr
    assert cli(tmp_path, "run", db, "--table", "docs", "--near-mode", "lsh").returncode == 0


def test_a_run_that_fails_at_once_exits_cleanly_while_its_threads_start_late(tmp_path):
    # The command fails at once and closes its connections as it exits,
    # which unloaded the extension while the thread pool's threads were
    # still starting: a segmentation fault (-11), 96 times in 150 on one
    # busy core before the library was pinned. Here the command shares one
    # core with a busy loop, so its new threads start late.
    db = str(tmp_path / "other.db")
    sqlite3.connect(db).execute("CREATE TABLE docs (url TEXT, content TEXT)")
    core = {min(os.sched_getaffinity(0))}
    busy = subprocess.Popen([PYTHON, "-c", "while True: pass"], preexec_fn=lambda: os.sched_setaffinity(0, core))
    try:
        codes = [cli(tmp_path, "run", db, preexec_fn=lambda: os.sched_setaffinity(0, core)).returncode
                 for _ in range(12)]
    finally:
        busy.kill()
        busy.wait()
    assert codes == [1] * 12, codes


def test_ctrl_c_interrupts_the_run_and_changes_nothing(tmp_path):
    import signal
    import time
    import crawl
    db = crawl.make(str(tmp_path / "slow.db"), n_articles=1500)
    before = P.fingerprint(db)
    env = dict(os.environ, PYTHONPATH=package(tmp_path))
    proc = subprocess.Popen(P.interruptible(PYTHON, "run", db, "--distance", "800"),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    # (Signalled once the command has loaded the extension, not after a
    # fixed second: on a loaded machine Python's start alone can take
    # longer, and a SIGINT before the run is not what this test is about.)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and proc.poll() is None:
        try:
            with open(f"/proc/{proc.pid}/maps") as maps:
                if "dedup0.so" in maps.read():  # (the package's name for it)
                    break
        except OSError:
            break
        time.sleep(0.02)
    time.sleep(0.1)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=120)
    if proc.returncode == 0:  # the run had finished first: then it is whole
        assert out.startswith("run 1:")
        return
    assert proc.returncode == 130 and "interrupted" in err and "Traceback" not in err, err
    assert P.fingerprint(db) == before


def test_restore_all_gives_back_the_database_as_before_its_first_run(tmp_path):
    db = str(tmp_path / "demo.db")
    shutil.copy(P.DEMO, db)
    before = P.fingerprint(db)
    assert cli(tmp_path, "run", db).returncode == 0
    sqlite3.connect(db).executescript("INSERT INTO pages (url, content) SELECT url || '?x=1', content FROM pages LIMIT 30;")
    changed = P.fingerprint(db)
    assert cli(tmp_path, "run", db, "--compat", "reference").returncode == 0
    out = cli(tmp_path, "restore", db, "--all")
    assert out.returncode == 0 and "restored run 2" in out.stdout and "restored run 1" in out.stdout, out.stderr
    assert "no run is left" in out.stdout
    after = P.fingerprint(db)
    # Every table and row as before the first run, but the 30 rows added
    # between the runs (which no run had removed) and no dedup_* object left.
    assert set(after) == set(changed) - {k for k in changed if "dedup_" in k} | set(before)
    assert {k: v for k, v in after.items() if k != "pages"} == {k: v for k, v in before.items() if k != "pages"}
    assert len(after["pages"][1]) == len(before["pages"][1]) + 30
    stats = cli(tmp_path, "stats", db)
    assert stats.returncode == 0 and "no run is recorded" in stats.stdout


def test_progress_lines_end_with_every_row_through(tmp_path):
    """The display of a run (a pseudo-terminal is not needed: with_progress
    draws to any stream): phase 1 shows its rows, and every phase with a
    row count ends at its total (the scan's bar once stopped short)."""
    import io
    import sys as _sys
    import crawl
    _sys.path.insert(0, package(tmp_path))
    from sqlite_dedup import cli as C
    db = crawl.make(str(tmp_path / "c.db"), n_articles=1500)
    conn = C.connect(db)
    out = io.StringIO()
    C.with_progress(conn, "SELECT dedup_run('{\"distance\": 200}')", (), out=out, every=0.001)
    lines = [l.split("\r")[-1].strip() for l in out.getvalue().split("\n") if l.strip()]
    counted = [l for l in lines if " rows" in l]
    assert counted, lines
    for l in counted:
        done, total = l.split("] ")[-1].split(" rows")[0].split("/")
        assert done == total, l


@pytest.mark.parametrize("edit,command,said", [
    ("UPDATE dedup_runs SET report = '{\"removed\": [1,2]}'", ["stats"],
     "dedup_runs.report of run 1 must hold `removed` as an object of phase: count, got [1, 2]"),
    ("UPDATE dedup_runs SET report = '{\"removed\": {}, \"rows_after\": \"many\"}'", ["stats"],
     "must hold `rows_after` as a count, got \"many\""),
    ("UPDATE dedup_removed SET dedup_ratio = 'high' WHERE dedup_phase = 4", ["explain", "PHASE4"],
     "dedup_removed.dedup_ratio of the removed row"),
])
def test_values_edited_by_hand_are_named_not_a_python_error(tmp_path, edit, command, said):
    """Issue 76: `stats` after a hand-edited report died with `'list' object
    has no attribute 'items'`, `explain` after a text ratio with `Unknown
    format code 'f'`. Each value is checked where it is read, named with
    its row, and the command exits 1."""
    db = str(tmp_path / "demo.db")
    shutil.copy(P.DEMO, db)
    assert cli(tmp_path, "run", db).returncode == 0
    with sqlite3.connect(db) as conn:
        phase4 = conn.execute("SELECT min(dedup_rowid) FROM dedup_removed WHERE dedup_phase = 4").fetchone()[0]
        conn.execute(edit)
    args = [a.replace("PHASE4", str(phase4)) for a in command]
    out = cli(tmp_path, args[0], db, *args[1:])
    assert out.returncode == 1, (out.stdout, out.stderr)
    assert said in out.stderr and "edited by hand" in out.stderr, out.stderr
    assert "Traceback" not in out.stderr


# The settings' flags come from the extension's table of settings
# (src/sqlite/settings/declared.rs), which python/sqlite_dedup/_declared.py
# holds for the command lines (scripts/settings_table.py writes it).
SPECIAL_FLAGS = {"discard_params": "--keep-params", "near_mode": "--near-mode", "prefer": "--prefer",
                 "lsh_election": "--lsh-election", "fix_urls": "--fix-urls", "full": "--full"}


def test_the_command_lines_table_of_settings_is_the_extensions(sqlite_dedup):
    table = json.loads(P.connect(":memory:").execute("SELECT dedup_settings_table()").fetchone()[0])
    import sqlite_dedup._declared as declared
    assert declared.SETTINGS == table, \
        "python/sqlite_dedup/_declared.py is stale: run /usr/bin/python3 scripts/settings_table.py"
    names = [s["name"] for s in table]
    assert len(names) == len(set(names)) and {"threshold", "against", "lsh_bands"} <= set(names)


def test_every_setting_but_a_jobs_label_has_a_flag_of_run_and_each_flag_reaches_the_run(tmp_path, sqlite_dedup):
    import argparse
    import sqlite_dedup._declared as declared
    from sqlite_dedup._options import add_setting_flags
    table = declared.SETTINGS
    helped = cli(tmp_path, "run", "--help").stdout
    for s in table:
        flag = s["cli"]["flag"] if s["cli"] else SPECIAL_FLAGS.get(s["name"])
        if s["name"] == "job":  # (sqlite-dedup spark's, for its shards)
            continue
        assert flag and flag + " " in helped, (s["name"], flag)
    # A flag of the table's form reaches the run as the setting it names.
    parser = argparse.ArgumentParser()
    add_setting_flags(parser)
    args = parser.parse_args(["--n-min", "3", "--url-rules", "0.5", "--compat", "reference", "--table", "t"])
    assert {k: v for k, v in vars(args).items() if v is not None} == \
        {"n_min": 3, "url_rules": 0.5, "compat": "reference", "table": "t"}
    db = str(tmp_path / "crawl.db")
    shutil.copy(P.DEMO, db)
    out = cli(tmp_path, "run", db, "--n-min", "2", "--boilerplate", "strip", "--boilerplate-min-pages", "3",
              "--distance", "7", "--json")
    assert out.returncode == 0, out.stderr
    recorded = json.loads(sqlite3.connect(db).execute("SELECT settings FROM dedup_runs").fetchone()[0])
    assert (recorded["n_min"], recorded["boilerplate"], recorded["boilerplate_min_pages"], recorded["distance"]) \
        == (2, "strip", 3, 7)
