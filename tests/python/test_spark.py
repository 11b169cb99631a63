"""Spark (issue 27, docs/scale-out.md): `sqlite-dedup spark run` over shards
of a database leaves, in the union of the shards, exactly what dedup_run()
leaves in the whole database (the expected side, whose parity with the
reference is tested elsewhere): every kept row as the run rewrote it, every
removed row with its phase, reason, survivor and ratio. The shards are
contiguous rowid ranges of unequal sizes (rowids kept, so the shards in
order are the database), and phase 4's ranges are small, so that their
boundaries fall inside groups of near-copies. Also: restore per shard,
a second run, an injected task failure (retried), a job that dies midway
(completed by running the command again), a bad shard (an error naming it
before any shard changes)."""
import json
import os
import shutil
import sqlite3
import subprocess
import sys

import pytest

import pipeline as P

# One process runs this module whole under xdist (conftest.py).
pytestmark = pytest.mark.xdist_group("spark")
PYTHON = os.environ.get("DEDUP_PYTHON", "/usr/bin/python3")
HAS_SPARK = subprocess.run([PYTHON, "-c", "import pyspark, pyarrow"], capture_output=True).returncode == 0 \
    and shutil.which("java") is not None


def require_spark():
    """Skips without PySpark (and pyarrow) or Java; in CI, which installs
    them (.ci/run), their absence is a failure."""
    if HAS_SPARK:
        return
    message = f'needs PySpark, pyarrow and Java for {PYTHON}: pip install "pyspark>=4" pyarrow (.ci/run does)'
    if os.environ.get("CI"):
        pytest.fail(message)
    pytest.skip(message)


@pytest.fixture(scope="module")
def package(tmp_path_factory):
    """The Python package with the release build, as a directory for
    PYTHONPATH (the driver's and the workers')."""
    require_spark()
    root = tmp_path_factory.mktemp("pkg")
    shutil.copytree(os.path.join(P.ROOT, "python", "sqlite_dedup"), root / "sqlite_dedup")
    shutil.copy(P.EXTENSION + ".so", root / "sqlite_dedup" / "dedup0.so")
    return str(root)


def env_for(package, **extra):
    return dict(os.environ, PYTHONPATH=package, PYSPARK_PYTHON=PYTHON, SQLITE_DEDUP_EXTENSION=P.EXTENSION, **extra)


@pytest.fixture(scope="module")
def spark(package):
    """One local Spark session (2 cores) for the in-process tests."""
    os.environ.update(env_for(package))
    sys.path.insert(0, package)
    from pyspark.sql import SparkSession
    session = (SparkSession.builder.master("local[2]").appName("sqlite-dedup tests")
               .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
               .config("spark.sql.shuffle.partitions", "8")
               # (local mode: the driver's heap holds the cached plan of the
               # 100k test; the default 1 GB ran out after the parity runs,
               # 3 GB once the module had 43 tests: the status store keeps
               # every job's stages and tasks, a few hundred are enough here)
               .config("spark.ui.retainedJobs", "100").config("spark.ui.retainedStages", "100")
               .config("spark.ui.retainedTasks", "2000").config("spark.sql.ui.retainedExecutions", "50")
               .config("spark.driver.memory", "4g").getOrCreate())
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


@pytest.fixture(autouse=True)
def clear_cache(request):
    """After each test that used the session, nothing it cached stays (the
    module shares one session, and a 3 GB driver)."""
    yield
    if "spark" in request.fixturenames:
        request.getfixturevalue("spark").catalog.clearCache()


def split(src, dst_dir, cuts):
    """Shards of src's pages: contiguous rowid ranges cut at the fractions
    `cuts`, rowids kept; their paths."""
    s = sqlite3.connect(src)
    ddl = s.execute("SELECT sql FROM sqlite_schema WHERE name = 'pages'").fetchone()[0]
    ids = [r[0] for r in s.execute("SELECT rowid FROM pages ORDER BY rowid")]
    cols = ", ".join(f'"{r[1]}"' for r in s.execute("PRAGMA table_info(pages)"))
    s.close()
    bounds = [0] + [int(len(ids) * c) for c in cuts] + [len(ids)]
    paths = []
    for i in range(len(bounds) - 1):
        lo = ids[bounds[i]]
        hi = ids[bounds[i + 1]] if bounds[i + 1] < len(ids) else ids[-1] + 1
        path = os.path.join(str(dst_dir), f"shard-{i + 1}.db")
        c = sqlite3.connect(path)
        c.execute(ddl)
        c.execute("ATTACH ? AS src", (src,))
        c.execute(f"INSERT INTO pages (rowid, {cols}) SELECT rowid, {cols} FROM src.pages WHERE rowid >= ? AND rowid < ?",
                  (lo, hi))
        c.commit()
        c.close()
        paths.append(path)
    return paths


def state(paths):
    """Every row of the pages tables, and every archived row of the latest
    run with its phase, reason, survivor (a rowid: shards keep the
    database's rowids, and a survivor in another shard is named in the
    row's note) and ratio."""
    pages, removed = {}, {}
    for path in paths:
        c = sqlite3.connect(path)
        for r in c.execute("SELECT rowid, * FROM pages"):
            assert r[0] not in pages
            pages[r[0]] = r[1:]
        run = c.execute("SELECT max(run) FROM dedup_runs").fetchone()[0]
        elsewhere = dict(c.execute(
            "SELECT dedup_rowid, note FROM dedup_notes WHERE kind = 'survivor elsewhere' AND dedup_run = ?", (run,)))
        for rid, phase, reason, survivor, ratio in c.execute(
                "SELECT dedup_rowid, dedup_phase, dedup_reason, dedup_survivor, dedup_ratio FROM dedup_removed "
                "WHERE dedup_run = ?", (run,)):
            if rid in elsewhere:
                assert survivor is None
                survivor = int(elsewhere[rid].rsplit(" ", 1)[1])
            removed[rid] = (phase, reason, survivor, None if ratio is None else round(ratio, 12))
        c.close()
    return pages, removed


def whole_run(path, settings):
    conn = P.connect(path)
    conn.execute("SELECT dedup_run(?)", (json.dumps(settings),)).fetchone()
    conn.close()


def dump(path):
    """A shard's pages and schema, to compare before and after."""
    c = sqlite3.connect(path)
    out = (c.execute("SELECT name, sql FROM sqlite_schema ORDER BY name").fetchall(),
           c.execute("SELECT rowid, * FROM pages ORDER BY rowid").fetchall())
    c.close()
    return out


