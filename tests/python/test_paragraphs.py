"""`{"paragraphs": "dedup"}`: a kept page's paragraph that a page before it
in the election order holds is cut from its text, archived with its owner in
`dedup_paragraphs`, and given back by `dedup_restore()`.

Expected values come from the test's own construction: pages made of
paragraphs the test knows, in an election order it sets (distinct dates),
with shared paragraphs planted where it chose; the texts each page must
keep are built here from those lists, not read back from the code. On the
real corpus, each cut is checked against the owner's text by plain Python."""
import json
import os
import random
import re
import sqlite3
import subprocess
import sys

import pytest

import pipeline as P

WORDS = ("river stone lantern orchard copper meadow signal harbor velvet thunder quiet amber "
         "falcon marble willow ember canyon prism tundra saffron glacier beacon ribbon cobalt").split()


def sentence(rng, words):
    return " ".join(rng.choice(WORDS) for _ in range(words)).capitalize() + "."


def paragraph(rng, chars):
    """A paragraph of at least `chars` characters of the test's words."""
    text = ""
    while len(text) < chars:
        text = (text + " " + sentence(rng, rng.randint(6, 14))).strip()
    return text


def planted_site(tmp_path, seed=5, pages=40, shared=12, min_copies=2, max_copies=6):
    """A table of `pages` pages, each of 2-4 own paragraphs, with `shared`
    paragraphs planted into random pages at random places. Page i has date
    2024-01-(pages - i): the election order is rowid order. Returns the
    connection and each page's paragraph list."""
    rng = random.Random(seed)
    texts = [[paragraph(rng, rng.randint(110, 300)) for _ in range(rng.randint(2, 4))] for _ in range(pages)]
    for _ in range(shared):
        planted = paragraph(rng, rng.randint(120, 400))
        for page in rng.sample(range(pages), rng.randint(min_copies, max_copies)):
            texts[page].insert(rng.randint(0, len(texts[page])), planted)
    path = str(tmp_path / "site.db")
    conn = P.connect(path)
    conn.execute("CREATE TABLE pages (url TEXT, title TEXT, parsed TEXT, datetime TEXT, content_hash TEXT, length INTEGER)")
    for i, paras in enumerate(texts):
        conn.execute("INSERT INTO pages (rowid, url, title, parsed, datetime) VALUES (?, ?, ?, ?, ?)",
                     (i + 1, f"https://site{i % 7}.example.org/p/{i}", f"page {i}", "\n\n".join(paras),
                      f"2024-03-{pages - i:02d} 10:00:00"))
    return conn, texts


def expected_cuts(texts, minimum=100):
    """The model: pages in order; a paragraph of `minimum` characters that
    an earlier page holds is cut; the text is the rest joined by blank
    lines. {rowid: (kept paragraphs, [(position, owner rowid)])}."""
    owner, out = {}, {}
    for i, paras in enumerate(texts):
        rowid, cut = i + 1, []
        for position, p in enumerate(paras, 1):
            if len(p) < minimum:
                continue
            if p in owner and owner[p] != rowid:
                cut.append((position, owner[p]))
            owner.setdefault(p, rowid)
        kept = [p for position, p in enumerate(paras, 1) if position not in {c for c, _ in cut}]
        out[rowid] = (kept, cut)
    return out


def table(conn):
    return conn.execute("SELECT rowid, url, title, parsed, datetime, content_hash, length FROM pages ORDER BY rowid").fetchall()


