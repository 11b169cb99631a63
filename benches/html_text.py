"""html_text against a Python peer, in the same process and run: MB/s of
HTML turned into visible text. Pages: the demo crawl's texts, each in one
of three templates (a head with styles and scripts, navigation, a footer,
inline scripts) at about 20-60 KB a page. The peer is selectolax (Lexbor, a
C HTML5 parser: `LexborHTMLParser(html)`, scripts and styles stripped, then
`body.text(separator="\\n")`), when installed; without it the table has our figures only.

    python3 -m venv v && v/bin/pip install selectolax   # the peer (optional)
    v/bin/python benches/html_text.py [--mb 50]
"""
import argparse
import os
import sqlite3
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXTENSION = os.environ.get("DEDUP_EXTENSION", os.path.join(ROOT, "target", "release", "libdedup"))

TEMPLATES = [
    ("<!DOCTYPE html><html><head><title>{title}</title><style>{css}</style><script>{js}</script></head>"
     "<body><nav><a href='/'>Home</a> <a href='/docs'>Docs</a></nav><main>{body}</main>"
     "<footer>Copyright example</footer><script>{js}</script></body></html>"),
    ("<html><head><meta charset=utf-8><link rel=stylesheet href=/s.css><style>{css}</style></head><body>"
     "<div class=wrap><header><h1>{title}</h1></header><article>{body}</article></div>"
     "<!-- analytics --><script>{js}</script></body></html>"),
    ("<html><body><table><tr><td><b>{title}</b></td></tr><tr><td>{body}</td></tr></table>"
     "<script type=text/javascript>{js}</script></body></html>"),
]
CSS = "body{margin:0;font:14px sans-serif} .wrap{max-width:60em} a{color:#06c} " * 20
JS = "window.dataLayer=window.dataLayer||[];function gtag(){dataLayer.push(arguments)};if(a<b&&c>d){x='</p>'} " * 30


def pages(mb):
    demo = sqlite3.connect(os.path.join(ROOT, "demo", "crawl.db"))
    texts = [t for (t,) in demo.execute("SELECT parsed FROM pages WHERE length(parsed) > 500")]
    out, size, i = [], 0, 0
    while size < mb * 1_000_000:
        t = texts[i % len(texts)]
        body = "".join(f"<p>{p}</p>" for p in t.replace("&", "&amp;").replace("<", "&lt;").split("\n") if p)
        html = TEMPLATES[i % 3].format(title=f"Page {i}", css=CSS, js=JS, body=body)
        out.append(html)
        size += len(html.encode())
        i += 1
    return out, size


def best(f, repeat=3):
    runs = []
    for _ in range(repeat):
        start = time.perf_counter()
        f()
        runs.append(time.perf_counter() - start)
    return min(runs)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--mb", type=int, default=50)
    parser.add_argument("--pipeline", action="store_true", help="also time dedup_run on HTML against text")
    args = parser.parse_args()
    if args.pipeline:
        pipeline()
    html, size = pages(args.mb)
    conn = sqlite3.connect(":memory:")
    conn.enable_load_extension(True)
    conn.load_extension(EXTENSION)
    conn.execute("CREATE TABLE t (html TEXT)")
    conn.executemany("INSERT INTO t VALUES (?)", [(h,) for h in html])
    floor = best(lambda: conn.execute("SELECT sum(length(html)) FROM t").fetchone())
    ours = best(lambda: conn.execute("SELECT sum(length(html_text(html))) FROM t").fetchone())
    mb = size / 1e6
    print(f"{len(html)} pages, {mb:.1f} MB of HTML; fastest of 3, one core\n")
    print("| extraction | seconds | MB/s |")
    print("|---|---|---|")
    print(f"| reading the HTML in SQL (`sum(length(html))`, the floor) | {floor:.3f} | {mb / floor:.0f} |")
    print(f"| `html_text` in SQL | {ours:.3f} | {mb / ours:.0f} |")
    try:
        from selectolax.lexbor import LexborHTMLParser
    except ImportError:
        print("\n(selectolax is not installed: no peer measured)")
        return

    def peer_text(h):
        tree = LexborHTMLParser(h)
        tree.strip_tags(["script", "style", "noscript", "template"])  # as html_text leaves them out
        return tree.body.text(separator="\n")

    peer = best(lambda: sum(len(peer_text(h)) for h in html))
    print(f"| selectolax (Lexbor) `strip_tags` + `body.text()` in Python | {peer:.3f} | {mb / peer:.0f} |")
    print(f"\nhtml_text: {peer / ours:.2f}x selectolax's speed")


def pipeline(n=3000):
    """dedup_run on the demo crawl's pages as HTML (parsed NULL: phase 1
    extracts the text) against the same pages as text."""
    import shutil
    import tempfile
    demo = sqlite3.connect(os.path.join(ROOT, "demo", "crawl.db"))
    rows = demo.execute("SELECT url, title, parsed, crawled FROM pages WHERE parsed <> ''").fetchall()
    work = tempfile.mkdtemp()
    times = {}
    for kind in ("text", "html"):
        path = os.path.join(work, f"{kind}.db")
        conn = sqlite3.connect(path)
        conn.execute("CREATE TABLE pages (url TEXT, title TEXT, content TEXT, parsed TEXT, crawled TEXT)")
        for i in range(n):
            url, title, text, crawled = rows[i % len(rows)]
            url = f"{url}{'&' if '?' in url else '?'}copy={i // len(rows)}" if i >= len(rows) else url
            if kind == "html":
                body = "".join(f"<p>{p}</p>" for p in text.replace("&", "&amp;").replace("<", "&lt;").split("\n") if p)
                html = TEMPLATES[i % 3].format(title=title or "", css=CSS, js=JS, body=body)
                conn.execute("INSERT INTO pages VALUES (?, ?, ?, NULL, ?)", (url, title, html, crawled))
            else:
                conn.execute("INSERT INTO pages VALUES (?, ?, ?, NULL, ?)", (url, title, text, crawled))
        conn.commit()
        conn.close()
        runs = []
        for _ in range(3):
            copy = path + ".run"
            shutil.copy(path, copy)
            c = sqlite3.connect(copy, isolation_level=None)
            c.enable_load_extension(True)
            c.load_extension(EXTENSION)
            start = time.perf_counter()
            report = c.execute("SELECT dedup_run()").fetchone()[0]
            runs.append(time.perf_counter() - start)
            c.close()
        times[kind] = (min(runs), os.path.getsize(path) / 1e6, report.splitlines()[0])
    print("\n| pages (content; parsed NULL) | MB | dedup_run (s, fastest of 3) | report |")
    print("|---|---|---|---|")
    for kind, (sec, mb, first) in times.items():
        print(f"| {n} as {kind} | {mb:.0f} | {sec:.3f} | {first} |")
    print(f"\nHTML in: {times['html'][0] / times['text'][0]:.2f}x the run on the same pages as text")


if __name__ == "__main__":
    sys.exit(main())