def spark_cli(package, args, timeout=600, **env):
    return subprocess.run([PYTHON, "-m", "sqlite_dedup", "spark", "run", *args], capture_output=True, text=True,
                          env=env_for(package, **env), timeout=timeout)


PREFER = ["url LIKE 'http:%' DESC", "title COLLATE NOCASE DESC, crawled NULLS LAST"]

VARIANTS = [
    ("default", {}),
    ("threshold-0.9-n_min-3", {"threshold": 0.9, "n_min": 3}),
    ("threshold-1.0", {"threshold": 1.0}),
    ("keep-params", {"discard_params": 0}),
    ("lsh", {"near_mode": "lsh"}),
    ("lsh-chain-threshold-0.9-n_min-3", {"near_mode": "lsh", "lsh_election": "chain", "threshold": 0.9, "n_min": 3}),
    ("lsh-threshold-1.0", {"near_mode": "lsh", "threshold": 1.0}),
    ("lsh-keep-params-8x4", {"near_mode": "lsh", "discard_params": 0, "lsh_bands": 8, "lsh_rows": 4}),
    ("lsh-word-3", {"near_mode": "lsh", "lsh_shingles": "word", "lsh_shingle_size": 3}),
    ("lsh-oph", {"near_mode": "lsh", "lsh_sketch": "oph"}),
    # Text::DeDuper's measure: its threshold and lsh signature from the
    # extension's rules (dedup_settings_checked), its scans by argument.
    ("resemblance-n_min-3", {"measure": "resemblance", "n_min": 3}),
    ("lsh-resemblance-stoplist", {"near_mode": "lsh", "measure": "resemblance", "ngram_size": 3,
                                  "stoplist": ["the", "a", "of"], "threshold": 0.3}),
    # prefer ranked over every shard: a direction, a collation (parity-5k has
    # titles that differ only in case), NULLs placed last (247 rows have no
    # crawled; two terms in one item), and http before https, against the
    # default order.
    ("prefer", {"prefer": PREFER}),
    ("lsh-prefer-n_min-3", {"near_mode": "lsh", "prefer": PREFER, "n_min": 3}),
    # The reference's URL rules and election; a table whose columns have
    # other names (renamed in the database and in every shard).
    ("compat-reference", {"compat": "reference"}),
    ("lsh-columns", {"near_mode": "lsh", "columns": {"url": "address", "title": "headline", "crawled": "fetched"}}),
    # Paragraphs: each owner elected over every shard, each cut confirmed in
    # its shard on the owner's paragraph.
    ("paragraphs", {"paragraphs": "dedup"}),
    ("lsh-paragraphs-60", {"near_mode": "lsh", "paragraphs": "dedup", "paragraph_min": 60}),
]


def rename_columns(paths, columns):
    """Renames the pipeline's columns of each database's pages as
    `columns` maps them."""
    for path in paths:
        c = sqlite3.connect(path)
        for name, column in columns.items():
            c.execute(f'ALTER TABLE pages RENAME COLUMN "{name}" TO "{column}"')
        c.commit()
        c.close()


#: lsh variants: the most candidate-graph edges one task labels whole
#: (`_lsh.TASK_EDGES`): 0 finds the components by Spark rounds alone, a few
#: by rounds and then the task, None (the default) by the task alone.
TASK_EDGES = {"lsh": 0, "lsh-chain-threshold-0.9-n_min-3": 100, "lsh-keep-params-8x4": None,
              "lsh-prefer-n_min-3": None, "lsh-columns": None, "lsh-word-3": None,
              "lsh-resemblance-stoplist": None, "lsh-paragraphs-60": None, "lsh-oph": None}


@pytest.mark.parametrize("name,settings", VARIANTS, ids=[v[0] for v in VARIANTS])
def test_parity_5k_in_seven_unequal_shards_equals_one_database(spark, tmp_path, name, settings, monkeypatch):
    from sqlite_dedup import spark as dedup_spark
    from sqlite_dedup.spark import _lsh
    if TASK_EDGES.get(name) is not None:
        monkeypatch.setattr(_lsh, "TASK_EDGES", TASK_EDGES[name])
    whole = P.copy_corpus(tmp_path)
    shards = split(whole, tmp_path, [0.05, 0.1, 0.3, 0.35, 0.6, 0.9])
    if "columns" in settings:
        rename_columns([whole] + shards, settings["columns"])
    before = [dump(p) for p in shards]
    report = dedup_spark.run(spark, shards, settings, partition_rows=60)
    whole_run(whole, settings)
    expected, got = state([whole]), state(shards)
    assert got[1] == expected[1]
    assert got[0] == expected[0]
    assert report["rows_before"] == 5000 and report["rows_after"] == len(expected[0])
    if "paragraphs" in settings:
        # The same cuts (an owner in another shard is named by its URL).
        def cuts(paths):
            out = {}
            for path in paths:
                c = sqlite3.connect(path)
                for rid, position, length, owner, url, text in c.execute(
                        "SELECT dedup_rowid, position, length, owner, owner_url, paragraph FROM dedup_paragraphs"):
                    out[(rid, position)] = (length, owner, url, text)
                c.close()
            return out
        want, have = cuts([whole]), cuts(shards)
        assert len(want) > 50 and set(have) == set(want)
        for k, (length, owner, url, text) in want.items():
            assert have[k][0] == length and have[k][2:] == (url, text) and have[k][1] in (owner, None), k
        assert sum(r["paragraphs"]["cut"] for r in report["runs"]) == len(want) <= report["paragraph_copies"]
    if "prefer" in settings:
        # (The terms decide: without them other rows survive.)
        (tmp_path / "plain").mkdir()
        plain = P.copy_corpus(tmp_path / "plain")
        whole_run(plain, {k: v for k, v in settings.items() if k != "prefer"})
        assert set(state([plain])[1]) != set(expected[1])
    if "compat" in settings:
        # (The reference's own count on parity-5k: ../shared/corpus/README.md.)
        assert report["rows_after"] == 1047
    if settings.get("threshold", 0.9) < 1.0 and "near_mode" not in settings:
        # Ranges of 60 positions, a window of 49: boundaries fall inside groups.
        assert report["phase4_range_scans"] > report["phase4_rounds"] > 0
    if settings.get("threshold", 0.9) < 1.0 and "near_mode" in settings:
        # Many components (each scanned apart), found by rounds, a task, or both.
        assert report["lsh_components"] > 100
        limit = TASK_EDGES[name]
        if limit == 0:
            assert report["lsh_rounds"] > 1 and report["lsh_task_edges"] == 0
        elif limit is None:
            assert report["lsh_rounds"] == 0 and report["lsh_task_edges"] > 0
        else:
            assert report["lsh_rounds"] > 0 and 0 < report["lsh_task_edges"] <= limit
    if name == "default":
        # A second run over the shards is a second run over the database
        # (placeholders of phase 4 kept in every shard's archive).
        dedup_spark.run(spark, shards, settings, partition_rows=60)
        whole_run(whole, settings)
        assert state(shards) == state([whole])
        # Restore on every shard gives every shard back.
        for path in shards:
            conn = P.connect(path)
            while conn.execute("SELECT count(*) FROM sqlite_schema WHERE name = 'dedup_runs'").fetchone()[0]:
                conn.execute("SELECT dedup_restore()").fetchone()
            conn.close()
        assert [dump(p)[1] for p in shards] == [b[1] for b in before]


