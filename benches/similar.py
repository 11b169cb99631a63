#!/usr/bin/env python3
"""dedup_similar's latency (docs/crawl-time.md) at N kept pages, in window
and lsh mode, against datasketch's MinHashLSH.query on the same signatures,
in the same run.

A builder corpus of N pages (benches/corpora.py, seed 7; it keeps about 32%
of its pages: 310,000 pages keep about 100,000, 3,100,000 about 1,000,000)
is deduplicated once in each mode (the index written); then Q pages are
asked about, one call each (the table form, `SELECT * FROM
dedup_similar(...)`): half new pages (another seed's corpus), half near
copies of kept pages (a sentence appended, another URL). The peer: every kept page's signature as
the pipeline makes it (`minhash` of its phase-4 text, 128 permutations), in a
datasketch MinHashLSH of the same bands and rows (32 x 4), queried with the
same pages' signatures (query only: no verification of the candidates, no
election, no URL phases: a lower bound of what a peer would do). Prints p50
and p99 of each, in milliseconds, and their ratio.

  cargo build --release --features loadable_extension
  /usr/bin/python3 -m pip install --break-system-packages datasketch numpy
  /usr/bin/python3 benches/similar.py [--pages 310000] [--queries 200] [--modes window,lsh]
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


def asked(conn, names, queries, rng):
    """The pages to ask about: half another seed's, half near copies of
    stored pages."""
    src = sqlite3.connect(other_corpus(max(1000, queries)))
    fresh = src.execute(f"SELECT {', '.join(names)} FROM pages ORDER BY random() LIMIT ?",
                        (queries // 2,)).fetchall()
    stored = conn.execute(f"SELECT {', '.join(names)} FROM pages WHERE length(content) > 200 "
                          "ORDER BY random() LIMIT ?", (queries - len(fresh),)).fetchall()
    asks = []
    for row in fresh + stored:
        page = dict(zip(names, row))
        if row in stored:
            page["url"] = page["url"] + "?copy=1"
            page["content"] = page["content"] + " One more sentence, added by the copy."
            page["parsed"] = page["content_hash"] = page["length"] = None
        asks.append(page)
    rng.shuffle(asks)
    return asks


def timed_asks(conn, asks):
    """Each page asked once: the seconds of each call, and how many met a
    stored row."""
    times, met = [], 0
    for page in asks:
        page = dict(page)
        text, url = page.pop("content"), page.pop("url")
        began = time.perf_counter()
        answer = conn.execute("SELECT * FROM dedup_similar(?, ?, NULL, ?)", (text, url, json.dumps(page))).fetchall()
        times.append(time.perf_counter() - began)
        met += bool(answer)
    return times, met


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--pages", type=int, default=310000)
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--modes", default="window,lsh")
    args = ap.parse_args()
    import numpy as np
    from datasketch import MinHash, MinHashLSH
    rng = random.Random(1)
    source = corpus(args.pages)
    results = []
    with tempfile.TemporaryDirectory(dir=DATA) as tmp:
        for mode in args.modes.split(","):
            db = os.path.join(tmp, f"crawl-{mode}.db")
            shutil.copy(source, db)
            conn = P.connect(db)
            began = time.perf_counter()
            conn.execute("SELECT dedup_run(?)", (json.dumps({"near_mode": mode}),)).fetchone()
            run_s = time.perf_counter() - began
            kept = conn.execute("SELECT count(*) FROM pages").fetchone()[0]
            names = [r[1] for r in conn.execute("PRAGMA table_info(pages)")]
            asks = asked(conn, names, args.queries, random.Random(1))
            times, met = timed_asks(conn, asks)
            results.append((mode, kept, run_s, times, met))
            if mode != args.modes.split(",")[-1]:
                conn.close()
                os.remove(db)
        # The peer, on the pipeline's own signatures of the last mode's kept pages.
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
    t50, t99 = percentiles(theirs)
    print(f"# dedup_similar on a {args.pages:,}-page builder corpus, {args.queries} pages asked a mode\n")
    print("| | kept pages | first run s | p50 ms | p99 ms | p50 / datasketch | p99 / datasketch | pages that met a stored row |")
    print("|---|---|---|---|---|---|---|---|")
    for mode, kept, run_s, times, met in results:
        o50, o99 = percentiles(times)
        print(f"| dedup_similar, {mode} mode (the whole next run for one page) | {kept:,} | {run_s:.0f} | {o50:.2f} | "
              f"{o99:.2f} | {o50 / t50:.0f}x | {o99 / t99:.0f}x | {met} |")
    print(f"| datasketch MinHashLSH.query (candidates only; {results[-1][0]} mode's kept pages) | {results[-1][1]:,} | | "
          f"{t50:.3f} | {t99:.3f} | | | |")


if __name__ == "__main__":
    main()
