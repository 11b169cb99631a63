"""The defaults on a real crawl with the copies crawlers meet (issue 64):
Python's HTML documentation as Debian ships it (python3-doc: every page
of docs.python.org/3.11, real markup), crawled first from
https://docs.python.org/3.11/, then again, weeks later, as an `http://`
copy, the `/3/` alias, a mirror host, a mirror that adds a banner to each
page, and a printer view (`?print=1`, navigation left out). Which copy
survives an exact copy's election, and how many banner mirrors each near
mode merges, by default and with `prefer`.

    apt-get install python3-doc && python3 benches/real_crawl.py
"""
import json
import os
import random
import re
import shutil
import sqlite3
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXTENSION = os.environ.get("DEDUP_EXTENSION", os.path.join(ROOT, "target", "release", "libdedup"))
DOCS = "/usr/share/doc/python3-doc/html"
ORIGIN = "https://docs.python.org/3.11/"
# (name, URL prefix, crawl date, share of the pages copied)
COPIES = [
    ("http", "http://docs.python.org/3.11/", "2026-02-01 10:00:00", 0.3),
    ("alias", "https://docs.python.org/3/", "2026-02-05 10:00:00", 0.3),
    ("mirror", "https://docs.python-mirror.example.org/3.11/", "2026-03-01 10:00:00", 0.3),
    ("banner", "https://mirror2.example.net/python/", "2026-03-02 10:00:00", 0.3),
    ("print", ORIGIN, "2026-03-03 10:00:00", 0.2),
]
BANNER = ('<div class="mirror-banner"><p>You are reading a mirror of the Python documentation, '
          'refreshed every week. The original is at docs.python.org.</p></div>')
SETTINGS = [
    ("default (window)", {}),
    ("lsh", {"near_mode": "lsh"}),
    ("window, prefer https then the shortest URL", {"prefer": ["url LIKE 'https://%' DESC", "length(url) ASC"]}),
    ("lsh, prefer https then the shortest URL", {"near_mode": "lsh", "prefer": ["url LIKE 'https://%' DESC", "length(url) ASC"]}),
]


def crawl(path, seed=1):
    rng = random.Random(seed)
    pages = sorted(os.path.relpath(os.path.join(d, f), DOCS) for d, _, fs in os.walk(DOCS)
                   for f in fs if f.endswith(".html"))
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE pages (url TEXT, content TEXT, crawled TEXT, copy TEXT, page TEXT)")
    rows = []
    for p in pages:
        html = open(os.path.join(DOCS, p), encoding="utf-8", errors="replace").read()
        rows.append((ORIGIN + p, html, "2026-01-10 10:00:00", "origin", p))
        for name, prefix, crawled, share in COPIES:
            if rng.random() >= share:
                continue
            if name == "banner":
                copy = re.sub(r"(<body[^>]*>)", r"\1" + BANNER, html, count=1)
                rows.append((prefix + p, copy, crawled, name, p))
            elif name == "print":
                copy = re.sub(r'<div class="related".*?</div>', "", html, flags=re.S)
                copy = re.sub(r'<div class="sphinxsidebar".*?</div>\s*</div>', "", copy, flags=re.S)
                rows.append((prefix + p + "?print=1", copy, crawled, name, p))
            else:
                rows.append((prefix + p, html, crawled, name, p))
    rng.shuffle(rows)
    conn.executemany("INSERT INTO pages VALUES (?, ?, ?, ?, ?)", rows)
    conn.commit()
    conn.close()
    return len(pages), len(rows)


def measure(base, settings):
    tmp = base + ".run.db"
    shutil.copy(base, tmp)
    conn = sqlite3.connect(tmp)
    conn.enable_load_extension(True)
    conn.load_extension(EXTENSION)
    conn.execute("SELECT dedup_run(?)", (json.dumps(settings),)).fetchone()
    kept = conn.execute("SELECT copy, page FROM pages").fetchall()
    conn.close()
    os.remove(tmp)
    by_page = {}
    for copy, page in kept:
        by_page.setdefault(page, []).append(copy)
    return {"kept": len(kept), "unmerged": sum(len(c) - 1 for c in by_page.values()),
            "origin": sum(1 for c in by_page.values() if "origin" in c),
            "survivors": {name: sum(c.count(name) for c in by_page.values()) for name in
                          ["origin"] + [n for n, _, _, _ in COPIES]}}


def main():
    if not os.path.isdir(DOCS):
        sys.exit(f"needs {DOCS}: apt-get install python3-doc")
    base = os.path.join(tempfile.mkdtemp(), "python-docs.db")
    originals, rows = crawl(base)
    print(f"# The defaults on a real crawl: Python's documentation and its copies\n")
    print(f"{originals} pages of docs.python.org/3.11 (Debian's python3-doc), {rows} rows with the copies "
          f"({', '.join(f'{n}: {int(s * 100)}% of the pages, crawled {c[:10]}' for n, _, c, s in COPIES)}).\n")
    names = ["origin"] + [n for n, _, _, _ in COPIES]
    print(f"| settings | rows kept (of {originals} pages) | copies left unmerged | pages whose original survives | "
          + " | ".join(f"survivors: {n}" for n in names) + " |")
    print("|---" * (4 + len(names)) + "|")
    for name, settings in SETTINGS:
        m = measure(base, settings)
        print(f"| {name} | {m['kept']} | {m['unmerged']} | {m['origin']} | "
              + " | ".join(str(m["survivors"][n]) for n in names) + " |")


if __name__ == "__main__":
    main()
