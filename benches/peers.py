#!/usr/bin/env python3
"""Whole-corpus near-duplicate dedup against the peers a user could pick
instead, on the same texts, in one run: time, peak memory and quality.

The texts: every page of the N-page builder corpus (benches/corpora.py, seed
7) with a non-empty `parsed`, one document each (id = rowid). Each tool runs
in a process of its own (wall and CPU seconds, peak resident memory of that
process, read by the process itself from /proc/self/status as VmHWM: the
parent's memory, held when it forks, is not counted), from the SQLite file
to the same end: the documents it finds duplicate deleted from the file's
table.

- `ours: functions` — the extension's functions alone: `minhash` (char
  5-grams, 128 permutations), `lsh_bands` (32 x 4), `near_dups_among`
  (verified with `lev_ratio` > 0.9, direct election), `DELETE`.
- `ours: functions oph` — the same with `minhash_oph` (one-permutation
  MinHash) for `minhash`.
- `ours: functions oph keys` — the same with each text's band keys in one
  blob (`lsh_keys`) instead of a row a band (`lsh_bands`).
- `ours: dedup_run lsh` — the whole pipeline (`dedup_run('{"near_mode":
  "lsh"}')`) on a table of the same documents, each at a URL of its own: URL
  and content phases, the near phase, the archive of every removed row, the
  incremental index, one transaction.
- `ours: dedup_run lsh oph` — the same with `"lsh_sketch": "oph"`.
- `rensa` — `RMinHashDeduplicator(threshold=0.8, num_perm=128, use_lsh=True)`
  fed `add_pairs` of word tokens, as rensa's README shows it.
- `rensa best` — the same at rensa's best word-token point on this corpus
  (64 permutations, 16 bands, threshold 0.84: issue 80's search).
- `rensa + Levenshtein` — rensa's `RMinHashLSH` (word tokens, 128
  permutations, 32 bands) for candidates, each verified with
  python-Levenshtein's `ratio` > 0.9 against the documents kept so far (the
  first document of a group stays): rensa with our exactness.
- `datasketch` — `MinHash.bulk` of word tokens (128 permutations) and
  `MinHashLSH(threshold=0.8)`: each document queried, inserted when nothing
  is found, as datasketch's docs show it.

Quality, over the distinct texts (a text is kept when a page holding it is
kept), against a verified truth: every pair of distinct texts whose
`lev_ratio` is above 0.9, found as the candidates of two permissive LSH
indexes (char 5-grams and word 3-grams, 128 permutations, 32 bands of 3
rows, no key skipped) each checked with `lev_ratio`; its completeness is
checked on a sample of texts compared with every other text of a length
the ratio allows. Recall: the share of true pairs the tool resolved (not
both texts kept). Precision: the share of removed texts that have a true
pair, or an equal text, among the kept ones.

  cargo build --release --features loadable_extension
  /usr/bin/python3 -m pip install --break-system-packages rensa==0.5.0 datasketch levenshtein
  /usr/bin/python3 benches/peers.py [--pages 100000] [--sample 200] [--repeat 1]
"""
import argparse
import json
import os
import random
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "python", "helpers"))
import pipeline as P  # noqa: E402
from corpora import DATA, corpus  # noqa: E402

TOOLS = ["ours: functions", "ours: functions oph", "ours: functions oph keys", "ours: dedup_run lsh", "ours: dedup_run lsh oph", "rensa", "rensa best", "rensa + Levenshtein", "datasketch"]
THRESHOLD = 0.9


def documents(pages):
    """bench-data/peers-N.db: docs(id, text), built once from the corpus."""
    path = os.path.join(DATA, f"peers-{pages}.db")
    if not os.path.exists(path):
        src = corpus(pages)  # (makes bench-data/ on a fresh checkout)
        tmp = path + ".tmp"
        if os.path.exists(tmp):
            os.remove(tmp)
        c = sqlite3.connect(tmp)
        c.execute("CREATE TABLE docs (id INTEGER PRIMARY KEY, text TEXT)")
        c.execute("ATTACH ? AS src", (src,))
        c.execute("INSERT INTO docs SELECT rowid, parsed FROM src.pages WHERE parsed <> '' ORDER BY rowid")
        c.commit()
        c.close()
        os.rename(tmp, path)
    return path


# --- the tools, each run in its own process -------------------------------

