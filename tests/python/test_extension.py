"""The release build loaded by Python's standard sqlite3 module."""
import random
import sqlite3

import Levenshtein
import pytest

import pipeline as P

FUNCTIONS = ["canonical_url", "content_hash", "dedup_apply", "dedup_apply_plan", "dedup_chars", "dedup_debug", "dedup_differing_params", "dedup_error_codes", "dedup_extra_params", "dedup_fingerprint", "dedup_histogram", "dedup_invalid_text",
             "dedup_learn_url_rules", "dedup_pack_keys", "dedup_phase1_arrow", "dedup_phases", "dedup_plan", "dedup_prepare", "dedup_progress", "dedup_require", "dedup_restore", "dedup_row_digest", "dedup_rows_arrow",
             "dedup_run", "dedup_settings_checked", "dedup_settings_table", "dedup_similar", "dedup_sort_key",
             "dedup_version", "dupe_probability", "hamming_distance", "html_text", "is_html", "lev_ratio", "lsh_keys", "lsh_params", "lsh_probability",
             "main_text", "minhash", "minhash_jaccard", "minhash_oph", "near_dups_stats", "normalize_text", "paragraph_at", "paragraph_keys", "shingle_resemblance", "simhash",
             "strip_segments", "url_discard_reason", "url_domain", "url_host", "url_rule_params", "url_wayback"]


@pytest.fixture(scope="module")
def corpus():
    P.require_corpus()
    conn = sqlite3.connect(f"file:{P.CORPUS}/parity-5k.db?mode=ro", uri=True)
    conn.enable_load_extension(True)
    conn.load_extension(P.EXTENSION)
    return conn


def test_loads_and_adds_exactly_its_functions_and_modules():
    plain = sqlite3.connect(":memory:")
    loaded = P.connect(":memory:")
    q = "SELECT DISTINCT name FROM pragma_function_list ORDER BY 1"
    before = {r[0] for r in plain.execute(q)}
    assert sorted({r[0] for r in loaded.execute(q)} - before) == FUNCTIONS
    q = "SELECT name FROM pragma_module_list"
    assert {r[0] for r in loaded.execute(q)} - {r[0] for r in plain.execute(q)} == {"dedup_band_entries", "dedup_elected", "dedup_held_statements", "dedup_phase1", "dedup_similar", "lsh_bands", "near_dups", "near_dups_among",
        "segments"}
    assert loaded.execute("SELECT dedup_version()").fetchone()[0].startswith("v")


def test_the_python_layers_phases_are_the_extensions(sqlite_dedup):
    """sqlite_dedup._phases (Spark's driver and the reports name phases
    without the extension) holds what dedup_phases() says, and each phase's
    fixed reason is what a run archives."""
    import json
    _phases = sqlite_dedup._phases
    loaded = P.connect(":memory:")
    phases = json.loads(loaded.execute("SELECT dedup_phases()").fetchone()[0])
    assert {p["phase"]: (p["name"], p["reason"]) for p in phases} == _phases.PHASES
    assert [p["phase"] for p in phases] == [1, 2, 3, 4, 5]
    loaded.executescript("""CREATE TABLE pages (url TEXT, title TEXT, content TEXT, parsed TEXT, crawled TEXT);
        INSERT INTO pages VALUES ('https://a.example/x', 't', 'one two three four five six seven', NULL, NULL),
                                 ('https://a.example/x?utm_source=z', 't', 'something else entirely here', NULL, NULL),
                                 ('https://a.example/y', 't', 'one two three four five six seven', NULL, NULL);""")
    loaded.execute("SELECT dedup_run()").fetchone()
    archived = dict(loaded.execute("SELECT dedup_phase, dedup_reason FROM dedup_removed").fetchall())
    assert archived == {2: "same canonical URL", 3: "same content hash"}
    assert all(_phases.reason(p) == r for p, r in archived.items())