def test_planted_paragraphs_are_cut_from_every_later_page_and_restored_exactly(tmp_path):
    conn, texts = planted_site(tmp_path)
    before = table(conn)
    report = conn.execute("""SELECT dedup_run('{"paragraphs": "dedup"}')""").fetchone()[0]
    want = expected_cuts(texts)
    cuts = sum(len(c) for _, c in want.values())
    edited = sum(1 for _, c in want.values() if c)
    assert cuts >= 20, cuts  # (the plant is not empty)
    assert f"paragraphs: {cuts} cut from {edited} page(s)" in report, report
    got = dict(conn.execute("SELECT rowid, parsed FROM pages"))
    assert len(got) == len(texts)  # no page removed
    for rowid, (kept, _) in want.items():
        assert got[rowid] == "\n\n".join(kept), rowid
    archived = conn.execute("SELECT dedup_rowid, position, owner, owner_url, paragraph, length FROM dedup_paragraphs "
                            "ORDER BY dedup_rowid, position").fetchall()
    assert [(r, p, o) for r, p, o, *_ in archived] == [
        (rowid, position, owner) for rowid, (_, cut) in sorted(want.items()) for position, owner in cut]
    for rowid, position, owner, owner_url, text, length in archived:
        assert text == texts[rowid - 1][position - 1] and length == len(text)
        assert owner_url == f"https://site{(owner - 1) % 7}.example.org/p/{owner - 1}"
    stats = json.loads(conn.execute("SELECT report FROM dedup_runs").fetchone()[0])
    assert stats["paragraphs"] == {"cut": cuts, "pages": edited, "kept_whole": 0}
    # Each planted paragraph is now in one page only.
    for p in {p for paras in texts for p in paras}:
        assert sum(p in t for t in got.values()) == 1
    # (Every page was given its filled content_hash and length too.)
    said = conn.execute("SELECT dedup_restore()").fetchone()[0]
    assert f"{len(texts)} survivor(s) given back their old values" in said, said
    assert table(conn) == before


def test_a_second_run_cuts_nothing_more(tmp_path):
    conn, _ = planted_site(tmp_path, seed=9)
    conn.execute("""SELECT dedup_run('{"paragraphs": "dedup"}')""")
    after_first = table(conn)
    report = conn.execute("""SELECT dedup_run('{"paragraphs": "dedup"}')""").fetchone()[0]
    assert "paragraphs: 0 cut from 0 page(s)" in report, report
    assert "incremental since run 1: 0 new or changed" in report, report
    report = conn.execute("""SELECT dedup_run('{"paragraphs": "dedup", "full": true}')""").fetchone()[0]
    assert "paragraphs: 0 cut from 0 page(s)" in report, report
    assert table(conn) == after_first


def test_incremental_runs_equal_full_runs_batch_after_batch(tmp_path):
    """Pages arrive in three batches, in random election order (a new page
    may be newer than the page that owned its paragraph: the old owner's
    copy is then cut). Each batch is run incrementally on one database and
    with full: true on another: the tables, the cuts and the notes are the
    same after each run."""
    rng = random.Random(21)
    shared = [paragraph(rng, rng.randint(120, 300)) for _ in range(10)]
    pages = []
    for i in range(45):
        paras = [paragraph(rng, rng.randint(110, 250)) for _ in range(rng.randint(1, 3))]
        for p in rng.sample(shared, rng.randint(0, 3)):
            paras.insert(rng.randint(0, len(paras)), p)
        if i % 9 == 4:  # (a page made only of shared paragraphs: kept whole, or their owner)
            paras = rng.sample(shared, 2)
        pages.append((f"https://s{i % 5}.example.org/{i}", "\n\n".join(paras),
                      f"2024-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d} {i % 24:02d}:00:00"))
    conns = []
    for name in ("incremental", "full"):
        conn = P.connect(str(tmp_path / f"{name}.db"))
        conn.execute("CREATE TABLE pages (url TEXT, parsed TEXT, datetime TEXT)")
        conns.append(conn)
    for k, batch in enumerate((pages[:20], pages[20:35], pages[35:])):
        reports = []
        for conn, full in zip(conns, (False, True)):
            conn.executemany("INSERT INTO pages VALUES (?, ?, ?)", batch)
            settings = {"paragraphs": "dedup"} | ({"full": True} if full else {})
            reports.append(conn.execute("SELECT dedup_run(?)", (json.dumps(settings),)).fetchone()[0])
        if k:
            assert "incremental since run" in reports[0], reports[0]
        states = [(conn.execute("SELECT rowid, url, parsed FROM pages ORDER BY rowid").fetchall(),
                   conn.execute("SELECT dedup_run, dedup_rowid, position, length, owner, owner_url, paragraph "
                                "FROM dedup_paragraphs ORDER BY 1, 2, 3").fetchall()) for conn in conns]
        assert states[0] == states[1]
        # (A full run notes every page kept whole again; an incremental run
        # the ones it examined, each as the full run does.)
        notes = [set(conn.execute("SELECT dedup_rowid, other, note FROM dedup_notes "
                                  "WHERE kind = 'paragraphs held' AND dedup_run = (SELECT max(run) FROM dedup_runs)"))
                 for conn in conns]
        assert notes[0] <= notes[1], (notes[0] - notes[1])
    cuts = conns[0].execute("SELECT count(*), count(DISTINCT dedup_run) FROM dedup_paragraphs").fetchone()
    assert cuts[0] >= 10 and cuts[1] == 3, cuts
    # (Some old page lost a paragraph to a newer one.)
    assert conns[0].execute("SELECT count(*) FROM dedup_paragraphs WHERE dedup_run > 1 AND dedup_rowid <= 20").fetchone()[0]