@pytest.mark.parametrize("mode", ["window", "lsh"])
def test_a_100k_builder_corpus_in_seven_unequal_shards_equals_one_database(spark, tmp_path, mode):
    """The issue's larger corpus: 100,000 builder pages (seed 7, built once
    into the git-ignored bench-data/) in 7 shards of unequal sizes, phase 4
    cut into ranges of 2,000 positions (window mode), so that boundaries
    fall inside groups of near-copies, or into the LSH candidate graph's
    components (lsh mode)."""
    P.require_corpus()  # (the builder and its text pool are in ../shared)
    from sqlite_dedup import spark as dedup_spark
    sys.path.insert(0, os.path.join(P.ROOT, "benches"))
    try:
        from corpora import corpus
    finally:
        sys.path.remove(os.path.join(P.ROOT, "benches"))  # (its modules are no one else's)
    whole = str(tmp_path / "whole.db")
    shutil.copy(corpus(100000), whole)
    shards = split(whole, tmp_path, [0.02, 0.15, 0.2, 0.45, 0.5, 0.8])
    settings = {"near_mode": mode}
    report = dedup_spark.run(spark, shards, settings, partition_rows=2000)
    whole_run(whole, settings)
    expected, got = state([whole]), state(shards)
    assert got[1] == expected[1]
    assert got[0] == expected[0]
    assert report["rows_before"] == 100000 and report["rows_after"] == len(expected[0])
    if mode == "window":
        assert report["phase4_range_scans"] > report["phase4_rounds"] > 0
    else:
        # (At this size one task labels the whole candidate graph.)
        assert report["lsh_components"] > 100 and report["lsh_rounds"] == 0 and report["lsh_task_edges"] > 0


def components_by_search(groups):
    """The oracle: {pos: smallest pos of its component} of the graph in
    which the members of each group are linked, by breadth-first search."""
    links = {}
    for members in groups:
        for m in members:
            links.setdefault(m, set()).update(members)
    out = {}
    for start in sorted(links):
        if start in out:
            continue
        seen, todo = {start}, [start]
        while todo:
            for n in links[todo.pop()]:
                if n not in seen:
                    seen.add(n)
                    todo.append(n)
        for n in seen:
            out[n] = min(seen)
    return {n: m for n, m in out.items() if len(links[n]) > 1}


def random_groups(rng, nodes, groups):
    """Random (band, key) groups: most of two or three rows, some larger,
    some of one row (no candidates), chains across them."""
    return [rng.sample(range(nodes), rng.choice([1, 2, 2, 3, 3, 5, 12])) for _ in range(groups)]


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_smallest_linked_labels_every_node_with_its_components_smallest(package, seed):
    import random
    import numpy as np  # (with PySpark's pandas: the package fixture requires it)
    if package not in sys.path:
        sys.path.insert(0, package)  # (not only after the spark fixture)
    from sqlite_dedup.spark._lsh import smallest_linked
    rng = random.Random(seed)
    groups = [g for g in random_groups(rng, 3000, 1500) if len(g) > 1]
    # (Edges in any order and direction, repeated: a path for each group.)
    pairs = [(g[i], g[i + 1]) if rng.random() < 0.5 else (g[i + 1], g[i]) for g in groups for i in range(len(g) - 1)]
    pairs += rng.sample(pairs, 200)
    nodes, label = smallest_linked(np.array([a for a, _ in pairs], dtype=np.int64),
                                   np.array([b for _, b in pairs], dtype=np.int64))
    assert dict(zip(nodes.tolist(), label.tolist())) == components_by_search(groups)


@pytest.mark.parametrize("task_edges", [0, 1000, None])
def test_lsh_components_equal_a_breadth_first_search(spark, monkeypatch, task_edges):
    """Components of random band groups by Spark rounds only (0), rounds
    then one task (1,000 edges), and one task only (the default), against a
    search in Python."""
    import random
    from sqlite_dedup.spark import _lsh
    rng = random.Random(7)
    # (A long chain through many groups, so that rounds are needed.)
    groups = random_groups(rng, 4000, 1800) + [[i, i + 1] for i in range(5000, 5400)]
    rows = [(pos, band, key) for key, members in enumerate(groups) for band, pos in [(key % 4, m) for m in members]]
    keys = spark.createDataFrame(rows, "pos long, band long, key long").repartition(3)
    if task_edges is not None:
        monkeypatch.setattr(_lsh, "TASK_EDGES", task_edges)
    labels, rounds, merged = _lsh.components(keys)
    got = {r["pos"]: r["label"] for r in labels.collect()}
    for df in _lsh.CACHED:
        df.unpersist()
    _lsh.CACHED.clear()
    assert got == components_by_search(groups)
    if task_edges == 0:
        assert rounds > 1 and merged == 0
    elif task_edges is None:
        assert rounds == 0 and merged > 0
    else:
        assert rounds > 0 and 0 < merged <= task_edges


