"""Learning from the crawl (docs/learning.md): URL rules (MaybeDont's
hypotheses) in dedup_url_rules, dupe_probability, url_rule_params and the
url_rules setting (segments and the boilerplate setting: test_segments.py).
Expected values are hand-computed or come from MaybeDont's formula, never
from the code under test."""
import json
import math
import os
import sqlite3

import pytest

from pipeline import ROOT, connect, crawl_db
from sites import chrome_site, param_crawl, product_site

LEARN = os.path.join(ROOT, "sql", "learn_url_rules.sql")


def maybedont_probability(dup, total):
    """MaybeDont's DupStat.get_prob, transcribed from its source."""
    if total < 5:
        return 0.0
    a, b = dup + 1, total - dup + 1
    n = a + b
    p, q = a / n, b / n
    return p - 1.96 * math.sqrt(p * q / n)


def learn(conn):
    with open(LEARN) as f:
        conn.executescript(f.read())


def rules(conn):
    return {(d, p, k, v): (o, n) for d, p, k, v, o, n in conn.execute(
        "SELECT domain, path, param, value, observations, duplicates FROM dedup_url_rules")}


TEXT_A = "the quick brown fox jumps over the lazy dog near the river bank today " * 3
TEXT_B = "a completely different page about sorting algorithms and their costs " * 3


def test_rules_counted_by_hand(tmp_path):
    conn = crawl_db(tmp_path, [
        ("https://www.shop.example/p?a=1", "P", TEXT_A, "2024-01-01 00:00:01"),
        ("https://shop.example/p?a=1&s=x", "P", TEXT_A, "2024-01-01 00:00:02"),
        ("https://shop.example/p?a=2", "P", TEXT_B, "2024-01-01 00:00:03"),
    ])
    report = conn.execute("SELECT dedup_learn_url_rules()").fetchone()[0]
    assert report.startswith("learned from 3 new URL(s)")
    d = "shop.example"
    # Pairs: (1,2) differ only in s, added: same content. (1,3) differ only
    # in a's value: different content. (2,3) differ in a and s: the path
    # rule only, different content.
    assert rules(conn) == {
        (d, "/p", None, None): (3, 1),
        ("*", None, "s", None): (1, 1), (d, None, "s", None): (1, 1), (d, "/p", "s", None): (1, 1),
        (d, "/p?a=1", "s", None): (1, 1),
        ("*", None, "s", "x"): (1, 1), (d, None, "s", "x"): (1, 1), (d, "/p", "s", "x"): (1, 1),
        ("*", None, "a", None): (1, 0), (d, None, "a", None): (1, 0), (d, "/p", "a", None): (1, 0),
        (d, "/p?", "a", None): (1, 0),
    }
    # Other forms of fetched URLs (a tracking parameter, a fragment): the
    # variant rule of the domain, once with the same content, once not.
    conn.execute("INSERT INTO pages VALUES ('https://shop.example/p?a=1&utm_source=x', 'P', ?, '2024-01-02')",
                 (TEXT_A,))
    conn.execute("INSERT INTO pages VALUES ('https://shop.example/p?a=2#top', 'P', ?, '2024-01-03')", (TEXT_A,))
    report = conn.execute("SELECT dedup_learn_url_rules()").fetchone()[0]
    assert report.startswith("learned from 0 new URL(s) (2 already seen")
    assert rules(conn)[(d, "*", None, None)] == (2, 1)
    # The same URL fetched again: the refetch rule (its content is the one
    # last fetched under that canonical URL: TEXT_A).
    conn.execute("INSERT INTO pages VALUES ('https://shop.example/p?a=2#top', 'P', ?, '2024-01-04')", (TEXT_A,))
    conn.execute("SELECT dedup_learn_url_rules()").fetchone()
    assert rules(conn)[(d, None, None, None)] == (1, 1)
    assert len(rules(conn)) == 14
    # Below 5 observations nothing is known yet (MaybeDont's rule).
    assert {p for (p,) in conn.execute("SELECT DISTINCT probability FROM dedup_url_rules")} == {0.0}