def test_copies_meet_after_normalization_and_short_ones_stay(tmp_path):
    rng = random.Random(3)
    own = [paragraph(rng, 150) for _ in range(4)]
    shared = paragraph(rng, 150)
    short = "A line shared by both pages, of sixty characters or so, here."
    rows = [
        ("https://a.org/1", f"{own[0]}\n\n{shared}\n\n{short}", "2024-01-02"),
        # (Case and spacing differ: the same once normalized.)
        ("https://b.org/2", f"{own[1]}\n\n{shared.upper().replace(' ', '  ')}\n\n{short}", "2024-01-01"),
        # (One word differs: another paragraph.)
        ("https://c.org/3", f"{own[2]}\n\n{shared.replace(' ', ' extra ', 1)}", "2023-12-31"),
    ]
    for minimum, short_cut in ((None, False), (50, True)):
        path = tmp_path / f"n{minimum}.db"
        conn = P.connect(str(path))
        conn.execute("CREATE TABLE pages (url TEXT, parsed TEXT, datetime TEXT)")
        conn.executemany("INSERT INTO pages VALUES (?, ?, ?)", rows)
        settings = {"paragraphs": "dedup"} | ({"paragraph_min": minimum} if minimum else {})
        conn.execute("SELECT dedup_run(?)", (json.dumps(settings),))
        got = [r[0] for r in conn.execute("SELECT parsed FROM pages ORDER BY rowid")]
        assert got[0] == rows[0][1]
        assert got[1] == own[1] + ("" if short_cut else f"\n\n{short}")
        assert got[2] == rows[2][1]


def test_a_page_whose_every_paragraph_is_held_before_it_is_kept_whole_and_reported(tmp_path):
    rng = random.Random(4)
    shared = paragraph(rng, 200)
    conn = P.connect(str(tmp_path / "w.db"))
    conn.execute("CREATE TABLE pages (url TEXT, parsed TEXT, datetime TEXT)")
    conn.executemany("INSERT INTO pages VALUES (?, ?, ?)", [
        ("https://a.org/1", f"{paragraph(rng, 150)}\n\n{shared}", "2024-01-02"),
        ("https://b.org/2", f"Related\n\n{shared}\n", "2024-01-01"),
    ])
    report = conn.execute("""SELECT dedup_run('{"paragraphs": "dedup"}')""").fetchone()[0]
    assert "paragraphs: 0 cut from 0 page(s)" in report and "1 page(s) kept whole" in report, report
    assert conn.execute("SELECT parsed FROM pages WHERE rowid = 2").fetchone()[0] == f"Related\n\n{shared}\n"
    note = conn.execute("SELECT dedup_rowid, other, note FROM dedup_notes WHERE kind = 'paragraphs held'").fetchall()
    assert note[0][:2] == (2, 1) and "kept whole" in note[0][2]


