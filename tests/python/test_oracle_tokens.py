"""shingle_resemblance against its oracle, the Perl module Text::DeDuper
(../shared/oracles), on generated non-ASCII texts: Greek final sigma,
Turkish dotted capitals, German sharp s, superscripts, fractions, digits of
other scripts, combining marks, CJK. n = 1 compares the token sets
directly; n = 2 and 3 the shingles (texts long enough that the module's
no-n-gram rule for short texts does not apply, tokens that cannot collide
when the module joins them without a separator).

Where we differ on purpose: a character of a script written without spaces
(Han, Kana, Hangul, Thai...) is a token by itself, where the module makes the
whole run one. The oracle is then given the text with a space on each side
of such a character (`spaced`), and must agree with ours on the text as it
is."""
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


# The scripts whose characters are tokens by themselves (docs/functions.md,
# shingle_resemblance), written out here from the Unicode blocks.
CHARACTER_TOKENS = [(0x0E00, 0x0EFF), (0x1000, 0x109F), (0x1780, 0x17FF), (0x3040, 0x30FF), (0x31F0, 0x31FF),
                    (0x3400, 0x4DBF), (0x4E00, 0x9FFF), (0xAC00, 0xD7AF), (0xF900, 0xFAFF), (0xFF66, 0xFF9D),
                    (0x20000, 0x3FFFF)]


def spaced(text):
    return "".join(f" {c} " if any(lo <= ord(c) <= hi for lo, hi in CHARACTER_TOKENS) else c for c in text)


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
        spaced_cases = [(spaced(a), spaced(b), n) for a, b, n in cases]
        lines = "".join(json.dumps(c) + "\n" for c in spaced_cases)
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
        ("数据库", "数据", 1),                          # each Han character a token: 2 of 3
        ("東京タワー", "東京の塔", 2),                  # 東京 shared of 東京 京タ タワ ワー 京の の塔
    ]
    expected = perl(cases)
    assert expected == [1.0, 1.0, 1.0, 1.0, 1.0, 2 / 3, 1 / 6]
    assert ours(cases) == expected


def test_chinese_sentences_differing_in_two_characters():
    # 30 characters; the 8th and 23rd changed. Each change is in 5 of the 26
    # character 5-grams, apart, so 16 are shared of 36 in all. Text::DeDuper
    # itself gives 0.0 (the run is one token).
    a = "这篇文章对刚接触命令行的新手以及具有命令行使用经验的人都有用"
    b = "这篇文章对刚接解命令行的新手以及具有命令行便用经验的人都有用"
    assert ours([(a, b, 5)]) == [16 / 36]
    # Korean, written with spaces, is tokenized by syllable too: 13 syllables,
    # 12 2-grams each; the changed 자 is in 용자 and 자가, so 10 are shared of 14.
    assert ours([("이 문서는 사용자 가이드입니다", "이 문서는 사용지 가이드입니다", 2)]) == [10 / 14]


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
