"""A database made by someone else is data, not code: a `prefer` term read
from its own `dedup_settings` may do no more than its triggers could
(docs/safety.md's trust model). Each case runs a host in a subprocess on a
copy of the demo whose `dedup_settings` holds the hostile term, and checks
that the run is refused with the function or object named, that nothing
was written anywhere (the marker file, the table), and that the same term
in the call's JSON argument is the caller's own SQL."""
import json
import os
import shutil
import sqlite3
import subprocess
import textwrap

import pytest

import hosts
import pipeline as P

PYTHON = hosts.PYTHON


def stranger_db(tmp_path, term, name="stranger.db"):
    """A copy of the demo whose dedup_settings holds `term` as its one
    prefer term (written through parameters, so the term is data)."""
    db = str(tmp_path / name)
    shutil.copy(P.DEMO, db)
    conn = sqlite3.connect(db)
    conn.execute("CREATE TABLE dedup_settings (key TEXT PRIMARY KEY, value)")
    conn.execute("INSERT INTO dedup_settings VALUES ('prefer', json_array(?))", (term,))
    conn.commit()
    conn.close()
    return db


def pages(db):
    conn = sqlite3.connect(db)
    try:
        return conn.execute("SELECT count(*), total(length(url)) FROM pages").fetchone()
    finally:
        conn.close()


def hostile_terms(marker):
    """(term, what the refusal must name)."""
    return [
        (f"length(writefile('{marker}', 'x')) DESC", "writefile()"),
        ("length(readfile('/etc/hostname'))", "readfile()"),
        ("edit('x')", "edit()"),
        (f"load_extension('{marker}.so')", "load_extension()"),
        ("(SELECT count(*) FROM sqlite_master)", "subquery"),
        ("(SELECT max(rowid) FROM pages)", "subquery"),
        ("url IN (SELECT key FROM dedup_settings)", "another table (dedup_settings)"),
    ]


@pytest.mark.parametrize("host", ["shell", "python", "apsw", "node"])
def test_a_hostile_prefer_in_dedup_settings_is_refused_in_every_host(tmp_path, host):
    if host not in hosts.available():
        pytest.skip(f"{host} is not installed here")
    marker = str(tmp_path / "written-by-the-database")
    script = tmp_path / "run.sql"
    for statement in ["SELECT dedup_run();", "SELECT dedup_plan();"]:
        script.write_text(statement + "\n")
        for term, named in hostile_terms(marker):
            db = stranger_db(tmp_path, term)
            before = pages(db)
            code, out, err = hosts.run(host, db, str(script), P.EXTENSION)
            said = out + err
            # (readfile, writefile and edit are the shell's: elsewhere they
            # do not exist, and the refusal says so.)
            absent = host != "shell" and named in ("writefile()", "readfile()", "edit()")
            named_here = f"no such function: {named[:-2]}" if absent else named
            assert "from dedup_settings" in said and named_here in said, (host, statement, term, said)
            assert "nothing was changed" in said, said
            assert not os.path.exists(marker), (host, term)
            assert not os.path.exists(marker + ".so")
            assert pages(db) == before, (host, term)
            conn = sqlite3.connect(db)
            assert conn.execute("SELECT count(*) FROM sqlite_master WHERE name = 'dedup_runs'").fetchone()[0] == 0
            conn.close()


def test_a_benign_prefer_in_dedup_settings_runs_as_from_the_call(tmp_path):
    """Columns, literals, operators, built-in and this extension's pure
    functions: the same survivors as the same term in the JSON argument."""
    term = "lower(url) COLLATE NOCASE DESC NULLS LAST"
    db = stranger_db(tmp_path, "length(parsed) DESC")
    other = str(tmp_path / "caller.db")
    shutil.copy(P.DEMO, other)
    for path, arg in [(db, None), (other, json.dumps({"prefer": ["length(parsed) DESC"]}))]:
        conn = P.connect(path)
        conn.execute("SELECT dedup_run(?)", (arg,)).fetchone()
        conn.close()
    kept = [sqlite3.connect(p).execute("SELECT rowid, url FROM pages ORDER BY rowid").fetchall() for p in (db, other)]
    assert kept[0] == kept[1] and len(kept[0]) < 600
    db2 = stranger_db(tmp_path, f"canonical_url(url) DESC, {term}", name="pure.db")
    conn = P.connect(db2)
    report = conn.execute("SELECT dedup_run()").fetchone()[0]
    assert report.startswith("run 1: 600 rows")


