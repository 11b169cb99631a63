"""Which contents a run reads as HTML (`is_html`): a crawler's page that
begins with a newline, a byte-order mark or a comment before its doctype
is HTML, and its visible text, not its markup, is compared and written
into `parsed`."""
import sqlite3

import pytest

import pipeline as P

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
