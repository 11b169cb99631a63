#!/usr/bin/env python3
"""Learning from the crawl, measured (docs/learning.md).

URL rules: a crawl is replayed in `crawled` order; before each row arrives,
its URL is predicted (skip when P(duplicate) >= 0.98), then the row is
learned from. Our dupe_probability + dedup_learn_url_rules side by side with
pip MaybeDont's DupePredictor (get_dupe_prob + update_model) on the same
stream and threshold. A skip is avoided work when the URL's content was seen
before in the stream, a false skip when it was new. Streams: the builder
corpus (content = content_hash; near-copies count as new content, for both
tools), tests/python/helpers/sites.py's param_crawl (content = its group) and its
product_site, a shop whose pages are mostly chrome (content = the product).
Content "seen before" = the same content key, or word 4-shingle Jaccard >= 0.9
(exact sets) with an earlier row of the same host.

(MaybeDont 0.1 calls random.sample on a set, an error on Python 3.11 once a
path has over 200 URLs; the replay hands it a sorted list instead.)

Chrome: tests/python/helpers/sites.py's chrome_site with the default pipeline and
with boilerplate = 'strip'; the corpus's external rows ('strip' vs 'keep');
segments flagged vs trafilatura's duplicate_test over the same pages; the
cost of building dedup_segments per 1,000 pages.

  cargo build --release --features loadable_extension
  python3 -m venv bench-data/venv && bench-data/venv/bin/pip install maybedont trafilatura lxml_html_clean
  /usr/bin/python3 benches/learning.py [--maybedont-python bench-data/venv/bin/python] [--corpus-rows 5000]
"""
import argparse
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "python", "helpers"))
import pipeline as P  # noqa: E402
from sites import chrome_site, param_crawl, product_site  # noqa: E402
from corpora import DATA, corpus  # noqa: E402

THRESHOLD = 0.98

MAYBEDONT_REPLAY = r"""
import json, random, sys, time
import maybedont.predict
from maybedont import DupePredictor
# MaybeDont samples a set with random.sample, which Python 3.11 refuses once
# a path has over 200 URLs: give it a sorted list (same behaviour as 3.10).
class _Random:
    def sample(self, population, k):
        return random.sample(sorted(population), k)
maybedont.predict.random = _Random()
stream = json.load(open(sys.argv[1]))
sample = int(sys.argv[2])  # texts given to learn its too-common shingles from
dp = DupePredictor(texts_sample=[text for _, text in stream[:sample]] or None)
probs, t_pred, t_upd = [], 0.0, 0.0
for url, text in stream:
    a = time.perf_counter(); probs.append(dp.get_dupe_prob(url)); b = time.perf_counter()
    dp.update_model(url, text); c = time.perf_counter()
    t_pred += b - a; t_upd += c - b
json.dump({"probs": probs, "predict": t_pred, "update": t_upd}, sys.stdout)
"""

TRAFILATURA_FLAGS = r"""
import json, sys
from lxml import etree
from trafilatura.deduplication import LRUCache, duplicate_test
from trafilatura.settings import Extractor
pages = json.load(open(sys.argv[1]))
options = Extractor()
options.dedup = LRUCache(maxsize=10**6)
flagged = set()
for content in pages:
    for line in content.split("\n"):
        line = line.strip()
        if not line:
            continue
        element = etree.Element("p"); element.text = line
        if duplicate_test(element, options):
            flagged.add(" ".join(line.split()).lower())
json.dump({"flagged": sorted(flagged), "min_duplcheck_size": options.min_duplcheck_size,
           "max_repetitions": options.max_repetitions}, sys.stdout)
"""


def corpus_stream(n):
    """(url, title, content, crawled, content key) of the builder corpus in crawled order."""
    src = sqlite3.connect(corpus(n) if n != 5000 else os.path.join(P.CORPUS, "parity-5k.db"))
    return [(u, t, c, cr, h) for u, t, c, cr, h in src.execute(
        "SELECT url, coalesce(title, ''), coalesce(content, ''), crawled, coalesce(content_hash, 'row ' || rowid) "
        "FROM pages ORDER BY crawled IS NULL, crawled, rowid")]


