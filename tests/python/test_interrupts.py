"""Interrupts at VM steps of a small run and of a restore, in every host
that can interrupt (Node's better-sqlite3 cannot): after each, whatever the
host does next (here the careless case: COMMIT), the database is as before
or the call is done, never half; the connection is never left inside the
call's transaction; and the caller's own pending work is kept or the error
says it is gone. Python and apsw interrupt with sqlite3_interrupt from a
progress handler (every STRIDE-th step of the whole run; DEDUP_INTERRUPT_STRIDE=1
tries them all), the shell with its `.progress N --limit K`."""
import json
import os
import random
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time

import pytest

import crawl
import hosts as H
import pipeline as P
from pipeline import fingerprint, without_times

HERE = os.path.dirname(os.path.abspath(__file__))
STRIDE = int(os.environ.get("DEDUP_INTERRUPT_STRIDE", "0"))
SEED = int(os.environ.get("PROPTEST_RNG_SEED", random.randrange(1 << 30)))
# Processes a sweep is shared by (one a core, up to 2: CI's machines have 2).
PARTS = max(1, min(2, len(os.sched_getaffinity(0))))


def template(path, function, incremental=False):
    """A small crawl (every phase removes something) and the caller's own
    table; with `incremental`, run once and then given new pages (copies of
    kept ones under other URLs, one of them edited), so that the next run is
    incremental."""
    crawl.make(path, n_articles=4)
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE mine (x)")
    conn.commit()
    conn.close()
    if function == "dedup_restore" or incremental:
        conn = P.connect(path)
        conn.execute("SELECT dedup_run()").fetchone()
        conn.close()
    if incremental:
        conn = sqlite3.connect(path)
        cols = [r[1] for r in conn.execute("PRAGMA table_info(pages)")]
        names = ", ".join(c if c != "url" else "'https://mirror.example.net/' || rowid || '/' || url" for c in cols)
        conn.execute(f"INSERT INTO pages ({', '.join(cols)}) SELECT {names} FROM pages WHERE rowid % 3 = 0")
        conn.execute("UPDATE pages SET parsed = parsed || ' edited' WHERE rowid = (SELECT max(rowid) FROM pages)")
        conn.commit()
        conn.close()
    return path


def lsh_template(path):
    """A small crawl deduplicated in lsh mode (its settings in
    dedup_settings), then given a batch whose incremental run removes a kept
    row in phase 4 (a longer edited copy under another URL), a copy in
    phase 3, and sees a kept row edited and one deleted: three of its six
    kept rows leave, so the run also sweeps their band keys
    (dedup_index_bands_left)."""
    crawl.make(path, n_articles=6)
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE mine (x)")
    conn.execute("CREATE TABLE dedup_settings (key TEXT PRIMARY KEY, value)")
    conn.execute("INSERT INTO dedup_settings VALUES ('near_mode', 'lsh')")
    conn.commit()
    conn.close()
    conn = P.connect(path)
    conn.execute("SELECT dedup_run()").fetchone()
    conn.close()
    conn = sqlite3.connect(path)
    cols = [r[1] for r in conn.execute("PRAGMA table_info(pages)")]
    kept = [r[0] for r in conn.execute("SELECT rid FROM dedup_index ORDER BY rid")]
    for rid, edit in ((kept[0], True), (kept[1], False)):
        names = ", ".join("'https://mirror.example.net/' || url" if c == "url"
                          else "parsed || ' edited'" if c == "parsed" and edit
                          else "NULL" if c in ("content_hash", "length") and edit else c for c in cols)
        conn.execute(f"INSERT INTO pages ({', '.join(cols)}) SELECT {names} FROM pages WHERE rowid = ?", (rid,))
    conn.execute("UPDATE pages SET parsed = parsed || ' edited', content_hash = NULL WHERE rowid = ?", (kept[2],))
    conn.execute("DELETE FROM pages WHERE rowid = ?", (kept[3],))
    conn.commit()
    conn.close()
    return path


def last_report(path):
    """The report of the run a copy of `path` makes now."""
    conn = P.connect(path)
    conn.execute("SELECT dedup_run()").fetchone()
    report = json.loads(conn.execute("SELECT report FROM dedup_runs ORDER BY run DESC LIMIT 1").fetchone()[0])
    left = conn.execute("SELECT count(*) FROM dedup_index_bands_left").fetchone()[0]
    conn.close()
    return report, left