def run_ours_functions(db, sketch="minhash", packed=False):
    conn = P.connect(db)
    keys = (f"SELECT i.id, lsh_keys({sketch}(i.text, 128, 'char', 5), 32, 4) AS keys FROM input AS i" if packed
            else f"SELECT b.band, b.key, i.id FROM input AS i, lsh_bands({sketch}(i.text, 128, 'char', 5), 32, 4) AS b")
    conn.executescript(f"""
        CREATE TEMP TABLE input (pos INTEGER PRIMARY KEY, id INTEGER, text TEXT, rank INTEGER);
        INSERT INTO input SELECT id, id, text, id FROM docs;
        CREATE TEMP TABLE bands AS {keys};
        CREATE TEMP TABLE gone AS SELECT id FROM near_dups_among('input', 'bands', 0.9, 'direct');
        BEGIN;
        DELETE FROM docs WHERE id IN (SELECT id FROM temp.gone);
        COMMIT;""")
    conn.close()


def run_ours_pipeline(db, settings=None):
    conn = P.connect(db)
    conn.execute("SELECT dedup_run(?)", (json.dumps(settings or {"near_mode": "lsh"}),)).fetchone()
    conn.close()


def delete(db, ids):
    conn = sqlite3.connect(db)
    conn.execute("BEGIN")
    conn.executemany("DELETE FROM docs WHERE id = ?", ((i,) for i in ids))
    conn.execute("COMMIT")
    conn.close()


def run_rensa(db):
    from rensa import RMinHashDeduplicator
    conn = sqlite3.connect(db)
    rows = conn.execute("SELECT id, text FROM docs").fetchall()
    conn.close()
    dedup = RMinHashDeduplicator(threshold=0.8, num_perm=128, use_lsh=True)
    keep = dedup.add_pairs((str(i), text.split()) for i, text in rows)
    delete(db, [i for (i, _), k in zip(rows, keep) if not k])


def run_rensa_best(db):
    from rensa import RMinHashDeduplicator
    conn = sqlite3.connect(db)
    rows = conn.execute("SELECT id, text FROM docs").fetchall()
    conn.close()
    dedup = RMinHashDeduplicator(threshold=0.84, num_perm=64, use_lsh=True, num_bands=16)
    keep = dedup.add_pairs((str(i), text.split()) for i, text in rows)
    delete(db, [i for (i, _), k in zip(rows, keep) if not k])


def run_rensa_levenshtein(db):
    import Levenshtein
    from rensa import RMinHash, RMinHashLSH
    conn = sqlite3.connect(db)
    rows = conn.execute("SELECT id, text FROM docs ORDER BY id").fetchall()
    conn.close()
    lsh = RMinHashLSH(threshold=0.5, num_perm=128, num_bands=32)
    kept, gone = {}, []
    for i, text in rows:
        m = RMinHash(128, 42)
        m.update(text.split())
        if any(Levenshtein.ratio(text, kept[c]) > THRESHOLD for c in lsh.query(m)):
            gone.append(i)
        else:
            lsh.insert(i, m)
            kept[i] = text
    delete(db, gone)


def run_datasketch(db):
    from datasketch import MinHash, MinHashLSH
    conn = sqlite3.connect(db)
    rows = conn.execute("SELECT id, text FROM docs").fetchall()
    conn.close()
    lsh = MinHashLSH(threshold=0.8, num_perm=128)
    sketches = MinHash.bulk([[t.encode() for t in text.split()] for _, text in rows], num_perm=128)
    gone = []
    for (i, _), m in zip(rows, sketches):
        if lsh.query(m):
            gone.append(i)
        else:
            lsh.insert(i, m)
    delete(db, gone)


def tool_db(tool, docs, tmp):
    """A copy of the documents in the form the tool reads."""
    path = os.path.join(tmp, "tool.db")
    if os.path.exists(path):
        os.remove(path)
    if tool.startswith("ours: dedup_run lsh"):
        c = sqlite3.connect(path)
        c.execute("CREATE TABLE pages (url TEXT, parsed TEXT)")
        c.execute("ATTACH ? AS d", (docs,))
        c.execute("INSERT INTO pages (rowid, url, parsed) "
                  "SELECT id, 'https://peers.example/doc/' || id, text FROM d.docs ORDER BY id")
        c.commit()
        c.close()
    else:
        shutil.copy(docs, path)
    return path


