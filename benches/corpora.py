"""Benchmark corpora: built once with the corpus builder (seed 7) into the
git-ignored bench-data/ folder."""
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CORPUS = os.path.join(ROOT, "..", "shared", "corpus")
DATA = os.path.join(ROOT, "bench-data")


def corpus(n):
    """Path of the n-page builder corpus, built on first use: seed 7, or for
    `n = "ref20k"` the reference's own timing corpus (20,000 pages, seed
    20240601). 1,000,000 pages take about 6 minutes and 5 GB."""
    pages, seed, name = (20000, 20240601, "ref-20k") if n == "ref20k" else (int(n), 7, str(n))
    path = os.path.join(DATA, f"{name}.db")
    if not os.path.exists(path):
        os.makedirs(DATA, exist_ok=True)
        subprocess.run([sys.executable, os.path.join(CORPUS, "build_corpus.py"), "--pool",
                        os.path.join(CORPUS, "text-pool.jsonl.gz"), "--out", path, "--n", str(pages),
                        "--seed", str(seed)], check=True, stdout=subprocess.DEVNULL)
    return path


def html_corpus(n):
    """Path of corpus `n` as a crawler stores it: each page's text inside an
    HTML template (head, script, a navigation of 60 links, footer; about
    5 KB a page) in `content`, with no `parsed`, `content_hash` or
    `length`, so that phase 1 parses every page. Built on first use."""
    import html
    import sqlite3
    src = corpus(n)
    path = os.path.join(DATA, f"{n}-html.db")
    if not os.path.exists(path):
        nav = "".join(f'<li><a href="/section/{i}">Section {i} of the site</a></li>' for i in range(60))

        def page(title, text):
            paras = "".join(f"<p>{html.escape(p)}</p>" for p in (text or "").split("\n"))
            t = html.escape(title or "")
            return (f"<!DOCTYPE html><html><head><title>{t}</title><style>body{{color:#333}}</style>"
                    f"<script>var x=1;</script></head><body><header><nav><ul>{nav}</ul></nav></header>"
                    f"<main><article><h1>{t}</h1>{paras}</article></main>"
                    f"<footer><p>Copyright, all rights reserved. Terms. Privacy.</p></footer></body></html>")
        tmp = path + ".part"
        if os.path.exists(tmp):
            os.remove(tmp)
        out = sqlite3.connect(tmp)
        out.execute("CREATE TABLE pages (url TEXT, title TEXT, content TEXT, datetime TEXT, crawled TEXT)")
        out.execute("ATTACH ? AS src", (src,))
        rows = out.execute("SELECT url, title, parsed, datetime, crawled FROM src.pages ORDER BY rowid")
        out2 = sqlite3.connect(tmp)
        out2.executemany("INSERT INTO pages VALUES (?, ?, ?, ?, ?)",
                         ((u, t, page(t, b), d, c) for u, t, b, d, c in rows))
        out2.commit()
        out2.close()
        out.close()
        os.rename(tmp, path)
    return path


def pages(n):
    """The number of pages of corpus `n`."""
    return 20000 if n == "ref20k" else int(n)


def evict(*paths):
    """Drops the files' pages from the OS page cache (written out first), so
    that the copy a timed run reads starts from a known cache: with
    `warm` after, the one file read whole into it."""
    os.sync()
    for p in paths:
        fd = os.open(p, os.O_RDONLY)
        try:
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)


def warm(*paths):
    """Reads the files whole, into the OS page cache."""
    for p in paths:
        with open(p, "rb", buffering=0) as f:
            while f.read(1 << 24):
                pass
