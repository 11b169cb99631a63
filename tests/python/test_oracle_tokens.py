"""shingle_resemblance against its oracle, the Perl module Text::DeDuper
(../shared/oracles), on generated non-ASCII texts: Greek final sigma,
Turkish dotted capitals, German sharp s, superscripts, fractions, digits of
other scripts, combining marks, CJK. n = 1 compares the token sets
directly; n = 2 and 3 the shingles (texts long enough that the module's
no-n-gram rule for short texts does not apply, tokens that cannot collide
when the module joins them without a separator)."""
import json
import os
import random
import shutil
import subprocess

import pytest

import pipeline as P

ORACLES = os.path.join(os.path.dirname(P.CORPUS), "oracles")

PERL = r"""
use strict; use warnings; use Encode; use JSON::PP; use Text::DeDuper;
binmode STDIN, ':raw';
while (my $line = <STDIN>) {
    my ($a, $b, $n) = @{ decode_json($line) };
    my $d = Text::DeDuper->new(ngram_size => $n);
    my %A = map { $_ => 1 } $d->_build_ngram_digests($d->_tokenise(encode('UTF-8', $a)));
    my %B = map { $_ => 1 } $d->_build_ngram_digests($d->_tokenise(encode('UTF-8', $b)));
    my $inter = grep { $B{$_} } keys %A;
    my $union = keys(%A) + keys(%B) - $inter;
    print encode_json([$inter, $union]), "\n";
}
"""

# Pieces chosen for where tokenizers differ.
PIECES = ["ΣΟΦΟΣ", "σοφος", "σοφός", "ΟΔΥΣΣΕΑΣ", "İstanbul", "ISTANBUL", "ıi", "Straße", "STRASSE", "ẞ",
          "x²", "10³", "½", "¾cup", "①", "Ⅻ", "٣٤", "３４", "४२", "cafe\u0301", "café", "naïve", "Ǆemal", "ǅ",
          "東京", "数据库", "Привет", "ПРИВЕТ", "مرحبا", "שלום", "a1b2", "ꝏ", "ﬁne", "ﬀ", "Ωmega", "µs", "ℌ"]
SEPARATORS = [" ", "  ", ", ", ". ", "-", "\n", "—", "/", "·", "'"]


# "İstanbul" lowercases to i + a combining dot + "stanbul": tokens "i",
# "stanbul", whose join collides with "istanbul" in the module's digests.
JOINABLE = [p for p in PIECES if p != "İstanbul"]


def text(rng, words, pieces=PIECES):
    return "".join(rng.choice(pieces) + rng.choice(SEPARATORS) for _ in range(words))


@pytest.fixture(scope="module")
def perl():
    if not shutil.which("perl") or subprocess.run(["perl", "-MDigest::MD4", "-e", "1"]).returncode != 0:
        if os.environ.get("CI"):
            pytest.fail("perl with Digest::MD4 is required in CI (.ci/run installs libdigest-md4-perl)")
        pytest.skip("perl with Digest::MD4 not installed (apt-get install libdigest-md4-perl)")
    if not os.path.exists(os.path.join(ORACLES, "Text", "DeDuper.pm")):
        message = f"the oracle is not here: {os.path.abspath(ORACLES)} (it ships in ../shared beside the checkout)"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)

    def resemblance(cases):
        lines = "".join(json.dumps(c) + "\n" for c in cases)
        out = subprocess.run(["perl", "-I", ORACLES, "-e", PERL], input=lines.encode(), capture_output=True,
                             check=True)
        # The module's counts; the division here, as ours does it in f64.
        pairs = [json.loads(line) for line in out.stdout.decode().splitlines()]
        return [i / u if u else 0.0 for i, u in pairs]
    return resemblance


def ours(cases):
    conn = P.connect(":memory:")
    return [conn.execute("SELECT shingle_resemblance(?, ?, ?)", c).fetchone()[0] for c in cases]


def test_hand_checked_cases_agree_with_the_oracle(perl):
    cases = [
        ("ΣΟΦΟΣ ΟΔΥΣΣΕΑΣ", "σοφοσ οδυσσεασ", 1),  # lc maps Σ to σ, never to final ς
        ("İstanbul", "i\u0307stanbul", 1),           # İ lowercases to i + combining dot
        ("x² y³", "x y", 1),                          # superscripts are not word characters
        ("½ cup", "cup", 1),                          # nor are vulgar fractions
        ("٣٤ ३४", "٣٤ ३४", 1),                        # decimal digits of any script are
    ]
    expected = perl(cases)
    assert expected == [1.0, 1.0, 1.0, 1.0, 1.0]
    assert ours(cases) == expected


@pytest.mark.parametrize("n", [1, 2, 3])
def test_generated_non_ascii_texts_agree_with_the_oracle(perl, n):
    rng = random.Random(n)
    pieces = PIECES if n == 1 else JOINABLE
    cases = []
    for _ in range(300):
        a = text(rng, rng.randrange(8, 30), pieces)
        # b shares part of a, so resemblances spread over [0, 1].
        words = a.split(" ")
        b = " ".join(words[: rng.randrange(len(words) + 1)]) + " " + text(rng, rng.randrange(0, 20), pieces)
        cases.append((a, b, n))
    expected = perl(cases)
    got = ours(cases)
    mismatches = [(c, e, g) for c, e, g in zip(cases, expected, got) if e != g]
    assert not mismatches, mismatches[:3]
    assert len({round(e, 2) for e in expected}) > 20  # the cases are not all alike