def test_probability_is_maybedonts_and_parameters_are_learned(tmp_path):
    conn = crawl_db(tmp_path, param_crawl(n_articles=200, seed=3))
    learn(conn)
    for o, n, p in conn.execute("SELECT observations, duplicates, probability FROM dedup_url_rules"):
        # (MaybeDont's lower bound can dip below 0; ours is clamped at 0.)
        assert p == pytest.approx(max(0.0, maybedont_probability(n, o)), abs=1e-12)
    domain_rule = {k: (o, n, p) for k, o, n, p in conn.execute(
        "SELECT param, observations, duplicates, probability FROM dedup_url_rules "
        "WHERE domain = 'shop0.example.com' AND path IS NULL AND value IS NULL")}
    # Content never changes with these (the print view adds a line: MinHash
    # estimates its Jaccard near 0.93, a few estimates fall under 0.9)...
    for param in ("view", "sort", "replytocom", "session_key"):
        o, n, p = domain_rule[param]
        exact = param != "view"
        assert (n == o if exact else n >= 0.9 * o) and p > 0.5, (param, domain_rule[param])
    # ...and always with the article id.
    o, n, p = domain_rule["id"]
    assert n == 0 and p == 0.0 and o > 100


def test_learning_in_batches_equals_learning_at_once(tmp_path):
    rows = param_crawl(n_articles=120, seed=5)
    whole = crawl_db(tmp_path, rows, "whole.db")
    learn(whole)
    parts = crawl_db(tmp_path, rows[:50], "parts.db")
    learn(parts)
    parts.executemany("INSERT INTO pages VALUES (?, ?, ?, ?)", [r[:4] for r in rows[50:90]])
    learn(parts)
    parts.executemany("INSERT INTO pages VALUES (?, ?, ?, ?)", [r[:4] for r in rows[90:]])
    second = parts.execute("SELECT dedup_learn_url_rules()").fetchone()[0]
    assert second.startswith(f"learned from {len(rows) - 90} new URL(s)") or "already seen" in second
    assert rules(parts) == rules(whole)
    # Nothing new: nothing changes.
    before = rules(parts)
    assert parts.execute("SELECT dedup_learn_url_rules()").fetchone()[0].startswith("learned from 0 new URL(s)")
    assert rules(parts) == before


def test_a_site_of_mostly_chrome_is_not_learned_as_duplicates(tmp_path):
    """product_site: 700 products, each 15 words of its own in about 580 of
    chrome. Learned from the first 60% of the crawl, no new product's URL
    is predicted a duplicate (MaybeDont, discounting common shingles, skips
    none either). Comparing whole texts, as before this change, 57,973 of
    58,832 id pairs looked the same, P(id never changes content) was 0.984
    and all 284 new products would have been skipped. The `&sort=price`
    copies are still learned as duplicates: their texts are the same after
    the chrome is left out too."""
    rows = product_site()
    seen = int(len(rows) * 0.6)
    conn = crawl_db(tmp_path, rows[:seen])
    learn(conn)
    learned = rules(conn)
    ids = learned[("shop.example.net", "/product", "id", None)]
    assert ids[1] <= 1 and ids[0] > 1000, ids  # (pages 1 and 2, before the chrome is known)
    old = {r[4] for r in rows[:seen]}
    new = [r[0] for r in rows[seen:] if r[4] not in old and "sort=" not in r[0]]
    assert len(new) > 200
    probs = [conn.execute("SELECT dupe_probability(?)", (u,)).fetchone()[0] for u in new]
    assert max(p or 0.0 for p in probs) < 0.98, max(probs)
    # Every sort copy was the same content as its product.
    sort = learned[("shop.example.net", "/product", "sort", None)]
    assert sort[0] == sort[1] == sum(1 for r in rows[:seen] if "sort=" in r[0]) > 30, sort


def test_rows_that_reuse_a_removed_rowid_are_still_learned(tmp_path):
    rows = param_crawl(n_articles=40, seed=7)
    conn = crawl_db(tmp_path, rows)
    learn(conn)
    # A run removes rows, among them the last one; new rows then reuse rowids.
    top = conn.execute("SELECT max(rowid) FROM pages").fetchone()[0]
    conn.execute("DELETE FROM pages WHERE rowid >= ?", (top - 2,))
    conn.execute("INSERT INTO pages VALUES ('https://fresh.example/a?x=1', 'A', ?, '2030-01-01')", (TEXT_A,))
    conn.execute("INSERT INTO pages VALUES ('https://fresh.example/a?x=1&y=2', 'A', ?, '2030-01-02')", (TEXT_A,))
    assert conn.execute("SELECT max(rowid) FROM pages").fetchone()[0] <= top
    report = conn.execute("SELECT dedup_learn_url_rules()").fetchone()[0]
    assert report.startswith("learned from 2 new URL(s)"), report
    assert rules(conn)[("fresh.example", None, "y", "2")] == (1, 1)