# Python tries every step of the restore, every second of the full run (a
# small run), every sixth of the incremental run; apsw every tenth of the
# runs and every third of the restore. Each from an offset the seed draws,
# so over CI's runs every step is tried (DEDUP_INTERRUPT_STRIDE=1 tries them
# all in one run).
SWEEPS = [("python", 2, "dedup_run", False), ("python", 6, "dedup_run", True), ("python", 1, "dedup_restore", False),
          ("apsw", 10, "dedup_run", False), ("apsw", 10, "dedup_run", True), ("apsw", 3, "dedup_restore", False)]


@pytest.mark.parametrize("host,stride,function,incremental", SWEEPS,
                         ids=[f"{h}-{s}-{'incremental ' * i}{f}" for h, s, f, i in SWEEPS])
def test_an_interrupt_at_any_step_leaves_before_or_done(tmp_path, host, stride, function, incremental):
    if host not in H.available():
        pytest.skip(f"{host} is not installed here (.ci/run installs it)")
    db = template(str(tmp_path / "t.db"), function, incremental)
    if incremental:  # the run under test is incremental
        probe = str(tmp_path / "probe.db")
        shutil.copy(db, probe)
        report, _ = last_report(probe)
        assert report["kind"] == "incremental" and report["dirty"] > 0 and report["removed"], report
    sweep(host, function, db, STRIDE or stride, P.machine_factor(tmp_path))


def test_an_interrupt_in_an_incremental_lsh_run_leaves_before_or_done(tmp_path):
    """lsh mode's own steps of an incremental run (the band keys of the
    rows that leave listed, then swept; the kept rows' keys read and
    checked), every eighth VM step in Python (from an offset the seed
    draws): the other steps are the window mode's, swept above."""
    db = lsh_template(str(tmp_path / "t.db"))
    probe = str(tmp_path / "probe.db")
    shutil.copy(db, probe)
    report, left = last_report(probe)
    assert report["kind"] == "incremental" and report["gone"] == 2 and report["removed"].get("4"), report
    assert left == 0, "the rows that left were not swept"
    sweep("python", "dedup_run", db, STRIDE or 8, P.machine_factor(tmp_path))


@pytest.mark.parametrize("indexed", [False, True], ids=["copied", "its-index"])
def test_an_interrupt_in_a_run_against_another_database_leaves_before_or_done(tmp_path, indexed):
    """The run's own steps with `against` (the other file opened, its rows
    copied, phase 6 kept to this table's rows; or, where a run left its
    index there, the plan made there and read back), every 24th VM step in
    Python (from an offset the seed draws; the other steps are a full
    run's, swept above); the other file is never written."""
    db = template(str(tmp_path / "t.db"), "dedup_run")
    old = str(tmp_path / "old.db")
    shutil.copy(db, old)
    with sqlite3.connect(old) as c:
        c.execute("DELETE FROM pages WHERE rowid % 2 = 0")
    if indexed:
        conn = P.connect(old)
        conn.execute("SELECT dedup_run()").fetchone()
        conn.close()
    call = "dedup_run('%s')" % json.dumps({"against": old}).replace("'", "''")
    probe = str(tmp_path / "probe.db")
    shutil.copy(db, probe)
    conn = P.connect(probe)
    report = json.loads(conn.execute(f"SELECT {call}").fetchone()[0] and
                        conn.execute("SELECT report FROM dedup_runs").fetchone()[0])
    conn.close()
    assert report["against"]["survivor_there"] > 0 and report["against"]["index"] == indexed, report
    before = fingerprint(old)
    sweep("python", call, db, STRIDE or 24, P.machine_factor(tmp_path))
    assert fingerprint(old) == before


PARAGRAPHS = """dedup_run('{"paragraphs": "dedup"}')"""


