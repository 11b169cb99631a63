#!/usr/bin/env python3
"""MinHash / SimHash / LSH: accuracy on the corpus and speed against the peers, in one run.

  cargo build --release --features loadable_extension
  /usr/bin/python3 -m pip install --break-system-packages datasketch rensa trafilatura lxml_html_clean
  /usr/bin/python3 benches/sketch.py [--corpora parity-5k,20000] [--no-speed]

Accuracy: ground truth = every pair of distinct texts (one per content hash) of parity-5k.db and of
the 20k-page builder corpus (bench-data/, seed 7) with lev_ratio > 0.9, found exhaustively (every pair
within the exact length bound, through an index on length, then lev_ratio with its cutoff). For each
shingling and band/row choice: candidate pairs (sharing a band key), recall of the ground truth, and
precision after verification with lev_ratio (1.0 by construction: only verified pairs are kept).
Speed: end-to-end documents/s on 5 KB pages (shingling + sketch + band rows written).
"""
import argparse
import os
import random
import sqlite3
import time

from corpora import corpus

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CORPUS = os.path.join(ROOT, "..", "shared", "corpus")


def connect(path=":memory:"):
    conn = sqlite3.connect(path, isolation_level=None)
    conn.enable_load_extension(True)
    conn.load_extension(os.path.join(ROOT, "target", "release", "libdedup"))
    return conn


def accuracy(name, threshold=0.9):
    path = os.path.join(CORPUS, "parity-5k.db") if name == "parity-5k" else corpus(int(name))
    conn = connect()
    conn.execute(f"ATTACH 'file:{path}?mode=ro' AS c")
    conn.execute("""CREATE TABLE docs AS
        SELECT min(rowid) AS id, parsed AS text, length(parsed) AS len, url, domain
        FROM c.pages WHERE parsed <> '' GROUP BY content_hash""")
    conn.execute("CREATE INDEX docs_len ON docs (len, id)")
    start = time.perf_counter()
    # ratio > t needs |la - lb| < (1 - t)(la + lb), i.e. t/(2-t) la < lb < (2-t)/t la.
    truth = set(conn.execute("""
        SELECT a.id, b.id FROM docs a
        JOIN docs b ON b.len BETWEEN a.len * ?1 / (2 - ?1) - 1 AND a.len * (2 - ?1) / ?1 + 1 AND b.id > a.id
        WHERE lev_ratio(a.text, b.text, ?1) > ?1""", (threshold,)).fetchall())
    truth_seconds = time.perf_counter() - start
    truth = {(min(a, b), max(a, b)) for a, b in truth}
    n_docs = conn.execute("SELECT count(*) FROM docs").fetchone()[0]
    print(f"## Accuracy on {os.path.basename(path)}: {n_docs} distinct texts, {n_docs * (n_docs - 1) // 2} pairs, "
          f"{len(truth)} with lev_ratio > {threshold} (exhaustive, {truth_seconds:.1f} s)\n")
    print(f"| sketch | shingles | num_perm | bands x rows | candidate pairs | recall of lev_ratio > {threshold} pairs "
          "| verified pairs (precision 1.0) |")
    print("|---|---|---|---|---|---|---|")
    if threshold != 0.9:
        configs = [("minhash", "char", 5, 128, [(32, 4), (42, 3), (64, 2)]),
                   ("minhash_oph", "char", 5, 128, [(32, 4), (42, 3), (64, 2)])]
    else:
        configs = [("minhash", "char", 5, 128, [(32, 4), (42, 3), (64, 2)]),
                   ("minhash_oph", "char", 5, 128, [(32, 4), (42, 3), (64, 2)]),
                   ("minhash", "char", 3, 128, [(32, 4), (42, 3)]),
                   ("minhash", "char", 9, 128, [(42, 3), (64, 2)]),
                   ("minhash", "word", 1, 128, [(32, 4), (42, 3)]),
                   ("minhash", "word", 5, 128, [(42, 3), (64, 2)]),
                   ("minhash_oph", "word", 5, 128, [(42, 3), (64, 2)])]
    for sketch, kind, n, perms, bandings in configs:
        conn.execute("DROP TABLE IF EXISTS sig")
        conn.execute(f"CREATE TABLE sig AS SELECT id, {sketch}(text, {perms}, '{kind}', {n}) AS s FROM docs")
        for bands, rows in bandings:
            conn.execute("DROP TABLE IF EXISTS bands")
            conn.execute("CREATE TABLE bands (id INTEGER, band INTEGER, key INTEGER)")
            conn.execute(f"INSERT INTO bands SELECT sig.id, b.band, b.key FROM sig, lsh_bands(sig.s, {bands}, {rows}) b")
            conn.execute("CREATE INDEX bands_key ON bands (band, key)")
            cands = set(conn.execute("""SELECT DISTINCT a.id, b.id FROM bands a JOIN bands b
                ON a.band = b.band AND a.key = b.key AND a.id < b.id""").fetchall())
            verified = cands & truth
            print(f"| {sketch} | {kind} {n}-grams | {perms} | {bands} x {rows} | {len(cands)} | "
                  f"{len(verified) / max(len(truth), 1):.3f} | {len(verified)} |")
    # Cross-domain pairs and the URL window.
    order = {r[0]: i for i, r in enumerate(conn.execute("SELECT id FROM docs ORDER BY canonical_url(url)"))}
    domain = dict(conn.execute("SELECT id, url_domain(url) FROM docs"))
    cross = [(a, b) for a, b in truth if domain[a] != domain[b]]
    outside = [(a, b) for a, b in truth if abs(order[a] - order[b]) > 49]
    print(f"\nOf the {len(truth)} pairs: {len(cross)} join pages of different domains; "
          f"{len(outside)} lie more than 49 rows apart in URL order (out of the reference window's reach), "
          f"{len([p for p in outside if p in cross])} of them cross-domain.")