def test_a_text_made_from_html_splits_at_its_blocks(tmp_path):
    rng = random.Random(6)
    shared, a, b = (paragraph(rng, 150) for _ in range(3))
    conn = P.connect(str(tmp_path / "h.db"))
    conn.execute("CREATE TABLE pages (url TEXT, content TEXT, parsed TEXT, datetime TEXT)")
    conn.executemany("INSERT INTO pages VALUES (?, ?, NULL, ?)", [
        ("https://a.org/1", f"<html><body><p>{a}</p><p>{shared}</p></body></html>", "2024-01-02"),
        ("https://b.org/2", f"<html><body><div>{b}</div><p>{shared}</p></body></html>", "2024-01-01"),
    ])
    conn.execute("""SELECT dedup_run('{"paragraphs": "dedup"}')""")
    first, second = [r[0] for r in conn.execute("SELECT parsed FROM pages ORDER BY rowid")]
    # (The fill is the visible text, normalized: html_text then normalize_text.)
    norm = lambda t: conn.execute("SELECT normalize_text(?)", (t,)).fetchone()[0]
    assert norm(shared) in first and norm(shared) not in second and norm(b) in second
    assert conn.execute("SELECT dedup_rowid, owner FROM dedup_paragraphs").fetchall() == [(2, 1)]


@pytest.mark.parametrize("settings, words", [
    ({"paragraph_min": 50}, "paragraph_min applies to paragraphs 'dedup' only"),
    ({"paragraphs": "yes"}, "paragraphs must be 'keep'"),
    ({"paragraphs": "dedup", "paragraph_min": 0}, "paragraph_min must be an integer >= 1"),
    ({"paragraphs": "dedup", "compat": "reference"}, "cannot be combined with compat = 'reference'"),
    ({"paragraphs": "dedup", "action": "label"}, "cannot be combined with action 'label'"),
    ({"paragraphs": "dedup", "against": "other.db"}, "cannot be combined with against"),
])
def test_settings_that_cannot_apply_are_refused_before_anything_runs(tmp_path, settings, words):
    conn, _ = planted_site(tmp_path, pages=6, shared=2)
    before = table(conn)
    with pytest.raises(sqlite3.Error, match=re.escape(words)):
        conn.execute("SELECT dedup_run(?)", (json.dumps(settings),))
    assert table(conn) == before
    assert not conn.execute("SELECT count(*) FROM sqlite_schema WHERE name = 'dedup_runs'").fetchone()[0]


def test_a_table_without_parsed_is_refused(tmp_path):
    conn = P.connect(str(tmp_path / "c.db"))
    conn.execute("CREATE TABLE pages (url TEXT, content TEXT)")
    conn.execute("INSERT INTO pages VALUES ('https://a.org/', 'text')")
    with pytest.raises(sqlite3.Error, match=r"edits the kept pages' parsed column, got a table \"pages\" without one"):
        conn.execute("""SELECT dedup_run('{"paragraphs": "dedup"}')""")


def test_on_the_corpus_every_cut_is_a_paragraph_its_owner_holds(tmp_path):
    """parity-5k: each cut paragraph equals (the corpus's texts are
    normalized already) a paragraph of its owner, a page the run keeps;
    each edited page is its old text without the cut paragraphs; restore
    gives every row back."""
    path = P.copy_corpus(tmp_path)
    conn = P.connect(path)
    old = dict(conn.execute("SELECT rowid, parsed FROM pages"))
    conn.execute("""SELECT dedup_run('{"paragraphs": "dedup"}')""")
    now = dict(conn.execute("SELECT rowid, parsed FROM pages"))
    split = lambda t: [p for p in re.split(r"\n[ \t\r\f\v]*\n(?:[ \t\r\f\v]*\n)*", t.strip("\n")) if p.strip()]
    cuts = conn.execute("SELECT dedup_rowid, position, owner, paragraph FROM dedup_paragraphs").fetchall()
    assert len(cuts) > 100, len(cuts)
    by_page = {}
    for rowid, position, owner, text in cuts:
        assert owner in now and rowid in now and owner != rowid
        assert split(old[rowid])[position - 1] == text
        assert text.strip() in [p.strip() for p in split(old[owner])]
        assert len(text.strip()) >= 100
        by_page.setdefault(rowid, set()).add(position)
    for rowid, positions in by_page.items():
        kept = [p for i, p in enumerate(split(old[rowid]), 1) if i not in positions]
        assert split(now[rowid]) == kept
    untouched = [r for r in now if r not in by_page]
    assert all(now[r] == old[r] for r in untouched)
    conn.execute("SELECT dedup_restore()")
    assert dict(conn.execute("SELECT rowid, parsed FROM pages")) == old


