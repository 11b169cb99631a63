"""Interrupts a run (or a restore) at VM step k, for every k of a stride,
in one host, and checks after each what a careless host then does: it
COMMITs whatever the connection still has open. The database must then be
as before the call (the call failed) or the call's whole work (it
succeeded), the connection must not be left inside the call's transaction,
and an error that says "nothing was changed" must be true, including of the
caller's own pending INSERT when the call ran inside the caller's
transaction.

As a program (run by test_interrupts.py in subprocesses, so that a crash or
a hang of the host is seen as such):
    python3 interrupt_sweep.py HOST FUNCTION TEMPLATE.db STRIDE OFFSET [PART PARTS]
PART of PARTS (default 0 of 1): this process tries every PARTS-th of the
steps, from the PART-th, so that PARTS processes share a sweep.
HOST is python (the sqlite3 module: set_progress_handler + interrupt) or
apsw (setprogresshandler + interrupt); FUNCTION is dedup_run or
dedup_restore. Prints one JSON object: the points tried and the failures."""
import json
import os
import shutil
import sys
import tempfile

from pipeline import fingerprint, without_times

EXTENSION = os.environ["DEDUP_EXTENSION"]
BEAT = os.environ.get("DEDUP_SWEEP_BEAT")  # a file touched after each step tried


def connect(host, path):
    if host == "python":
        import sqlite3
        conn = sqlite3.connect(path, isolation_level=None)
        conn.enable_load_extension(True)
        conn.load_extension(EXTENSION)
        return conn, conn.set_progress_handler, lambda: conn.in_transaction
    import apsw
    conn = apsw.Connection(path)
    conn.enable_load_extension(True)
    conn.load_extension(EXTENSION)
    return conn, conn.setprogresshandler, lambda: not conn.getautocommit()


def query(conn, sql):
    return list(conn.execute(sql))


def attempt(host, path, function, k, in_caller_txn):
    """Runs `function` interrupted at VM step k (0: never); then COMMITs
    whatever is open. Returns (error or None, left open?)."""
    conn, progress, in_txn = connect(host, path)
    if in_caller_txn:
        query(conn, "BEGIN")
        query(conn, "INSERT INTO mine VALUES ('pending')")
    count = [0]

    def handler():
        count[0] += 1
        if count[0] == k:
            conn.interrupt()
        return 0

    progress(handler, 1)
    error = None
    try:
        # (A name, or a call with its arguments.)
        query(conn, f"SELECT {function}" if "(" in function else f"SELECT {function}()")
    except Exception as e:  # the host's error, whatever its class
        error = str(e)
    progress(None, 1)
    left_open = in_txn() and not in_caller_txn
    if in_txn():
        query(conn, "COMMIT")
    conn.close()
    return error, left_open, count[0]


def main(host, function, template, stride, offset, part=0, parts=1):
    work = tempfile.mkdtemp()
    path = os.path.join(work, "t.db")
    shutil.copy(template, path)
    before = normalized(fingerprint(path))
    # The undisturbed call, in the caller's transaction and alone.
    _, _, steps = attempt(host, path, function, 0, False)
    done = normalized(fingerprint(path))
    failures, tried = [], 0
    for k in range(1 + offset % stride, steps + 1, stride)[part::parts]:
        in_caller_txn = (k // stride) % 2 == 1
        shutil.copy(template, path)
        error, left_open, _ = attempt(host, path, function, k, in_caller_txn)
        tried += 1
        if BEAT:  # the parent's hang watch: a step was tried
            with open(BEAT, "w") as beat:
                beat.write(str(k))
        state = fingerprint(path)
        pending = [r[1] for r in state["mine"][1]]
        now = normalized(state)
        problems = []
        if left_open:
            problems.append("the connection was left inside the call's transaction")
        if error is None:
            if now != done:
                problems.append("no error, but the call's work is not whole")
        elif now == done and "nothing was changed" in error:
            problems.append("says nothing was changed, but the work was committed")
        elif now not in (done, before):
            problems.append("the database holds part of the call's work")
        if in_caller_txn:
            said = "rolled back as a whole" in (error or "")
            if said and pending:
                problems.append("says the caller's transaction was rolled back, but it was not")
            if not said and pending != [b"pending"]:
                problems.append("the caller's pending INSERT is gone and the error does not say so")
        if problems:
            failures.append({"step": k, "caller_txn": in_caller_txn, "error": error, "problems": problems})
    shutil.rmtree(work)
    print(json.dumps({"steps": steps, "tried": tried, "failures": failures[:20], "failed": len(failures)}))


def normalized(state):
    """The database but the caller's own table and the run times."""
    state = {k: v for k, v in state.items() if k != "mine"}
    return without_times(state) if "dedup_runs" in state else state


if __name__ == "__main__":
    h, f, t, s, o = sys.argv[1:6]
    main(h, f, t, int(s), int(o), *[int(x) for x in sys.argv[6:8]])
