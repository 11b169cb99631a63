"""The local site of the Scrapy middleware's test and bench: a forum whose
URLs carry parameters that never change content (session ids, `start=0`,
print views) and one that always does (thread ids), and a shop whose
product pages are mostly chrome, served on 127.0.0.1; a crawl of it in a
process of its own (scrapy_crawl.py) with either middleware, and its
score. Each URL's content group is known, so a skip is counted as avoided
(its content was fetched before) or false (it was not)."""
import html
import http.server
import json
import os
import random
import subprocess
import threading
import urllib.parse

import pipeline as P
from crawl import article
from sites import product_site

PYTHON = os.environ.get("DEDUP_PYTHON", "/usr/bin/python3")
HERE = os.path.dirname(os.path.abspath(__file__))


def forum(threads=260, seed=4):
    """(path?query, title, content, group) in crawl order: threads reached
    under a session id, `start=0` and a print view (which adds a line of its
    own) as well as their plain URL; the thread ids always change content."""
    rng = random.Random(seed)
    events = []
    for i in range(threads):
        text = article(rng, 120)
        plain = f"/forum/thread?id={i}"
        t0 = rng.randrange(10**6)
        events.append((t0, plain, text))
        for share, variant, body in ((0.8, f"&sid={rng.getrandbits(40):010x}", text), (0.7, "&start=0", text),
                                     (0.5, "&view=print", text + "\n\nPrinted from the forum")):
            if rng.random() < share:
                events.append((t0 + rng.randrange(1, 200000), plain + variant, body))
    events.sort()
    return [(path, f"Thread {path.split('id=')[1].split('&')[0]}", body, "forum:" + path.split("id=")[1].split("&")[0])
            for _, path, body in events]


def site_rows():
    """The forum and a shop whose product pages are mostly chrome (each
    product distinct; a few reached under a sort order too), interleaved."""
    rng = random.Random(11)
    shop = [(urllib.parse.urlsplit(url).path + "?" + urllib.parse.urlsplit(url).query, title, content, "shop:" + group)
            for url, title, content, _, group in product_site(n=320, seed=5)]
    streams = [forum(), shop]
    merged = []
    while any(streams):
        s = rng.choice([s for s in streams if s])
        merged.append(s.pop(0))
    return merged


class Site:
    """The pages, served on 127.0.0.1 as HTML while the context lasts."""

    def __init__(self, rows):
        self.pages = {path: (title, content) for path, title, content, _ in rows}

    def __enter__(self):
        pages = self.pages

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                page = pages.get(self.path)
                if page is None:
                    self.send_error(404)
                    return
                title, content = page
                body = "".join(f"<p>{html.escape(line)}</p>" for line in content.split("\n") if line.strip())
                data = (f"<!doctype html><html><head><title>{html.escape(title)}</title></head>"
                        f"<body>{body}</body></html>").encode()
                self.send_response(200)
                self.send_header("Content-Type", "text/html; charset=utf-8")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.base = f"http://127.0.0.1:{self.server.server_address[1]}"
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()


def crawl(tmp_path, which, urls, db, tag):
    stream = tmp_path / f"{tag}.stream.json"
    out = tmp_path / f"{tag}.out.json"
    stream.write_text(json.dumps(urls))
    subprocess.run([PYTHON, os.path.join(HERE, "scrapy_crawl.py"), str(stream), which, db, str(out),
                    P.package(tmp_path)], check=True, timeout=1200, env=dict(os.environ, PYTHONHASHSEED="0"))
    return json.loads(out.read_text())


def score(rows, base, result):
    """Skips whose content the crawl had fetched before (avoided) and the
    others (false)."""
    group = {base + path: g for path, _, _, g in rows}
    skipped = set(result["skipped"])
    seen, avoided, false = set(), 0, 0
    for path, _, _, g in rows:
        url = base + path
        if url in skipped:
            avoided += g in seen
            false += g not in seen
        else:
            seen.add(g)
    possible = len(rows) - len({group[base + p] for p, _, _, _ in rows})
    return {"avoided": avoided, "false": false, "possible": possible, "seconds": result["seconds"],
            "requests": len(rows)}