def shingles(text):
    words = text.lower().split()
    return frozenset(hash(" ".join(words[i:i + 4])) for i in range(max(1, len(words) - 3)))


def truth(stream):
    """Per row: whether its content was seen earlier in the stream: the same
    content key, or word 4-shingle Jaccard >= 0.9 (exact sets, MaybeDont's
    criterion) with an earlier row of the same host."""
    keys, by_host, old = set(), {}, []
    for url, title, content, _, key in stream:
        sh = shingles(title + " " + content)
        host = url.split("/")[2].lower().removeprefix("www.") if "://" in url else ""
        earlier = by_host.setdefault(host, [])
        seen = key in keys or any(
            0.9 * len(sh) <= len(o) <= len(sh) / 0.9 and len(sh & o) >= 0.9 * len(sh | o) for o in earlier)
        old.append(seen)
        keys.add(key)
        earlier.append(sh)
    return old


def score(probs, old):
    skips = [i for i, p in enumerate(probs) if p is not None and p >= THRESHOLD]
    avoided = sum(1 for i in skips if old[i])
    return {"skipped": len(skips), "avoided": avoided, "false": len(skips) - avoided,
            "possible": sum(old), "rows": len(old)}


def ours_replay(stream, batch, journal="WAL", together=False, learn=True):
    """Predict each URL, then learn from its row (every `batch` rows). With
    `journal` 'DELETE' the database keeps SQLite's defaults (rollback
    journal, synchronous FULL); `together`: the rows' insert and the
    learning in one transaction (one commit instead of two). `learn` False:
    the rows are only inserted (what storing the crawl costs without any
    learning; the update time is then the insert's)."""
    with tempfile.TemporaryDirectory() as tmp:
        conn = P.connect(os.path.join(tmp, "replay.db"))
        # A crawler's database: WAL, no fsync at every commit (MaybeDont
        # keeps its model in memory).
        if journal == "WAL":
            conn.execute("PRAGMA journal_mode = WAL")
            conn.execute("PRAGMA synchronous = NORMAL")
        conn.execute("CREATE TABLE pages (url TEXT, title TEXT, content TEXT, crawled TEXT)")
        probs, t_pred, t_upd = [], 0.0, 0.0
        pending = []
        for url, title, content, crawled, _ in stream:
            a = time.perf_counter()
            probs.append(conn.execute("SELECT dupe_probability(?)", (url,)).fetchone()[0])
            t_pred += time.perf_counter() - a
            pending.append((url, title, content, crawled))
            if len(pending) >= batch:
                a = time.perf_counter()
                if together:
                    conn.execute("BEGIN")
                conn.executemany("INSERT INTO pages VALUES (?, ?, ?, ?)", pending)
                if learn:
                    conn.execute("SELECT dedup_learn_url_rules()").fetchone()
                if together:
                    conn.execute("COMMIT")
                t_upd += time.perf_counter() - a
                pending = []
        if pending:  # (after the last prediction: the rules learned in all)
            a = time.perf_counter()
            conn.executemany("INSERT INTO pages VALUES (?, ?, ?, ?)", pending)
            if learn:
                conn.execute("SELECT dedup_learn_url_rules()").fetchone()
            t_upd += time.perf_counter() - a
        rules = conn.execute("SELECT count(*) FROM dedup_url_rules").fetchone()[0] if learn else 0
    return {"probs": probs, "predict": t_pred, "update": t_upd, "rules": rules}


def ours_whole(stream):
    """Seconds to learn the whole stream in one call (no predictions)."""
    with tempfile.TemporaryDirectory() as tmp:
        conn = P.connect(os.path.join(tmp, "whole.db"))
        conn.execute("CREATE TABLE pages (url TEXT, title TEXT, content TEXT, crawled TEXT)")
        conn.executemany("INSERT INTO pages VALUES (?, ?, ?, ?)", [r[:4] for r in stream])
        a = time.perf_counter()
        conn.execute("SELECT dedup_learn_url_rules()").fetchone()
        return time.perf_counter() - a