def paragraph_template(path, restore=False):
    """A small crawl with one long paragraph planted in every page, so
    that a paragraph run cuts it from all but one; with `restore`, that run
    made (the call under test is then its restore)."""
    template(path, "dedup_run")
    shared = ("A licence paragraph that several pages of this crawl quote in full, long enough to be cut "
              "from every page after the first that holds it, whatever the page.")
    conn = sqlite3.connect(path)
    conn.execute("UPDATE pages SET parsed = parsed || char(10, 10) || ?", (shared,))
    conn.commit()
    conn.close()
    if restore:
        conn = P.connect(path)
        conn.execute(f"SELECT {PARAGRAPHS}").fetchone()
        conn.close()
    return path


@pytest.mark.parametrize("function", [PARAGRAPHS, "dedup_restore"], ids=["paragraphs-run", "its-restore"])
def test_an_interrupt_in_a_paragraph_run_or_its_restore_leaves_before_or_done(tmp_path, function):
    """The paragraph step and the rewrite of the texts it cut (and their
    restore), every fourth VM step in Python from a seeded offset."""
    db = paragraph_template(str(tmp_path / "t.db"), restore=function == "dedup_restore")
    probe = str(tmp_path / "probe.db")
    shutil.copy(db, probe)
    conn = P.connect(probe)
    if function == "dedup_restore":
        assert conn.execute("SELECT count(*) FROM dedup_paragraphs").fetchone()[0] >= 2
    else:
        conn.execute(f"SELECT {PARAGRAPHS}").fetchone()
        report = json.loads(conn.execute("SELECT report FROM dedup_runs ORDER BY run DESC LIMIT 1").fetchone()[0])
        assert report["paragraphs"]["cut"] >= 2, report
    conn.close()
    sweep("python", function, db, STRIDE or 4, P.machine_factor(tmp_path))


def sweep(host, function, db, stride, slower=1.0):
    """Interrupts `function` on copies of `db` at every `stride`-th VM step
    (from a seeded offset) in `host`, shared by one process a core: each
    copies the template to its own folder and tries every PARTS-th step.
    Fails on any step after which the database was half done, or when a
    part tries no step for two minutes times `slower` (P.machine_factor): a
    hang. (A whole sweep's time depends on the machine's load, a hang's
    does not.)"""
    work = tempfile.mkdtemp()
    procs, files = [], []
    for part in range(PARTS):
        out, err = (open(os.path.join(work, f"{part}.{name}"), "w+") for name in ("out", "err"))
        beat = os.path.join(work, f"{part}.beat")
        procs.append(subprocess.Popen([H.PYTHON, os.path.join(HERE, "helpers", "interrupt_sweep.py"), host, function, db,
                                       str(stride), str(SEED % stride), str(part), str(PARTS)],
                                      stdout=out, stderr=err, text=True,
                                      env=dict(os.environ, DEDUP_EXTENSION=P.EXTENSION, DEDUP_SWEEP_BEAT=beat)))
        files.append((out, err, beat))
    parts = []
    try:
        for proc, (out, err, beat) in zip(procs, files):
            while proc.poll() is None:
                time.sleep(1)
                last = os.path.getmtime(beat) if os.path.exists(beat) else None
                quiet = time.time() - (last or os.path.getmtime(out.name))
                assert quiet < 120 * slower, f"{host} {function}: no step tried for {quiet:.0f} s (a hang)"
            out.seek(0), err.seek(0)
            assert proc.returncode == 0, err.read()[-3000:]
            parts.append(json.loads(out.read()))
    finally:
        for proc in procs:
            proc.kill()
        for out, err, _ in files:
            out.close(), err.close()
        shutil.rmtree(work)
    # (The undisturbed call's steps differ by a few between processes.)
    result = {"steps": min(p["steps"] for p in parts), "tried": sum(p["tried"] for p in parts),
              "failed": sum(p["failed"] for p in parts),
              "failures": [f for p in parts for f in p["failures"]][:20]}
    print(f"{host} {function}: {result['tried']} of {result['steps']} steps tried (seed {SEED})")
    assert result["steps"] > 1000 and result["tried"] >= result["steps"] // stride - 1, result
    assert result["failed"] == 0, json.dumps(result["failures"], indent=1)


def shell(db, body):
    proc = subprocess.run(["sqlite3", db], input=f".load {P.EXTENSION}\n{body}\n", capture_output=True,
                          text=True, timeout=120)
    return proc.returncode, proc.stdout, proc.stderr


