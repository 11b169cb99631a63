"""Which contents a run reads as HTML (`is_html`): a crawler's page that
begins with a newline, a byte-order mark or a comment before its doctype
is HTML, and its visible text, not its markup, is compared and written
into `parsed`."""
import sqlite3

import pytest

import pipeline as P
from hosts import PYTHON

ARTICLE = " ".join(f"word{i}" for i in range(300))


@pytest.mark.parametrize("lead", ["\n", "\r\n  ", "\ufeff", "<!-- saved by wget -->\n", "\n<!-- a -->\n<!-- b -->"])
def test_html_after_a_leading_line_bom_or_comment_is_read_as_text(tmp_path, lead):
    db = str(tmp_path / "crawl.db")
    conn = P.connect(db)
    conn.execute("CREATE TABLE pages (url TEXT, content TEXT, parsed TEXT)")
    a = f"{lead}<!DOCTYPE html><html><head><script>var x = 1;</script></head><body><nav>Menu</nav><p>{ARTICLE}</p></body></html>"
    b = f"{lead}<html><body class=other><div id=main><nav>Menu</nav><p>{ARTICLE}</p></div><style>.k{{}}</style></body></html>"
    conn.executemany("INSERT INTO pages (url, content) VALUES (?, ?)",
                     [("https://a.example/one", a), ("https://b.example/two", b)])
    conn.commit()
    assert conn.execute("SELECT is_html(?), is_html(?)", (a, b)).fetchone() == (1, 1)
    conn.execute("SELECT dedup_run()").fetchone()
    kept = conn.execute("SELECT parsed FROM pages").fetchall()
    # The same visible text under two templates: one page, its parsed the text.
    assert len(kept) == 1, kept
    assert "<" not in kept[0][0] and "var x" not in kept[0][0] and "word299" in kept[0][0]


def test_what_is_not_html():
    conn = P.connect(":memory:")
    for text in ["plain text with a < sign and </ later", "<3 is not markup", "\ufeffplain", "<!-- open <p>x</p>",
                 "<!-- note --> and then text </ here"]:
        assert conn.execute("SELECT is_html(?)", (text,)).fetchone()[0] == 0, text
    assert conn.execute("SELECT is_html(NULL)").fetchone()[0] is None
    with pytest.raises(sqlite3.Error, match="is_html"):
        conn.execute("SELECT is_html(x'00')").fetchone()


def test_phase_one_on_the_pool_gives_the_rows_of_one_thread(tmp_path):
    """Phase 1 parses the markup of many rows on the thread pool: the same
    prepared rows, survivors and archive on one thread, two, and a pool
    that cannot start; a row that fails is the first in the rows' order."""
    import json
    import os
    import random
    import shutil
    import subprocess
    src = str(tmp_path / "src.db")
    rnd = random.Random(5)
    words = [f"w{i}" for i in range(400)]
    conn = sqlite3.connect(src)
    conn.execute("CREATE TABLE pages (url TEXT, title TEXT, content, parsed TEXT, crawled TEXT)")
    rows = []
    for k in range(1500):
        body = " ".join(rnd.choice(words) for _ in range(rnd.randrange(200, 900)))
        if k % 3 == 0 and k > 0:
            body = rows[k - 1][5]  # (a near copy of the row before)
            body = body[: len(body) // 2] + " extra " + body[len(body) // 2:]
        html = (f"<!DOCTYPE html><html><head><title>T{k}</title><script>var s={k};</script></head><body>"
                f"<header><nav>{' '.join(f'<a href=/s{i}>Section {i}</a>' for i in range(40))}</nav></header>"
                f"<main><p>{body}</p></main><footer>Copyright</footer></body></html>")
        content, parsed = html, None
        if k % 11 == 0:
            content, parsed = None, body
        elif k % 97 == 0:
            content = html.encode()  # a BLOB: skipped
        elif k % 89 == 0:
            content = html.encode("latin-1", "replace") + b"\xff"  # invalid UTF-8, stored as text below
        url = None if k % 101 == 0 else f"https://s{k % 5}.example/p/{k % 700}?utm_source=x"
        rows.append((url, f"Title {k % 300}", content, parsed, f"2026-01-{1 + k % 28:02d}", body))
    for url, title, content, parsed, crawled, _ in rows:
        if isinstance(content, bytes) and content.endswith(b"\xff"):
            conn.execute("INSERT INTO pages VALUES (?, ?, CAST(? AS TEXT), ?, ?)", (url, title, content, parsed, crawled))
        else:
            conn.execute("INSERT INTO pages VALUES (?, ?, ?, ?, ?)", (url, title, content, parsed, crawled))
    conn.commit()
    conn.close()
    code = """
import json, sqlite3, sys
conn = sqlite3.connect(sys.argv[1])
conn.enable_load_extension(True)
conn.load_extension(sys.argv[2])
conn.text_factory = bytes  # (invalid UTF-8 rows stay in the table)
out = {}
try:
    conn.execute("SELECT dedup_plan(?)", (sys.argv[3],)).fetchone()
    out["prepared"] = [repr(r) for r in conn.execute("SELECT * FROM temp._dedup_prepared ORDER BY source_rowid")]
    conn.execute("SELECT dedup_apply()").fetchone()
    out["pages"] = [repr(r) for r in conn.execute("SELECT rowid, * FROM pages ORDER BY rowid")]
    out["removed"] = [repr(r) for r in conn.execute(
        "SELECT dedup_rowid, dedup_phase, dedup_reason, dedup_survivor, dedup_ratio FROM dedup_removed ORDER BY 1")]
except sqlite3.Error as e:
    out["error"] = str(e)
print(json.dumps(out))
"""
    results = {}
    for settings in ['{}', '{"boilerplate": "strip"}', 'bad titles']:
        for threads in ["1", "2", "fail"]:
            db = str(tmp_path / f"run-{threads}.db")
            shutil.copy(src, db)
            if settings == 'bad titles':
                # (Two rows whose title is not UTF-8: the first in order is named.)
                c = sqlite3.connect(db)
                c.execute("UPDATE pages SET title = CAST(x'ff41' AS TEXT) WHERE rowid IN (700, 1300)")
                c.commit()
                c.close()
            proc = subprocess.run([PYTHON, "-c", code, db, P.EXTENSION, '{}' if settings == 'bad titles' else settings],
                                  capture_output=True, text=True, timeout=300,
                                  env=dict(os.environ, DEDUP_THREADS=threads))
            assert proc.returncode == 0, proc.stderr
            results[settings, threads] = json.loads(proc.stdout)
    for settings in ['{}', '{"boilerplate": "strip"}']:
        one = results[settings, "1"]
        assert "error" not in one, one.get("error")
        assert len(one["prepared"]) == 1500 and len(one["removed"]) > 100, settings
        assert results[settings, "2"] == one == results[settings, "fail"], settings
    for threads in ["1", "2", "fail"]:
        error = results['bad titles', threads].get("error", "")
        assert "the row with rid 700" in error and "not valid UTF-8" in error, (threads, error)
