"""The right pages on real crawls (issue 25): distinct pages whose identity
is a query parameter are kept apart by default and named in the report; the
`prefer` setting decides which copy survives; https beats http on an
otherwise tied election; `compat = 'reference'` gives the reference's
behaviour (the parity tests run under it)."""
import json
import random
import shutil
import sqlite3

import pytest

import pipeline as P
from sites import shop_with_changing_boxes

TUTORIAL = "https://free-tutorials.example.com/read"


def words(i, n=120):
    """A text of its own for page i: random syllable words (two pages'
    texts are far below the 0.9 threshold)."""
    rng = random.Random(i)
    syllables = ["ka", "lo", "mi", "ne", "ru", "sa", "ti", "vo", "ze", "pa", "do", "gu"]
    return " ".join("".join(rng.choice(syllables) for _ in range(rng.randint(1, 4))) for _ in range(n))


def crawl(path):
    """36 distinct /read?id=N pages; a tracking variant of 5 of them; an exact
    copy of page 7 under a parameter that is not tracking (?ref=feed); an
    original page and a longer scraped copy (with a banner) on a mirror; a
    page fetched over http and https with the same text."""
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE pages (url TEXT, content TEXT, crawled TEXT)")
    rows = [(f"{TUTORIAL}?id={i}", words(i), "2026-01-01") for i in range(1, 37)]
    rows += [(f"{TUTORIAL}?id={i}&utm_source=feed", words(i), "2026-01-02") for i in range(1, 6)]
    rows += [(f"{TUTORIAL}?id=7&sort=asc", words(7), "2026-01-01")]
    article = words(1000, 400)
    rows += [("https://mirror.example.net/copied", "Scraped from docs, see the original. " + article, "2026-01-03"),
             ("https://docs.example.org/guide", article, "2026-01-01")]
    rows += [("http://plain.example.com/page", words(2000), None), ("https://plain.example.com/page", words(2000), None)]
    conn.executemany("INSERT INTO pages VALUES (?, ?, ?)", rows)
    conn.commit()
    conn.close()
    return path


def run(tmp_path, **settings):
    db = crawl(str(tmp_path / "crawl.db"))
    conn = P.connect(db)
    report = conn.execute("SELECT dedup_run(?)", (json.dumps(settings),)).fetchone()[0]
    urls = {r[0] for r in conn.execute("SELECT url FROM pages")}
    removed = {r[0]: (r[1], r[2]) for r in conn.execute("SELECT url, dedup_phase, dedup_reason FROM dedup_removed")}
    return conn, report, urls, removed


def test_distinct_pages_under_one_parameter_are_kept_and_named(tmp_path):
    conn, report, urls, removed = run(tmp_path)
    # Every distinct page survives, under its own URL (the id kept, the
    # tracking parameter dropped).
    assert {f"{TUTORIAL}?id={i}" for i in range(1, 37)} <= urls, sorted(urls)
    # Tracking variants still merge by URL (the newer crawl, the variant,
    # wins and takes the clean URL); the ?sort copy merges by its content.
    assert {u for u, (phase, _) in removed.items() if phase == 2} == {f"{TUTORIAL}?id={i}" for i in range(1, 6)}
    assert removed[f"{TUTORIAL}?id=7&sort=asc"][0] == 3 and len(removed) == 5 + 1 + 1 + 1
    assert "kept apart: `id` changes content on free-tutorials.example.com, 36 pages" in report, report


def test_compat_reference_merges_them_as_the_reference_does(tmp_path):
    conn, report, urls, removed = run(tmp_path, compat="reference")
    tutorials = [u for u in urls if u.startswith(TUTORIAL)]
    assert tutorials == [TUTORIAL], urls  # one survivor, its parameter dropped
    assert sum(1 for phase, _ in removed.values() if phase == 2) == 36 + 5 + 1 - 1
    assert "kept apart" not in report
    settings = json.loads(conn.execute("SELECT settings FROM dedup_runs").fetchone()[0])
    assert settings["compat"] == "reference"


def test_https_beats_http_on_an_otherwise_tied_election(tmp_path):
    _, _, urls, removed = run(tmp_path)
    assert "https://plain.example.com/page" in urls and "http://plain.example.com/page" in removed


def test_the_reference_keeps_the_shorter_url_http(tmp_path):
    _, _, urls, removed = run(tmp_path, compat="reference")
    assert "http://plain.example.com/page" in urls and "https://plain.example.com/page" in removed