def test_a_host_function_is_callable_from_the_call_not_from_the_database(tmp_path):
    """A function the Python host registers (not flagged innocuous, as
    Python's sqlite3 registers them all): refused from dedup_settings,
    the caller's own SQL from the JSON argument."""
    marker = str(tmp_path / "called")
    db = stranger_db(tmp_path, "host_rank(url)")
    code = textwrap.dedent(f"""
        import json, sqlite3, sys
        conn = sqlite3.connect({db!r}, isolation_level=None)
        conn.enable_load_extension(True)
        conn.load_extension({P.EXTENSION!r})
        def host_rank(url):
            open({marker!r}, "a").write("x")
            return len(url)
        conn.create_function("host_rank", 1, host_rank, deterministic=True)
        try:
            conn.execute("SELECT dedup_run()").fetchone()
            print("ran")
        except sqlite3.Error as e:
            print("refused:", e)
        import os
        print("called" if os.path.exists({marker!r}) else "not called")
        print(conn.execute("SELECT dedup_run(?)", (json.dumps({{"prefer": ["host_rank(url) DESC"]}}),)).fetchone()[0].splitlines()[0])
        print("called" if os.path.exists({marker!r}) else "not called")
    """)
    proc = subprocess.run([PYTHON, "-c", code], capture_output=True, text=True, timeout=120)
    lines = proc.stdout.splitlines()
    assert proc.returncode == 0, proc.stderr
    assert lines[0].startswith("refused:") and "host_rank()" in lines[0] and "from dedup_settings" in lines[0], lines
    assert lines[1] == "not called"
    assert lines[2] == "run 1: 600 rows -> " + lines[2].split("-> ")[1]
    assert lines[3] == "called"


def test_apsw_directonly_function_is_refused_from_the_database(tmp_path):
    if "apsw" not in hosts.available():
        pytest.skip("apsw is not installed here")
    marker = str(tmp_path / "called")
    db = stranger_db(tmp_path, "sneaky(url)")
    code = textwrap.dedent(f"""
        import apsw
        conn = apsw.Connection({db!r})
        conn.enable_load_extension(True)
        conn.load_extension({P.EXTENSION!r})
        def sneaky(url):
            open({marker!r}, "a").write("x")
            return 1
        conn.create_scalar_function("sneaky", sneaky, 1, deterministic=True,
                                    flags=apsw.SQLITE_DIRECTONLY | apsw.SQLITE_INNOCUOUS)
        try:
            conn.execute("SELECT dedup_run()").fetchall()
            print("ran")
        except apsw.Error as e:
            print("refused:", e)
    """)
    proc = subprocess.run([PYTHON, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("refused:") and "sneaky()" in proc.stdout, proc.stdout
    assert not os.path.exists(marker)


def test_a_prefer_term_that_fails_on_a_row_names_the_term_and_the_row(tmp_path):
    db = str(tmp_path / "overflow.db")
    shutil.copy(P.DEMO, db)
    conn = P.connect(db)
    target = conn.execute("SELECT rowid FROM pages ORDER BY rowid LIMIT 1 OFFSET 41").fetchone()[0]
    term = f"abs(-9223372036854775807 - (rowid = {target}))"
    with pytest.raises(sqlite3.Error) as e:
        conn.execute("SELECT dedup_run(?)", (json.dumps({"prefer": ["url", term]}),)).fetchone()
    message = str(e.value)
    assert f"prefer term 2" in message and f"rowid is {target}" in message, message
    assert "integer overflow" in message and "nothing was changed" in message
    assert conn.execute("SELECT count(*) FROM pages").fetchone()[0] == 600


@pytest.mark.parametrize("call", ["dedup_similar('a page', 'https://a.org/')", "dedup_phase1_arrow(x'00')",
                                  "dedup_run()", "dedup_restore()", "dedup_rows_arrow('pages', NULL)"])
def test_the_writing_and_arrow_functions_are_refused_in_a_databases_views_and_triggers(tmp_path, call):
    """A database someone else made cannot make a reader call the functions
    that write, plan or take batches: they are DIRECTONLY, so SQLite
    refuses them in its views and triggers (`unsafe use of`), and nothing
    changes."""
    db = str(tmp_path / "stranger.db")
    shutil.copy(P.DEMO, db)
    with sqlite3.connect(db) as c:
        c.execute(f"CREATE VIEW lure AS SELECT {call} AS x")
        c.execute("CREATE TABLE log (x)")
        c.execute(f"CREATE TRIGGER lure_t AFTER INSERT ON log BEGIN SELECT {call}; END")
    before = P.fingerprint(db)
    conn = P.connect(db)
    name = call.split("(")[0]
    for sql in ("SELECT * FROM lure", "INSERT INTO log VALUES (1)"):
        with pytest.raises(sqlite3.OperationalError, match=f"unsafe use of {name}"):
            conn.execute(sql).fetchall()
    conn.close()
    assert P.fingerprint(db) == before