def kept_ids(tool, path):
    c = sqlite3.connect(path)
    table = "pages" if tool.startswith("ours: dedup_run lsh") else "docs"
    ids = {r[0] for r in c.execute(f"SELECT rowid FROM {table}")}
    c.close()
    return ids


def peak_mb():
    """This process's own peak resident memory (VmHWM), in MB."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def measure(tool, docs, tmp):
    """(wall s, cpu s, peak MB, kept ids) of the tool in a process of its own."""
    path = tool_db(tool, docs, tmp)
    report = os.path.join(tmp, "peak.json")
    began = time.perf_counter()
    proc = subprocess.Popen([sys.executable, os.path.abspath(__file__), "--tool", tool, "--db", path,
                             "--report", report])
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - began
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{tool} failed")
    with open(report) as f:
        peak = json.load(f)["peak_mb"]
    return wall, usage.ru_utime + usage.ru_stime, peak, kept_ids(tool, path)


# --- the verified truth ---------------------------------------------------

def truth(docs, sample):
    """The true pairs of distinct texts (lev_ratio > 0.9), cached, and the
    completeness check's figures."""
    path = os.path.join(DATA, os.path.basename(docs).replace(".db", "-truth.json"))
    if os.path.exists(path):
        with open(path) as f:
            return json.load(f)
    conn = P.connect(":memory:")
    conn.execute("ATTACH ? AS d", (docs,))
    began = time.perf_counter()
    conn.executescript("""
        CREATE TABLE texts (id INTEGER PRIMARY KEY, text TEXT, len INTEGER);
        INSERT INTO texts SELECT min(id), text, length(text) FROM d.docs GROUP BY text;
        CREATE INDEX texts_len ON texts (len, id);
        CREATE TABLE bands (band INTEGER, key INTEGER, id INTEGER);
        INSERT INTO bands SELECT b.band, b.key, t.id FROM texts AS t,
          lsh_bands(minhash(t.text, 96, 'char', 5), 32, 3) AS b;
        INSERT INTO bands SELECT 100 + b.band, b.key, t.id FROM texts AS t,
          lsh_bands(minhash(t.text, 96, 'word', 3), 32, 3) AS b;
        CREATE INDEX bands_key ON bands (band, key);""")
    groups = {}
    for band, key, i in conn.execute("SELECT band, key, id FROM bands ORDER BY band, key"):
        groups.setdefault((band, key), []).append(i)
    candidates = set()
    for ids in groups.values():
        ids.sort()
        for x in range(len(ids)):
            for y in range(x + 1, len(ids)):
                candidates.add((ids[x], ids[y]))
    groups.clear()
    conn.execute("CREATE TEMP TABLE cand (a INTEGER, b INTEGER)")
    conn.executemany("INSERT INTO cand VALUES (?, ?)", candidates)
    pairs = [list(p) for p in conn.execute(
        "SELECT c.a, c.b FROM cand AS c JOIN texts AS x ON x.id = c.a JOIN texts AS y ON y.id = c.b "
        "WHERE lev_ratio(x.text, y.text, ?1) > ?1", (THRESHOLD,))]
    found_s = time.perf_counter() - began
    # Completeness: sampled texts against every text a ratio above the
    # threshold allows by length (|la - lb| < (1 - t)(la + lb)).
    ids = [r[0] for r in conn.execute("SELECT id FROM texts")]
    chosen = random.Random(1).sample(ids, min(sample, len(ids)))
    known = {(a, b) for a, b in pairs}
    t = THRESHOLD
    exhaustive, missing = 0, []
    for i in chosen:
        for (j,) in conn.execute(
                "SELECT y.id FROM texts AS x, texts AS y "
                "WHERE x.id = ?1 AND y.len BETWEEN x.len * ?2 / (2 - ?2) - 1 AND x.len * (2 - ?2) / ?2 + 1 "
                "AND y.id <> x.id AND lev_ratio(x.text, y.text, ?2) > ?2", (i, t)):
            exhaustive += 1
            if (min(i, j), max(i, j)) not in known:
                missing.append([i, j])
    out = {"texts": len(ids), "candidates": len(candidates), "pairs": pairs, "seconds": round(found_s, 1),
           "sample": len(chosen), "sample_pairs": exhaustive, "sample_missing": missing}
    with open(path, "w") as f:
        json.dump(out, f)
    return out