def test_without_prefer_the_longer_scraped_copy_survives(tmp_path):
    _, _, urls, removed = run(tmp_path)
    assert "https://mirror.example.net/copied" in urls and removed["https://docs.example.org/guide"][0] == 4


def test_prefer_keeps_the_original(tmp_path):
    conn, _, urls, removed = run(tmp_path, prefer=["url LIKE 'https://docs.example.org/%' DESC", "crawled ASC"])
    assert "https://docs.example.org/guide" in urls and removed["https://mirror.example.net/copied"][0] == 4
    settings = json.loads(conn.execute("SELECT settings FROM dedup_runs").fetchone()[0])
    assert settings["prefer"] == ["url LIKE 'https://docs.example.org/%' DESC", "crawled ASC"]


def test_prefer_decides_exact_copies_too(tmp_path):
    # Among the tracking variants (phase 2) the older crawl wins when asked
    # (by default the newer one does).
    _, _, urls, removed = run(tmp_path, prefer=["crawled ASC"])
    assert {u for u, (phase, _) in removed.items() if phase == 2} == {
        f"{TUTORIAL}?id={i}&utm_source=feed" for i in range(1, 6)}


@pytest.mark.parametrize("prefer,message", [
    (["nosuch DESC"], "prefer term 1 must be an SQL ordering term over the columns of \"pages\", got 'nosuch DESC': no such column: nosuch"),
    (["crawled ASC", "url LIKE"], "prefer term 2 must be an SQL ordering term"),
    (["crawled; DELETE FROM pages"], "prefer term 1 must be an SQL ordering term"),
    ("crawled", "prefer must be a JSON array of SQL ordering terms"),
    ([1], "prefer must be a JSON array of SQL ordering terms"),
])
def test_a_bad_prefer_is_refused_before_anything_changes(tmp_path, prefer, message):
    db = crawl(str(tmp_path / "crawl.db"))
    before = P.fingerprint(db)
    conn = P.connect(db)
    with pytest.raises(sqlite3.OperationalError) as e:
        conn.execute("SELECT dedup_run(?)", (json.dumps({"prefer": prefer}),)).fetchone()
    assert message in str(e.value), str(e.value)
    conn.close()
    assert P.fingerprint(db) == before


def test_a_bad_compat_is_refused(tmp_path):
    db = crawl(str(tmp_path / "crawl.db"))
    conn = P.connect(db)
    with pytest.raises(sqlite3.OperationalError, match="compat must be 'reference'"):
        conn.execute("SELECT dedup_run('{\"compat\": \"ref\"}')").fetchone()


def test_columns_of_other_names_are_mapped_and_restored(tmp_path):
    """`columns` maps the pipeline's names to the table's: the run reads
    `link` and `body`, rewrites `link`, archives and restores by the
    table's own names; a second run removes nothing."""
    plain = crawl(str(tmp_path / "plain.db"))
    conn = P.connect(plain)
    expected = conn.execute("SELECT dedup_run()").fetchone()[0]
    kept = sorted(r[0] for r in conn.execute("SELECT url FROM pages"))
    db = str(tmp_path / "renamed.db")
    crawl(db)
    raw = sqlite3.connect(db)
    raw.executescript("ALTER TABLE pages RENAME COLUMN url TO link; ALTER TABLE pages RENAME COLUMN content TO body;")
    raw.close()
    before = P.fingerprint(db)
    conn = P.connect(db)
    settings = json.dumps({"columns": {"url": "link", "content": "body"}})
    assert conn.execute("SELECT dedup_run(?)", (settings,)).fetchone()[0] == expected
    assert sorted(r[0] for r in conn.execute("SELECT link FROM pages")) == kept
    n = len(kept)
    assert conn.execute("SELECT dedup_run(?)", (settings,)).fetchone()[0].splitlines()[0] == f"run 2: {n} rows -> {n} rows"
    conn.execute("SELECT dedup_restore()").fetchone()
    conn.execute("SELECT dedup_restore()").fetchone()
    conn.close()
    after = P.fingerprint(db)
    assert {k: v for k, v in after.items() if "dedup_" not in k} == before


