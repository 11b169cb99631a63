"""Benchmark corpora: built once with the corpus builder (seed 7) into the
git-ignored bench-data/ folder."""
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CORPUS = os.path.join(ROOT, "..", "shared", "corpus")
DATA = os.path.join(ROOT, "bench-data")


def corpus(n):
    """Path of the n-page builder corpus, built on first use: seed 7, or for
    `n = "ref20k"` the reference's own timing corpus (20,000 pages, seed
    20240601). 1,000,000 pages take about 6 minutes and 5 GB."""
    pages, seed, name = (20000, 20240601, "ref-20k") if n == "ref20k" else (int(n), 7, str(n))
    path = os.path.join(DATA, f"{name}.db")
    if not os.path.exists(path):
        os.makedirs(DATA, exist_ok=True)
        subprocess.run([sys.executable, os.path.join(CORPUS, "build_corpus.py"), "--pool",
                        os.path.join(CORPUS, "text-pool.jsonl.gz"), "--out", path, "--n", str(pages),
                        "--seed", str(seed)], check=True, stdout=subprocess.DEVNULL)
    return path


def pages(n):
    """The number of pages of corpus `n`."""
    return 20000 if n == "ref20k" else int(n)


def evict(*paths):
    """Drops the files' pages from the OS page cache (written out first), so
    that the copy a timed run reads starts from a known cache: with
    `warm` after, the one file read whole into it."""
    os.sync()
    for p in paths:
        fd = os.open(p, os.O_RDONLY)
        try:
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)


def warm(*paths):
    """Reads the files whole, into the OS page cache."""
    for p in paths:
        with open(p, "rb", buffering=0) as f:
            while f.read(1 << 24):
                pass