def test_demo_in_three_shards_from_the_command_line(package, tmp_path):
    whole = str(tmp_path / "whole.db")
    shutil.copy(P.DEMO, whole)
    shards = split(whole, tmp_path, [0.2, 0.7])
    run = spark_cli(package, [*shards, "--master", "local[2]", "--partition-rows", "60"])
    assert run.returncode == 0, run.stderr
    whole_run(whole, {})
    assert state(shards) == state([whole])
    assert "3 shard(s), 600 rows -> 245 rows" in run.stdout
    assert "shard 2: run 1, 300 -> 117 rows" in run.stdout
    # Each step on standard error as it ends (a job runs for minutes).
    said = [line for line in run.stderr.splitlines() if line.startswith("sqlite-dedup spark: ")]
    assert said[0] == "sqlite-dedup spark: planning 3 shard(s) as one database", run.stderr
    assert any(line.startswith("sqlite-dedup spark: phase 4, near duplicates: done in ") for line in said), said
    assert said[-1].startswith("sqlite-dedup spark: applying job spark-"), said
    # explain, on a shard whose removed row's survivor is in another shard, says where.
    for i, shard in enumerate(shards):
        far = sqlite3.connect(shard).execute(
            "SELECT dedup_rowid, note FROM dedup_notes WHERE kind = 'survivor elsewhere' LIMIT 1").fetchone()
        if far:
            out = subprocess.run([PYTHON, "-m", "sqlite_dedup", "explain", shard, str(far[0])], capture_output=True,
                                 text=True, env=env_for(package))
            assert out.returncode == 0, out.stderr
            assert f"lost to: {far[1]} (another shard of the same Spark job)" in out.stdout, out.stdout
            break
    else:
        raise AssertionError("no removal with its survivor in another shard")


def test_the_command_line_options_are_the_run_settings(package):
    """The options of `sqlite-dedup spark run` map to the settings the API
    runs with (the runs themselves: the tests above and below)."""
    sys.path.insert(0, package)
    from sqlite_dedup.spark import cli
    args = cli.parser().parse_args(["run", "a.db", "b.db", "--near-mode", "lsh", "--lsh-bands", "8", "--lsh-rows",
                                    "2", "--lsh-election", "chain", "--keep-params", "--n-min", "3",
                                    "--threshold", "0.85", "--prefer", "crawled DESC", "--prefer", "url",
                                    "--boilerplate", "strip", "--boilerplate-min-pages", "7", "--url-rules", "0.9"])
    assert cli.settings_of(args) == {"near_mode": "lsh", "lsh_bands": 8, "lsh_rows": 2, "lsh_election": "chain",
                                     "discard_params": 0, "n_min": 3, "threshold": 0.85,
                                     "prefer": ["crawled DESC", "url"], "boilerplate": "strip",
                                     "boilerplate_min_pages": 7, "url_rules": 0.9}
    assert cli.settings_of(cli.parser().parse_args(["run", "a.db"])) == {}


def test_a_shards_apply_waits_for_a_lock_as_long_as_busy_timeout_says(package, tmp_path):
    """busy_timeout reaches each shard's apply (whose connection's own 5 s
    would come first): 0 fails at once on a shard another connection is
    writing, naming it, and changes nothing; the job's plan is applied once
    the lock is gone."""
    sys.path.insert(0, package)
    from sqlite_dedup.spark import _tasks
    db = str(tmp_path / "shard.db")
    shutil.copy(P.DEMO, db)
    _tasks.write_pending(0, db, "spark-test", [(7, 2, "same canonical URL", 1, None, None, None)])
    before = P.fingerprint(db)
    holder = P.hold_write_lock(db, 3)
    try:
        with pytest.raises(_tasks.ShardError, match=r"^sqlite-dedup spark: shard 1 \(.*shard.db\): .*locked"):
            _tasks.apply_pending(0, db, "spark-test", json.dumps({"busy_timeout": 0}))
        assert P.fingerprint(db) == before
    finally:
        holder.wait(timeout=60)
    report = _tasks.apply_pending(0, db, "spark-test", json.dumps({"busy_timeout": 0}))
    assert report["rows_before"] - report["rows_after"] == 1, report


def test_a_failed_task_is_retried_with_the_same_result(package, tmp_path):
    whole = str(tmp_path / "whole.db")
    shutil.copy(P.DEMO, whole)
    shards = split(whole, tmp_path, [0.3, 0.5])
    # local[2,3]: up to 3 attempts a task; shard 2's first apply fails.
    run = spark_cli(package, [*shards, "--master", "local[2,3]", "--partition-rows", "60"],
                    SQLITE_DEDUP_SPARK_FAIL="apply:2")
    assert run.returncode == 0, run.stderr
    assert os.path.exists(shards[1] + ".spark-fail-injected")
    whole_run(whole, {})
    assert state(shards) == state([whole])


@pytest.mark.parametrize("death", ["die-after-plan", "apply:3:always"])
def test_a_job_that_dies_midway_is_completed_by_the_same_command(package, tmp_path, death):
    whole = str(tmp_path / "whole.db")
    shutil.copy(P.DEMO, whole)
    shards = split(whole, tmp_path, [0.25, 0.6])
    args = [*shards, "--master", "local[2]", "--partition-rows", "60"]
    before = [dump(p) for p in shards]
    first = spark_cli(package, args, SQLITE_DEDUP_SPARK_FAIL=death)
    assert first.returncode != 0
    if death == "apply:3:always":
        assert "failure injected before applying shard 3" in first.stderr + first.stdout
    # Every shard is untouched (but for the plan kept in it) or fully
    # applied; shard 3 is untouched either way.
    assert dump(shards[2])[1] == before[2][1]
    for path, b in zip(shards, before):
        runs = sqlite3.connect(path).execute(
            "SELECT count(*) FROM sqlite_schema WHERE name = 'dedup_runs'").fetchone()[0]
        assert runs or dump(path)[1] == b[1]
    again = spark_cli(package, args)
    assert again.returncode == 0, again.stderr
    assert "completed" in again.stdout
    whole_run(whole, {})
    assert state(shards) == state([whole])
    # Nothing was applied twice: one run in every shard.
    for path in shards:
        assert sqlite3.connect(path).execute("SELECT count(*) FROM dedup_runs").fetchone()[0] == 1


def test_a_bad_shard_is_named_before_any_shard_changes(package, tmp_path):
    shards = split(P.DEMO, tmp_path, [0.5])
    bad = str(tmp_path / "other.db")
    sqlite3.connect(bad).execute("CREATE TABLE documents (url TEXT)").connection.commit()
    before = [dump(p) for p in shards]
    run = spark_cli(package, [shards[0], bad, shards[1], "--master", "local[2]"])
    assert run.returncode == 1
    assert f"shard 2 ({bad})" in run.stderr and "pages" in run.stderr, run.stderr
    assert [dump(p) for p in shards] == before


