"""The README's set-up: `tests/run` names each missing prerequisite and how
to install it before any cargo work, instead of failing minutes later."""
import os
import subprocess
import sys

import pipeline as P


def test_tests_run_names_what_is_missing_first(tmp_path):
    env = dict(os.environ, PATH="/usr/bin:/bin", DEDUP_PYTHON=str(tmp_path / "no-python"))
    env.pop("CARGO_HOME", None)
    proc = subprocess.run([os.path.join(P.ROOT, "tests", "run")], capture_output=True, text=True, env=env,
                          timeout=60)
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    assert "missing prerequisites" in proc.stderr
    assert "pytest for" in proc.stderr and "apt-get install -y python3-pytest" in proc.stderr
    assert "loads extensions" in proc.stderr
    assert proc.stdout == ""  # nothing ran (no cargo output)


# The tests' optional dependencies (tests/run requires only pytest and
# python-Levenshtein): without each, what needs it skips, saying what to
# install; nothing fails. (In CI, which installs them, a skip is a failure.)
OPTIONAL = ["apsw", "pyspark", "pyarrow", "pandas", "numpy", "selenium", "scrapy", "maybedont"]


def test_each_module_without_its_optional_dependencies_skips_what_needs_them(tmp_path):
    """Every test module is collected and every test that needs an optional
    dependency skips, in a plain clone (no ../shared corpus) where none of
    them can be imported (each replaced by a package that raises
    ModuleNotFoundError, as an absent one does, in this process's children
    too)."""
    fakes = tmp_path / "absent"
    for name in OPTIONAL:
        (fakes / name).mkdir(parents=True)
        (fakes / name / "__init__.py").write_text(f"raise ModuleNotFoundError(\"No module named '{name}'\")\n")
    env = {k: v for k, v in os.environ.items() if k not in ("CI", "PYTEST_XDIST_WORKER")}
    env.update(PYTHONPATH=str(fakes), DEDUP_CORPUS=str(tmp_path / "no-corpus"))
    here = os.path.dirname(os.path.abspath(__file__))
    for name in OPTIONAL:  # (the fakes work)
        probe = subprocess.run([sys.executable, "-c", f"import {name}"], capture_output=True, text=True, env=env)
        assert probe.returncode == 1 and "ModuleNotFoundError" in probe.stderr, (name, probe.stderr)
    pytest_ = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:xdist", "-q", "-rs"]
    collected = subprocess.run(pytest_ + ["--collect-only"], capture_output=True, text=True, env=env, cwd=here,
                               timeout=300)
    last = collected.stdout.strip().splitlines()[-1]
    assert collected.returncode == 0 and "tests collected" in last and "error" not in last, collected.stdout[-3000:]
    needing = ["test_spark.py", "test_review.py", "test_scrapy.py",
               "test_interrupts.py::test_an_interrupt_at_any_step_leaves_before_or_done",
               "test_trust.py::test_apsw_directonly_function_is_refused_from_the_database",
               "test_held_statements.py::test_apsw_closes_without_complaint"]
    ran = subprocess.run(pytest_ + needing + ["-k", "not python-"], capture_output=True, text=True, env=env,
                         cwd=here, timeout=600)
    summary = ran.stdout.strip().splitlines()[-1]
    assert ran.returncode == 0 and "failed" not in summary and "error" not in summary, ran.stdout[-3000:]
    assert " passed" not in summary or "skipped" in summary, summary
    skipped = [line for line in ran.stdout.splitlines() if line.startswith("SKIPPED")]
    assert skipped and all(any(w in line for w in ("install", "needs", "no apsw", "not installed"))
                           for line in skipped), skipped


def test_the_declared_rust_version_is_at_least_every_dependencys():
    """Cargo.toml's rust-version (which README and tests/run name) is no
    older than the rust-version any crate the extension builds with declares,
    as Cargo.lock resolves them: a toolchain older than that cannot build it.
    (These machines have one toolchain, so no build at rust-version itself
    runs here; clippy's incompatible_msrv lint, under -D warnings in CI,
    holds our own code to the standard library of that version.)"""
    import json
    import re
    manifest = open(os.path.join(P.ROOT, "Cargo.toml")).read()
    declared = re.search(r'^rust-version = "([\d.]+)"', manifest, re.M).group(1)
    version = lambda v: tuple(int(x) for x in v.split("."))[:2]
    run = lambda *args: subprocess.run(["cargo", *args], cwd=P.ROOT, capture_output=True, text=True, check=True)
    tree = run("tree", "--locked", "-e", "normal,build", "--features", "loadable_extension", "--prefix", "none")
    built = {tuple(line.split()[:2]) for line in tree.stdout.splitlines() if line.strip()}
    meta = json.loads(run("metadata", "--locked", "--format-version", "1").stdout)
    needs = {p["name"]: p["rust_version"] for p in meta["packages"]
             if (p["name"], "v" + p["version"]) in built and p.get("rust_version")}
    assert needs and "url" in needs, sorted(built)[:5]
    newest = max(needs.values(), key=version)
    assert version(declared) >= version(newest), (declared, {n: v for n, v in needs.items() if v == newest})
    assert f"Rust ≥ {declared}" in open(os.path.join(P.ROOT, "README.md")).read()
    assert f"Rust >= {declared}" in open(os.path.join(P.ROOT, "tests", "run")).read()
