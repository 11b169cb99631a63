"""The packages as a user gets them: scripts/dist builds the release archive
and the wheel; the wheel installs into fresh virtual environments of
Debian's python3 and gives `sqlite_dedup.load/run/explain/restore/stats`
and the `sqlite-dedup` command."""
import glob
import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
import tarfile

import pytest

import pipeline as P

# One process runs this module whole under xdist (conftest.py).
pytestmark = pytest.mark.xdist_group("packages")
DIST = os.path.join(P.ROOT, "dist")
PYTHON = os.environ.get("DEDUP_PYTHON", "/usr/bin/python3")


@pytest.fixture(scope="module")
def dist():
    subprocess.run([os.path.join(P.ROOT, "scripts", "dist")], check=True, capture_output=True)
    files = sorted(os.listdir(DIST))
    version = re.search(r'^version = "(.*)"', open(os.path.join(P.ROOT, "Cargo.toml")).read(), re.M).group(1)
    return {"version": version, "files": files}


def our_wheel(dist):
    """The sqlite-dedup wheel for this machine."""
    import platform
    name = f"sqlite_dedup-{dist['version']}-py3-none-manylinux_2_34_{platform.machine()}.whl"
    assert name in dist["files"], dist["files"]
    return os.path.join(DIST, name)


def installed(tmp_path, dist, system=False):
    """A fresh venv of Debian's python3 with our wheel installed; its bin/."""
    bin_ = venv(tmp_path, "venv", system=system)
    subprocess.run([f"{bin_}/pip", "install", "-q", "--no-index", our_wheel(dist)], check=True)
    return bin_


def venv(tmp_path, name, python=PYTHON, system=False):
    path = str(tmp_path / name)
    subprocess.run([python, "-m", "venv"] + (["--system-site-packages"] if system else []) + [path], check=True)
    return os.path.join(path, "bin")


def test_dist_has_the_archive_the_wheel_and_checksums(dist):
    v = dist["version"]
    archive = f"sqlite-dedup-{v}-loadable-linux-x86_64.tar.gz"  # sqlite-vec's naming
    assert archive in dist["files"]
    assert f"sqlite_dedup-{v}-py3-none-manylinux_2_34_x86_64.whl" in dist["files"]
    assert f"sqlite-dedup-{v}.tgz" in dist["files"]
    assert f"sqlite_utils_sqlite_dedup-{v}-py3-none-any.whl" in dist["files"]
    assert f"datasette_sqlite_dedup-{v}-py3-none-any.whl" in dist["files"]
    subprocess.run(["sha256sum", "-c", "SHA256SUMS"], cwd=DIST, check=True, capture_output=True)
    with tarfile.open(os.path.join(DIST, archive)) as t:
        names = {n.removeprefix("./") for n in t.getnames()}
        readme = t.extractfile("./README.md").read().decode()
    # The extension at the top, no folder; the docs the README links to are in it.
    assert {"dedup0.so", "sql/dedup.sql", "sql/restore.sql", "README.md", "LICENSE", "docs/pipeline.md",
            "docs/clients.md"} <= names
    assert "cargo" not in readme and ".load ./dedup0" in readme
    for linked in re.findall(r"`(docs/[\w./-]+\.md)`", readme):
        assert linked in names, linked


def test_the_glibc_and_sqlite_floors_are_what_the_readme_states(dist):
    out = subprocess.run(["objdump", "-T", os.path.join(P.ROOT, "target", "release", "libdedup.so")],
                         capture_output=True, text=True, check=True).stdout
    versions = {tuple(int(x) for x in v.split(".")) for v in re.findall(r"GLIBC_([0-9.]+)", out)}
    assert max(versions) <= (2, 34)
    readme = open(os.path.join(P.ROOT, "README.md")).read()
    assert "glibc 2.34" in readme
    # The SQLite floor is compiled into the file: it refuses older hosts at
    # load ("SQLite version mismatch") and reports its minimum.
    with open(os.path.join(P.ROOT, "target", "release", "libdedup.so"), "rb") as f:
        assert b"SQLite version mismatch" in f.read()
    debug = subprocess.run(["sqlite3", ":memory:", f".load {P.EXTENSION}", "select dedup_debug()"],
                           capture_output=True, text=True, check=True).stdout
    assert "(minimum 3.34.1)" in debug and "SQLite 3.34.1" in readme