def test_settings_spark_does_not_take_are_refused(spark, tmp_path):
    from sqlite_dedup import spark as dedup_spark
    shards = split(P.DEMO, tmp_path, [0.5])
    for settings in ({"fix_urls": True}, {"against": "other.db"}):
        with pytest.raises(dedup_spark.UnsupportedSetting):
            dedup_spark.run(spark, shards, settings)


@pytest.mark.parametrize("mode", ["window", "lsh"])
def test_boilerplate_strip_counts_a_sites_chrome_over_every_shard(spark, tmp_path, mode):
    """boilerplate = 'strip' over three shards, each holding fewer of a
    site's pages than boilerplate_min_pages: only counts over every shard
    find the chrome. The shards end as dedup_run() leaves the one database
    (the near removals of pages compared stripped say so in their reason)."""
    import random
    from sites import chrome_site
    rows = (chrome_site(n_pages=40, n_copies=10)
            + chrome_site(n_pages=30, n_copies=8, seed=2, domain="https://blog.example.com"))
    random.Random(5).shuffle(rows)
    P.crawl_db(tmp_path, rows, "whole.db").close()
    whole = str(tmp_path / "whole.db")
    shards = split(whole, tmp_path, [0.3, 0.65])
    for path in shards:
        c = sqlite3.connect(path)
        most = c.execute("SELECT max(n) FROM (SELECT count(*) AS n FROM pages GROUP BY substr(url, 1, 24))").fetchone()[0]
        c.close()
        assert most < 20, most
    settings = {"boilerplate": "strip", "boilerplate_min_pages": 20, "near_mode": mode}
    report = dedup_spark_run(spark, shards, settings)
    whole_run(whole, settings)
    expected, got = state([whole]), state(shards)
    assert got == expected
    assert report["boilerplate_domains"] == 2 and report["boilerplate_segments"] > 10, report
    reasons = {r for r, *_ in [(v[1],) for v in expected[1].values()]}
    assert "near duplicate: lev_ratio above threshold (boilerplate stripped)" in reasons, reasons
    assert len(expected[0]) == 70  # every distinct page kept, every near copy merged


def test_url_rules_take_the_rules_every_shard_learned_their_counts_summed(spark, tmp_path):
    """url_rules over three shards, each having learned its own rules
    (dedup_learn_url_rules): the run uses every shard's counts summed, as
    one database holding those summed counts (its probability MaybeDont's,
    computed here) runs with them. At 0.75 some rules reach the probability
    only summed, on no shard alone."""
    import math
    from sites import param_crawl

    def probability(dup, total):  # MaybeDont's DupStat.get_prob, clamped at 0 as ours is
        if total < 5:
            return 0.0
        a, b = dup + 1, total - dup + 1
        n = a + b
        p, q = a / n, b / n
        return max(0.0, p - 1.96 * math.sqrt(p * q / n))

    P.crawl_db(tmp_path, param_crawl(n_articles=120, seed=9), "whole.db").close()
    whole = str(tmp_path / "whole.db")
    plain = str(tmp_path / "plain.db")
    shutil.copy(whole, plain)
    shards = split(whole, tmp_path, [0.35, 0.7])
    learn = open(os.path.join(P.ROOT, "sql", "learn_url_rules.sql")).read()
    summed, alone = {}, []
    for path in shards + [whole]:
        conn = P.connect(path)
        conn.executescript(learn)
        if path != whole:
            rows = conn.execute("SELECT domain, path, param, value, observations, duplicates FROM dedup_url_rules "
                                "WHERE param IS NOT NULL AND value IS NULL").fetchall()
            alone += [tuple(k) for *k, o, d in rows if probability(d, o) >= 0.75]
            for *key, o, d in rows:
                got = summed.setdefault(tuple(key), [0, 0])
                got[0] += o
                got[1] += d
        conn.close()
    conn = sqlite3.connect(whole)
    conn.execute("DELETE FROM dedup_url_rules")
    conn.executemany("INSERT INTO dedup_url_rules (domain, path, param, value, observations, duplicates, probability) "
                     "VALUES (?, ?, ?, ?, ?, ?, ?)", [k + (o, d, probability(d, o)) for k, (o, d) in summed.items()])
    conn.commit()
    conn.close()
    reached = {k for k, (o, d) in summed.items() if probability(d, o) >= 0.75}
    only_summed = reached - set(alone)
    assert {k[2] for k in only_summed} >= {"view", "sort", "replytocom", "session_key"}, (only_summed, alone)
    settings = {"discard_params": 0, "url_rules": 0.75}
    dedup_spark_run(spark, shards, settings)
    whole_run(whole, settings)
    got, expected = state(shards), state([whole])
    diff_pages = {k: (got[0].get(k), expected[0].get(k)) for k in set(got[0]) | set(expected[0]) if got[0].get(k) != expected[0].get(k)}
    diff_removed = {k: (got[1].get(k), expected[1].get(k)) for k in set(got[1]) | set(expected[1]) if got[1].get(k) != expected[1].get(k)}
    assert got == expected, (len(diff_pages), [(k, v[0][0] if v[0] else None, v[1][0] if v[1] else None) for k, v in list(diff_pages.items())[:6]], len(diff_removed), list(diff_removed.items())[:5])
    # (The rules decide: without them, fewer rows go in phase 2.)
    whole_run(plain, {"discard_params": 0})
    phase2 = lambda s: sum(1 for v in s[1].values() if v[0] == 2)
    assert phase2(state([whole])) > phase2(state([plain]))