def test_archive_rows_are_learned_with_their_survivor(tmp_path):
    rows = [
        ("https://blog.example/post", "Post", TEXT_A, "2024-01-01 00:00:01"),
        ("https://blog.example/post?amp=1", "Post", TEXT_A.upper() + " extra words at the end", "2024-01-01 00:00:02"),
    ]
    conn = crawl_db(tmp_path, rows)
    conn.execute("SELECT dedup_run(json_object('discard_params', 0, 'threshold', 0.5))").fetchone()
    assert conn.execute("SELECT count(*) FROM pages").fetchone()[0] == 1
    learn(conn)
    # The removed copy (in dedup_removed) is learned too, as a duplicate of
    # the row it lost to.
    assert rules(conn)[("blog.example", None, "amp", "1")] == (1, 1)


def test_dupe_probability(tmp_path):
    conn = crawl_db(tmp_path, param_crawl(n_articles=200, seed=3))
    assert conn.execute("SELECT dupe_probability('https://shop0.example.com/article?id=1')").fetchone() == (None,)
    learn(conn)
    first = conn.execute("SELECT url FROM pages WHERE url LIKE '%shop0%article?id=%' LIMIT 1").fetchone()[0]
    one = lambda u: conn.execute("SELECT dupe_probability(?)", (u,)).fetchone()[0]
    # Already fetched: the domain's refetch rule; another form of it (a
    # tracking parameter): its variant rule (the replayed crawl has neither).
    assert one(first) is None
    assert one(first + "&utm_source=feed") is None
    conn.execute("INSERT INTO dedup_url_rules (domain, path, observations, duplicates, probability) "
                 "VALUES ('shop0.example.com', '*', 10, 10, 0.76), ('shop0.example.com', NULL, 10, 5, 0.1)")
    assert one(first + "&utm_source=feed") == 0.76
    assert one(first) == 0.1
    # A new print view of a fetched article: the best applicable rule.
    first = conn.execute(
        "SELECT 'https://' || s.url FROM dedup_url_seen AS s WHERE s.domain = 'shop0.example.com' "
        "AND s.query LIKE 'id=%' AND s.query NOT LIKE '%&%' AND NOT EXISTS (SELECT 1 FROM dedup_url_seen AS v "
        "WHERE v.url = s.url || '&view=print') LIMIT 1").fetchone()[0]
    aid = first.split("id=")[1]
    expect = conn.execute(
        "SELECT max(probability) FROM dedup_url_rules WHERE domain IN ('shop0.example.com', '*') AND param = 'view' "
        "AND (path IS NULL OR path = '/article' OR path = '/article?id=' || ?) AND (value IS NULL OR value = 'print')",
        (aid,)).fetchone()[0]
    assert one(first + "&view=print") == pytest.approx(expect) and expect > 0.5
    # A new article: only the path rule applies, and it is low.
    assert one("https://shop0.example.com/article?id=999999") < 0.1
    # Nothing known about another site; not a URL.
    assert one("https://elsewhere.example/x") is None
    assert one("mailto:someone@example.com") is None
    assert one(None) is None
    with pytest.raises(sqlite3.OperationalError, match=r"dupe_probability\[argument\]: url must be TEXT, got"):
        conn.execute("SELECT dupe_probability(x'00')").fetchone()


