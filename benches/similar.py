#!/usr/bin/env python3
"""dedup_similar's latency (docs/crawl-time.md) at N kept pages, against
datasketch's MinHashLSH.query on the same signatures, in the same run.

A builder corpus of N pages (benches/corpora.py, seed 7) is deduplicated once
in lsh mode (the index written); then Q pages are asked about, one call
each: half new pages (another seed's corpus), half near copies of kept pages
(a sentence appended, another URL). The peer: every kept page's signature as
the pipeline makes it (`minhash` of its phase-4 text, 128 permutations), in a
datasketch MinHashLSH of the same bands and rows (32 x 4), queried with the
same pages' signatures (query only: no verification of the candidates, no
election, no URL phases: a lower bound of what a peer would do). Prints p50
and p99 of each, in milliseconds, and their ratio.

  cargo build --release --features loadable_extension
  /usr/bin/python3 -m pip install --break-system-packages datasketch numpy
  /usr/bin/python3 benches/similar.py [--pages 100000] [--queries 200]
"""
import argparse
import json
import os
import random
import shutil
import sqlite3
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "python", "helpers"))
import pipeline as P  # noqa: E402
from corpora import CORPUS, DATA  # noqa: E402
from corpora import corpus  # noqa: E402


def other_corpus(n):
    """A corpus of another seed: pages the first has not."""
    path = os.path.join(DATA, f"{n}-seed8.db")
    if not os.path.exists(path):
        import subprocess
        os.makedirs(DATA, exist_ok=True)
        subprocess.run([sys.executable, os.path.join(CORPUS, "build_corpus.py"), "--pool",
                        os.path.join(CORPUS, "text-pool.jsonl.gz"), "--out", path, "--n", str(n), "--seed", "8"],
                       check=True, stdout=subprocess.DEVNULL)
    return path


def percentiles(xs):
    xs = sorted(xs)
    return xs[len(xs) // 2] * 1000, xs[min(len(xs) - 1, int(len(xs) * 0.99))] * 1000


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--pages", type=int, default=100000)
    ap.add_argument("--queries", type=int, default=200)
    args = ap.parse_args()
    import numpy as np
    from datasketch import MinHash, MinHashLSH
    rng = random.Random(1)
    settings = json.dumps({"near_mode": "lsh"})
    with tempfile.TemporaryDirectory() as tmp:
        db = os.path.join(tmp, "crawl.db")
        shutil.copy(corpus(args.pages), db)
        conn = P.connect(db)
        conn.execute("SELECT dedup_run(?)", (settings,)).fetchone()
        kept = conn.execute("SELECT count(*) FROM pages").fetchone()[0]
        names = [r[1] for r in conn.execute("PRAGMA table_info(pages)")]
        src = sqlite3.connect(other_corpus(max(1000, args.queries)))
        fresh = src.execute(f"SELECT {', '.join(names)} FROM pages ORDER BY random() LIMIT ?",
                            (args.queries // 2,)).fetchall()
        stored = conn.execute(f"SELECT {', '.join(names)} FROM pages WHERE length(content) > 200 "
                              "ORDER BY random() LIMIT ?", (args.queries - len(fresh),)).fetchall()
        asks = []
        for row in fresh + stored:
            page = dict(zip(names, row))
            if row in stored:
                page["url"] = page["url"] + "?copy=1"
                page["content"] = page["content"] + " One more sentence, added by the copy."
                page["parsed"] = page["content_hash"] = page["length"] = None
            asks.append(page)
        rng.shuffle(asks)
        ours, met = [], 0
        for page in asks:
            text, url = page.pop("content"), page.pop("url")
            began = time.perf_counter()
            answer = conn.execute("SELECT dedup_similar(?, ?, NULL, ?)", (text, url, json.dumps(page))).fetchone()[0]
            ours.append(time.perf_counter() - began)
            met += answer != "[]"
            page["content"], page["url"] = text, url
        # The peer, on the pipeline's own signatures.
        lsh = MinHashLSH(num_perm=128, params=(32, 4))

        def signature(blob):
            return MinHash(num_perm=128, scheme="legacy", hashvalues=np.frombuffer(blob[8:], dtype="<u4").astype(np.uint64))

        for rowid, blob in conn.execute(
                "SELECT rowid, minhash(coalesce(parsed, normalize_text(coalesce(title, '') || char(10, 10) || content))) "
                "FROM pages"):
            if blob is not None:
                lsh.insert(rowid, signature(blob))
        theirs = []
        for page in asks:
            blob = conn.execute("SELECT minhash(coalesce(?1, normalize_text(coalesce(?2, '') || char(10, 10) || ?3)))",
                                (page.get("parsed"), page.get("title"), page["content"])).fetchone()[0]
            if blob is None:
                continue
            m = signature(blob)
            began = time.perf_counter()
            lsh.query(m)
            theirs.append(time.perf_counter() - began)
    (o50, o99), (t50, t99) = percentiles(ours), percentiles(theirs)
    print(f"# dedup_similar at {kept:,} kept pages ({args.pages:,}-page builder corpus, lsh mode), {len(asks)} pages asked\n")
    print("| | p50 ms | p99 ms |\n|---|---|---|")
    print(f"| dedup_similar (the whole next run for one page) | {o50:.2f} | {o99:.2f} |")
    print(f"| datasketch MinHashLSH.query (candidates only) | {t50:.3f} | {t99:.3f} |")
    print(f"\nRatio, ours / datasketch: p50 {o50 / t50:.0f}x, p99 {o99 / t99:.0f}x. Pages that met a stored row: {met}.")


if __name__ == "__main__":
    main()
