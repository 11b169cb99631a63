"""Every error the extension raises carries a code (`<function>[<code>]: `)
that the Python layer and the command line map instead of the words
(docs/errors.md): the codes are one table, held equal in the extension, the
Python layer and the docs; each code comes from the case a user meets; and
every function of the extension, called with bad arguments, fails with a
coded error or none."""
import json
import os
import re
import sqlite3
import subprocess
import sys

import pytest

import pipeline as P

FORM = re.compile(r"^([a-z_0-9]+)\[([a-z_]+)\]: \S")


def codes_of_the_extension():
    conn = P.connect(":memory:")
    return [(r["code"], r["meaning"]) for r in json.loads(conn.execute("SELECT dedup_error_codes()").fetchone()[0])]


def test_the_codes_are_one_table_in_the_extension_the_python_layer_and_the_docs(sqlite_dedup):
    codes = codes_of_the_extension()
    assert tuple(c for c, _ in codes) == sqlite_dedup._errors.CODES
    page = open(os.path.join(P.ROOT, "docs", "errors.md")).read()
    rows = re.findall(r"^\| `([a-z_]+)` \| (.+?) \|$", page, re.M)
    assert rows == codes


def error_of(conn, sql, *args):
    with pytest.raises(sqlite3.Error) as e:
        conn.execute(sql, args).fetchall()
    return str(e.value)


def code_of(message):
    m = FORM.match(message)
    assert m, f"no code in {message!r}"
    return m.group(2)


def pages_db(path):
    conn = P.connect(str(path))
    conn.executescript("""CREATE TABLE pages (url TEXT, title TEXT, content TEXT, parsed TEXT, crawled TEXT);
        INSERT INTO pages VALUES ('https://a.example/x', 't', 'one two three four five six seven', NULL, NULL),
                                 ('https://a.example/x?utm_source=z', 't', 'one two three four five six seven', NULL, NULL),
                                 ('https://b.example/y', 't', 'something else entirely', NULL, NULL);""")
    return conn


def test_each_code_comes_from_the_case_it_names(tmp_path):
    """One case a user meets per code (the codes SQLite itself gives a run,
    full and interrupted, are the fault tests' cases), each with its code."""
    conn = pages_db(tmp_path / "a.db")
    assert code_of(error_of(conn, "SELECT dedup_plan(?)", '{"threshold": 2}')) == "setting"
    assert code_of(error_of(conn, "SELECT dedup_plan(?)", '{"treshold": 0.5}')) == "setting"
    assert code_of(error_of(conn, "SELECT dedup_plan(?)", '{"table": "nope"}')) == "no_table"
    conn.execute("CREATE TABLE wr (url TEXT PRIMARY KEY, content TEXT) WITHOUT ROWID")
    assert code_of(error_of(conn, "SELECT dedup_plan(?)", '{"table": "wr"}')) == "table"
    assert code_of(error_of(conn, "SELECT dedup_restore()")) == "state"
    assert code_of(error_of(conn, "SELECT dedup_apply()")) == "state"
    assert code_of(error_of(conn, "SELECT minhash('x', 0)")) == "argument"
    assert code_of(error_of(conn, "SELECT * FROM near_dups('nope', 0.9, 5)")) == "argument"
    assert code_of(error_of(conn, "SELECT dedup_run(?)", json.dumps({"against": str(tmp_path / "a.db")}))) == "against"
    # A trigger of the table refuses the delete: blocked, nothing changed.
    conn.execute("CREATE TRIGGER keep BEFORE DELETE ON pages BEGIN SELECT RAISE(ABORT, 'kept by policy'); END")
    message = error_of(conn, "SELECT dedup_run()")
    assert code_of(message) == "blocked" and "kept by policy" in message
    conn.execute("DROP TRIGGER keep")
    assert conn.execute("SELECT count(*) FROM pages").fetchone()[0] == 3
    # A plan, then the table changes: stale.
    conn.execute("SELECT dedup_plan()").fetchone()
    conn.execute("UPDATE pages SET content = 'changed' WHERE rowid = 3")
    assert code_of(error_of(conn, "SELECT dedup_apply()")) == "stale"
    # The extension's own table edited outside it: own.
    conn.execute("SELECT dedup_run()").fetchone()
    conn.execute("DROP TABLE dedup_runs")
    conn.execute("CREATE VIEW dedup_runs AS SELECT 1 AS run")
    assert code_of(error_of(conn, "SELECT dedup_run()")) == "own"
    # A plan that is not one: plan.
    other = pages_db(tmp_path / "b.db")
    other.execute("CREATE TABLE myplan (x)")
    assert code_of(error_of(other, "SELECT dedup_apply_plan('myplan')")) == "plan"
    # Another connection holds the write lock, and the run may not wait: busy.
    holder = sqlite3.connect(str(tmp_path / "b.db"), isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    waiting = P.connect(str(tmp_path / "b.db"))
    assert code_of(error_of(waiting, "SELECT dedup_run(?)", '{"busy_timeout": 0}')) == "busy"
    holder.execute("ROLLBACK")


def bad_values():
    return [None, "x", -1, 2.5, b"\x00\xff", "{", '{"a": 1}']


def test_every_function_given_bad_arguments_fails_with_a_code_or_not_at_all(tmp_path):
    conn = pages_db(tmp_path / "f.db")
    plain = sqlite3.connect(":memory:")
    q = "SELECT name, narg FROM pragma_function_list"
    ours = sorted(set(conn.execute(q).fetchall()) - set(plain.execute(q).fetchall()))
    assert len(ours) > 30
    uncoded = []
    for name, narg in ours:
        if name in ("dedup_require",):  # the caller's own message
            continue
        counts = [narg] if narg >= 0 else [0, 1, 2, 3]
        for n in counts:
            for value in bad_values():
                sql = f"SELECT {name}({', '.join('?' * n)})"
                try:
                    conn.execute(sql, [value] * n).fetchall()
                except sqlite3.Error as e:
                    message = str(e)
                    if message.startswith("wrong number of arguments"):
                        continue
                    if not FORM.match(message):
                        uncoded.append((name, n, value, message))
                if not conn.in_transaction:
                    continue
                conn.rollback()
    modules = ["near_dups", "near_dups_among", "lsh_bands", "segments", "dedup_elected", "dedup_similar",
               "dedup_band_entries"]
    for name in modules:
        for value in bad_values():
            for n in (1, 2, 3):
                try:
                    conn.execute(f"SELECT * FROM {name}({', '.join('?' * n)})", [value] * n).fetchall()
                except sqlite3.Error as e:
                    if not FORM.match(str(e)) and "too many arguments" not in str(e):
                        uncoded.append((name, n, value, str(e)))
    assert uncoded == [], "\n".join(map(repr, uncoded))


def test_the_command_line_maps_the_code_not_the_words(tmp_path):
    db = tmp_path / "c.db"
    pages_db(db).close()
    env = dict(os.environ, PYTHONPATH=P.package(tmp_path))
    run = subprocess.run([sys.executable, "-m", "sqlite_dedup", "run", str(db), "--table", "nope"],
                         capture_output=True, text=True, env=env, timeout=120)
    assert run.returncode == 1
    assert "sqlite-dedup: dedup[no_table]: table 'nope' not found" in run.stderr
    assert run.stderr.rstrip().endswith("(from this command: --table NAME)")