def test_dupe_probability_follows_every_change_of_the_model(tmp_path):
    """The model a connection holds for dupe_probability (read once, then
    kept current by its own learning) answers as a fresh connection reading
    the tables, and as a model without a version (read per URL, as before
    versions were kept): after its own batches, another connection's
    batch, hand edits of dedup_url_rules, and a batch rolled back."""
    rows = param_crawl(n_articles=150, seed=5)
    batches = [rows[i::4] for i in range(4)]
    # Refetches in another form (the model then knows the new form).
    batches[1] += [(r[0].replace("https://", "http://www."),) + tuple(r[1:]) for r in batches[0][:15]]
    path = os.path.join(str(tmp_path), "crawl.db")
    held = crawl_db(tmp_path, batches[0])
    other = connect(path)
    urls = [r[0] for r in rows[::3]]
    probes = sorted(set(urls + [u + ("&" if "?" in u else "?") + "view=print" for u in urls]
                        + [u.replace("https://", "http://www.") for u in urls]
                        + [u + ("&" if "?" in u else "?") + "utm_source=feed" for u in urls[:20]]))

    def predictions(conn):
        return [conn.execute("SELECT dupe_probability(?)", (u,)).fetchone()[0] for u in probes]

    def check(step):
        got = predictions(held)
        fresh = connect(path)
        assert got == predictions(fresh), step
        # Without a version the model is read for each URL from the tables.
        copy = os.path.join(str(tmp_path), "unversioned.db")
        fresh.execute("VACUUM INTO ?", (copy,))
        fresh.close()
        unversioned = connect(copy)
        unversioned.execute("DELETE FROM dedup_url_state WHERE key = 'version'")
        assert got == predictions(unversioned), step
        unversioned.close()
        os.unlink(copy)
        assert sum(p is not None for p in got) > len(probes) // 10, step
        return got

    assert set(predictions(held)) == {None}  # nothing learned yet
    held.execute("SELECT dedup_learn_url_rules()").fetchone()
    first = check("first batch")
    # (The stamp is read through the statement the connection keeps.)
    assert held.execute("SELECT count(*) FROM dedup_held_statements").fetchone()[0] == 1
    for b in batches[1:3]:
        held.executemany("INSERT INTO pages VALUES (?, ?, ?, ?)", [r[:4] for r in b])
        held.execute("SELECT dedup_learn_url_rules()").fetchone()
        check("a batch of its own")
    other.executemany("INSERT INTO pages VALUES (?, ?, ?, ?)", [r[:4] for r in batches[3]])
    other.execute("SELECT dedup_learn_url_rules()").fetchone()
    learned = check("another connection's batch")
    assert learned != first
    top = max(p for p in learned if p is not None)  # the rules that gave the highest prediction
    other.execute("UPDATE dedup_url_rules SET probability = 0.001 WHERE probability = ?", (top,))
    assert check("a rule edited") != learned
    held.execute("DELETE FROM dedup_url_rules WHERE probability < 0.5")
    check("rules deleted")
    other.execute("INSERT INTO dedup_url_rules (domain, param, probability) VALUES ('*', 'view', 0.97)")
    assert 0.97 in check("a rule inserted")
    before = predictions(held)
    held.execute("BEGIN")
    held.executemany("INSERT INTO pages VALUES (?, ?, ?, ?)", [(r[0] + "&again=1",) + tuple(r[1:4]) for r in rows])
    held.execute("SELECT dedup_learn_url_rules()").fetchone()
    assert predictions(held) != before
    held.execute("ROLLBACK")
    assert check("a batch rolled back") == before


def model_tables(conn):
    """Everything the learner wrote, but the random version stamp; its
    watermarks checked against the tables."""
    state = dict(conn.execute("SELECT key, value FROM dedup_url_state"))
    last = conn.execute("SELECT rowid, url FROM pages ORDER BY rowid DESC LIMIT 1").fetchone()
    assert (state["rowid"], state["url"]) == last, (state, last)
    archived = conn.execute("SELECT name FROM sqlite_schema WHERE name = 'dedup_removed'").fetchone()
    archive = conn.execute("SELECT coalesce(max(rowid), 0) FROM dedup_removed").fetchone()[0] if archived else 0
    assert state["archive_rowid"] == archive
    return {
        "rules": conn.execute("SELECT rowid, * FROM dedup_url_rules ORDER BY rowid").fetchall(),
        "seen": conn.execute("SELECT * FROM dedup_url_seen ORDER BY url").fetchall(),
        "params": conn.execute("SELECT * FROM dedup_url_params ORDER BY rowid").fetchall(),
        "segments": conn.execute("SELECT * FROM dedup_url_segments ORDER BY key").fetchall(),
        "state": conn.execute("SELECT * FROM dedup_url_state WHERE key != 'version' ORDER BY key").fetchall(),
    }