def test_the_wheel_in_a_fresh_venv_loads_runs_explains_and_restores(tmp_path, dist):
    bin_ = installed(tmp_path, dist)
    db = str(tmp_path / "demo.db")
    shutil.copy(P.DEMO, db)
    code = f"""
import json, sqlite3, sqlite_dedup
conn = sqlite3.connect({db!r})
sqlite_dedup.load(conn)
report = sqlite_dedup.run(conn, threshold=0.9)
removed = conn.execute("SELECT dedup_rowid FROM dedup_removed WHERE dedup_phase = 2 LIMIT 1").fetchone()[0]
print(json.dumps({{"report": report, "why": sqlite_dedup.explain(conn, removed), "stats": sqlite_dedup.stats(conn),
                   "version": sqlite_dedup.__version__}}))
"""
    out = json.loads(subprocess.run([f"{bin_}/python", "-c", code], capture_output=True, text=True,
                                    check=True).stdout)
    assert (out["report"]["rows_before"], out["report"]["rows_after"]) == (600, 245)
    assert out["report"]["removed"] == {"1": 58, "2": 144, "3": 105, "4": 48}
    assert out["why"]["phase"] == 2 and out["why"]["final_url"]
    assert [s["run"] for s in out["stats"]] == [1] and out["version"] == dist["version"]
    # The command: no sqlite3 shell needed.
    shutil.copy(P.DEMO, db)
    run = subprocess.run([f"{bin_}/sqlite-dedup", "run", db, "--threshold", "0.9", "--mode", "window"],
                         capture_output=True, text=True, check=True)
    assert run.stdout.startswith("run 1: 600 rows -> 245 rows")
    why = subprocess.run([f"{bin_}/sqlite-dedup", "explain", db, str(removed_rowid(db))],
                         capture_output=True, text=True, check=True)
    assert "removed by run 1" in why.stdout and "kept: rowid" in why.stdout
    stats = subprocess.run([f"{bin_}/sqlite-dedup", "stats", db], capture_output=True, text=True, check=True)
    assert stats.stdout.startswith("run 1 (")
    restore = subprocess.run([f"{bin_}/sqlite-dedup", "restore", db], capture_output=True, text=True, check=True)
    assert restore.stdout.startswith("restored run 1: 355 row(s) back")
    bad = subprocess.run([f"{bin_}/sqlite-dedup", "run", db, "--threshold", "1.5"], capture_output=True, text=True)
    assert bad.returncode == 1 and "threshold must be in [0.0, 1.0], got 1.5" in bad.stderr


def test_the_wheel_carries_the_scrapy_layer_as_an_extra(tmp_path, dist):
    """Issue 77: `pip install "sqlite-dedup[scrapy]"`. The extra names
    Scrapy; without it, importing the layer says how to get it; with it
    (installed from this machine's own Scrapy: a venv that sees the system's
    packages, no index), the middleware and pipeline import."""
    import zipfile
    with zipfile.ZipFile(our_wheel(dist)) as w:
        meta = w.read(f"sqlite_dedup-{dist['version']}.dist-info/METADATA").decode()
    assert "Provides-Extra: scrapy" in meta and 'Requires-Dist: scrapy>=2.11; extra == "scrapy"' in meta
    bare = installed(tmp_path, dist)
    imp = subprocess.run([f"{bare}/python", "-c", "import sqlite_dedup.scrapy"], capture_output=True, text=True)
    assert imp.returncode == 1 and 'pip install "sqlite-dedup[scrapy]"' in imp.stderr, imp.stderr
    if subprocess.run([PYTHON, "-c", "import scrapy"], capture_output=True).returncode:
        if os.environ.get("CI"):
            pytest.fail("needs scrapy for the system's python3 (tests/install installs it)")
        pytest.skip("needs scrapy for the system's python3 (tests/install installs it)")
    bin_ = venv(tmp_path, "with-scrapy", system=True)
    subprocess.run([f"{bin_}/pip", "install", "-q", "--no-index", our_wheel(dist) + "[scrapy]"], check=True)
    ok = subprocess.run([f"{bin_}/python", "-c", "from sqlite_dedup.scrapy import AvoidDupContentMiddleware, "
                         "DedupPipeline; print('ok')"], capture_output=True, text=True)
    assert ok.stdout.strip() == "ok", ok.stderr


