"""Which tokens make word shingles work on scripts written without spaces.

Real text: the Chinese (simplified and traditional), Japanese and Korean
pages of the corpus's text pool (../shared/corpus/text-pool.jsonl.gz), each
section at up to ten points of its history. Pairs: every two versions of one
section (genuine near and far revisions) and, per language, as many pairs of
different sections. Truth: the pipeline's measure, `lev_ratio > 0.9`
(python-Levenshtein). For each tokenization the word 5-shingle resemblance is
computed, and we report how well it ranks the truth (AUC), the best F1 any
resemblance threshold reaches, and the mean resemblance of one sentence
against itself with two characters changed (what issue 79 asks for).

Tokenizations: `run` (today's, Text::DeDuper's: a run of letters is one
token), `char` (each character of a dense-script run a token), `bigram`
(overlapping pairs of characters of a dense-script run; a lone character a
token, as Lucene's CJK bigram filter), `jieba` (the dictionary segmenter, Chinese only, when
installed). Korean is written with spaces, so it is measured with its
Hangul treated as dense and as not.

    python3 benches/cjk_tokens.py [--out benches/results/cjk-tokens-YYYY-MM-DD.md]
"""

import argparse
import collections
import gzip
import json
import random
import re
import sys
import time
from pathlib import Path

import Levenshtein

POOL = Path(__file__).resolve().parents[2] / "shared" / "corpus" / "text-pool.jsonl.gz"
LANGS = ("zh", "zh-Hant", "ja", "ko")


def dense(c, hangul):
    o = ord(c)
    return (
        0x4E00 <= o <= 0x9FFF  # CJK unified ideographs
        or 0x3400 <= o <= 0x4DBF  # extension A
        or 0xF900 <= o <= 0xFAFF  # compatibility ideographs
        or 0x20000 <= o <= 0x2FFFF  # extensions B onwards
        or 0x3040 <= o <= 0x30FF  # hiragana, katakana
        or 0x31F0 <= o <= 0x31FF  # katakana extensions
        or 0x0E00 <= o <= 0x0E7F  # Thai
        or 0x0E80 <= o <= 0x0EFF  # Lao
        or 0x1780 <= o <= 0x17FF  # Khmer
        or 0x1000 <= o <= 0x109F  # Myanmar
        or (hangul and 0xAC00 <= o <= 0xD7AF)
    )


WORD = re.compile(r"\w+")


def runs(text):
    return [w for w in WORD.findall(text.lower()) if w.replace("_", "")]


def split_dense(word, hangul):
    """The word cut into its dense-script runs and the rest."""
    out, cur, cur_dense = [], "", None
    for c in word:
        d = dense(c, hangul)
        if cur and d != cur_dense:
            out.append((cur, cur_dense))
            cur = ""
        cur += c
        cur_dense = d
    if cur:
        out.append((cur, cur_dense))
    return out


def tokens(text, how, hangul=False):
    if how == "run":
        return runs(text)
    if how == "jieba":
        import jieba

        return [w for w in jieba.lcut(text.lower()) if WORD.fullmatch(w)]
    out = []
    for word in runs(text):
        for part, d in split_dense(word, hangul):
            if not d:
                out.append(part)
            elif how == "char":
                out.extend(part)
            elif len(part) == 1:
                out.append(part)
            else:
                out.extend(part[i : i + 2] for i in range(len(part) - 1))
    return out


def shingles(toks, n=5):
    if not toks:
        return set()
    if len(toks) < n:
        return {tuple(toks)}
    return {tuple(toks[i : i + n]) for i in range(len(toks) - n + 1)}


def resemblance(a, b):
    if not a or not b:
        return 0.0
    return len(a & b) / len(a | b)


def auc(pos, neg):
    scores = sorted([(s, 1) for s in pos] + [(s, 0) for s in neg])
    rank_sum, i = 0.0, 0
    while i < len(scores):
        j = i
        while j < len(scores) and scores[j][0] == scores[i][0]:
            j += 1
        mid = (i + j + 1) / 2
        rank_sum += mid * sum(1 for k in range(i, j) if scores[k][1])
        i = j
    p, n = len(pos), len(neg)
    return (rank_sum - p * (p + 1) / 2) / (p * n) if p and n else float("nan")


