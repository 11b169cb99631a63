"""The parity claim, checkable from a plain clone (no ../shared): under
`compat: reference`, dedup_run leaves on demo/crawl.db exactly the
survivors the reference pipeline itself kept (demo/expected/, copies of
its outputs in ../shared/corpus/expected/demo-*), survivors' URLs
included, and each row's canonical URL, domain and archive wrapper are the
reference's (demo/expected/crawl.canonical.tsv)."""
import csv
import json
import os
import shutil

import pytest

import pipeline as P

VARIANTS = [
    ("t090.d50", {}),
    ("t090.d50.nmin3", {"n_min": 3}),
    ("t100", {"threshold": 1.0}),
    ("t090.d50.keepparams", {"discard_params": 0}),
]
EXPECTED = os.path.join(P.ROOT, "demo", "expected")


def read(name):
    with open(os.path.join(EXPECTED, name), newline="") as f:
        return list(csv.DictReader(f, delimiter="\t"))


def expected(name):
    return {int(r["original_rowid"]): r["canonical_url"] for r in read(f"crawl.{name}.survivors.tsv")}


@pytest.mark.parametrize("name,settings", VARIANTS, ids=[v[0] for v in VARIANTS])
def test_the_demo_gives_the_reference_survivors(tmp_path, name, settings):
    db = str(tmp_path / "demo.db")
    shutil.copy(P.DEMO, db)
    conn = P.connect(db)
    conn.execute("SELECT dedup_run(?)", (json.dumps(dict(settings, compat="reference")),)).fetchone()
    assert P.surviving(conn) == expected(name)


def test_the_demo_gives_the_reference_canonical_urls():
    conn = P.connect(P.DEMO)
    want = {int(r["original_rowid"]): (r["canonical_url"], r["domain"], r["wayback"], r["canonical_url_keep_params"])
            for r in read("crawl.canonical.tsv")}
    got = {r[0]: tuple(r[1:]) for r in conn.execute(
        "SELECT rowid, coalesce(canonical_url(url, 'reference'), 'DISCARDED'), coalesce(url_domain(url, 'reference'), ''),"
        " CASE WHEN canonical_url(url, 'reference') IS NULL THEN '' ELSE coalesce(url_wayback(url), '') END,"
        " coalesce(canonical_url(url, 'reference,keep_params'), 'DISCARDED') FROM pages")}
    assert got == want


def test_the_fixture_is_the_references_own_output():
    """demo/expected/ holds the reference's files byte for byte (where
    ../shared is beside the checkout)."""
    P.require_corpus()
    pairs = [("crawl.canonical.tsv", "demo-canonical.tsv")] + [
        (f"crawl.{name}.survivors.tsv", f"demo-{name}.survivors.tsv") for name, _ in VARIANTS]
    for ours, theirs in pairs:
        with open(os.path.join(EXPECTED, ours), "rb") as a, open(os.path.join(P.CORPUS, "expected", theirs), "rb") as b:
            assert a.read() == b.read(), ours