def test_explain_and_the_review_page_show_the_cuts(tmp_path):
    conn, texts = planted_site(tmp_path, seed=11, pages=10, shared=3)
    conn.execute("""SELECT dedup_run('{"paragraphs": "dedup"}')""")
    rowid, position, owner = conn.execute(
        "SELECT dedup_rowid, position, owner FROM dedup_paragraphs ORDER BY dedup_rowid LIMIT 1").fetchone()
    conn.close()
    env = dict(os.environ, PYTHONPATH=P.package(tmp_path))
    out = subprocess.run([sys.executable, "-m", "sqlite_dedup", "explain", str(tmp_path / "site.db"), str(rowid)],
                         capture_output=True, text=True, env=env, timeout=60)
    assert out.returncode == 0, out.stderr
    assert f"paragraph {position} (" in out.stdout and f"held by rowid {owner} " in out.stdout, out.stdout
    html = tmp_path / "r.html"
    out = subprocess.run([sys.executable, "-m", "sqlite_dedup", "report", str(tmp_path / "site.db"), "-o", str(html)],
                         capture_output=True, text=True, env=env, timeout=60)
    assert out.returncode == 0, out.stderr
    page = html.read_text()
    assert "<h2>Paragraphs cut</h2>" in page and f"rowid {rowid}, paragraph {position}" in page


def test_paragraph_keys_are_the_sha1_of_the_normalized_paragraph(tmp_path):
    """Hand-checked: two paragraphs equal once normalized (case, spacing)
    share a key, the first 8 bytes of SHA-1 of the normalized text (already
    lowercase ASCII here) as a signed big-endian integer; a short one has
    none; by lines, each line is a paragraph."""
    import hashlib
    conn = P.connect(":memory:")
    text = "First paragraph here.\n\nx\n\nFIRST  paragraph   here."
    key = int.from_bytes(hashlib.sha1(b"first paragraph here.").digest()[:8], "big", signed=True)
    assert json.loads(conn.execute("SELECT paragraph_keys(?, 0, 5)", (text,)).fetchone()[0]) == [[1, key], [3, key]]
    assert json.loads(conn.execute("SELECT paragraph_keys('a b' || char(10) || 'c d', 1, 1)").fetchone()[0]) == [
        [1, int.from_bytes(hashlib.sha1(b"a b").digest()[:8], "big", signed=True)],
        [2, int.from_bytes(hashlib.sha1(b"c d").digest()[:8], "big", signed=True)]]
    assert conn.execute("SELECT paragraph_at(?, 0, 3), paragraph_at(?, 0, 4), paragraph_keys(NULL, 0, 1)",
                        (text, text)).fetchone() == ("FIRST  paragraph   here.", None, None)
    for sql, words in (("SELECT paragraph_keys('a', 2, 1)", "by_lines must be 0 or 1"),
                       ("SELECT paragraph_keys('a', 0, 0)", "min must be an integer >= 1")):
        with pytest.raises(sqlite3.Error, match=words):
            conn.execute(sql).fetchone()