@pytest.mark.parametrize("columns,message", [
    ({"url": "nosuch"}, "columns maps 'url' to 'nosuch', got no such column"),
    ({"link": "url"}, "columns must be a JSON object from the pipeline's names"),
    ({"parsed": "url"}, "columns reads parsed from 'url', the column the URLs are read from, got no column "
                        "of its own for it (the pages would be compared by their URLs"),
    ({"url": "url", "content": "URL"}, "columns reads content from 'url', the column the URLs are read from"),
    ({"url": "content"}, "columns reads content from 'content', the column the URLs are read from"),
    ({"content_hash": "url"}, "columns reads content_hash from 'url', the column the URLs are read from"),
    ("url=link", "columns must be a JSON object from the pipeline's names"),
    # One name's values written into another's column: every kept URL a host
    # name, or (a swap) every row unparseable.
    ({"domain": "url"}, "columns maps 'domain' to the column 'url', got the column of the pipeline's own url"),
    ({"url": "crawled", "crawled": "url"}, "columns maps 'url' to the column 'crawled', got the column of the "
                                           "pipeline's own crawled"),
    ({"datetime": "crawled"}, "columns maps 'datetime' to the column 'crawled'"),
])
def test_a_bad_columns_setting_is_refused(tmp_path, columns, message):
    db = crawl(str(tmp_path / "crawl.db"))
    conn = P.connect(db)
    with pytest.raises(sqlite3.OperationalError) as e:
        conn.execute("SELECT dedup_run(?)", (json.dumps({"columns": columns}),)).fetchone()
    assert message in str(e.value), str(e.value)


def test_a_view_as_the_table_names_the_fix(tmp_path):
    db = crawl(str(tmp_path / "crawl.db"))
    conn = P.connect(db)
    conn.execute("CREATE VIEW v AS SELECT rowid AS id, url AS link, content FROM pages")
    with pytest.raises(sqlite3.OperationalError, match="got a view .*set the table setting to the table the view reads"):
        conn.execute("SELECT dedup_run('{\"table\": \"v\"}')").fetchone()


TEMPLATES = [
    "<!DOCTYPE html><html><head><title>{t}</title><style>p{{color:red}}" + " .c{{margin:0 auto;font:14px serif}}" * 120
    + "</style><script>var a=1;</script></head>"
    "<body><nav>Menu</nav><article>{body}</article><script>track('{t}')</script></body></html>",
    "<html><head><meta charset=utf-8><link rel=stylesheet href=/x.css></head><body class=page>"
    "<nav>Menu</nav><div id=content>{body}</div><!-- rendered in 12 ms --></body></html>",
    "<html><body><nav>Menu</nav><table><tr><td>{body}</td></tr></table>"
    "<script type=text/javascript>" + "if (a < b) {{ x = '</p>'; dataLayer.push(arguments); }} " * 80
    + "</script></body></html>",
]


def html_crawl(path):
    """One article under three templates (other scripts, styles, markup) on
    three sites, and a different article; content is HTML, parsed NULL."""
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE pages (url TEXT, content TEXT, parsed TEXT)")
    body = "".join(f"<p>{words(500 + i, 60)}</p>" for i in range(5))
    other = "".join(f"<p>{words(900 + i, 60)}</p>" for i in range(5))
    for i, template in enumerate(TEMPLATES):
        conn.execute("INSERT INTO pages VALUES (?, ?, NULL)", (f"https://site{i}.example/article", template.format(t="A", body=body)))
    conn.execute("INSERT INTO pages VALUES (?, ?, NULL)", ("https://site9.example/other", TEMPLATES[0].format(t="B", body=other)))
    conn.commit()
    conn.close()
    return path


def test_html_under_three_templates_is_one_page(tmp_path):
    db = html_crawl(str(tmp_path / "html.db"))
    conn = P.connect(db)
    report = conn.execute("SELECT dedup_run()").fetchone()[0]
    assert report.splitlines()[0] == "run 1: 4 rows -> 2 rows", report
    # The survivors' parsed is the visible text: no markup, script or style.
    for (parsed,) in conn.execute("SELECT parsed FROM pages"):
        assert "<" not in parsed and "track(" not in parsed and "color:red" not in parsed
        assert parsed.startswith("menu "), parsed[:40]


def test_html_is_compared_as_markup_under_compat_reference(tmp_path):
    db = html_crawl(str(tmp_path / "html.db"))
    conn = P.connect(db)
    report = conn.execute("SELECT dedup_run('{\"compat\": \"reference\"}')").fetchone()[0]
    assert report.splitlines()[0] == "run 1: 4 rows -> 4 rows", report


