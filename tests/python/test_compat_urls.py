"""`compat: reference` is the reference pipeline, its URL rules included
(issue 64), checked against the reference's own outputs
(`../shared/corpus/expected/`: `Deduplicator.run_on_db`, `fix_urls` off),
never against a model: on the demo, parity-5k and a 20,000-row builder
corpus made from its seed (`open-20k`, the command in that folder's
README), every row's canonical URL, domain, archive wrapper and canonical
URL with `discard_params` off are the reference's under
`canonical_url(url, 'reference')`, and a run under compat keeps exactly the
reference's survivors (rowid and URL) in each variant given."""
import csv
import json
import os
import shutil
import subprocess
import sys

import pytest

import pipeline as P

# (variant, settings), as ../shared/corpus/README.md names them.
VARIANTS = {
    "t090.d50": {},
    "t090.d50.nmin3": {"n_min": 3},
    "t100": {"threshold": 1.0},
    "t090.d50.keepparams": {"discard_params": False},
}
CORPORA = ["demo", "parity-5k", "open-20k"]


def expected_file(corpus, what):
    sep = "-" if corpus == "demo" else "."
    return os.path.join(P.CORPUS, "expected", f"{corpus}{sep}{what}")


def read(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f, delimiter="\t"))


@pytest.fixture(scope="module")
def databases(tmp_path_factory):
    """corpus name -> a database path (open-20k built from its seed)."""
    P.require_corpus()
    out = {"demo": P.DEMO, "parity-5k": os.path.join(P.CORPUS, "parity-5k.db")}
    built = tmp_path_factory.mktemp("open-20k") / "open-20k.db"
    subprocess.run([sys.executable, os.path.join(P.CORPUS, "build_corpus.py"), "--pool",
                    os.path.join(P.CORPUS, "text-pool.jsonl.gz"), "--out", str(built), "--n", "20000",
                    "--seed", "1111"], check=True, capture_output=True)
    out["open-20k"] = str(built)
    return out


@pytest.mark.parametrize("corpus", CORPORA)
def test_every_canonical_url_domain_and_wrapper_is_the_references(databases, corpus):
    conn = P.connect(databases[corpus])
    expected = {int(r["original_rowid"]): r for r in read(expected_file(corpus, "canonical.tsv"))}
    rows = conn.execute(
        "SELECT rowid, coalesce(canonical_url(url, 'reference'), 'DISCARDED'),"
        " coalesce(url_domain(url, 'reference'), ''),"
        " CASE WHEN canonical_url(url, 'reference') IS NULL THEN '' ELSE coalesce(url_wayback(url), '') END,"
        " coalesce(canonical_url(url, 'reference,keep_params'), 'DISCARDED') FROM pages").fetchall()
    assert len(rows) == len(expected)
    columns = ["canonical_url", "domain", "wayback", "canonical_url_keep_params"]
    differ = {c: [] for c in columns}
    for rowid, *got in rows:
        for column, value in zip(columns, got):
            if value != expected[rowid][column]:
                differ[column].append((rowid, expected[rowid][column], value))
    assert all(not d for d in differ.values()), {c: (len(d), d[:3]) for c, d in differ.items()}


@pytest.mark.parametrize("corpus,variant", [(c, v) for c in CORPORA for v in VARIANTS])
def test_a_compat_run_keeps_the_references_survivors(tmp_path, databases, corpus, variant):
    path = expected_file(corpus, f"{variant}.survivors.tsv")
    if not os.path.exists(path):
        pytest.skip(f"the reference's outputs hold no {variant} for {corpus}")
    db = str(tmp_path / "crawl.db")
    shutil.copy(databases[corpus], db)
    os.chmod(db, 0o644)
    conn = P.connect(db)
    conn.execute("SELECT dedup_run(?)", (json.dumps(dict(VARIANTS[variant], compat="reference")),)).fetchone()
    expected = {int(r["original_rowid"]): r["canonical_url"] for r in read(path)}
    got = P.surviving(conn)
    assert got == expected, (len(got), len(expected), sorted(set(got.items()) ^ set(expected.items()))[:6])


def test_the_default_keeps_the_projects_url_rules(databases):
    """Outside compat nothing changed: the project's rules still join what
    the reference keeps apart (host case, the slash before a query)."""
    conn = P.connect(databases["demo"])
    pairs = conn.execute(
        "SELECT canonical_url('https://REQUESTS.READTHEDOCS.IO/en/v2.0.0/dev/todo/'),"
        " canonical_url('https://jlevy.github.io/the-art-of-command-line/meta/?lang=ru')").fetchone()
    assert pairs == ("https://requests.readthedocs.io/en/v2.0.0/dev/todo",
                     "https://jlevy.github.io/the-art-of-command-line/meta?lang=ru")