@pytest.mark.parametrize("function", ["dedup_run", "dedup_restore"])
def test_the_shell_stopped_by_its_progress_limit_then_committing(tmp_path, function):
    """The shell without -bail: `.progress 1 --limit K` stops the call at
    step K; the script goes on and COMMITs (inside the caller's BEGIN too)."""
    if "shell" not in H.available():
        pytest.skip("the sqlite3 shell is not installed here")
    base = template(str(tmp_path / "base.db"), function)
    db = str(tmp_path / "t.db")
    subprocess.run(["cp", base, db], check=True)
    conn = P.connect(db)
    steps = [0]
    conn.set_progress_handler(lambda: steps.__setitem__(0, steps[0] + 1), 1)
    conn.execute(f"SELECT {function}()").fetchone()
    conn.close()

    def normalized(path):
        state = {k: v for k, v in fingerprint(path).items() if k != "mine"}
        return without_times(state) if "dedup_runs" in state else state

    done, before = normalized(db), normalized(base)
    assert steps[0] > 1000
    rng = random.Random(SEED)
    points = sorted(rng.sample(range(1, steps[0]), min(40, steps[0] - 1)))
    bad = []
    for i, k in enumerate(points):
        subprocess.run(["cp", base, db], check=True)
        caller = i % 2 == 1
        body = ("BEGIN;\nINSERT INTO mine VALUES ('pending');\n" if caller else "") + \
            f".progress 1 --limit {k}\nSELECT {function}();\n.progress 0\nCOMMIT;\n"
        rc, out, err = shell(db, body)
        now = normalized(db)
        pending = sqlite3.connect(db).execute("SELECT count(*) FROM mine").fetchone()[0]
        if now not in (before, done):
            bad.append((k, "half", err))
        if now == done and "nothing was changed" in err:
            bad.append((k, "said nothing was changed", err))
        if caller and pending != 1 and "rolled back as a whole" not in err:
            bad.append((k, "caller's INSERT gone unsaid", err))
    assert not bad, bad[:5]


def test_an_error_from_the_step_that_runs_dedup_run_means_nothing_was_changed(tmp_path):
    """Interrupts at random times (a timer thread, as a user's Ctrl-C in a
    host) in an incremental run on the demo. The run's commit is its last
    work, so when the step running `SELECT dedup_run()` fails, nothing was
    committed; an interrupt that lands during the commit or after the
    return fails the host's next step instead, and the run is there
    (docs/pipeline.md, "After an interrupt")."""
    import threading
    import time
    base = str(tmp_path / "base.db")
    shutil.copy(P.DEMO, base)
    conn = P.connect(base)
    conn.execute("SELECT dedup_run()").fetchone()
    conn.execute("INSERT INTO pages (url, parsed, crawled) SELECT url || '?copy=1', parsed, '2031-01-01' "
                 "FROM pages WHERE parsed IS NOT NULL ORDER BY rowid LIMIT 20")
    conn.commit()
    conn.close()
    db = str(tmp_path / "x.db")
    shutil.copy(base, db)
    conn = P.connect(db)
    began = time.monotonic()
    conn.execute("SELECT dedup_run()").fetchone()
    took = time.monotonic() - began
    conn.close()
    rng = random.Random(SEED)
    seen = {"refused": 0, "done": 0, "after": 0}
    for _ in range(40):
        shutil.copy(base, db)
        conn = P.connect(db)
        timer = threading.Timer(rng.uniform(0, took * 1.2), conn.interrupt)
        timer.start()
        try:
            cursor = conn.execute("SELECT dedup_run()")
        except sqlite3.OperationalError as e:
            kind = "refused"
            assert "interrupt" in str(e), e
        else:
            try:
                assert cursor.fetchone()[0].startswith("run 2:")
                kind = "done"
            except sqlite3.OperationalError as e:
                assert "interrupt" in str(e), e
                kind = "after"
        timer.join()
        runs = conn.execute("SELECT count(*) FROM dedup_runs").fetchone()[0]
        conn.close()
        assert runs == (1 if kind == "refused" else 2), (kind, runs)
        if kind == "refused":
            assert fingerprint(db) == fingerprint(base)
        seen[kind] += 1
    assert seen["refused"] > 0, seen
