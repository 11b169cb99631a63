"""The parity claim, checkable from a plain clone (no ../shared): under
`compat: reference`, dedup_run leaves on demo/crawl.db exactly the
survivors in demo/expected/ (made by scripts/demo-expected with the
independent model of the reference; see that script for where its
outputs come from), survivors' URLs included."""
import csv
import json
import os
import shutil
import subprocess
import sys

import pytest

import pipeline as P

VARIANTS = [
    ("t090.d50", {}),
    ("t090.d50.nmin3", {"n_min": 3}),
    ("t100", {"threshold": 1.0}),
    ("t090.d50.keepparams", {"discard_params": 0}),
]


def expected(name):
    with open(os.path.join(P.ROOT, "demo", "expected", f"crawl.{name}.survivors.tsv"), newline="") as f:
        return {int(r["original_rowid"]): r["canonical_url"] for r in csv.DictReader(f, delimiter="\t")}


@pytest.mark.parametrize("name,settings", VARIANTS, ids=[v[0] for v in VARIANTS])
def test_the_demo_gives_the_reference_survivors(tmp_path, name, settings):
    db = str(tmp_path / "demo.db")
    shutil.copy(P.DEMO, db)
    conn = P.connect(db)
    conn.execute("SELECT dedup_run(?)", (json.dumps(dict(settings, compat="reference")),)).fetchone()
    assert P.surviving(conn) == expected(name)


def test_the_fixture_is_what_its_command_makes(tmp_path):
    """scripts/demo-expected, run into a copy of the checkout's demo folder,
    writes the committed files byte for byte."""
    pytest.importorskip("Levenshtein")
    root = tmp_path / "root"
    (root / "tests").mkdir(parents=True)
    shutil.copytree(os.path.join(P.ROOT, "tests", "python"), root / "tests" / "python")
    (root / "scripts").mkdir()
    shutil.copy(os.path.join(P.ROOT, "scripts", "demo-expected"), root / "scripts")
    (root / "demo").mkdir()
    shutil.copy(P.DEMO, root / "demo" / "crawl.db")
    subprocess.run([sys.executable, str(root / "scripts" / "demo-expected")], check=True, capture_output=True,
                   env=dict(os.environ, DEDUP_EXTENSION=P.EXTENSION))
    for name, _ in VARIANTS:
        made = (root / "demo" / "expected" / f"crawl.{name}.survivors.tsv").read_bytes()
        committed = open(os.path.join(P.ROOT, "demo", "expected", f"crawl.{name}.survivors.tsv"), "rb").read()
        assert made == committed, name