def test_the_learner_remembers_between_calls_only_what_the_tables_hold(tmp_path):
    """A connection that learns after every row keeps the seen URLs of each
    path, the chrome segments and the rules' counts from one call to the
    next. The same steps, each call of dedup_learn_url_rules on a fresh
    connection (nothing remembered), must leave the same tables: after
    calls of its own, another connection's batch on the same paths, a hand
    edit of a rule's counts, and a batch rolled back."""
    rows = [r for pair in zip(product_site()[:170], param_crawl(n_articles=60, seed=11)) for r in pair]
    assert len(rows) == 340
    paths = {name: os.path.join(str(tmp_path), name + ".db") for name in ("held", "fresh")}
    for path in paths.values():
        crawl_db(tmp_path, [], os.path.basename(path)).close()
    held = connect(paths["held"])

    def step(sql, params=(), learner=False):
        """Runs one statement on both databases: through the held
        connection (or a second one for the other steps) and through a
        connection opened for it."""
        for name, path in paths.items():
            conn = held if name == "held" and learner else connect(path)
            conn.execute(sql, params).fetchall()
            if conn is not held:
                conn.close()

    def add(batch, learner_rows=True):
        for r in batch:
            step("INSERT INTO pages VALUES (?, ?, ?, ?)", r[:4], learner=learner_rows)

    for r in rows[:120]:
        add([r])
        step("SELECT dedup_learn_url_rules()", learner=True)
    assert model_tables(held) == model_tables(sqlite3.connect(paths["fresh"]))
    # Another connection learns URLs of the same paths.
    add(rows[120:160], learner_rows=False)
    step("SELECT dedup_learn_url_rules()")
    for r in rows[160:200]:
        add([r])
        step("SELECT dedup_learn_url_rules()", learner=True)
    assert model_tables(held) == model_tables(sqlite3.connect(paths["fresh"]))
    # A hand edit of the counts of the rules the next rows update.
    step("UPDATE dedup_url_rules SET observations = observations + 7, duplicates = duplicates + 7")
    for r in rows[200:240]:
        add([r])
        step("SELECT dedup_learn_url_rules()", learner=True)
    assert model_tables(held) == model_tables(sqlite3.connect(paths["fresh"]))
    # A batch of the held connection rolled back, then more rows.
    held.execute("BEGIN")
    held.executemany("INSERT INTO pages VALUES (?, ?, ?, ?)", [r[:4] for r in rows[240:260]])
    held.execute("SELECT dedup_learn_url_rules()").fetchone()
    held.execute("ROLLBACK")
    for r in rows[240:320]:
        add([r])
        step("SELECT dedup_learn_url_rules()", learner=True)
    # A run archives rows (learned with the rows added after it).
    step("SELECT dedup_run(json_object('discard_params', 0))")
    for r in rows[320:]:
        add([r])
        step("SELECT dedup_learn_url_rules()", learner=True)
    assert held.execute("SELECT count(*) FROM dedup_removed").fetchone()[0] > 10
    tables = model_tables(held)
    assert tables == model_tables(sqlite3.connect(paths["fresh"]))
    # (The steps did learn: the product pages' chrome, rules of each kind.)
    assert len(tables["seen"]) > 250 and len(tables["segments"]) > 100
    assert sum(1 for r in tables["rules"] if r[5] > 1) > 20


def test_the_learner_checks_the_schema_again_once_it_changed(tmp_path):
    """What a connection's learner found of the schema (the table's
    columns, its temp views) holds only while the schema is unchanged: a
    column added by another connection is read from the next call on, a
    temp view dropped is made again, and the tables equal those of calls
    each made on a new connection."""
    paths = {name: os.path.join(str(tmp_path), name + ".db") for name in ("held", "fresh")}
    for path in paths.values():
        crawl_db(tmp_path, param_crawl(n_articles=10, seed=2), os.path.basename(path)).close()
    held = connect(paths["held"])

    def each(sql, params=(), learner=False):
        for name, path in paths.items():
            conn = held if name == "held" and learner else connect(path)
            conn.execute(sql, params).fetchall()
            if conn is not held:
                conn.close()

    each("SELECT dedup_learn_url_rules()", learner=True)
    each("ALTER TABLE pages ADD COLUMN parsed TEXT")
    held.execute("SELECT count(*) FROM pages").fetchone()  # (its schema read again)
    # Two forms of each page: their contents differ, their parsed texts do
    # not (parsed is what is compared when there is one).
    for i in range(8):
        for v in ("1", "2"):
            each("INSERT INTO pages VALUES (?, 'T', ?, ?, ?)",
                 (f"https://x.example/a?id={i}&v={v}", f"{TEXT_B} {v} {i} " * 2, f"2031-01-0{v} 00:00:0{i}",
                  f"{TEXT_A} {i}"), learner=True)
            each("SELECT dedup_learn_url_rules()", learner=True)
    # (The connection's own temp view, dropped: made again.)
    held.execute("DROP VIEW temp._dedup_source")
    each("INSERT INTO pages VALUES ('https://x.example/a?id=0&v=3', 'T', 'other', '2032-01-01', ?)",
         (f"{TEXT_A} 0",), learner=True)
    each("SELECT dedup_learn_url_rules()", learner=True)
    tables = model_tables(held)
    assert tables == model_tables(sqlite3.connect(paths["fresh"]))
    v_rule = [r for r in tables["rules"] if r[1:5] == ("x.example", None, "v", None)]
    # Every pair of forms (8, and the third form of id 0 with the two
    # others): the same parsed text.
    assert v_rule and v_rule[0][5] == v_rule[0][6] == 10, v_rule


