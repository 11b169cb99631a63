"""The README's set-up: `tests/run` names each missing prerequisite and how
to install it before any cargo work, instead of failing minutes later."""
import os
import subprocess

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
