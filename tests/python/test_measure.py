"""`{"measure": "resemblance"}`: the pipeline decides near duplicates by
Text::DeDuper's measure. Its decisions are checked against the Perl module
itself (../shared/oracles): for each held-out pair of real pages (the text
pool's revisions of one page and pages of different ones, in every language
of the pool), `add_doc(a)` then `find_similar(b)` must name `a` exactly when
a run over a table of the two pages removes one of them, at the module's
`ngram_size`, `sim_trsh` and stoplist. Where we differ on purpose (a
character of Han, Kana or Hangul is a token by itself), the module is given
the text with those characters spaced apart, as in test_oracle_tokens.py."""
import gzip
import json
import os
import random
import re
import subprocess

import pytest

import pipeline as P
from test_oracle_tokens import ORACLES, perl, spaced  # noqa: F401  (perl: the fixture that checks Perl is there)

FIND_SIMILAR = r"""
use strict; use warnings; use Encode; use JSON::PP; use Text::DeDuper;
binmode STDIN, ':raw';
while (my $line = <STDIN>) {
    my ($a, $b, $n, $t, $stop) = @{ decode_json($line) };
    my $d = Text::DeDuper->new(ngram_size => $n, sim_trsh => $t);
    # (The constructor's stoplist option takes the array's reference as
    # its one word; the method takes the words.)
    $d->stoplist(map { encode('UTF-8', $_) } @$stop) if @$stop;
    $d->add_doc('a', encode('UTF-8', $a));
    my @similar = $d->find_similar(encode('UTF-8', $b));
    print scalar(@similar) ? "1\n" : "0\n";
}
"""

STOPLIST = ["the", "a", "of", "and", "to", "in", "is", "de", "la", "и", "в"]


def pool_pairs(seed, count):
    """Pairs of page texts of the pool: two versions of one page (near and
    far revisions), and two different pages of one language."""
    path = os.path.join(P.CORPUS, "text-pool.jsonl.gz")
    if not os.path.exists(path):
        P.require_corpus()
    families = {}
    with gzip.open(path, "rt") as f:
        for line in f:
            r = json.loads(line)
            text = r.get("text") or ""
            if len(re.findall(r"\w+", text)) >= 20:
                families.setdefault((r["lang"], r["family"]), []).append(text[:6000])
    rng = random.Random(seed)
    keys = sorted(families)
    several = [k for k in keys if len(set(families[k])) > 1]
    pairs = []
    while len(pairs) < count:
        if rng.random() < 0.6:
            versions = sorted(set(families[rng.choice(several)]))
            a, b = rng.sample(versions, 2)
        else:
            ka, kb = rng.sample(keys, 2)
            a, b = rng.choice(families[ka]), rng.choice(families[kb])
        if a != b:
            pairs.append((a, b))
    return pairs


def perl_decisions(cases):
    lines = "".join(json.dumps([spaced(a), spaced(b), n, t, stop]) + "\n" for a, b, n, t, stop in cases)
    out = subprocess.run(["perl", "-I", ORACLES, "-e", FIND_SIMILAR], input=lines.encode(), capture_output=True,
                         check=True)
    return [line == "1" for line in out.stdout.decode().split()]


def our_decisions(cases, mode):
    decisions = []
    for a, b, n, t, stop in cases:
        conn = P.connect(":memory:")
        conn.execute("CREATE TABLE pages (url TEXT, title TEXT, content TEXT, parsed TEXT)")
        conn.executemany("INSERT INTO pages VALUES (?, '', ?, ?)",
                         [("https://a.example/page", a, a), ("https://b.example/page", b, b)])
        settings = {"measure": "resemblance", "ngram_size": n, "threshold": t, "near_mode": mode}
        if stop:
            settings["stoplist"] = stop
        conn.execute("SELECT dedup_run(?)", (json.dumps(settings),)).fetchone()
        # (Phase 3 takes the pairs whose texts are one after normalization.)
        removed = conn.execute("SELECT count(*) FROM dedup_removed").fetchone()[0]
        decisions.append(removed == 1)
        conn.close()
    return decisions


def cases(seed, count):
    rng = random.Random(seed)
    out = []
    for a, b in pool_pairs(seed, count):
        n = rng.choice([2, 3, 5, 5])
        t = rng.choice([0.05, 0.1, 0.2, 0.2, 0.4, 0.6])
        stop = STOPLIST if rng.random() < 0.4 else []
        out.append((a, b, n, t, stop))
    return out


def test_window_decisions_equal_the_perl_modules_find_similar(perl):
    held_out = cases(seed=7902, count=240)
    expected = perl_decisions(held_out)
    # (The pairs meet both answers, often.)
    assert 40 <= sum(expected) <= 200, sum(expected)
    got = our_decisions(held_out, "window")
    mismatches = [(c[2:], e) for c, e, g in zip(held_out, expected, got) if e != g]
    assert not mismatches, mismatches[:5]