def maybedont_replay(python, stream, sample=0):
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump([(u, c) for u, _, c, _, _ in stream], f)
    try:
        out = subprocess.run([python, "-c", MAYBEDONT_REPLAY, f.name, str(sample)], check=True, capture_output=True,
                             text=True)
    finally:
        os.unlink(f.name)
    return json.loads(out.stdout)


def url_rules(python, name, stream, lines, by_key_only=False, sample=0):
    """`by_key_only`: content seen before means the same content key only
    (on a site whose pages are mostly chrome, whole-text Jaccard would call
    distinct pages the same). `sample`: MaybeDont is given the first
    `sample` texts to find too-common shingles in (its texts_sample)."""
    if by_key_only:
        keys, old = set(), []
        for row in stream:
            old.append(row[4] in keys)
            keys.add(row[4])
    else:
        old = truth(stream)
    n = len(stream)
    md = maybedont_replay(python, stream, sample) if python else None
    rows = []
    for label, result in [("ours, learning every row", ours_replay(stream, 1)),
                          ("ours, learning every 100 rows", ours_replay(stream, 100)),
                          ("ours, learning every 1000 rows", ours_replay(stream, 1000)),
                          ("ours, learning every row, rollback journal (SQLite's default, synchronous FULL)",
                           ours_replay(stream, 1, journal="DELETE")),
                          ("ours, same, the row's insert and the learning in one transaction",
                           ours_replay(stream, 1, journal="DELETE", together=True)),
                          ("no learning: the row's insert alone (rollback journal, its own commit)",
                           ours_replay(stream, 1, journal="DELETE", learn=False)),
                          ("MaybeDont", md)]:
        if result is None:
            continue
        s = score(result["probs"], old)
        rows.append((label, s, result["predict"] / n * 1e6, result["update"] / n * 1e6))
    lines.append(f"\n### {name}: {n} rows, {sum(old)} with content seen before\n")
    lines.append("| predictor | skipped at P >= 0.98 | fetches avoided | false skips (share of skips) "
                 "| µs per prediction | µs per update |")
    lines.append("|---|---|---|---|---|---|")
    for label, s, pred, upd in rows:
        share = s["false"] / s["skipped"] if s["skipped"] else 0.0
        lines.append(f"| {label} | {s['skipped']} | {s['avoided']} of {s['possible']} | {s['false']} "
                     f"({share:.1%}) | {pred:.1f} | {upd:.1f} |")
    whole = ours_whole(stream) / n * 1e6
    lines.append(f"| ours, one call over the whole stream (no predictions) | | | | | {whole:.1f} |")
    if md:
        ours = rows[0]
        mdr = rows[-1]
        lines.append(f"\nSpeed against MaybeDont, same run: prediction {mdr[2] / ours[2]:.1f}x; "
                     f"update {mdr[3] / ours[3]:.1f}x learning every row, "
                     f"{mdr[3] / rows[1][3]:.1f}x every 100 rows, {mdr[3] / rows[2][3]:.1f}x every 1000 rows, "
                     f"{mdr[3] / whole:.1f}x in one call; in a rollback-journal database, learning every row "
                     f"{mdr[3] / rows[3][3]:.1f}x, and {mdr[3] / rows[4][3]:.1f}x with the row's insert in the "
                     "same transaction (one commit).")
        # (A crawler stores each page whether or not it learns: what the
        # learning adds to that, in a rollback-journal database, is the
        # insert and learning in one transaction less the insert alone.
        # MaybeDont's update stores nothing.)
        added = rows[4][3] - rows[5][3]
        lines.append(f"What learning every row adds to storing the row, in a rollback-journal database "
                     f"(one transaction: {rows[4][3]:.1f} µs, less the insert alone: {rows[5][3]:.1f} µs): "
                     f"{added:.1f} µs a row, against MaybeDont's update {mdr[3]:.1f} µs: "
                     + (f"{mdr[3] / added:.1f}x." if added > 0 else "nothing measurable."))