def best_f1(pos, neg):
    best = (0.0, 0.0)
    for t in sorted(set(pos + neg)):
        tp = sum(s >= t for s in pos)
        fp = sum(s >= t for s in neg)
        fn = len(pos) - tp
        f1 = 2 * tp / (2 * tp + fp + fn) if tp else 0.0
        best = max(best, (f1, t))
    return best


def two_char_edits(texts, how, hangul, rng, count=300):
    """Mean resemblance of a 20-60 character sentence with 2 characters replaced."""
    sentences = []
    for t in texts:
        sentences += [s for s in re.split(r"[。！？\n.!?]", t) if 20 <= len(s) <= 60]
    rng.shuffle(sentences)
    alphabet = sorted({c for s in sentences for c in s if c.isalpha() and dense(c, True)})
    values = []
    for s in sentences[:count]:
        letters = [i for i, c in enumerate(s) if c.isalpha()]
        if len(letters) < 4:
            continue
        chars = list(s)
        for i in rng.sample(letters, 2):
            chars[i] = rng.choice([c for c in alphabet if c != chars[i]])
        values.append(resemblance(shingles(tokens(s, how, hangul)), shingles(tokens("".join(chars), how, hangul))))
    return sum(values) / len(values) if values else float("nan")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", help="write the table here too (Markdown)")
    args = parser.parse_args()
    pages = collections.defaultdict(list)
    with gzip.open(POOL, "rt") as f:
        for line in f:
            r = json.loads(line)
            if r["lang"] in LANGS:
                pages[(r["lang"], r["family"])].append((r.get("title") or "") + "\n\n" + (r.get("text") or ""))
    rng = random.Random(79)
    hows = ["run", "char", "bigram"]
    try:
        import jieba  # noqa: F401

        jieba.setLogLevel(60)
        hows.append("jieba")
    except ImportError:
        pass
    lines = [
        "| language | pairs (near) | tokens | AUC | best F1 (at) | 2 chars changed | CPU s |",
        "|---|---|---|---|---|---|---|",
    ]
    for lang in LANGS:
        families = [v for (l, _), v in sorted(pages.items()) if l == lang]
        same = [(a, b) for v in families for i, a in enumerate(v) for b in v[i + 1 :] if a != b]
        texts = [t for v in families for t in v]
        cross = []
        while len(cross) < len(same):
            fa, fb = rng.sample(families, 2)
            cross.append((rng.choice(fa), rng.choice(fb)))
        pairs = same + cross
        truth = [Levenshtein.ratio(a, b) > 0.9 for a, b in pairs]
        variants = [(h, False) for h in hows if h != "jieba" or lang.startswith("zh")]
        if lang == "ko":
            variants = [("run", False), ("char", True), ("bigram", True)]
        for how, hangul in variants:
            started = time.process_time()
            sets = {}
            for t in texts:
                sets[t] = shingles(tokens(t, how, hangul))
            cpu = time.process_time() - started
            scores = [resemblance(sets[a], sets[b]) for a, b in pairs]
            pos = [s for s, y in zip(scores, truth) if y]
            neg = [s for s, y in zip(scores, truth) if not y]
            f1, at = best_f1(pos, neg)
            edit = two_char_edits(texts, how, hangul, random.Random(7))
            name = how + (" (Hangul dense)" if hangul else "")
            lines.append(
                f"| {lang} | {len(pairs)} ({len(pos)}) | {name} | {auc(pos, neg):.4f} | {f1:.3f} ({at:.2f}) | {edit:.2f} | {cpu:.2f} |"
            )
            print(lines[-1], file=sys.stderr)
    table = "\n".join(lines)
    print(table)
    if args.out:
        Path(args.out).write_text(table + "\n")


if __name__ == "__main__":
    main()
