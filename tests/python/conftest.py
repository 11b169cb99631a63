"""Test-session settings and fixtures shared by every module.

tests/run runs these tests in two processes when pytest-xdist is installed
(`-n 2 --dist loadgroup`). A module whose tests share something that must not
be built twice at once (the packages' dist/ folder, one Spark session) is
marked as one group, so that one process runs it whole. The longest tests
are put first, so that neither process is left with a long one at the end."""

import os
import sys

import pytest

# The helpers the tests import (pipeline, hosts, sites, ...) live in
# helpers/, each also a program some tests run in a subprocess.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "helpers"))

# Modules run first, in this order; each one's tests keep their order.
FIRST = ["test_spark.py", "test_interrupts.py"]


def pytest_configure(config):
    # Known to pytest without xdist too (a plain serial run).
    config.addinivalue_line("markers", "xdist_group(name): tests run by one process under xdist")


def pytest_collection_modifyitems(session, config, items):
    def rank(item):
        name = item.path.name
        return FIRST.index(name) if name in FIRST else len(FIRST)
    items.sort(key=rank)


@pytest.fixture
def sqlite_dedup(tmp_path):
    """The Python package `sqlite_dedup` with the release build where the
    wheel puts it (pipeline.package), imported afresh for the test and
    taken off sys.path after it."""
    import pipeline as P
    folder = P.package(tmp_path)
    sys.path.insert(0, folder)
    for name in [m for m in sys.modules if m == "sqlite_dedup" or m.startswith("sqlite_dedup.")]:
        del sys.modules[name]
    try:
        import sqlite_dedup
        yield sqlite_dedup
    finally:
        sys.path.remove(folder)