def test_lsh_finds_the_modules_pairs_and_no_other(perl):
    """lsh mode: candidates from MinHash of the measure's own shingles, each
    verified exactly, so no pair the module does not name is removed; at
    128 bands of 2 a pair of resemblance 0.2 is a candidate with probability
    0.995, so at most a few of the module's pairs may be missed."""
    held_out = cases(seed=7903, count=160)
    expected = perl_decisions(held_out)
    got = our_decisions(held_out, "lsh")
    false_positives = [c[2:] for c, e, g in zip(held_out, expected, got) if g and not e]
    assert not false_positives, false_positives[:5]
    found = sum(1 for e, g in zip(expected, got) if e and g)
    assert found >= 0.98 * sum(expected), (found, sum(expected))


def test_resemblance_settings_and_their_errors(tmp_path):
    conn = P.connect(":memory:")
    conn.execute("CREATE TABLE pages (url TEXT, content TEXT)")

    def recorded(settings):
        conn.execute("SELECT dedup_run(?)", (json.dumps(settings),)).fetchone()
        return json.loads(conn.execute("SELECT settings FROM dedup_runs ORDER BY run DESC LIMIT 1").fetchone()[0])

    # Text::DeDuper's threshold unless given; lsh on its own word shingles, 128 bands of 2.
    s = recorded({"measure": "resemblance", "near_mode": "lsh", "stoplist": ["The", "a"]})
    assert (s["threshold"], s["measure"], s["stoplist"], s["lsh_shingles"], s["lsh_bands"], s["lsh_rows"]) == \
        (0.2, "resemblance", "The a", "word", 128, 2)
    s = recorded({"measure": "resemblance", "threshold": 0.5, "ngram_size": 3, "stoplist": "x, y"})
    assert (s["threshold"], s["ngram_size"], s["stoplist"], s["lsh_shingle_size"]) == (0.5, 3, "x y", 3)
    assert "measure" not in recorded({})
    for settings, message in [
        ({"ngram_size": 3}, "ngram_size applies to measure 'resemblance' only"),
        ({"stoplist": ["the"]}, "stoplist applies to measure 'resemblance' only"),
        ({"measure": "cosine"}, "measure must be 'levenshtein' (lev_ratio, the reference's) or 'resemblance'"),
        ({"measure": "resemblance", "ngram_size": 0}, "ngram_size must be an integer in [1, 64], got 0"),
        ({"measure": "resemblance", "stoplist": [1]}, "stoplist must be a JSON array of words"),
        ({"measure": "resemblance", "compat": "reference"},
         "measure 'resemblance' cannot be combined with compat = 'reference' (the reference measures by lev_ratio)"),
        ({"measure": "resemblance", "near_mode": "lsh", "lsh_shingles": "char"},
         "with measure 'resemblance', lsh's shingles are its own (5 words), got lsh_shingles 'char'"),
    ]:
        with pytest.raises(Exception, match=r"dedup\[setting\]: " + re.escape(message)):
            conn.execute("SELECT dedup_run(?)", (json.dumps(settings),)).fetchone()


def test_the_scans_take_the_measure_as_an_argument():
    conn = P.connect(":memory:")
    conn.execute("CREATE TABLE t (pos INTEGER PRIMARY KEY, id INTEGER, text TEXT, rank INTEGER)")
    conn.executemany("INSERT INTO t VALUES (?1, ?1, ?2, ?1)",
                     [(1, "the cat sat on the mat"), (2, "a cat sat on a mat"), (3, "cat sat on mat today")])
    # Hand-checked 2-shingles: row 1 has 5 (the cat, cat sat, sat on, on the,
    # the mat), row 2 5, row 3 4; row 1 shares "cat sat", "sat on" with each
    # (2 of 8, 2 of 7). Without "the a": rows 1 and 2 are "cat sat on mat"
    # (1.0), and row 3 has its 3 shingles and "mat today" (0.75).
    rows = lambda spec: conn.execute(  # noqa: E731
        "SELECT id, survivor, ratio FROM near_dups('t', 0.2, 5, ?)", (spec,)).fetchall()
    assert rows("resemblance 2") == [(2, 1, 2 / 8), (3, 1, 2 / 7)]
    assert rows("resemblance 2 the a") == [(2, 1, 1.0), (3, 1, 0.75)]
    assert rows("levenshtein") == conn.execute("SELECT id, survivor, ratio FROM near_dups('t', 0.2, 5)").fetchall()
    for spec, message in [("resemblance", "measure must be 'levenshtein' or 'resemblance N [stopword ...]'"),
                          ("resemblance 65", "ngram_size must be an integer in [1, 64], got 65")]:
        with pytest.raises(Exception, match=r"near_dups\[argument\]: " + re.escape(message)):
            rows(spec)
    conn.execute("CREATE TABLE p (a INTEGER, b INTEGER)")
    conn.executemany("INSERT INTO p VALUES (?, ?)", [(1, 2), (2, 3)])
    among = conn.execute("SELECT id, survivor, ratio FROM near_dups_among('t', 'p', 0.2, 'chain', "
                         "'resemblance 2 the a')").fetchall()
    assert among == [(2, 1, 1.0)]  # (row 3 is no candidate of row 1; row 2, removed, compares no more)
