"""Text::DeDuper against our resemblance, on the same texts, in one run.

Text::DeDuper's own loop (its POD): for each document in order,
`find_similar`; a document similar to one kept is a duplicate, else it is
kept (`add_doc`). Ours: the same decision with the extension's functions,
`minhash` of the measure's word 5-shingles (256 permutations), `lsh_bands`
(128 x 2), and `near_dups_among(..., 0.2, 'direct', 'resemblance 5')`
ranked by document order: the direct election takes rows in rank order
and each row still kept removes the later candidates verified near it, so
a document is removed exactly when it resembles an earlier kept one above
0.2, as in the module, except for pairs LSH does not make candidates. Each
side runs in its own process (CPU seconds); the documents are the distinct
non-empty `parsed` texts of a corpus (parity-5k by default; `--db` for
another), Han, Kana and Hangul spaced apart for the module (its tokens:
tests/python/test_oracle_tokens.py).

    /usr/bin/python3 benches/deduper.py [--db bench-data/open-20k.db] [--limit N]
"""
import argparse
import json
import os
import resource
import sqlite3
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "python"))
sys.path.insert(0, os.path.join(ROOT, "tests", "python", "helpers"))
import pipeline as P  # noqa: E402
from test_oracle_tokens import ORACLES, spaced  # noqa: E402

PERL = r"""
use strict; use warnings; use Encode; use JSON::PP; use Text::DeDuper; use Time::HiRes;
binmode STDIN, ':raw';
my $d = Text::DeDuper->new(ngram_size => 5, sim_trsh => 0.2);
my @gone;
while (my $line = <STDIN>) {
    my ($id, $text) = @{ decode_json($line) };
    my $bytes = encode('UTF-8', $text);
    if ($d->find_similar($bytes)) { push @gone, $id } else { $d->add_doc($id, $bytes) }
}
print encode_json(\@gone), "\n";
"""


def texts(db, limit):
    conn = sqlite3.connect(db)
    rows = conn.execute("SELECT min(rowid), parsed FROM pages WHERE parsed <> '' GROUP BY parsed "
                        "ORDER BY min(rowid) LIMIT ?", (limit,)).fetchall()
    conn.close()
    return rows


def perl(rows):
    lines = "".join(json.dumps([i, spaced(t)]) + "\n" for i, t in rows).encode()
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    out = subprocess.run(["perl", "-I", ORACLES, "-e", PERL], input=lines, capture_output=True, check=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    return set(json.loads(out.stdout)), cpu


def ours(rows):
    conn = P.connect(":memory:")
    conn.execute("CREATE TABLE input (pos INTEGER PRIMARY KEY, id INTEGER, text TEXT, rank INTEGER)")
    conn.executemany("INSERT INTO input VALUES (?1, ?1, ?2, ?1)", rows)
    started = time.process_time()
    conn.executescript("""
        CREATE TEMP TABLE bands AS SELECT b.band, b.key, i.id FROM input AS i,
          lsh_bands(minhash(i.text, 256, 'word', 5), 128, 2) AS b;""")
    gone = {r[0] for r in conn.execute(
        "SELECT id FROM near_dups_among('input', 'bands', 0.2, 'direct', 'resemblance 5')")}
    return gone, time.process_time() - started


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", default=os.path.join(P.CORPUS, "parity-5k.db"))
    parser.add_argument("--limit", type=int, default=1_000_000)
    args = parser.parse_args()
    rows = texts(args.db, args.limit)
    theirs, perl_cpu = perl(rows)
    mine, our_cpu = ours(rows)
    load = os.getloadavg()
    print(f"| corpus | documents | Text::DeDuper CPU s | ours CPU s | Text::DeDuper / ours | removed (module) "
          f"| removed (ours) | only the module | only ours |")
    print("|---|---|---|---|---|---|---|---|---|")
    print(f"| {os.path.basename(args.db)} | {len(rows):,} | {perl_cpu:.2f} | {our_cpu:.2f} | "
          f"{perl_cpu / our_cpu:.1f}x | {len(theirs):,} | {len(mine):,} | {len(theirs - mine)} | {len(mine - theirs)} |")
    print(f"\n(Load average at the end: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}.)")


if __name__ == "__main__":
    main()