def test_a_schema_seen_in_a_batch_rolled_back_is_not_trusted(tmp_path):
    """A connection's first batch, in a transaction rolled back, made the
    model's tables and its temp views; other objects then bring main's and
    temp's schema versions back to the numbers that batch saw. The next
    batch must make the tables again, not trust what it remembers."""
    rows = param_crawl(n_articles=10, seed=6)
    conn = crawl_db(tmp_path, rows)
    version = lambda: (conn.execute("PRAGMA main.schema_version").fetchone()[0],
                       conn.execute("PRAGMA temp.schema_version").fetchone()[0])
    conn.execute("BEGIN")
    conn.execute("SELECT dedup_learn_url_rules()").fetchone()
    seen = version()
    conn.execute("ROLLBACK")
    assert conn.execute("SELECT count(*) FROM sqlite_schema WHERE name LIKE 'dedup_url%'").fetchone()[0] == 0
    i = 0
    while version()[0] < seen[0]:
        conn.execute(f"CREATE TABLE other_{i} (x)")
        i += 1
    while version()[1] < seen[1]:
        conn.execute(f"CREATE TEMP TABLE other_temp_{i} (x)")
        i += 1
    assert version() == seen
    conn.execute("SELECT dedup_learn_url_rules()").fetchone()
    whole = crawl_db(tmp_path, rows, "whole.db")
    learn(whole)
    assert rules(conn) == rules(whole) and len(rules(whole)) > 10


def test_a_batch_writes_few_pages_and_drops_the_index_no_query_reads(tmp_path):
    """The state's rows are changed in place (their rowids stay), and the
    indexes dedup_url_seen_query and dedup_url_params_rest an earlier
    version made (no query read them) are dropped by the next batch."""
    rows = param_crawl(n_articles=20, seed=4)
    conn = crawl_db(tmp_path, rows[:30])
    conn.execute("SELECT dedup_learn_url_rules()").fetchone()
    state = conn.execute("SELECT rowid, key FROM dedup_url_state ORDER BY key").fetchall()
    assert [name for (name,) in conn.execute("SELECT name FROM sqlite_schema WHERE type = 'index' AND "
                                              "tbl_name LIKE 'dedup_url_%' ORDER BY name")] == [
        "dedup_url_rules_key", "dedup_url_seen_path", "sqlite_autoindex_dedup_url_seen_1",
        "sqlite_autoindex_dedup_url_state_1"]
    conn.execute("CREATE INDEX dedup_url_seen_query ON dedup_url_seen (domain, path, query)")
    conn.execute("CREATE INDEX dedup_url_params_rest ON dedup_url_params (domain, path, rest, param)")
    conn.close()
    conn = connect(os.path.join(str(tmp_path), "crawl.db"))
    conn.executemany("INSERT INTO pages VALUES (?, ?, ?, ?)", [r[:4] for r in rows[30:]])
    assert conn.execute("SELECT dedup_learn_url_rules()").fetchone()[0].startswith(f"learned from {len(rows) - 30}")
    assert conn.execute("SELECT rowid, key FROM dedup_url_state ORDER BY key").fetchall() == state
    assert conn.execute("SELECT name FROM sqlite_schema WHERE tbl_name IN ('dedup_url_seen', 'dedup_url_params') "
                        "AND type = 'index' ORDER BY name").fetchall() == [
        ("dedup_url_seen_path",), ("sqlite_autoindex_dedup_url_seen_1",)]
    whole = crawl_db(tmp_path, rows, "whole.db")
    learn(whole)
    assert rules(conn) == rules(whole)