def test_content_hash_of_parsed_equals_the_corpus_hash_on_every_row(corpus):
    rows = corpus.execute("SELECT count(*), sum(content_hash(parsed) = content_hash) FROM pages "
                          "WHERE content_hash IS NOT NULL").fetchone()
    assert rows == (4955, 4955)


def test_normalize_text_is_idempotent_on_raw_corpus_pages(corpus):
    bad = corpus.execute("SELECT count(*) FROM (SELECT normalize_text(coalesce(title, '') || char(10, 10) "
                         "|| coalesce(content, '')) AS n FROM pages) WHERE normalize_text(n) <> n").fetchone()[0]
    assert bad == 0


def test_non_latin_pages_that_collide_in_the_reference_hash_differently_here(corpus):
    # In the reference, different Russian/Greek/CJK sections lose their
    # letters and share one hash; transliteration keeps them apart.
    groups = corpus.execute(
        "SELECT content_hash, count(DISTINCT n), count(DISTINCT content_hash(n)) FROM "
        "(SELECT content_hash, normalize_text(coalesce(title, '') || char(10, 10) || content) AS n "
        " FROM pages WHERE lang IN ('ru', 'el', 'zh', 'ja', 'ko', 'uk') AND content_hash IS NOT NULL) "
        "GROUP BY content_hash HAVING count(DISTINCT n) > 1").fetchall()
    assert len(groups) == 3, "the corpus has reference hash collisions among non-Latin pages"
    assert all(texts == hashes for _, texts, hashes in groups)


def test_fixtures_in_four_scripts_hash_apart():
    conn = P.connect(":memory:")
    texts = ["Привет, мир", "Пока, мир", "Καλημέρα κόσμε", "Καληνύχτα κόσμε", "مرحبا بالعالم", "وداعا يا عالم",
             "你好世界", "再见世界"]
    hashes = [conn.execute("SELECT content_hash(?)", (t,)).fetchone()[0] for t in texts]
    assert len(set(hashes)) == len(texts)
    assert conn.execute("SELECT normalize_text(?)", ("Привет, мир",)).fetchone()[0] == "privet, mir"


def test_lev_ratio_equals_python_levenshtein_exactly_on_corpus_pairs(corpus):
    rows = corpus.execute("SELECT parsed FROM pages WHERE parsed <> '' ORDER BY url").fetchall()
    texts = [r[0] for r in rows]
    rng = random.Random(7)
    pairs = [(texts[i], texts[i + 1]) for i in range(0, len(texts) - 1, 7)]
    pairs += [(rng.choice(texts), rng.choice(texts)) for _ in range(100)]
    pairs += [("", ""), ("abc", ""), ("北京大学", "北京大字"), ("мира", "мирб")]
    for a, b in pairs:
        ours = corpus.execute("SELECT lev_ratio(?, ?)", (a, b)).fetchone()[0]
        assert ours == Levenshtein.ratio(a, b)
        for cutoff in (0.5, 0.9):
            ours = corpus.execute("SELECT lev_ratio(?, ?, ?)", (a, b, cutoff)).fetchone()[0]
            assert ours == Levenshtein.ratio(a, b, score_cutoff=cutoff)


def test_exact_point_nine_pairs_of_the_corpus(corpus):
    """The corpus plants pairs at a ratio of exactly 0.9: found here with
    python-Levenshtein, they must be exactly 0.9 for us too, and not merge."""
    texts = [r[0] for r in corpus.execute("SELECT parsed FROM pages WHERE parsed <> '' ORDER BY url")]
    exact = []
    for i, a in enumerate(texts):
        for b in texts[i + 1:i + 50]:
            if a != b and Levenshtein.ratio(a, b, score_cutoff=0.9) == 0.9:
                exact.append((a, b))
    assert len(exact) >= 6
    for a, b in exact:
        assert corpus.execute("SELECT lev_ratio(?, ?), lev_ratio(?, ?, 0.9)", (a, b, a, b)).fetchone() == (0.9, 0.9)
    conn = P.connect(":memory:")
    conn.execute("CREATE TABLE t(pos INTEGER, id INTEGER, text TEXT, rank INTEGER)")
    conn.executemany("INSERT INTO t VALUES (?, ?, ?, ?)",
                     [(2 * i + k, 2 * i + k, pair[k], 0) for i, pair in enumerate(exact) for k in (0, 1)])
    assert conn.execute("SELECT count(*) FROM near_dups('t', 0.9, 1)").fetchone()[0] == 0
    assert conn.execute("SELECT count(*) FROM near_dups('t', 0.8999999, 1)").fetchone()[0] == len(exact)


