"""Benchmark corpora: built once with the corpus builder (seed 7) into the
git-ignored bench-data/ folder."""
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CORPUS = os.path.join(ROOT, "..", "shared", "corpus")
DATA = os.path.join(ROOT, "bench-data")


def corpus(n):
    """Path of the n-page builder corpus, built on first use."""
    path = os.path.join(DATA, f"{n}.db")
    if not os.path.exists(path):
        os.makedirs(DATA, exist_ok=True)
        subprocess.run([sys.executable, os.path.join(CORPUS, "build_corpus.py"), "--pool",
                        os.path.join(CORPUS, "text-pool.jsonl.gz"), "--out", path, "--n", str(n),
                        "--seed", "7"], check=True, stdout=subprocess.DEVNULL)
    return path
