#!/usr/bin/env python3
"""Benchmarks of the scalar functions against their baselines, in one run.

Run with an interpreter that loads extensions and has the baselines:
  /usr/bin/python3 -m pip install --break-system-packages levenshtein rapidfuzz
  cargo build --release --features loadable_extension && /usr/bin/python3 benches/functions.py
Prints one table per function; ratios compare with the baselines measured in the same run.
"""
import hashlib
import os
import random
import sqlite3
import subprocess
import sys
import time

import Levenshtein
from rapidfuzz import fuzz

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CORPUS = os.path.join(ROOT, "..", "shared", "corpus")
sys.path.insert(0, CORPUS)
import build_corpus  # noqa: E402  the reference preparation, re-implemented by the corpus builder

conn = sqlite3.connect(":memory:")
conn.enable_load_extension(True)
conn.load_extension(os.path.join(ROOT, "target", "release", "libdedup"))
src = sqlite3.connect(f"file:{CORPUS}/parity-5k.db?mode=ro", uri=True)
texts = [r[0] for r in src.execute("SELECT parsed FROM pages WHERE length(parsed) > 200 AND lang = 'en'")]
rng = random.Random(42)


def page(n):
    out = ""
    while len(out) < n:
        out += rng.choice(texts) + "\n\n"
    return out[:n]


def edit(text, frac):
    chars = list(text)
    for _ in range(int(len(chars) * frac / 2)):
        i = rng.randrange(len(chars))
        op = rng.random()
        if op < 0.33:
            chars[i] = rng.choice("abcdefghijklmnopqrstuvwxyz ")
        elif op < 0.66:
            del chars[i]
        else:
            chars.insert(i, rng.choice("abcdefghijklmnopqrstuvwxyz "))
    return "".join(chars)


def timed(fn, repeat=3):
    best = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return best


print("## lev_ratio: microseconds per pair (lower is better)\n")
print("| size | pairs | python-Levenshtein ratio | rapidfuzz ratio cutoff=90 | lev_ratio (SQL) | lev_ratio cutoff 0.9 (SQL) | SQL vs Levenshtein | SQL cutoff vs rapidfuzz cutoff | cutoff speed-up |")
print("|---|---|---|---|---|---|---|---|---|")
for size in (1000, 5000, 20000):
    for kind in ("3% edits", "20% edits", "unrelated"):
        count = {1000: 200, 5000: 60, 20000: 12}[size]
        pairs = []
        for _ in range(count):
            a = page(size)
            b = page(size) if kind == "unrelated" else edit(a, 0.03 if kind == "3% edits" else 0.20)
            pairs.append((a, b))
        conn.execute("DROP TABLE IF EXISTS p")
        conn.execute("CREATE TABLE p(a TEXT, b TEXT)")
        conn.executemany("INSERT INTO p VALUES (?, ?)", pairs)
        lev = timed(lambda: [Levenshtein.ratio(a, b) for a, b in pairs]) / count * 1e6
        rf = timed(lambda: [fuzz.ratio(a, b, score_cutoff=90) for a, b in pairs]) / count * 1e6
        ours = timed(lambda: conn.execute("SELECT sum(lev_ratio(a, b)) FROM p").fetchone()) / count * 1e6
        ours_c = timed(lambda: conn.execute("SELECT sum(lev_ratio(a, b, 0.9)) FROM p").fetchone()) / count * 1e6
        print(f"| {size} | {kind} | {lev:.1f} | {rf:.1f} | {ours:.1f} | {ours_c:.1f} | {lev / ours:.2f}x | {rf / ours_c:.2f}x | {ours / ours_c:.1f}x |")

print("\n## content_hash: MB/s over the corpus's 4,955 parsed texts (higher is better)\n")
parsed = [r[0] for r in src.execute("SELECT parsed FROM pages WHERE parsed <> ''")]
raw = [(r[0] or "", r[1] or "") for r in src.execute("SELECT title, content FROM pages WHERE content <> ''")]
conn.execute("CREATE TABLE h(t TEXT)")
conn.executemany("INSERT INTO h VALUES (?)", [(t,) for t in parsed])
conn.execute("CREATE TABLE r(t TEXT)")
conn.executemany("INSERT INTO r VALUES (?)", [(f"{a}\n\n{b}",) for a, b in raw])
mb = sum(len(t.encode()) for t in parsed) / 1e6
mb_raw = sum(len(t.encode()) for (t,) in conn.execute("SELECT t FROM r")) / 1e6
floor = timed(lambda: conn.execute("SELECT sum(length(t)) FROM h").fetchone())
ours = timed(lambda: conn.execute("SELECT count(content_hash(t)) FROM h").fetchone())
ours_raw = timed(lambda: conn.execute("SELECT count(content_hash(t)) FROM r").fetchone())
ref = timed(lambda: [hashlib.sha1(build_corpus.normalize_doc(a, b).encode()).hexdigest() for a, b in raw], repeat=1)
blob = "".join(parsed).encode()
path = os.path.join(ROOT, "target", "bench-sha1.bin")
with open(path, "wb") as f:
    f.write(blob)
sha = timed(lambda: subprocess.run(["sha1sum", path], check=True, capture_output=True))
print("| what | MB | seconds | MB/s |")
print("|---|---|---|---|")
print(f"| content_hash(parsed) in SQL (already normalized) | {mb:.1f} | {ours:.3f} | {mb / ours:.0f} |")
print(f"| content_hash(title, content) in SQL (raw pages, mixed scripts) | {mb_raw:.1f} | {ours_raw:.3f} | {mb_raw / ours_raw:.0f} |")
print(f"| reference Python preparation + sha1 (raw pages) | {mb_raw:.1f} | {ref:.3f} | {mb_raw / ref:.0f} |")
print(f"| sha1sum of the parsed bytes | {mb:.1f} | {sha:.3f} | {mb / sha:.0f} |")
print(f"| SQL floor: sum(length(t)) | {mb:.1f} | {floor:.3f} | {mb / floor:.0f} |")

print("\n## shingle_resemblance: microseconds per 5k-character pair (n = 5)\n")
pairs = [(page(5000), None) for _ in range(200)]
pairs = [(a, edit(a, 0.03)) for a, _ in pairs]
conn.execute("CREATE TABLE s(a TEXT, b TEXT)")
conn.executemany("INSERT INTO s VALUES (?, ?)", pairs)
t = timed(lambda: conn.execute("SELECT sum(shingle_resemblance(a, b)) FROM s").fetchone()) / len(pairs) * 1e6
print(f"| pairs | µs per pair |\n|---|---|\n| {len(pairs)} | {t:.1f} |")