def test_the_wheel_carries_the_spark_layer_as_an_extra(tmp_path, dist):
    import zipfile
    with zipfile.ZipFile(our_wheel(dist)) as w:
        names = set(w.namelist())
        meta = w.read(f"sqlite_dedup-{dist['version']}.dist-info/METADATA").decode()
    assert {"sqlite_dedup/spark/__init__.py", "sqlite_dedup/spark/cli.py", "sqlite_dedup/spark/_tasks.py", "sqlite_dedup/spark/_columns.py"} <= names
    assert "Provides-Extra: spark" in meta and 'Requires-Dist: pyspark>=4.0; extra == "spark"' in meta
    # Without PySpark the command says how to get it, and changes nothing.
    bin_ = installed(tmp_path, dist)
    db = str(tmp_path / "demo.db")
    shutil.copy(P.DEMO, db)
    run = subprocess.run([f"{bin_}/sqlite-dedup", "spark", "run", db], capture_output=True, text=True)
    assert run.returncode == 2 and 'pip install "<the sqlite_dedup wheel>[spark]"' in run.stderr, run.stderr
    # (Importing the subpackage does not import PySpark.)
    imp = subprocess.run([f"{bin_}/python", "-c", "import sqlite_dedup.spark, sys; print('pyspark' in sys.modules)"],
                         capture_output=True, text=True, check=True)
    assert imp.stdout.strip() == "False"


def removed_rowid(db):
    import sqlite3
    return sqlite3.connect(db).execute("SELECT dedup_rowid FROM dedup_removed LIMIT 1").fetchone()[0]