def test_url_rules_setting_moves_duplicates_to_phase_2(tmp_path):
    rows = param_crawl(n_articles=120, seed=9)
    plain = crawl_db(tmp_path, rows, "plain.db")
    ruled = crawl_db(tmp_path, rows, "ruled.db")
    learn(ruled)
    # A rule a user pins by hand: `view`, `sort`, `replytocom` and
    # `session_key` never matter on these shops.
    ruled.execute("UPDATE dedup_url_rules SET probability = 1.0 WHERE path IS NULL AND value IS NULL "
                  "AND param IN ('view', 'sort', 'replytocom', 'session_key')")
    assert ruled.execute("SELECT url_rule_params('https://shop1.example.com/article?id=1&view=print&sort=asc')"
                         ).fetchone()[0] == "sort|view"
    assert ruled.execute("SELECT url_rule_params('https://shop1.example.com/article?id=1')").fetchone()[0] is None
    settings = json.dumps({"discard_params": 0, "url_rules": 0.98})
    plain.execute("SELECT dedup_run(json_object('discard_params', 0))").fetchone()
    ruled.execute("SELECT dedup_run(?)", (settings,)).fetchone()
    by_phase = lambda c: dict(c.execute("SELECT dedup_phase, count(*) FROM dedup_removed GROUP BY 1"))
    p, r = by_phase(plain), by_phase(ruled)
    assert r[2] > p.get(2, 0) and r.get(3, 0) + r.get(4, 0) < p.get(3, 0) + p.get(4, 0)
    assert json.loads(ruled.execute("SELECT settings FROM dedup_runs").fetchone()[0])["url_rules"] == 0.98
    # The same pages survive, up to which variant of a page is kept.
    groups = {r[0]: r[4] for r in rows}
    survivors = lambda c: sorted(groups[u] for (u,) in c.execute("SELECT url FROM pages"))
    assert survivors(plain) == survivors(ruled)


def test_bad_settings_are_named(tmp_path):
    conn = crawl_db(tmp_path, chrome_site(n_pages=3, n_copies=0))
    for settings, message in [
        ({"boilerplate": "remove"}, "boilerplate must be 'keep' or 'strip', got 'remove'"),
        ({"boilerplate_min_pages": 1}, "boilerplate_min_pages must be an integer >= 2, got 1"),
        ({"url_rules": 2}, "url_rules must be 0 (off) or the probability a rule needs, in (0.0, 1.0], got 2"),
    ]:
        with pytest.raises(sqlite3.OperationalError, match=re_escape(message)):
            conn.execute("SELECT dedup_run(?)", (json.dumps(settings),)).fetchone()
    assert conn.execute("SELECT count(*) FROM pages").fetchone()[0] == 3
    with pytest.raises(sqlite3.OperationalError, match=re_escape("url_rule_params[argument]: min_probability must be in")):
        conn.execute("SELECT url_rule_params('https://a.example/?x=1', 5)").fetchone()


def re_escape(text):
    import re
    return re.escape(text)


def test_hostile_urls_cost_little(tmp_path):
    """A URL of 100,000 parameters and a 20 MB page: answered or learned
    quickly, in a subprocess so that a hang is a time-out, not a stuck run."""
    path = os.path.join(str(tmp_path), "hostile.db")
    conn = crawl_db(tmp_path, param_crawl(n_articles=40, seed=2), "hostile.db")
    learn(conn)
    conn.close()
    many = "https://shop0.example.com/article?" + "&".join(f"p{i}=1" for i in range(100_000))
    script = f"""
import sqlite3, sys
sys.path.insert(0, {os.path.join(os.path.dirname(os.path.abspath(__file__)), "helpers")!r})
from pipeline import connect
c = connect({path!r})
print(c.execute("SELECT dupe_probability(?), url_rule_params(?)", ({many!r}, {many!r})).fetchone())
c.execute("INSERT INTO pages VALUES (?, 'big', ?, '2030-01-01')", ({many!r}, "word " * 4_000_000))
c.execute("INSERT INTO pages VALUES ('https://big.example/x', 'big', ?, '2030-01-02')", ("word " * 4_000_000,))
print(c.execute("SELECT dedup_learn_url_rules()").fetchone()[0])
"""
    import subprocess
    import sys
    out = subprocess.run([sys.executable, "-"], input=script, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0] == "(None, None)"
    assert lines[1].startswith("learned from 1 new URL(s) (0 already seen, 1 without")
