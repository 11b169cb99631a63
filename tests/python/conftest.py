"""Test-session settings shared by every module.

tests/run runs these tests in two processes when pytest-xdist is installed
(`-n 2 --dist loadgroup`). A module whose tests share something that must not
be built twice at once (the packages' dist/ folder, one Spark session) is
marked as one group, so that one process runs it whole. The longest tests
are put first, so that neither process is left with a long one at the end."""

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