def spread_edits():
    """Pairs made by replacing 3% of a page's characters at random places:
    lev_ratio stays near 0.97, but every edit breaks the word shingles around it."""
    src = connect(f"file:{CORPUS}/parity-5k.db?mode=ro")
    texts = [r[0] for r in src.execute(
        "SELECT parsed FROM pages WHERE length(parsed) > 1000 GROUP BY content_hash ORDER BY min(rowid) LIMIT 300")]
    rng = random.Random(3)
    print("## Spread-out character edits (3% of characters replaced, 300 parity-5k pages)\n")
    print("| sketch | shingles | mean lev_ratio | mean estimated Jaccard | candidates at 32 x 4 |")
    print("|---|---|---|---|---|")
    pairs = []
    for t in texts:
        chars = list(t)
        for i in rng.sample(range(len(chars)), len(chars) * 3 // 100):
            chars[i] = rng.choice("abcdefghijklmnopqrstuvwxyz")
        pairs.append((t, "".join(chars)))
    for sketch, kind in (("minhash", "char"), ("minhash", "word"), ("minhash_oph", "char")):
        ratios, jaccards, found = [], [], 0
        for a, b in pairs:
            r, j, c = src.execute(
                f"""SELECT lev_ratio(?1, ?2), minhash_jaccard({sketch}(?1, 128, '{kind}', 5), {sketch}(?2, 128, '{kind}', 5)),
                    EXISTS (SELECT 1 FROM lsh_bands({sketch}(?1, 128, '{kind}', 5), 32, 4) x
                            JOIN lsh_bands({sketch}(?2, 128, '{kind}', 5), 32, 4) y USING (band, key))""",
                (a, b)).fetchone()
            ratios.append(r)
            jaccards.append(j)
            found += c
        print(f"| {sketch} | {kind} 5-grams | {sum(ratios) / len(ratios):.3f} | {sum(jaccards) / len(jaccards):.3f} | "
              f"{found / len(pairs):.3f} |")
    print()


def page(rng, texts, n):
    out = ""
    while len(out) < n:
        out += rng.choice(texts) + "\n\n"
    return out[:n]


def speed():
    src = sqlite3.connect(f"file:{CORPUS}/parity-5k.db?mode=ro", uri=True)
    texts = [r[0] for r in src.execute("SELECT parsed FROM pages WHERE length(parsed) > 200 AND lang = 'en'")]
    rng = random.Random(5)
    docs = [page(rng, texts, 5000) for _ in range(2000)]
    conn = connect()
    conn.execute("CREATE TABLE docs (id INTEGER PRIMARY KEY, text TEXT)")
    conn.executemany("INSERT INTO docs VALUES (?, ?)", enumerate(docs))
    results = []

    def timed(name, fn):
        best = float("inf")
        for _ in range(3):
            start = time.perf_counter()
            fn()
            best = min(best, time.perf_counter() - start)
        results.append((name, len(docs) / best))

    def ours_minhash(sketch="minhash"):
        conn.execute("DROP TABLE IF EXISTS bands")
        conn.execute("CREATE TABLE bands (id INTEGER, band INTEGER, key INTEGER)")
        conn.execute(f"""INSERT INTO bands SELECT d.id, b.band, b.key
                         FROM docs d, lsh_bands({sketch}(d.text), 32, 4) b""")

    def ours_simhash():
        conn.execute("DROP TABLE IF EXISTS sims")
        conn.execute("CREATE TABLE sims AS SELECT id, simhash(text) AS h FROM docs")

    def shingles(text, n=5):
        return {text[i:i + n] for i in range(len(text) - n + 1)}

    timed("sqlite-dedup minhash (char 5-grams, 128 perms) + lsh_bands 32x4, SQL", ours_minhash)
    timed("sqlite-dedup minhash_oph (char 5-grams, 128 bins) + lsh_bands 32x4, SQL",
          lambda: ours_minhash("minhash_oph"))
    timed("sqlite-dedup simhash (words), SQL", ours_simhash)
    try:
        from datasketch import MinHash, MinHashLSH

        def ds():
            lsh = MinHashLSH(num_perm=128, params=(32, 4))
            for i, d in enumerate(docs):
                m = MinHash(num_perm=128)
                m.update_batch([s.encode() for s in shingles(d)])
                lsh.insert(i, m)
        timed("datasketch MinHash(128) + MinHashLSH 32x4", ds)
    except ImportError:
        results.append(("datasketch (not installed)", None))
    try:
        from rensa import RMinHash, RMinHashLSH

        def rs():
            lsh = RMinHashLSH(threshold=0.5, num_perm=128, num_bands=32)
            for i, d in enumerate(docs):
                m = RMinHash(num_perm=128, seed=1)
                m.update(list(shingles(d)))
                lsh.insert(i, m)
        timed("rensa RMinHash(128) + RMinHashLSH 32 bands", rs)
    except ImportError:
        results.append(("rensa (not installed)", None))
    try:
        from trafilatura.deduplication import Simhash
        timed("trafilatura Simhash", lambda: [Simhash(d).hash for d in docs])
    except ImportError:
        results.append(("trafilatura (not installed)", None))

    print(f"\n## Speed: documents/s end to end on {len(docs)} pages of 5,000 characters (one core)\n")
    print("| what | docs/s |")
    print("|---|---|")
    for name, rate in results:
        print(f"| {name} | {rate:.0f} |" if rate else f"| {name} | - |")


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--corpora", default="parity-5k,20000")
    parser.add_argument("--no-speed", action="store_true")
    parser.add_argument("--threshold", type=float, default=0.9)
    args = parser.parse_args()
    for name in filter(None, args.corpora.split(",")):
        accuracy(name, args.threshold)
        print()
    if args.threshold == 0.9:
        spread_edits()
    if not args.no_speed:
        speed()
