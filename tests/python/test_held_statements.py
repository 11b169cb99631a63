"""Statements the extension keeps prepared across calls (dupe_probability's
stamp, owned by the eponymous table dedup_held_statements): every host
still closes its connection, and a host that finalizes every statement
itself before closing neither crashes nor gets wrong answers. Each host
runs in a subprocess, so a crash or a failed close is seen."""
import json
import os
import shutil
import subprocess
import sys
import textwrap

import pytest

from pipeline import EXTENSION

PYTHON = "/usr/bin/python3"

SETUP = [
    "CREATE TABLE pages (url TEXT, title TEXT, content TEXT, crawled TEXT)",
    # Two forms of one page (a tracking parameter), then a third: learned
    # as a rule, so dupe_probability has a model and reads its stamp.
    "INSERT INTO pages VALUES ('https://a.example/p?id=1&ref=x', 't', 'same', '2024'), "
    "('https://a.example/p?id=1&ref=y', 't', 'same', '2024'), "
    "('https://a.example/p?id=1&ref=z', 't', 'same', '2024')",
    "SELECT dedup_learn_url_rules()",
]
PROBE = "SELECT dupe_probability('https://a.example/p?id=1&ref=w')"
HELD = "SELECT sql FROM dedup_held_statements"

# A host on libsqlite3 itself (ctypes): runs statements, may finalize every
# statement of the connection (sqlite3_next_stmt) as some hosts do before
# closing, and prints what sqlite3_close (not _v2) returns.
HOST = textwrap.dedent(r"""
    import ctypes, json, sys
    lib = ctypes.CDLL("libsqlite3.so.0")
    lib.sqlite3_next_stmt.restype = ctypes.c_void_p
    lib.sqlite3_next_stmt.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
    lib.sqlite3_finalize.argtypes = [ctypes.c_void_p]
    lib.sqlite3_close.argtypes = [ctypes.c_void_p]
    lib.sqlite3_exec.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p, ctypes.c_void_p,
                                 ctypes.POINTER(ctypes.c_char_p)]
    path, ext, steps = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
    db = ctypes.c_void_p()
    assert lib.sqlite3_open(path.encode(), ctypes.byref(db)) == 0
    lib.sqlite3_enable_load_extension(db, 1)
    err = ctypes.c_char_p()
    assert lib.sqlite3_load_extension(db, ext.encode(), None, ctypes.byref(err)) == 0, err.value
    CALLBACK = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_int,
                                ctypes.POINTER(ctypes.c_char_p), ctypes.POINTER(ctypes.c_char_p))
    for step in steps:
        if step == "finalize every statement":
            n = 0
            while True:
                s = lib.sqlite3_next_stmt(db, None)
                if not s:
                    break
                lib.sqlite3_finalize(s)
                n += 1
            print("finalized", n, flush=True)
            continue
        rows = []
        cb = CALLBACK(lambda _, n, values, names: rows.append(
            [values[i].decode() if values[i] is not None else None for i in range(n)]) or 0)
        rc = lib.sqlite3_exec(db, step.encode(), cb, None, ctypes.byref(err))
        assert rc == 0, (step, err.value)
        print(json.dumps(rows), flush=True)
    print("close", lib.sqlite3_close(db), flush=True)
""")


def host(tmp_path, steps):
    path = os.path.join(str(tmp_path), "held.db")
    out = subprocess.run([PYTHON, "-c", HOST, path, EXTENSION, json.dumps(steps)],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return out.stdout.splitlines()


def test_the_stamp_statement_is_held_and_the_connection_closes(tmp_path):
    lines = host(tmp_path, SETUP + [HELD, PROBE, PROBE, HELD])
    assert lines[len(SETUP)] == "[]"  # nothing held before the first prediction
    assert lines[-4] == lines[-3] and lines[-4] != "[[null]]"  # the same prediction twice
    held = lines[-2]
    assert "dedup_url_state" in held and "dupe_probability's stamp" in held
    # sqlite3_close (not _v2) fails while any statement is unfinalized: the
    # table's disconnect finalized the held one first.
    assert lines[-1] == "close 0"


def test_a_host_that_finalizes_every_statement_before_closing(tmp_path):
    lines = host(tmp_path, SETUP + [PROBE, "finalize every statement", PROBE, HELD,
                                    "finalize every statement"])
    before, finalized, after, held, again, close = lines[len(SETUP):]
    # The held statement was one of those the host finalized; the next
    # prediction prepared it again and answers the same.
    assert finalized == "finalized 1"
    assert after == before and before != "[[null]]"
    assert "dupe_probability's stamp" in held
    assert again == "finalized 1"
    # The disconnect at close did not finalize it a second time.
    assert close == "close 0"


def test_the_sqlite3_shell_closes_without_complaint(tmp_path):
    if not shutil.which("sqlite3"):
        pytest.skip("no sqlite3 shell")
    path = os.path.join(str(tmp_path), "shell.db")
    script = "\n".join(s + ";" for s in SETUP + [PROBE, HELD]) + "\n"
    out = subprocess.run(["sqlite3", "-cmd", f".load {EXTENSION}", path], input=script,
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and out.stderr == "", out.stderr
    assert "dupe_probability's stamp" in out.stdout


def test_apsw_closes_without_complaint(tmp_path):
    code = textwrap.dedent(f"""
        import apsw
        conn = apsw.Connection({os.path.join(str(tmp_path), 'apsw.db')!r})
        conn.enable_load_extension(True)
        conn.load_extension({EXTENSION!r})
        for sql in {SETUP!r}:
            conn.execute(sql).fetchall()
        print(conn.execute({PROBE!r}).fetchall())
        print(len(conn.execute({HELD!r}).fetchall()))
        conn.close()  # raises when sqlite3_close fails
        print("closed")
    """)
    if subprocess.run([PYTHON, "-c", "import apsw"], capture_output=True).returncode != 0:
        pytest.skip("no apsw")
    out = subprocess.run([PYTHON, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    probability, held, closed = out.stdout.splitlines()
    assert probability != "[(None,)]" and held == "1" and closed == "closed"


def test_python_closes_and_a_new_connection_holds_its_own(tmp_path):
    import sqlite3
    path = os.path.join(str(tmp_path), "py.db")
    for _ in range(2):
        conn = sqlite3.connect(path)
        conn.enable_load_extension(True)
        conn.load_extension(EXTENSION)
        if conn.execute("SELECT count(*) FROM sqlite_master WHERE name = 'pages'").fetchone()[0] == 0:
            for sql in SETUP:
                conn.execute(sql).fetchall()
            conn.commit()
        assert conn.execute(HELD).fetchall() == []
        assert conn.execute(PROBE).fetchone()[0] is not None
        assert len(conn.execute(HELD).fetchall()) == 1
        conn.close()