def classify(original, reference, ours):
    """Which documented URL rules explain that ours differs from the reference."""
    if reference is None or ours is None:
        return "unexplained"
    scheme, _, rest = reference.partition("://")
    host, slash, tail = rest.partition("/")
    fixed_host = host.lower().replace(".m.wikipedia.org", ".wikipedia.org")
    lowered = f"{scheme}://{fixed_host}{slash}{tail}"
    unslashed = lowered.replace("/?", "?").replace("/#", "#").rstrip("/")
    kinds = []
    if fixed_host != host:
        kinds.append("host case")
    if unslashed != lowered:
        kinds.append("trailing slash")
    query = original.partition("?")[2].partition("#")[0]
    if unslashed != ours:
        if ("?" not in reference and not query.startswith(("lang=", "v="))
                and ours.startswith(unslashed + "?") and ("lang=" in query or "v=" in query)):
            kinds.append("lang/v not first")
        elif (unslashed.partition("?")[0] == ours.partition("?")[0]
              and set(ours.partition("?")[2].split("&")) < set(unslashed.partition("?")[2].split("&"))):
            kinds.append("other parameters after lang/v")
        else:
            return "unexplained"
    return " + ".join(kinds)


def test_canonical_urls_match_the_reference_but_for_documented_rules(corpus):
    ref = {int(r["original_rowid"]): r for r in P.read_tsv("parity-5k.canonical.tsv")}
    counts = {}
    for rowid, url, ours, domain, wayback in corpus.execute(
            "SELECT rowid, url, canonical_url(url), url_domain(url), url_wayback(url) FROM pages"):
        r = ref[rowid]
        reference = None if r["canonical_url"] == "DISCARDED" else r["canonical_url"]
        if reference is None:
            assert ours is None, url
            continue
        assert wayback == (r["wayback"] or None)
        if domain != r["domain"].lower():
            # The reference keeps the mobile host as the domain.
            assert r["domain"].lower().replace(".m.wikipedia.org", ".wikipedia.org") == domain
        if ours != reference:
            kind = classify(url, reference, ours)
            counts[kind] = counts.get(kind, 0) + 1
    # The counts the README reports.
    assert counts == {
        "trailing slash": 1054,
        "host case": 56,
        "host case + trailing slash": 5,
        "lang/v not first": 4,
        "trailing slash + lang/v not first": 29,
        "trailing slash + other parameters after lang/v": 3,
    }


TRACKING = {"fbclid", "gclid", "phpsessid", "sessionid", "ref", "source", "sid", "jsessionid"}


def is_tracking(param):
    name = param.split("=")[0].lower()
    return name.startswith("utm_") or name in TRACKING


def test_keep_params_keeps_every_parameter_but_tracking_ones(corpus):
    ref = {int(r["original_rowid"]): r for r in P.read_tsv("parity-5k.canonical.tsv")}
    with_query = 0
    for rowid, url, ours in corpus.execute("SELECT rowid, url, canonical_url(url, 'keep_params') FROM pages"):
        if ref[rowid]["canonical_url_keep_params"] == "DISCARDED":
            assert ours is None
            continue
        query = url.rpartition("://")[2].partition("?")[2].partition("#")[0].rstrip("/")
        params = [p for p in query.replace("?", "&").split("&") if p]
        expected = {p for p in params if not is_tracking(p)}
        ours_params = set(filter(None, ours.partition("?")[2].partition("#")[0].split("&")))
        assert ours_params == expected, url
        with_query += bool(params)
    assert with_query > 500