def dedup_spark_run(spark, shards, settings, **kw):
    from sqlite_dedup import spark as dedup_spark
    return dedup_spark.run(spark, shards, settings, **kw)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_prefer_keys_of_shards_rank_their_union_as_sqlite_ranks_it(tmp_path, seed):
    """The keys dedup_prepare gives each shard's rows, sorted together, rank
    the union as SQLite's dense_rank() over the terms ranks the one table:
    values of every class (integers and reals that tie, texts that differ in
    case or trailing spaces, BLOBs, NULLs), declared and written collations,
    both directions and NULL placements (no Spark needed: this is the
    contract the Spark elections rely on)."""
    import random
    rng = random.Random(seed)
    ddl = "CREATE TABLE pages (url TEXT, parsed TEXT, a, b TEXT COLLATE NOCASE, c TEXT)"
    words = ["x", "X", "x ", "ab", "Ab", "ab  ", "", "b\x00c", "é", "É"]
    value = lambda: rng.choice([None, rng.randint(-3, 3), rng.choice([1.0, 2.5, -0.0]), rng.choice(words),
                                rng.choice([b"", b"\x00", b"ab"])])
    rows = [(f"https://s{rng.randint(1, 9)}.example/{i}", f"text {i}", value(), rng.choice(words + [None]),
             rng.choice(words + [None])) for i in range(300)]
    pool = ["a", "a DESC", "b", "b DESC NULLS FIRST", "c COLLATE RTRIM", "a NULLS LAST", "length(c) DESC",
            "c COLLATE NOCASE ASC", "typeof(a)", "b || c", "a DESC, c COLLATE RTRIM NULLS LAST"]
    terms = rng.sample(pool, 3)
    whole = str(tmp_path / "whole.db")
    conn = sqlite3.connect(whole)
    conn.execute(ddl)
    conn.executemany("INSERT INTO pages VALUES (?, ?, ?, ?, ?)", rows)
    conn.commit()
    expected = dict(conn.execute(f"SELECT rowid, dense_rank() OVER (ORDER BY {', '.join(terms)}) FROM pages"))
    conn.close()
    keys = {}
    for lo, hi in [(1, 90), (90, 200), (200, 301)]:
        path = str(tmp_path / f"shard-{lo}.db")
        c = sqlite3.connect(path)
        c.execute(ddl)
        c.executemany("INSERT INTO pages (rowid, url, parsed, a, b, c) VALUES (?, ?, ?, ?, ?, ?)",
                      [(i + 1,) + r for i, r in enumerate(rows) if lo <= i + 1 < hi])
        c.commit()
        c.close()
        conn = P.connect(path)
        conn.execute("SELECT dedup_prepare(?)", (json.dumps({"prefer": terms}),)).fetchone()
        keys.update(conn.execute("SELECT rid, prefer_key FROM temp._dedup_rows WHERE placeholder = 0"))
        conn.close()
    distinct = sorted(set(keys.values()))
    got = {rid: distinct.index(k) + 1 for rid, k in keys.items()}
    assert got == expected, terms


def test_a_collation_the_host_registered_is_refused_for_keys(tmp_path):
    """SQLite orders by a host's collation only on that host: a key cannot
    carry it to another engine, so dedup_prepare refuses it by name."""
    db = str(tmp_path / "demo.db")
    shutil.copy(P.DEMO, db)
    conn = P.connect(db)
    conn.create_collation("mine", lambda a, b: (a > b) - (a < b))
    conn.execute("SELECT dedup_run(?)", (json.dumps({"prefer": ["title COLLATE mine"]}),)).fetchone()
    conn.execute("SELECT dedup_restore()").fetchone()
    with pytest.raises(sqlite3.OperationalError) as e:
        conn.execute("SELECT dedup_prepare(?)", (json.dumps({"prefer": ["crawled", "title COLLATE mine DESC"]}),))
    assert "collation mine; nothing was changed" in str(e.value), str(e.value)


@pytest.mark.parametrize("term,says", [
    ("title -- DESC", "incomplete input"),
    ("title COLLATE mine", "no such collation sequence: mine"),
])
def test_a_prefer_term_spark_cannot_rank_across_shards_is_named_before_any_shard_changes(
        spark, tmp_path, term, says):
    """A prefer term must rank the rows of every shard together: one
    ordering term of a built-in collation (the key of each row is checked
    against SQLite's own ranking of the shard before it is used)."""
    from sqlite_dedup import spark as dedup_spark
    shards = split(P.DEMO, tmp_path, [0.5])
    before = [dump(p) for p in shards]
    with pytest.raises(Exception) as e:
        dedup_spark.run(spark, shards, {"prefer": ["crawled DESC", term]})
    assert says in str(e.value) and "nothing was changed" in str(e.value), str(e.value)[-2000:]
    assert [dump(p) for p in shards] == before


def test_the_pages_local_example_prints_what_it_shows(package, tmp_path):
    """docs/scale-out.md's shell example, run as shown (in a scratch folder
    with the demo beside it), prints the output the page shows."""
    import re
    page = open(os.path.join(P.ROOT, "docs", "scale-out.md")).read()
    section = page.split("## Run it on one machine", 1)[1].split("\n## ", 1)[0]
    script, shown = re.findall(r"```(?:sh|text)\n(.*?)```", section, re.S)[:2]
    os.symlink(os.path.join(P.ROOT, "demo"), tmp_path / "demo")
    bindir = tmp_path / "bin"
    bindir.mkdir()
    (bindir / "sqlite-dedup").write_text(f'#!/bin/sh\nexec {PYTHON} -m sqlite_dedup "$@"\n')
    (bindir / "sqlite-dedup").chmod(0o755)
    env = env_for(package, PATH=f"{bindir}:{os.environ['PATH']}")
    run = subprocess.run(["bash", "-e", "-c", script], cwd=tmp_path, capture_output=True, text=True, env=env,
                         timeout=600)
    assert run.returncode == 0, run.stderr
    assert re.sub(r"spark-[0-9a-f]+", "spark-…", run.stdout).strip() == shown.strip()
    kept = sum(sqlite3.connect(str(tmp_path / f"shard-{i}.db")).execute("SELECT count(*) FROM pages").fetchone()[0]
               for i in range(3))
    assert kept == 245