def test_the_wheel_with_apsw(tmp_path, dist):
    if subprocess.run([PYTHON, "-c", "import apsw"], capture_output=True).returncode != 0:
        if os.environ.get("CI"):
            pytest.fail("apsw is installed in CI")
        pytest.skip("apsw not installed")
    bin_ = installed(tmp_path, dist, system=True)
    db = str(tmp_path / "demo.db")
    shutil.copy(P.DEMO, db)
    code = f"""
import apsw, sqlite_dedup
conn = apsw.Connection({db!r})
sqlite_dedup.load(conn)
print(sqlite_dedup.run(conn)["rows_after"])
"""
    out = subprocess.run([f"{bin_}/python", "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "245"


def test_an_interpreter_that_cannot_load_extensions_gets_the_fix_named(tmp_path, dist):
    python = shutil.which("python3")
    if not python or subprocess.run([python, "-c", "import sqlite3; sqlite3.connect(':memory:').enable_load_extension"],
                                    capture_output=True).returncode == 0:
        pytest.skip("no python3 without enable_load_extension on this machine")
    code = f"""
import sys, sqlite3
sys.path.insert(0, {os.path.join(P.ROOT, 'python')!r})
import sqlite_dedup
try:
    sqlite_dedup.load(sqlite3.connect(':memory:'))
except sqlite_dedup.ExtensionLoadError as e:
    print(e)
"""
    out = subprocess.run([python, "-c", code], capture_output=True, text=True, check=True)
    assert "cannot load extensions" in out.stdout and "apsw" in out.stdout and "/usr/bin/python3" in out.stdout


def test_the_command_shows_progress_on_a_terminal_only(tmp_path, dist):
    import crawl
    import pty
    bin_ = installed(tmp_path, dist)
    db = crawl.make(str(tmp_path / "slow.db"), n_articles=1500)
    quiet = str(tmp_path / "quiet.db")
    shutil.copy(db, quiet)
    # stderr on a pseudo-terminal: one line per phase, the scan with rows and an estimate.
    master, slave = pty.openpty()
    proc = subprocess.Popen([f"{bin_}/sqlite-dedup", "run", db, "--distance", "800"], stdout=subprocess.PIPE,
                            stderr=slave, text=True)
    os.close(slave)
    shown = b""
    while True:
        try:
            chunk = os.read(master, 4096)
        except OSError:
            break
        if not chunk:
            break
        shown += chunk
    out, _ = proc.communicate()
    assert proc.returncode == 0 and out.startswith("run 1: 2750 rows -> 1500 rows"), out
    screen = shown.decode()
    assert "[7/7] apply" in screen, screen[-500:]
    assert re.search(r"\[4/7\] 04_near_dups \[#* *\] \d+/\d+ rows, \d+ s, ~\d+ s left", screen), screen[-800:]
    # Not on a terminal: the report only.
    run = subprocess.run([f"{bin_}/sqlite-dedup", "run", quiet, "--distance", "800"], capture_output=True, text=True)
    assert run.returncode == 0 and run.stderr == "" and run.stdout.startswith("run 1: 2750 rows -> 1500 rows")


def test_the_npm_package_gives_node_the_path_to_load(tmp_path, dist):
    node_modules = os.path.join(P.ROOT, "tests", "node", "node_modules")
    if not shutil.which("node") or not os.path.isdir(os.path.join(node_modules, "better-sqlite3")):
        if os.environ.get("CI"):
            pytest.fail("node and tests/node's better-sqlite3 are installed in CI")
        pytest.skip("node or better-sqlite3 (tests/node) not installed")
    tgz = os.path.join(DIST, f"sqlite-dedup-{dist['version']}.tgz")
    project = tmp_path / "app"
    project.mkdir()
    (project / "package.json").write_text('{"name": "app", "private": true}')
    subprocess.run(["npm", "install", "--no-audit", "--no-fund", "--loglevel=error", tgz], cwd=project, check=True,
                   capture_output=True)
    db = str(tmp_path / "demo.db")
    shutil.copy(P.DEMO, db)
    script = f"""
const Database = require("better-sqlite3");
const {{ getLoadablePath }} = require("sqlite-dedup");
const db = new Database({json.dumps(db)});
db.loadExtension(getLoadablePath());
const report = db.prepare("SELECT dedup_run()").pluck().get();
const big = db.prepare("SELECT simhash('a b c') AS h").safeIntegers().get().h;
// load(db), as docs/clients/node.md shows, on a second database; parameters bound.
const other = new Database(":memory:");
require("sqlite-dedup").load(other);
const ratio = other.prepare("SELECT lev_ratio(?, ?)").pluck().get("kitten", "sitting");
// (A path where the database goes: a TypeError naming it.)
let refused = null;
try {{ require("sqlite-dedup").load("demo.db"); }} catch (e) {{ refused = e.name + ": " + e.message; }}
console.log(JSON.stringify({{report, simhash: big.toString(), ratio, refused}}));
"""
    out = subprocess.run(["node", "-e", script], cwd=project, capture_output=True, text=True, check=True,
                         env=dict(os.environ, NODE_PATH=node_modules))
    got = json.loads(out.stdout)
    assert got["report"].startswith("run 1: 600 rows -> 245 rows")
    assert got["ratio"] == 0.6153846153846154  # python-Levenshtein's ratio('kitten', 'sitting')
    assert got["refused"] == ('TypeError: sqlite-dedup: load(db) takes a better-sqlite3 Database (anything with '
                              'loadExtension(path)), got the string "demo.db" (open the file first: new Database(path))')
    import sqlite3
    conn = sqlite3.connect(":memory:")
    conn.enable_load_extension(True)
    conn.load_extension(P.EXTENSION)
    assert int(got["simhash"]) == conn.execute("SELECT simhash('a b c')").fetchone()[0]


def plugin_venv(tmp_path, dist, plugin, host):
    """A fresh venv with our wheel, the plugin's wheel and its host from PyPI
    (skipped when the registry cannot be reached outside CI)."""
    bin_ = venv(tmp_path, plugin)
    wheels = [our_wheel(dist)] + [os.path.join(DIST, f) for f in dist["files"]
                                  if f.startswith(plugin.replace("-", "_") + "-") and f.endswith(".whl")]
    install = subprocess.run([f"{bin_}/pip", "install", "-q", *wheels, host], capture_output=True, text=True)
    if install.returncode != 0:
        if os.environ.get("CI"):
            pytest.fail(install.stderr[-2000:])
        pytest.skip(f"could not install {host}: {install.stderr[-300:]}")
    return bin_


def test_the_sqlite_utils_plugin(tmp_path, dist):
    bin_ = plugin_venv(tmp_path, dist, "sqlite-utils-sqlite-dedup", "sqlite-utils")
    db = str(tmp_path / "demo.db")
    shutil.copy(P.DEMO, db)
    query = subprocess.run([f"{bin_}/sqlite-utils", "query", db, "select lev_ratio('kitten', 'sitting') as r"],
                           capture_output=True, text=True, check=True)
    assert json.loads(query.stdout) == [{"r": 0.6153846153846154}]
    dry = subprocess.run([f"{bin_}/sqlite-utils", "dedup", db, "--dry-run"], capture_output=True, text=True,
                         check=True)
    assert dry.stdout.startswith("plan for run 1: 600 rows -> 245 rows") and "phase 2: 144 row(s) would go" in dry.stdout
    run = subprocess.run([f"{bin_}/sqlite-utils", "dedup", db, "--threshold", "0.9"], capture_output=True,
                         text=True, check=True)
    assert run.stdout.startswith("run 1: 600 rows -> 245 rows")
    # The kind of run: incremental when nothing changed, full when asked.
    again = subprocess.run([f"{bin_}/sqlite-utils", "dedup", db, "--threshold", "0.9"], capture_output=True,
                           text=True, check=True)
    assert "incremental since run 1: 0 new or changed row(s)" in again.stdout, again.stdout
    full = subprocess.run([f"{bin_}/sqlite-utils", "dedup", db, "--threshold", "0.9", "--full"], capture_output=True,
                          text=True, check=True)
    assert "full run: asked for (full: true)" in full.stdout, full.stdout
    for run_ in (3, 2):
        subprocess.run([f"{bin_}/sqlite-utils", "dedup", db, "--restore"], capture_output=True, check=True)
    back = subprocess.run([f"{bin_}/sqlite-utils", "dedup", db, "--restore"], capture_output=True, text=True,
                          check=True)
    assert back.stdout.startswith("restored run 1: 355 row(s) back")
    # Ordinary errors are messages, not tracebacks.
    for args, message in [(["--restore"], "nothing to undo"), (["--threshold", "1.5"], "threshold must be in"),
                          (["--table", "nosuch"], "not found")]:
        bad = subprocess.run([f"{bin_}/sqlite-utils", "dedup", db, *args], capture_output=True, text=True)
        assert bad.returncode == 1 and message in bad.stderr and "Traceback" not in bad.stderr, (args, bad.stderr)
    notes = tmp_path / "notes.db"
    notes.write_text("not a database\n")
    bad = subprocess.run([f"{bin_}/sqlite-utils", "dedup", str(notes)], capture_output=True, text=True)
    assert bad.returncode == 1 and bad.stderr.strip() == \
        f"Error: {str(notes)!r} is not a SQLite database (it does not begin with SQLite's header)", bad.stderr
    # Every setting is a flag (the extension's own list), and the flags
    # reach the run.
    help_ = subprocess.run([f"{bin_}/sqlite-utils", "dedup", "--help"], capture_output=True, text=True, check=True)
    flags = {w.strip("[],/") for w in help_.stdout.split() if w.startswith("--")}
    missing = {k: f for k, f in P.flags_expected().items() if f not in flags}
    assert not missing, missing
    other = str(tmp_path / "other.db")
    shutil.copy(P.DEMO, other)
    subprocess.run([f"{bin_}/sqlite-utils", "dedup", other, "--keep-params", "--url-options", "strip_www",
                    "--boilerplate", "strip", "--boilerplate-min-pages", "3", "--lsh-bands", "16", "--lsh-rows", "8",
                    "--url-rules", "0.99", "--busy-timeout", "2000"], capture_output=True, check=True)
    recorded = json.loads(sqlite3.connect(other).execute("SELECT settings FROM dedup_runs").fetchone()[0])
    assert {k: recorded[k] for k in ("discard_params", "boilerplate", "boilerplate_min_pages", "lsh_bands",
                                     "lsh_rows", "url_rules")} == \
        {"discard_params": 0, "boilerplate": "strip", "boilerplate_min_pages": 3, "lsh_bands": 16, "lsh_rows": 8,
         "url_rules": 0.99}, recorded
    assert "strip_www" in recorded["url_options"], recorded
    bad = subprocess.run([f"{bin_}/sqlite-utils", "dedup", other, "--busy-timeout", "-1"], capture_output=True,
                         text=True)
    assert bad.returncode == 2 and "--busy-timeout" in bad.stderr and "Traceback" not in bad.stderr, bad.stderr
    holder = P.hold_write_lock(other, 3)  # --restore --busy-timeout 0: no wait either
    try:
        bad = subprocess.run([f"{bin_}/sqlite-utils", "dedup", other, "--restore", "--busy-timeout", "0"],
                             capture_output=True, text=True)
        assert bad.returncode == 1 and "locked" in bad.stderr, bad.stderr
    finally:
        holder.wait(timeout=60)
    # So is a package whose library went missing.
    (library,) = glob.glob(os.path.join(os.path.dirname(bin_), "lib", "python*", "site-packages", "sqlite_dedup",
                                        "dedup0.so"))
    os.remove(library)
    bad = subprocess.run([f"{bin_}/sqlite-utils", "dedup", db], capture_output=True, text=True)
    assert bad.returncode == 1 and f"no {library}" in bad.stderr and "Traceback" not in bad.stderr, bad.stderr


def test_the_datasette_plugin(tmp_path, dist):
    bin_ = plugin_venv(tmp_path, dist, "datasette-sqlite-dedup", "datasette")
    db = str(tmp_path / "demo.db")
    shutil.copy(P.DEMO, db)
    P.connect(db).execute("SELECT dedup_run()").fetchone()  # a run for the review page to show
    code = f"""
import asyncio, json
from datasette.app import Datasette
async def main():
    ds = Datasette([{db!r}])
    r = await ds.client.get("/demo.json?sql=select+canonical_url('HTTP://X.ORG/a/')+as+u,+lev_ratio('ab','ac')+as+r&_shape=array")
    print(json.dumps(r.json()))
    r = await ds.client.get("/demo.json?sql=select+dedup_run()&_shape=array")
    print(r.status_code)
    print(json.dumps(r.json()))
    r = await ds.client.get("/-/dedup-review/demo")
    print(r.status_code, r.text.count('<tr class="item"'), "No run is recorded" in r.text)
    link = r.text.split('class="explain" href="')[1].split('"')[0].replace("&amp;", "&")
    e = await ds.client.get(link.replace("?", ".json?") + "&_shape=array")
    print(e.status_code, json.dumps(e.json()[0]["reason"]))
    r = await ds.client.get("/demo")
    print("action", 'href="/-/dedup-review/demo"' in r.text and "Review what sqlite-dedup removed" in r.text)
    r = await ds.client.get("/-/dedup-review/nosuch")
    print(r.status_code)
    r = await ds.client.get("/-/dedup-review/demo")
    print(json.dumps(r.headers.get("content-security-policy")))
    # A database closed to anonymous users: its review page too.
    closed = Datasette([{db!r}], metadata={{"databases": {{"demo": {{"allow": {{"id": "admin"}}}}}}}})
    for path in ["/demo", "/demo/dedup_removed", "/-/dedup-review/demo"]:
        r = await closed.client.get(path)
        print(path, r.status_code, "dedup_removed" in r.text and "<tr" in r.text)
    cookies = {{"ds_actor": closed.sign({{"a": {{"id": "admin"}}}}, "actor")}}
    r = await closed.client.get("/-/dedup-review/demo", cookies=cookies)
    print("admin", r.status_code, r.text.count('<tr class="item"'))
asyncio.run(main())
"""
    out = subprocess.run([f"{bin_}/python", "-c", code], capture_output=True, text=True, check=True)
    lines = out.stdout.splitlines()
    assert json.loads(lines[0]) == [{"u": "http://x.org/a", "r": 0.5}]
    # The pipeline writes: Datasette's read-only queries cannot run it, and
    # the message names the function and where to run it instead.
    assert lines[1] == "400"
    error = json.dumps(json.loads(lines[2]))
    assert "dedup_run[state]: the database is readonly" in error and "sqlite-dedup run DB" in error, error
    # The review page: every removed row of the run (test_review.py drives it in a browser).
    assert lines[3] == "200 355 False", lines[3]
    # Each removed page links to its row of dedup_why.
    # (The pages with a survivor and a diff first: the first row is one of phase 2.)
    assert lines[4] == '200 "same canonical URL"', lines[4]
    # The database's page links to its review (its actions menu).
    assert lines[5] == "action True", lines[5]
    assert lines[6] == "404"
    # Its policy allows no script but the page's own.
    policy = json.loads(lines[7])
    assert policy and "default-src 'none'" in policy and "script-src 'sha256-" in policy, policy
    assert lines[8:11] == ["/demo 403 False", "/demo/dedup_removed 403 False", "/-/dedup-review/demo 403 False"], \
        lines[8:]
    assert lines[11] == "admin 200 355", lines[11]


def test_the_datasette_review_page_runs_no_script_of_a_hostile_database(tmp_path, dist):
    """`/-/dedup-review/<db>` served by a real Datasette on 127.0.0.1, on a
    database whose every shown value is hostile: in Chromium, on Datasette's
    origin, no script of the data runs (test_review.py's checks)."""
    import socket
    import time
    import urllib.request
    from test_review import assert_no_script_runs, browser, make_hostile
    browser().quit()  # (a skip, or a failure in CI, before the venv's minutes)
    bin_ = plugin_venv(tmp_path, dist, "datasette-sqlite-dedup", "datasette")
    db = str(tmp_path / "hostile.db")
    shutil.copy(P.DEMO, db)
    P.connect(db).execute("SELECT dedup_run()").fetchone()
    make_hostile(db)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = subprocess.Popen([f"{bin_}/datasette", "serve", db, "--host", "127.0.0.1", "--port", str(port)],
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        url = f"http://127.0.0.1:{port}/-/dedup-review/hostile"
        for _ in range(600):
            try:
                with urllib.request.urlopen(url, timeout=2) as r:
                    assert r.status == 200 and "default-src 'none'" in r.headers["content-security-policy"]
                break
            except OSError:
                time.sleep(0.1)
        else:
            raise AssertionError("datasette did not answer")
        assert_no_script_runs(url, "review-hostile-datasette.png")
    finally:
        server.kill()
        server.communicate()


def test_the_aarch64_archive_when_this_machine_can_cross_build(dist):
    """Built only where the aarch64 Rust target and cross linker are
    installed (not in CI): its file is an aarch64 ELF needing glibc <= 2.34."""
    name = f"sqlite-dedup-{dist['version']}-loadable-linux-aarch64.tar.gz"
    if name not in dist["files"]:
        pytest.skip("no cross toolchain for aarch64 here (scripts/dist says what it needs)")
    with tarfile.open(os.path.join(DIST, name)) as t:
        member = t.extractfile("./dedup0.so").read()
    assert member[:4] == b"\x7fELF" and int.from_bytes(member[18:20], "little") == 183  # EM_AARCH64
    versions = {tuple(int(x) for x in v.split(".")) for v in re.findall(rb"GLIBC_([0-9.]+)", member)
                for v in [v.decode()]}
    assert versions and max(versions) <= (2, 34)
    assert f"sqlite_dedup-{dist['version']}-py3-none-manylinux_2_34_aarch64.whl" in dist["files"]


def test_readme_command_1_in_a_plain_clone(tmp_path):
    """Clone into an empty folder (no ../shared beside it) and run the
    README's first set-up command as written: it builds and deduplicates the
    demo crawl. (Command 2 is `tests/run --install`; CI runs its two steps
    as .ci/run.)"""
    readme = open(os.path.join(P.ROOT, "README.md")).read()
    block = re.search(r"```sh\n(.*?)```", readme, re.S).group(1)
    lines = block.splitlines()
    def command(n):
        after = lines[lines.index(next(l for l in lines if l.startswith(f"# {n}."))):]
        return next(l for l in after if not l.startswith("#"))
    command1, command2 = command(1), command(2)
    assert command2 == "tests/run --install"
    ci = open(os.path.join(P.ROOT, ".ci", "run")).read()
    assert "\ntests/install\n" in ci and ci.rstrip().endswith("tests/run")
    clone = tmp_path / "empty" / "sqlite-dedup"
    clone.parent.mkdir()
    subprocess.run(["git", "clone", "-q", P.ROOT, str(clone)], check=True)
    assert not os.path.exists(clone.parent / "shared")
    run = subprocess.run(["bash", "-c", command1], cwd=clone, capture_output=True, text=True, timeout=900)
    assert run.returncode == 0, run.stderr[-2000:]
    expected = re.search(r"The first prints the run's report.*?```\n(.*?)```", readme, re.S).group(1)
    assert run.stdout == expected
