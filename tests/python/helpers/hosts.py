"""Runs an SQL script against a database in a host process, the way a user
of that host would: the sqlite3 shell without -bail, Python's sqlite3
`executescript`, apsw, Node's better-sqlite3 `exec`. Each run is a
subprocess, so a crash, an abort or a hang is seen as such.

As a program: python3 hosts.py HOST DB SCRIPT [--interrupt-after SECONDS] [--readonly]
(HOST is python or apsw)."""
import os
import shutil
import subprocess
import sys
import threading

HERE = os.path.dirname(os.path.abspath(__file__))
PYTHON = os.environ.get("DEDUP_PYTHON", "/usr/bin/python3")
NODE_DIR = os.environ.get("DEDUP_NODE_DIR", os.path.join(os.path.dirname(os.path.dirname(HERE)), "node"))


def available():
    """The hosts this machine has."""
    hosts = []
    if shutil.which("sqlite3"):
        hosts.append("shell")
    hosts.append("python")
    if subprocess.run([PYTHON, "-c", "import apsw"], capture_output=True).returncode == 0:
        hosts.append("apsw")
    if shutil.which("node") and os.path.isdir(os.path.join(NODE_DIR, "node_modules", "better-sqlite3")):
        hosts.append("node")
    return hosts


def command(host, db, script, extension, readonly=False, interrupt_after=None):
    """The argv that runs `script` (a file) on `db` in `host`."""
    if host == "shell":
        return ["sqlite3"] + (["-readonly"] if readonly else []) + [db, f".load {extension}", f".read {script}"]
    if host == "node":
        args = ["node", os.path.join(NODE_DIR, "host.js"), db, script, extension]
    else:
        args = [PYTHON, os.path.join(HERE, "hosts.py"), host, db, script]
    if readonly:
        args.append("--readonly")
    if interrupt_after is not None:
        args += ["--interrupt-after", str(interrupt_after)]
    return args


def start(host, db, script, extension, readonly=False, interrupt_after=None):
    """Starts the host; the shell is interrupted by SIGINT (as Ctrl-C does)."""
    env = dict(os.environ, DEDUP_EXTENSION=extension)
    proc = subprocess.Popen(command(host, db, script, extension, readonly, interrupt_after if host != "shell" else None),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    if host == "shell" and interrupt_after is not None:
        timer = threading.Timer(interrupt_after, lambda: proc.poll() is None and proc.send_signal(2))
        timer.start()
    return proc


def run(host, db, script, extension, timeout=120, **kw):
    """Runs to the end: (returncode, stdout, stderr)."""
    proc = start(host, db, script, extension, **kw)
    out, err = proc.communicate(timeout=timeout)
    return proc.returncode, out, err


def _main(argv):
    host, db, script = argv[:3]
    readonly = "--readonly" in argv
    interrupt_after = float(argv[argv.index("--interrupt-after") + 1]) if "--interrupt-after" in argv else None
    extension = os.environ["DEDUP_EXTENSION"]
    sql = open(script).read()
    if host == "python":
        import sqlite3
        conn = sqlite3.connect(f"file:{db}?mode=ro" if readonly else db, uri=True)
        conn.enable_load_extension(True)
        conn.load_extension(extension)
        run_script = conn.executescript
    elif host == "apsw":
        import apsw
        conn = apsw.Connection(db, flags=apsw.SQLITE_OPEN_READONLY if readonly else
                               apsw.SQLITE_OPEN_READWRITE | apsw.SQLITE_OPEN_CREATE)
        conn.enable_load_extension(True)
        conn.load_extension(extension)

        def run_script(text):
            for row in conn.execute(text):
                print("|".join("" if v is None else str(v) for v in row))
    else:
        raise SystemExit(f"unknown host {host}")
    if interrupt_after is not None:
        threading.Timer(interrupt_after, conn.interrupt).start()
    try:
        run_script(sql)
    except Exception as e:  # every host error: report it as the host would
        print(f"Error: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