def test_plan_of_pages_already_in_a_dataframe_is_dedup_plan(spark, tmp_path):
    """plan(pages_df, settings): the decisions for pages in Spark equal
    dedup_plan's on the same rows in one database (ids as rowids)."""
    from sqlite_dedup import spark as dedup_spark
    conn = P.connect(P.DEMO)
    cols = [r[1] for r in conn.execute("PRAGMA table_info(pages)")]
    rows = conn.execute(f"SELECT rowid, {', '.join(cols)} FROM pages").fetchall()
    conn.execute("SELECT dedup_plan('{\"n_min\": 2}')").fetchone()
    expected = {r[0]: r[1:] for r in conn.execute(
        "SELECT source_rowid, phase, reason, survivor, round(ratio, 12) FROM temp._dedup_removal")}
    conn.close()
    kinds = {int: "long", float: "double", bytes: "binary", str: "string"}
    types = [next((kinds[type(r[k])] for r in rows if r[k] is not None), "string") for k in range(1, len(cols) + 1)]
    df = spark.createDataFrame(rows, ", ".join(["id long"] + [f"{c} {t}" for c, t in zip(cols, types)])).repartition(3)
    decisions, figures = dedup_spark.plan(df, {"n_min": 2}, partition_rows=60)
    got = {r["rid"]: (r["phase"], r["reason"], r["survivor_rid"], None if r["ratio"] is None else round(r["ratio"], 12))
           for r in decisions.where("phase IS NOT NULL").collect()}
    assert got == expected
    assert figures["rows"] == 600
    with pytest.raises(ValueError, match="id column 'rowid'"):
        dedup_spark.plan(df, {}, id_column="rowid")


def test_dedup_prepare_by_rowid_ranges_gives_every_row_once(tmp_path):
    """Phase-1 tasks share a shard by rowid ranges: the ranges' rows,
    placeholders included, are the whole table's, each once."""
    db = str(tmp_path / "demo.db")
    shutil.copy(P.DEMO, db)
    conn = P.connect(db)
    conn.execute("SELECT dedup_run()").fetchone()  # (an archive: phase-4 placeholders)

    def rows(*bounds):
        conn.execute("SELECT dedup_prepare(NULL, ?, ?)", bounds).fetchone()
        return conn.execute("SELECT * FROM temp._dedup_rows").fetchall()

    whole = rows(None, None)
    assert sum(r[1] for r in whole) > 0  # placeholders among them
    parts = rows(None, 150) + rows(150, 420) + rows(420, None)
    assert sorted(parts, key=repr) == sorted(whole, key=repr)
    with pytest.raises(sqlite3.Error, match="rowid bounds must be integers or NULL, got text 'a'"):
        conn.execute("SELECT dedup_prepare(NULL, 'a')").fetchone()


def test_prepared_rows_come_out_as_arrow_batches_equal_to_the_view(package, tmp_path, monkeypatch):
    """The tasks read dedup_prepare's rows as Arrow columns the extension
    writes (dedup_rows_arrow, read by spark/_columns.py): batch by batch,
    placeholders included, they are the view's rows, each once, with every
    value and NULL as SQLite gives it, and the keys of every election as
    the SQL expressions they replace make them from the view's values."""
    sys.path.insert(0, package)
    from sqlite_dedup.spark import _tasks
    db = str(tmp_path / "demo.db")
    shutil.copy(P.DEMO, db)
    conn = P.connect(db)
    conn.execute("SELECT dedup_run()").fetchone()  # (an archive: phase-4 placeholders)
    names = [c for c, _ in _tasks.ROW_COLUMNS]
    conn.execute("SELECT dedup_prepare(NULL, 100, 500)").fetchone()
    view = conn.execute("""
        SELECT rid, placeholder, skip_reason, discard_reason, canonical_url,
               CASE WHEN placeholder = 0 THEN coalesce(strict_url, canonical_url) END, strict_url,
               CASE WHEN strict_url IS NOT NULL THEN dedup_extra_params(strict_url, canonical_url) END, domain,
               CASE WHEN placeholder = 0 THEN quote(content_hash) END, content_hash IS NOT NULL,
               CASE WHEN placeholder = 1 OR category = 'external' THEN 1 ELSE 0 END, https,
               dedup_sort_key(datetime), dedup_sort_key(crawled), dedup_sort_key(length),
               length(canonical_url) - CASE WHEN placeholder = 0 THEN https END,
               dedup_sort_key(NULLIF(datetime, '')), dedup_sort_key(NULLIF(crawled, '')),
               CASE WHEN placeholder = 0 THEN dedup_sort_key(coalesce(length, 0)) END, prefer_key, title_key, segments,
               has_text, CASE WHEN has_text AND skip_reason IS NULL AND canonical_url IS NOT NULL
                              THEN coalesce(fill_parsed, parsed) END,
               fill_parsed IS NOT NULL AND placeholder = 0
        FROM temp._dedup_rows""").fetchall()
    assert sum(r[1] for r in view) > 0 and any(r[-2] for r in view)  # placeholders and texts
    monkeypatch.setattr(_tasks, "BATCH_ROWS", 37)
    batches = list(_tasks.prepared_batches(conn, 5, 100, 500))
    assert len(batches) >= len(view) // 37 > 3
    assert all(b.schema.names == ["shard"] + names for b in batches)
    got = [row for b in batches for row in zip(*(c.to_pylist() for c in b.columns))]
    assert {r[0] for r in got} == {5}
    assert sorted((r[1:] for r in got), key=repr) == sorted(view, key=repr)
    with pytest.raises(sqlite3.Error, match="rid bounds must be integers or NULL, got text 'a'"):
        conn.execute("SELECT dedup_rows_arrow('a', NULL)").fetchone()
    with pytest.raises(sqlite3.Error, match=r"dedup_rows_arrow\[argument\]: expected 2 arguments, got 1"):
        conn.execute("SELECT dedup_rows_arrow(1)").fetchone()
    fresh = P.connect(db)
    with pytest.raises(sqlite3.Error, match="no rows are prepared on this connection"):
        fresh.execute("SELECT dedup_rows_arrow(NULL, NULL)").fetchone()