def url_rules_setting(stream, lines):
    """The url_rules setting on a learned crawl: where its duplicates fall."""
    lines.append("\n### The url_rules setting (discard_params 0), param_crawl, rules learned from the crawl itself\n")
    lines.append("| url_rules | phase 2 | phase 3 | phase 4 | rows left | seconds |")
    lines.append("|---|---|---|---|---|---|")
    groups = {r[0]: r[4] for r in stream}
    survivors = {}
    with tempfile.TemporaryDirectory() as tmp:
        for setting in (0, 0.98):
            conn = P.connect(os.path.join(tmp, f"rules-{setting}.db"))
            conn.execute("CREATE TABLE pages (url TEXT, title TEXT, content TEXT, crawled TEXT)")
            conn.executemany("INSERT INTO pages VALUES (?, ?, ?, ?)", [r[:4] for r in stream])
            conn.execute("SELECT dedup_learn_url_rules()").fetchone()
            a = time.perf_counter()
            conn.execute("SELECT dedup_run(json_object('discard_params', 0, 'url_rules', ?))", (setting,)).fetchone()
            seconds = time.perf_counter() - a
            phases = dict(conn.execute("SELECT dedup_phase, count(*) FROM dedup_removed GROUP BY 1"))
            left = [u for (u,) in conn.execute("SELECT url FROM pages")]
            survivors[setting] = sorted(groups[u] for u in left)
            lines.append(f"| {setting} | {phases.get(2, 0)} | {phases.get(3, 0)} | {phases.get(4, 0)} | {len(left)} "
                         f"| {seconds:.2f} |")
    lines.append(f"\nSame pages survive (one row per content group, up to which URL is kept): "
                 f"{survivors[0] == survivors[0.98]}.")


def run_pages(rows, mode, tmp, tag):
    path = os.path.join(tmp, f"{tag}-{mode}.db")
    conn = P.connect(path)
    conn.execute("CREATE TABLE pages (url TEXT, title TEXT, content TEXT, crawled TEXT)")
    conn.executemany("INSERT INTO pages VALUES (?, ?, ?, ?)", [r[:4] for r in rows])
    report = conn.execute("SELECT dedup_run(json_object('boilerplate', ?))", (mode,)).fetchone()[0]
    return conn, report


