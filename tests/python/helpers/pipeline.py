"""Helpers to run the sql/ pipeline phase by phase on a copy of a database."""
import csv
import json
import glob
import os
import shutil
import sqlite3

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
EXTENSION = os.environ.get("DEDUP_EXTENSION", os.path.join(ROOT, "target", "release", "libdedup"))
CORPUS = os.environ.get("DEDUP_CORPUS", os.path.join(ROOT, "..", "shared", "corpus"))
PHASES = sorted(glob.glob(os.path.join(ROOT, "sql", "0*.sql")))
HAS_CORPUS = os.path.exists(os.path.join(CORPUS, "parity-5k.db"))
DEMO = os.path.join(ROOT, "demo", "crawl.db")


def require_corpus():
    """Skips the calling test when the test corpus (../shared/corpus, beside
    a checkout) is absent; in CI, which has it, its absence is a failure."""
    if HAS_CORPUS:
        return
    message = f"needs the test corpus {os.path.abspath(CORPUS)}/parity-5k.db (../shared beside the checkout)"
    if os.environ.get("CI"):
        pytest.fail(message)
    pytest.skip(message)


def package(tmp_path):
    """The Python package with the extension where the wheel puts it, in
    `tmp_path/pkg` (made once per test): the folder to put on sys.path or
    PYTHONPATH."""
    dst = os.path.join(str(tmp_path), "pkg", "sqlite_dedup")
    if not os.path.exists(dst):
        shutil.copytree(os.path.join(ROOT, "python", "sqlite_dedup"), dst)
        shutil.copy(EXTENSION + ".so", os.path.join(dst, "dedup0.so"))
    return os.path.join(str(tmp_path), "pkg")


def interruptible(python, *args):
    """The argv of `python -m sqlite_dedup ARGS` with Python's own Ctrl-C
    handler installed first: a process started in the background by a
    shell without job control inherits SIGINT ignored, and Python then
    installs no handler, so a test's SIGINT would be lost (a terminal's
    Ctrl-C never is)."""
    start = ("import runpy, signal, sys; signal.signal(signal.SIGINT, signal.default_int_handler); "
             "sys.argv = ['sqlite_dedup'] + sys.argv[1:]; runpy.run_module('sqlite_dedup', run_name='__main__')")
    return [python, "-c", start, *args]


def connect(path):
    """A connection with the release build of the extension loaded."""
    conn = sqlite3.connect(path, isolation_level=None)
    conn.enable_load_extension(True)
    conn.load_extension(EXTENSION)
    return conn


# The best of three dedup_run()s of the demo on an unloaded machine of the
# class the time limits of the tests were set on (2 cores).
CALIBRATION_SECONDS = 0.2


def machine_factor(tmp_dir):
    """How many times slower than the machine class the time limits were
    set on this machine runs now (at least 1): the best of three
    dedup_run()s of a copy of the demo, against CALIBRATION_SECONDS. A time
    limit inside a test is multiplied by it, so a slow or loaded machine
    passes where only a hang fails."""
    import time
    best = float("inf")
    for i in range(3):
        db = os.path.join(str(tmp_dir), f"calibration-{i}.db")
        shutil.copy(DEMO, db)
        conn = connect(db)
        began = time.monotonic()
        conn.execute("SELECT dedup_run()").fetchone()
        best = min(best, time.monotonic() - began)
        conn.close()
        os.remove(db)
    return max(1.0, best / CALIBRATION_SECONDS)


def settings_known():
    """The settings the extension knows, as its error for an unknown one
    lists them."""
    conn = connect(":memory:")
    try:
        conn.execute("""SELECT dedup_plan('{"no such setting": 1}')""")
    except sqlite3.OperationalError as e:
        return str(e).split("(known: ")[1].rstrip(")").split(", ")
    finally:
        conn.close()
    raise AssertionError("dedup_plan took an unknown setting")


# The settings a command takes as something other than --<key with dashes>,
# or not at all (and why).
FLAG_OF_SETTING = {"discard_params": "--keep-params", "near_mode": "--near-mode"}
NOT_A_FLAG = {"job": "the Spark job's label, which `sqlite-dedup spark run` sets"}


def flags_expected():
    """Each setting's flag in `sqlite-dedup run` and `sqlite-utils dedup`."""
    return {key: FLAG_OF_SETTING.get(key, "--" + key.replace("_", "-"))
            for key in settings_known() if key not in NOT_A_FLAG}


def hold_write_lock(db, seconds):
    """Another process holding `db`'s write lock for `seconds`, once it has
    it (wait for it with .wait())."""
    import subprocess
    import sys
    holder = subprocess.Popen([sys.executable, "-c", f"""
import sqlite3, time
c = sqlite3.connect({db!r}, isolation_level=None)
c.execute("BEGIN IMMEDIATE"); print("held", flush=True); time.sleep({seconds}); c.execute("COMMIT")
"""], stdout=subprocess.PIPE, text=True)
    assert holder.stdout.readline().strip() == "held"
    return holder