def test_pages_kept_apart_are_named_by_the_parameters_that_tell_them_apart(spark, tmp_path):
    """Phase 6's note of pages kept apart names, in the shards as in one
    database, only the dropped parameters whose values differ between the
    group's pages (hand-checked: `id` and `x`, not `start` or `p`, which
    every page has alike), each once, the group's pages in two shards."""
    from sqlite_dedup import spark as dedup_spark
    from incremental_state import own_text
    whole = str(tmp_path / "whole.db")
    conn = sqlite3.connect(whole)
    conn.execute("CREATE TABLE pages (url TEXT, parsed TEXT, crawled TEXT)")
    rows = [(f"https://a.example/r?id={i}&start=0", own_text(i), "2026-01-01") for i in range(4)]
    rows += [("https://a.example/r?id=1&start=10", own_text(1), "2026-01-01"),  # an exact copy: phase 3
             ("https://a.example/s?x=1&x=2&p", own_text(20), "2026-01-01"),
             ("https://a.example/s?x=1&x=3&p", own_text(21), "2026-01-01")]
    conn.executemany("INSERT INTO pages VALUES (?, ?, ?)", rows)
    conn.commit()
    conn.close()
    shards = split(whole, tmp_path, [0.4])
    dedup_spark.run(spark, shards, {})
    whole_run(whole, {})

    def notes(paths):
        out = {}
        for path in paths:
            c = sqlite3.connect(path)
            out.update(c.execute("SELECT dedup_rowid, note FROM dedup_notes WHERE kind = 'kept apart'"))
            c.close()
        return out
    expected = notes([whole])
    assert sorted(expected) == [1, 2, 3, 4, 6, 7]
    assert "without parameter `id`:" in expected[1] and "without parameter `x`:" in expected[6]
    assert notes(shards) == expected
    assert state(shards) == state([whole])


def test_a_shard_given_twice_by_any_path_is_refused_before_anything_changes(package, tmp_path):
    """`spark run a.db b.db a.db` (or a.db by a link, a byte-identical copy,
    or a copy by content) would remove every page of a.db as a duplicate of
    its copy."""
    shards = split(P.DEMO, tmp_path, [0.5])
    link = str(tmp_path / "link.db")
    os.symlink(shards[0], link)
    copy = str(tmp_path / "copy.db")
    shutil.copy(shards[1], copy)
    # (Issue 76: a copy by content, whose bytes differ: a table added, a VACUUM.)
    vacuumed = str(tmp_path / "vacuumed.db")
    shutil.copy(shards[1], vacuumed)
    with sqlite3.connect(vacuumed) as c:
        c.execute("CREATE TABLE notes (x)")
    sqlite3.connect(vacuumed).execute("VACUUM")
    before = [dump(p) for p in shards]
    for args, named in [([shards[0], shards[1], shards[0]], "same file"),
                        ([shards[0], shards[1], link], "same file"),
                        ([shards[0], shards[1], copy], "byte-identical copy"),
                        ([shards[0], shards[1], vacuumed], "by content (the same rows in the same order)")]:
        run = spark_cli(package, [*args, "--master", "local[2]"], timeout=120)
        assert run.returncode == 1, run.stderr
        assert named in run.stderr and "nothing was changed" in run.stderr, run.stderr
        assert [dump(p) for p in shards] == before


def page_batches(rows, names, size):
    """Pages (tuples of `names`, an id first) as Arrow batches of `size`
    rows, slices of one table (so with Arrow offsets), each column of one
    type: int64 for ids and lengths, else text."""
    import pyarrow as pa
    types = {"rowid": pa.int64(), "length": pa.int64()}
    table = pa.table([pa.array([r[i] for r in rows], types.get(n, pa.string())) for i, n in enumerate(names)],
                     names=names)
    yield from table.to_batches(max_chunksize=size)


def edge_pages(n, seed):
    """Pages that meet every branch of phase 1: HTML and text content
    without parsed text, empty texts and titles, NULLs, given hashes and
    lengths (0 among them), bad URLs, ignored paths, wrappers, non-Latin
    text, a NUL."""
    import random
    rng = random.Random(seed)
    urls = ["https://a.example/x?id=1&utm_source=z", "HTTPS://A.example/x/", "http://www.b.example/p?color=2&id=3",
            "https://b.example/tag/x", "https://web.archive.org/web/2020/https://c.example/y", "not a url", "",
            "https://c.example/é?q=ü", "ftp://x/y", "https://d.example/page#page=3", None]
    texts = ["<html><body><p>Hello <b>World</b></p><nav>menu</nav><script>x()</script></body></html>",
             "\n <!-- c --><!DOCTYPE html><div>Second page text here</div>", "plain text content", "",
             "Ελληνικά και русский текст 中文", "<p>a</p>" * 50, "Text\x00with NUL", None]
    return [(i, rng.choice(urls), rng.choice(["Title", "Ünïcode", "", None]), rng.choice(texts),
             rng.choice([None, None, "parsed text", ""]), rng.choice([None, None, "abc"]),
             rng.choice([None, None, 0, 17]), rng.choice([None, "2020-01-01", ""]),
             rng.choice([None, "2021-01-01 00:00:00"]), rng.choice([None, "external", "x"]))
            for i in range(1, n + 1)]


@pytest.mark.parametrize("settings", [{}, {"compat": "reference"}, {"url_options": "strip_www,https",
                                                                    "discard_params": 0}],
                         ids=["default", "compat", "keep-params-www-https"])
def test_arrow_pages_through_phase1_arrow_are_the_tables_rows(package, settings, monkeypatch):
    """Pages that arrive as Arrow batches go through the core's phase 1
    with no table between, read in place through the Arrow C data
    interface (sqlite_dedup_phase1_arrow) or copied into a BLOB for
    dedup_phase1_arrow: every row and value equals what dedup_prepare
    makes of the same pages in an in-memory table, on parity-5k (in
    batches that are slices of one table: Arrow offsets) and on pages built
    to meet every branch of phase 1."""
    sys.path.insert(0, package)
    from sqlite_dedup.spark import _tasks
    names = ["rowid", "url", "title", "content", "parsed", "content_hash", "length", "datetime", "crawled",
             "category"]
    P.require_corpus()
    src = sqlite3.connect(os.path.join(P.CORPUS, "parity-5k.db"))
    corpus = src.execute(f"SELECT {', '.join(names)} FROM pages").fetchall()
    src.close()
    for rows in (corpus, edge_pages(700, 3)):
        def prepared(direct, abi):
            monkeypatch.setattr(_tasks, "DIRECT", direct)
            monkeypatch.setattr(_tasks, "ABI", abi)
            batches = _tasks.prepare_batches(page_batches(rows, names, 333), "rowid", names[1:], json.dumps(settings))
            return sorted((row for b in batches for row in zip(*(c.to_pylist() for c in b.columns))),
                          key=lambda r: r[1])
        # (In place through the C data interface; as a BLOB through SQL;
        # through an in-memory table.)
        _tasks._Phase1Abi(_tasks.extension_path())  # (the in-place path is there: no quiet fallback)
        in_place, blob, table = prepared(True, True), prepared(True, False), prepared(False, False)
        assert len(in_place) == len(rows)
        assert in_place == table
        assert blob == table