def quality(docs, kept, truth_pairs):
    """(recall, precision, texts removed) of a tool's kept document ids."""
    conn = sqlite3.connect(docs)
    text_of = {}   # document id -> its text's id (the smallest document id holding it)
    first = {}
    for i, text in conn.execute("SELECT id, text FROM docs ORDER BY id"):
        text_of[i] = first.setdefault(text, i)
    conn.close()
    kept_texts = {text_of[i] for i in kept if i in text_of}
    removed = set(first.values()) - kept_texts
    resolved = sum(1 for a, b in truth_pairs if not (a in kept_texts and b in kept_texts))
    partner = {}
    for a, b in truth_pairs:
        partner.setdefault(a, set()).add(b)
        partner.setdefault(b, set()).add(a)
    justified = sum(1 for r in removed if partner.get(r, set()) & kept_texts)
    return (resolved / len(truth_pairs) if truth_pairs else 1.0,
            justified / len(removed) if removed else 1.0, len(removed))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--pages", type=int, default=100000)
    ap.add_argument("--sample", type=int, default=200)
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--tools", default=",".join(TOOLS))
    ap.add_argument("--tool")
    ap.add_argument("--db")
    ap.add_argument("--report")
    args = ap.parse_args()
    if args.tool:
        {"ours: functions": run_ours_functions, "ours: dedup_run lsh": run_ours_pipeline,
         "ours: functions oph": lambda db: run_ours_functions(db, "minhash_oph"),
         "ours: functions oph keys": lambda db: run_ours_functions(db, "minhash_oph", packed=True),
         "ours: dedup_run lsh oph": lambda db: run_ours_pipeline(db, {"near_mode": "lsh", "lsh_sketch": "oph"}),
         "rensa": run_rensa, "rensa best": run_rensa_best, "rensa + Levenshtein": run_rensa_levenshtein,
         "datasketch": run_datasketch}[args.tool](args.db)
        with open(args.report, "w") as f:
            json.dump({"peak_mb": peak_mb()}, f)
        return
    # (A fresh checkout has no bench-data/ yet.)
    os.makedirs(DATA, exist_ok=True)
    docs = documents(args.pages)
    t = truth(docs, args.sample)
    tools = args.tools.split(",")
    runs = {tool: [] for tool in tools}
    kept = {}
    with tempfile.TemporaryDirectory(dir=DATA) as tmp:
        for _ in range(args.repeat):
            for tool in tools:
                wall, cpu, mb, ids = measure(tool, docs, tmp)
                runs[tool].append((wall, cpu, mb))
                kept[tool] = ids
    n = sqlite3.connect(docs).execute("SELECT count(*) FROM docs").fetchone()[0]
    print(f"# Whole-corpus near-duplicate dedup of {n:,} documents ({args.pages:,}-page builder corpus), "
          f"each tool in its own process\n")
    print(f"Truth: {len(t['pairs']):,} pairs of distinct texts with lev_ratio > {THRESHOLD} among {t['texts']:,} texts "
          f"({t['candidates']:,} permissive candidates verified, {t['seconds']} s). Completeness: {t['sample']} texts "
          f"compared with every text of an allowed length found {t['sample_pairs']} pairs, "
          f"{len(t['sample_missing'])} of them missing from the truth.\n")
    base = sorted(runs[tools[0]])[len(runs[tools[0]]) // 2]
    best = sorted(runs["rensa best"])[len(runs["rensa best"]) // 2] if "rensa best" in runs else None
    print("| tool | wall s | CPU s | peak MB | wall / ours: functions | CPU / rensa best | texts removed | recall "
          "| precision |")
    print("|---|---|---|---|---|---|---|---|---|")
    for tool in tools:
        wall, cpu, mb = sorted(runs[tool])[len(runs[tool]) // 2]
        recall, precision, removed = quality(docs, kept[tool], t["pairs"])
        versus = f"{cpu / best[1]:.2f}" if best else "-"
        print(f"| {tool} | {wall:.2f} | {cpu:.2f} | {mb:.0f} | {wall / base[0]:.2f} | {versus} | {removed:,} | "
              f"{recall:.4f} | {precision:.4f} |")
    load = os.getloadavg()
    print(f"\n(Median of {args.repeat} run(s) a tool, the tools alternated; load average at the end "
          f"{load[0]:.2f} {load[1]:.2f} {load[2]:.2f} on {os.cpu_count()} cores.)")


if __name__ == "__main__":
    main()