def copy_corpus(tmp_path, name="parity-5k.db"):
    require_corpus()
    dst = os.path.join(str(tmp_path), name)
    shutil.copy(os.path.join(CORPUS, name), dst)
    os.chmod(dst, 0o644)
    return dst


def crawl_db(tmp_path, rows, name="crawl.db"):
    """A database of `pages (url, title, content, crawled)` holding `rows`
    (each row's first four values), connected with the extension loaded."""
    path = os.path.join(str(tmp_path), name)
    conn = connect(path)
    conn.execute("CREATE TABLE pages (url TEXT, title TEXT, content TEXT, crawled TEXT)")
    conn.executemany("INSERT INTO pages VALUES (?, ?, ?, ?)", [r[:4] for r in rows])
    return conn


def read_tsv(name):
    require_corpus()
    with open(os.path.join(CORPUS, "expected", name), newline="") as f:
        return list(csv.DictReader(f, delimiter="\t"))


def expected_survivors(variant):
    return {int(r["original_rowid"]): r["canonical_url"] for r in read_tsv(f"parity-5k.{variant}.survivors.tsv")}


def set_settings(conn, **settings):
    conn.execute("CREATE TABLE IF NOT EXISTS dedup_settings (key TEXT PRIMARY KEY, value)")
    for key, value in settings.items():
        conn.execute("INSERT OR REPLACE INTO dedup_settings VALUES (?, ?)", (key, value))


def run_phases(conn, before=None, settings=None):
    """Runs the pipeline and returns its report. With `before` (a phase file
    name -> callable run on the connection before that phase), the run is
    planned (dedup_plan), the callable runs, the phases from that file on
    are run again from sql/ (plain SQL over the plan's temp tables), and the
    plan is applied (dedup_apply)."""
    args = (json.dumps(settings),) if settings else ()
    call = "(?)" if settings else "()"
    if not before:
        return conn.execute(f"SELECT dedup_run{call}", args).fetchone()[0]
    (name, hook), = before.items()
    conn.execute(f"SELECT dedup_plan{call}", args).fetchone()
    hook(conn)
    for path in PHASES[[os.path.basename(p) for p in PHASES].index(name):]:
        for statement in split_statements(open(path).read()):
            conn.execute(statement).fetchall()
    return conn.execute("SELECT dedup_apply()").fetchone()[0]


def split_statements(sql):
    """Splits a script into complete statements (sqlite3.complete_statement)."""
    out, buf = [], ""
    for line in sql.splitlines(keepends=True):
        buf += line
        if sqlite3.complete_statement(buf):
            if buf.strip():
                out.append(buf)
            buf = ""
    # Only comments may follow the last statement.
    assert all(not l.strip() or l.strip().startswith("--") for l in buf.splitlines()), buf
    return out


def substitute_reference_urls(conn, keep_params=False):
    """Replaces phase 1's canonical URLs by the reference's."""
    column = "canonical_url_keep_params" if keep_params else "canonical_url"
    rows = []
    for r in read_tsv("parity-5k.canonical.tsv"):
        url = r[column]
        if url == "DISCARDED":
            rows.append((None, None, None, "ignored: reference", int(r["original_rowid"])))
        else:
            rows.append((url, r["domain"], r["wayback"] or None, None, int(r["original_rowid"])))
    conn.executemany(
        "UPDATE _dedup_prepared SET canonical_url = ?, domain = ?, wayback = ?, discard_reason = ? "
        "WHERE source_rowid = ?",
        rows,
    )


def surviving(conn):
    return {rowid: url for rowid, url in conn.execute("SELECT rowid, url FROM pages")}


def fingerprint(path):
    """Everything a user could see: each schema object with its rows."""
    conn = sqlite3.connect(path)
    conn.text_factory = bytes  # invalid UTF-8 is data too
    out = {}
    for (name, kind, sql) in conn.execute("SELECT name, type, sql FROM sqlite_schema ORDER BY name").fetchall():
        name, kind = name.decode(), kind.decode()
        rows = None
        if kind == "table" and not name.startswith("fts"):
            try:
                rows = conn.execute(f'SELECT rowid, * FROM "{name}" ORDER BY rowid').fetchall()
            except sqlite3.OperationalError:  # WITHOUT ROWID
                rows = sorted(conn.execute(f'SELECT * FROM "{name}"').fetchall())
        out[name] = (sql, rows)
    conn.close()
    return out


def without_times(state):
    """A fingerprint without what differs between two equal runs: dedup_runs'
    `finished` time and the seconds in its report."""
    sql, rows = state["dedup_runs"]
    def strip(report):
        if report is None:
            return None
        r = json.loads(report)
        r.pop("seconds", None)
        return r
    return dict(state, dedup_runs=(sql, [r[:2] + (None,) + r[3:6] + (strip(r[6]),) for r in rows]))