def plan_db(tmp_path):
    conn = P.connect(str(tmp_path / "plan.db"))
    conn.execute("CREATE TABLE pages (url TEXT, parsed TEXT)")
    conn.executemany("INSERT INTO pages VALUES (?, ?)", [
        ("https://b.example/1", "Our own words on the bridge, long enough.\n\nThe council approved the new bridge."),
        ("https://b.example/2", "Something else entirely, of its own.")])
    conn.execute("CREATE TEMP TABLE plan (rid, phase, reason, survivor, ratio, rewrite_url, note)")
    conn.execute("INSERT INTO plan VALUES (2, 4, 'near duplicate: lev_ratio above threshold', NULL, 0.95, NULL, NULL)")
    conn.execute("CREATE TEMP TABLE cuts (rid, position, owner, owner_url, owner_paragraph)")
    return conn


@pytest.mark.parametrize("cut, third, words", [
    ((2, 1, None, "https://a.example/", "x"), "'temp.cuts'", "the paragraph cut for rid 2 is wrong: its rid is a row the plan removes"),
    ((1, 0, None, "https://a.example/", "x"), "'temp.cuts'", "the paragraph cut for rid 1 is wrong: its position is not an integer >= 1"),
    ((1, 2, 7, "https://a.example/", "x"), "'temp.cuts'", "the paragraph cut for rid 1 is wrong: its owner is not a row of the table"),
    ((1, 2, None, None, 5), "'temp.cuts'", "its owner_paragraph is not TEXT"),
    (None, "NULL", "paragraphs 'dedup' needs the plan's paragraph cuts"),
    (None, "'temp.nosuch'", "the paragraph cuts must be a table or view"),
])
def test_a_plan_made_elsewhere_with_bad_paragraph_cuts_is_refused(tmp_path, cut, third, words):
    conn = plan_db(tmp_path)
    if cut:
        conn.execute("INSERT INTO cuts VALUES (?, ?, ?, ?, ?)", cut)
    before = conn.execute("SELECT rowid, * FROM pages").fetchall()
    with pytest.raises(sqlite3.Error, match=re.escape(words)):
        conn.execute(f"""SELECT dedup_apply_plan('temp.plan', '{{"paragraphs": "dedup", "paragraph_min": 20}}', {third})""")
    assert conn.execute("SELECT rowid, * FROM pages").fetchall() == before
    with pytest.raises(sqlite3.Error, match=re.escape("paragraph cuts (the third argument) need paragraphs 'dedup'")):
        conn.execute("SELECT dedup_apply_plan('temp.plan', NULL, 'temp.cuts')")


def test_a_cut_made_elsewhere_is_made_only_when_the_text_confirms_it(tmp_path):
    conn = plan_db(tmp_path)
    conn.executemany("INSERT INTO cuts VALUES (?, ?, ?, ?, ?)", [
        (1, 2, None, "https://a.example/", "the council approved the OLD bridge."),  # (another paragraph)
        (1, 1, None, "https://a.example/", "Our own words on the bridge, long enough.")])  # (the same paragraph: cut)
    conn.execute("""SELECT dedup_apply_plan('temp.plan', '{"paragraphs": "dedup", "paragraph_min": 20}', 'temp.cuts')""")
    assert conn.execute("SELECT parsed FROM pages WHERE rowid = 1").fetchone()[0] == "The council approved the new bridge."
    assert conn.execute("SELECT dedup_rowid, position, owner, owner_url FROM dedup_paragraphs").fetchall() == [
        (1, 1, None, "https://a.example/")]


def test_a_bad_plan_row_is_named_as_a_bad_paragraph_cut_is(tmp_path):
    """The plan's rows and its paragraph cuts are checked by one helper:
    the plan's first bad row is named the same way."""
    conn = plan_db(tmp_path)
    conn.execute("INSERT INTO plan VALUES (99, 4, 'near duplicate', NULL, 0.95, NULL, NULL)")
    with pytest.raises(sqlite3.Error, match=re.escape(
            "dedup_apply_plan[plan]: the plan's row for rid 99 is wrong: its rid is not a row of the table; nothing was changed")):
        conn.execute("SELECT dedup_apply_plan('temp.plan')")