def chrome(python, lines, corpus_path):
    lines.append("\n## Chrome\n")
    rows = chrome_site(n_pages=40, n_copies=10)
    groups = {r[0]: r[4] for r in rows}
    with tempfile.TemporaryDirectory() as tmp:
        lines.append("Site of 40 short distinct pages (25 words) in a large shared header and footer, "
                     "plus 10 true near-copies (one word changed):\n")
        lines.append("| boilerplate | rows left | distinct pages lost (wrong merges) | near-copies merged |")
        lines.append("|---|---|---|---|")
        for mode in ("keep", "strip"):
            conn, _ = run_pages(rows, mode, tmp, "site")
            kept = [u for (u,) in conn.execute("SELECT url FROM pages")]
            lost = len(set(groups.values()) - {groups[u] for u in kept})
            kept_groups = [groups[u] for u in kept]
            copied = {groups[u] for u in groups if u.endswith("-updated")}
            copies = sum(1 for g in copied if kept_groups.count(g) == 1)
            lines.append(f"| {mode} | {len(kept)} | {lost} of 40 | {copies} of 10 |")
        # The corpus: what strip finds and loses against keep.
        got = {}
        for mode in ("keep", "strip"):
            path = os.path.join(tmp, f"corpus-{mode}.db")
            shutil.copy(corpus_path, path)
            conn = P.connect(path)
            a = time.perf_counter()
            conn.execute("SELECT dedup_run(json_object('boilerplate', ?))", (mode,)).fetchone()
            got[mode] = ({r: c for r, c in conn.execute(
                "SELECT dedup_rowid, category FROM dedup_removed WHERE dedup_phase = 4")}, time.perf_counter() - a,
                conn.execute("SELECT report FROM dedup_runs").fetchone()[0])
        keep, strip = got["keep"][0], got["strip"][0]
        gained = set(strip) - set(keep)
        lost = set(keep) - set(strip)
        ext = lambda ids, d: sum(1 for r in ids if d[r] == "external")
        lines.append(f"\nCorpus {os.path.basename(corpus_path)}: phase-4 removals keep {len(keep)}, strip {len(strip)}; "
                     f"strip finds {len(gained)} that keep misses ({ext(gained, strip)} of them external rows) and "
                     f"misses {len(lost)} that keep finds ({ext(lost, keep)} external). "
                     f"Run seconds keep {got['keep'][1]:.2f}, strip {got['strip'][1]:.2f} "
                     f"(strip/keep {got['strip'][1] / got['keep'][1]:.2f}x). Report: "
                     f"{json.loads(got['strip'][2])['boilerplate']}.")
        # Segments flagged, ours vs trafilatura, on the same pages.
        path = os.path.join(tmp, "segments.db")
        shutil.copy(corpus_path, path)
        conn = P.connect(path)
        n_pages = conn.execute("SELECT count(*) FROM pages").fetchone()[0]
        a = time.perf_counter()
        with open(os.path.join(ROOT, "sql", "learn_segments.sql")) as f:
            conn.executescript(f.read())
        seconds = time.perf_counter() - a
        lines.append(f"\nBuilding dedup_segments: {seconds:.2f} s for {n_pages} pages, "
                     f"{seconds / n_pages * 1000:.3f} s per 1,000 pages.")
        ours = {" ".join(s.split()).lower() for (s,) in conn.execute(
            "SELECT segment FROM dedup_segments WHERE pages >= 5 AND titles >= 5")}
        if python:
            contents = [c for (c,) in conn.execute("SELECT content FROM pages WHERE typeof(content) = 'text' "
                                                    "ORDER BY crawled IS NULL, crawled, rowid")]
            with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
                json.dump(contents, f)
            out = json.loads(subprocess.run([python, "-c", TRAFILATURA_FLAGS, f.name], check=True,
                                            capture_output=True, text=True).stdout)
            os.unlink(f.name)
            theirs = set(out["flagged"])
            lines.append(f"\nSegments flagged on the same pages (all domains): ours (pages >= 5 and titles >= 5 in one "
                         f"domain) {len(ours)}; trafilatura duplicate_test (an LRU over the whole crawl, "
                         f"min_duplcheck_size {out['min_duplcheck_size']}, max_repetitions {out['max_repetitions']}) "
                         f"{len(theirs)}; both {len(ours & theirs)}; ours only {len(ours - theirs)}; "
                         f"trafilatura only {len(theirs - ours)}.")
            longer = {s for s in ours if len(s) > out["min_duplcheck_size"]}
            lines.append(f"Of ours longer than {out['min_duplcheck_size']} characters (trafilatura checks no shorter "
                         f"ones): {len(longer)}, of which trafilatura flags {len(longer & theirs)}.")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--maybedont-python", default=os.path.join(DATA, "venv", "bin", "python"))
    ap.add_argument("--corpus-rows", type=int, default=5000)
    ap.add_argument("--site-articles", type=int, default=2000)
    args = ap.parse_args()
    python = args.maybedont_python if os.path.exists(args.maybedont_python) else None
    lines = ["# Learning from the crawl", "",
             f"Threshold {THRESHOLD} (MaybeDont's AVOID_DUP_CONTENT_THRESHOLD); no exploration in the replay."]
    if python is None:
        lines.append("(MaybeDont and trafilatura not installed: their columns are missing.)")
    lines.append("\n## URL rules")
    url_rules(python, f"builder corpus ({args.corpus_rows} rows)", corpus_stream(args.corpus_rows), lines)
    site = param_crawl(n_articles=args.site_articles, n_sites=4, seed=11)
    url_rules(python, "param_crawl (4 shops)", site, lines)
    url_rules_setting(site, lines)
    url_rules(python, "product_site (700 products, 15 own words in about 580 of chrome; content = product)",
              product_site(), lines, by_key_only=True, sample=50)
    chrome(python, lines, os.path.join(P.CORPUS, "parity-5k.db") if args.corpus_rows == 5000
           else corpus(args.corpus_rows))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
