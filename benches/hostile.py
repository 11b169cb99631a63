"""Hostile inputs, measured: interrupt latency (seconds from
sqlite3_interrupt to the error) inside lev_ratio and the scans, and the
extra peak memory of lev_ratio on texts of 300,000 distinct characters.
Each case in its own process (Debian's python3, release build). Prints a
markdown table; the tests in tests/python/test_hostile.py check the same
cases with generous limits."""
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "python", "helpers"))
import test_hostile as T  # noqa: E402

CASES = {
    "lev_ratio, two 300k-character texts (9e10 cells)": """
        rnd = random.Random(1)
        a = ''.join(rnd.choice('abcdefghij') for _ in range(300000))
        b = ''.join(rnd.choice('abcdefghij') for _ in range(300000))
        print(json.dumps(timed("SELECT lev_ratio(?, ?)", (a, b), 0.5)))
    """,
}
for mb in (1,):
    CASES[f"near_dups, one {mb} MB near-copy pair"] = f"""
        rnd = random.Random(1)
        a = [rnd.choice('abcdefghij') for _ in range({mb} * 1_000_000)]
        b = list(a)
        for _ in range(20000):
            b[rnd.randrange(len(b))] = rnd.choice('abcdefghij')
        conn.execute("CREATE TABLE t (pos INTEGER PRIMARY KEY, id INTEGER, text TEXT, rank INTEGER)")
        conn.execute("INSERT INTO t VALUES (1, 1, ?, 1), (2, 2, ?, 2)", (''.join(a), ''.join(b)))
        print(json.dumps(timed("SELECT * FROM near_dups('t', 0.5, 5)", (), 0.5)))
    """
for scan in ("near_dups('t', 0.99, 50)", "near_dups_among('t', 'p', 0.99)"):
    CASES[f"{scan.split('(')[0]}, 20 near-copies of 1 MB"] = T.NEAR_COPIES + f"""
    print(json.dumps(timed("SELECT count(*) FROM {scan}", (), 1.0)))
"""
for f in ["normalize_text(?)", "content_hash(?)", "minhash(?, 128, 'char', 5)", "minhash(?, 128, 'word', 5)",
          "simhash(?)"]:
    for script, make in (("ASCII", "''.join(rnd.choice('abcdefghij  \\n') for _ in range(100_000_000))"),
                         ("CJK", "''.join(chr(0x4E00 + rnd.randrange(3000)) for _ in range(30_000_000))")):
        CASES[f"{f.replace('?', 'text')}, 100 MB of {script}"] = f"""
        rnd = random.Random(1)
        t = {make}
        print(json.dumps(timed("SELECT length({f})", (t,), 0.3)))
    """


def main():
    import textwrap
    print("| case | interrupt latency, best of 3 (s) | all runs |")
    print("|---|---|---|")
    for name, code in CASES.items():
        runs = []
        for _ in range(3):
            rc, out, err = T.host(textwrap.dedent(T.INTERRUPT) + textwrap.dedent(code), timeout=600)
            assert rc == 0, err
            runs.append(json.loads(out))
        print(f"| {name} | {min(runs):.3f} | {', '.join(f'{r:.3f}' for r in runs)} |")
    code = f"""
        a = {T.distinct_text(300000, 7919)}
        b = {T.distinct_text(300000, 104729)}
        base = reset_peak()
        conn.execute("SELECT lev_ratio(?, ?)", (a, b)).fetchone()
        print(json.dumps(peak_mb() - base))
    """
    rc, out, err = T.host(code, timeout=600)
    assert rc == 0, err
    extra = json.loads(out)
    print(f"\nlev_ratio on two texts of 300,000 distinct code points (1.2 MB of UTF-8 each): "
          f"{extra:.1f} MB of extra peak RSS, {extra * 2**20 / 600000:.1f} bytes per input character.")


# One pair of pages of n MB, adjacent in the scan: different, or near-copies
# (100 insertions). Baseline in the same process: content_hash of both
# texts (one linear pass over the same bytes).
BIG_PAIR_TIMED = """
    import time
    def best(sql):
        runs = []
        for _ in range(3):
            start = time.perf_counter()
            out = conn.execute(sql).fetchall()
            runs.append(time.perf_counter() - start)
        return min(runs), out
    pair, _ = best("SELECT * FROM near_dups('t', 0.9, 5)")
    linear, _ = best("SELECT content_hash(text) FROM t")
    stats = json.loads(conn.execute("SELECT near_dups_stats()").fetchone()[0])
    print(json.dumps([pair, linear, stats.get("too_long", 0)]))
"""


def big_pairs():
    """Seconds of near_dups on one pair of big pages, against a linear pass."""
    import textwrap
    print("\n| pair | near_dups (s, best of 3) | content_hash of both (s) | ratio | kept apart as too long |")
    print("|---|---|---|---|---|")
    for mb in (1, 2, 4, 8):
        for kind, second in (("different", "b"), ("near-copies, 100 insertions", "c")):
            setup = T.BIG_PAIR.replace("n = 8_000_000", f"n = {mb}_000_000")
            code = textwrap.dedent(setup) + textwrap.dedent(f"""
                conn.execute("INSERT INTO t VALUES (1, 1, ?, 1), (2, 2, ?, 2)", (a, {second}))
            """) + textwrap.dedent(BIG_PAIR_TIMED)
            rc, out, err = T.host(code, timeout=900)
            assert rc == 0, err
            pair, linear, too_long = json.loads(out)
            print(f"| {mb} MB, {kind} | {pair:.3f} | {linear:.3f} | {pair / linear:.1f}x | {too_long} |")


if __name__ == "__main__":
    if sys.argv[1:] == ["--big-pairs"]:
        big_pairs()
    else:
        main()
        big_pairs()