def test_chrome_that_changes_per_page_is_left_out_by_structure_when_stripping(tmp_path):
    """With boilerplate = 'strip', HTML content is read by main_text: each
    product and its mirror copy (same product text, other header, menu,
    box and footer) are one page; read whole (the default), the changing
    chrome keeps them apart."""
    keep = P.connect(shop_with_changing_boxes(str(tmp_path / "keep.db")))
    keep.execute("SELECT dedup_run()").fetchone()
    assert keep.execute("SELECT count(*) FROM pages").fetchone()[0] == 40
    strip = P.connect(shop_with_changing_boxes(str(tmp_path / "strip.db")))
    strip.execute("""SELECT dedup_run('{"boilerplate": "strip"}')""").fetchone()
    assert strip.execute("SELECT count(*) FROM pages").fetchone()[0] == 20
    # Exact copies once the chrome is out: phase 3, the newer mirror kept.
    assert strip.execute("SELECT DISTINCT dedup_phase FROM dedup_removed").fetchall() == [(3,)]
    assert {u.split("/")[2] for (u,) in strip.execute("SELECT url FROM pages")} == {"mirror.example.net"}
    assert strip.execute("SELECT main_text(content) FROM pages LIMIT 1").fetchone()[0].startswith("Product ")


def forum(tmp_path, name="forum.db"):
    """A forum's topics by `id`, each paged by `start`: page 0 of topic 1
    under two `start` spellings (one exact copy), topics 1 to 3 distinct."""
    from incremental_state import own_text
    db = str(tmp_path / name)
    conn = P.connect(db)
    conn.execute("CREATE TABLE pages (url TEXT, parsed TEXT, crawled TEXT)")
    rows = [("https://forum.example/t?id=1&start=0", own_text(1)),
            ("https://forum.example/t?id=1&start=0&sid=9", own_text(1)),
            ("https://forum.example/t?start=0&id=2", own_text(2)),
            ("https://forum.example/t?id=3&start=0", own_text(3))]
    conn.executemany("INSERT INTO pages (url, parsed, crawled) VALUES (?, ?, '2026-01-01')", rows)
    return db, conn


def test_kept_apart_names_only_the_parameters_that_tell_pages_apart_once_each(tmp_path):
    """`start` is on every page with one value: it tells nothing apart, and
    is not named; `id` is named once (before: `start` named, `id` twice)."""
    db, conn = forum(tmp_path)
    report = conn.execute("SELECT dedup_run()").fetchone()[0]
    assert "  kept apart: `id` changes content on forum.example, 3 pages" in report.splitlines(), report
    notes = [n for (n,) in conn.execute("SELECT note FROM dedup_notes WHERE kind = 'kept apart'")]
    assert len(notes) == 3 and all("without parameter `id`:" in n for n in notes), notes


def test_an_incremental_runs_kept_apart_line_is_the_full_runs(tmp_path):
    """After a new topic and a page elsewhere, the incremental run names the
    same kept-apart pages as a full run on a copy; and after a page
    elsewhere only, too (before: the line was gone, the kept-apart rows
    being none of the new ones)."""
    from incremental_state import own_text
    db, conn = forum(tmp_path)
    conn.execute("SELECT dedup_run()").fetchone()
    conn.execute("INSERT INTO pages (url, parsed, crawled) VALUES ('https://forum.example/t?id=4&start=0', ?, '2026-01-02'), "
                 "('https://blog.example/post', ?, '2026-01-02')", (own_text(4), own_text(5)))
    conn.close()
    shutil.copy(db, str(tmp_path / "full.db"))
    full = P.connect(str(tmp_path / "full.db"))
    want = full.execute("SELECT dedup_run('{\"full\": true}')").fetchone()[0]
    conn = P.connect(db)
    got = conn.execute("SELECT dedup_run()").fetchone()[0]
    line = "  kept apart: `id` changes content on forum.example, 4 pages"
    assert line in want.splitlines(), want
    assert "incremental" in got and line in got.splitlines(), got
    conn.execute("INSERT INTO pages (url, parsed, crawled) VALUES ('https://blog.example/other', ?, '2026-01-03')",
                 (own_text(6),))
    got = conn.execute("SELECT dedup_run()").fetchone()[0]
    assert "incremental" in got and line in got.splitlines(), got
