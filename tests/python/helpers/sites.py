"""Synthetic sites for the learning features (docs/learning.md), shared by
the tests and benches/learning.py. Deterministic for a seed; standard library
only.

- `param_crawl`: shops and forums whose URLs carry parameters, some of which
  never change content (a print view, a sort order on an article, a reply
  anchor, a session key, `start=0`) and some of which always do (article
  ids, page numbers, search queries). Each row knows its content `group`, so
  a replay can tell whether a URL brought new content.
- `chrome_site`: short, distinct pages that share a large header and footer,
  plus true near-copies of some of them (a few words changed).
- `shop_with_changing_boxes`: HTML product pages, each with a mirror copy
  whose header, menu, "customers also viewed" box and footer differ.
- `product_site`: a shop whose product pages (`/product?id=N`) are about 15
  words of their own inside about 580 words of chrome; some products are
  also reached under a `&sort=` variant with the same page.
"""
import random
import sqlite3

from crawl import SYLLABLES, article, near_copy, words

HEADER = [
    "Skip to main content", "Menu", "News | Opinion | Culture | Science | Sport | Travel | Podcasts | Archive",
    "Today's weather: sunny spells in the morning, light rain later in the afternoon", "Home | Products | Blog | Support | About us", "Search this site",
    "Sign in or create an account", "Free shipping on orders over 50 euros",
    "This site uses cookies to improve your experience. Accept all / Reject",
]
FOOTER = [
    "Back to top", "Subscribe to our newsletter for weekly offers and news",
    "Privacy policy | Terms of use | Cookie settings | Contact", "Follow us on Mastodon and on our RSS feed",
    "Copyright (c) 2024 the example company. All rights reserved.", "Made with care in a small town by the sea",
    "Most read this week: the harbour festival, the new tram line, the library reopening",
    "Related: more notes from the newsroom, letters to the editor, corrections and clarifications",
]


def _stamp(t):
    return f"2024-03-{1 + t // 86400:02d} {t // 3600 % 24:02d}:{t // 60 % 60:02d}:{t % 60:02d}"


def param_crawl(n_articles=300, n_sites=4, seed=1):
    """Rows (url, title, content, crawled, group) in crawl order. `group`
    names the content: two rows of one group have the same text (a print view
    adds a line of its own: a near-copy)."""
    rng = random.Random(seed)
    events = []
    for s in range(n_sites):
        site = f"https://shop{s}.example.com"
        session = f"session_key={rng.getrandbits(40):010x}"
        for i in range(n_articles // n_sites):
            aid = 1000 * s + i
            text = article(rng, 120)
            group = f"a{aid}"
            base = f"{site}/article?id={aid}"
            variants = [(base, text)]
            if rng.random() < 0.5:
                variants.append((base + "&view=print", text + "\n\nPrinted from " + site))
            if rng.random() < 0.4:
                variants.append((base + "&sort=" + rng.choice(["asc", "desc"]), text))
            if rng.random() < 0.3:
                variants.append((base + f"&replytocom={rng.randrange(10**6)}", text))
            if rng.random() < 0.3:
                variants.append((base + "&" + session, text))
            first = rng.random() < 0.85  # mostly the plain URL is found first
            if not first:
                rng.shuffle(variants)
            t0 = rng.randrange(10**6)
            for k, (url, body) in enumerate(variants):
                events.append((t0 + k * rng.randrange(1, 5000), url, f"Article {aid}", body, group))
        for p in range(1, n_articles // (4 * n_sites) + 2):
            listing = article(rng, 60)
            group = f"l{s}-{p}"
            t0 = rng.randrange(10**6)
            url = f"{site}/list?page={p}"
            events.append((t0, url, f"List {p}", listing, group))
            if rng.random() < 0.5:
                events.append((t0 + 7, url + "&start=0", f"List {p}", listing, group))
            if p == 1:
                events.append((t0 + 11, f"{site}/list", "List 1", listing, group))
        for q in range(n_articles // (3 * n_sites)):
            term = "".join(rng.choice(SYLLABLES) for _ in range(3))
            events.append((rng.randrange(10**6), f"{site}/search?q={term}", f"Search {term}",
                           " ".join(words(rng, 80)), f"q{s}-{term}"))
    events.sort(key=lambda e: e[0])
    return [(url, title, text, _stamp(t), group) for t, url, title, text, group in events]


def chrome_site(n_pages=40, n_copies=10, seed=1, domain="https://news.example.org"):
    """Rows (url, title, content, crawled, group): `n_pages` short distinct
    pages (25 words) wrapped in one site's large header and footer, and
    `n_copies` true near-copies (one word changed) of the first pages. Rows of one group
    are near-copies; different groups are different pages."""
    rng = random.Random(seed)
    rows = []
    bodies = []
    for i in range(n_pages):
        body = " ".join(words(rng, 25))
        bodies.append(body)
        content = "\n".join(HEADER) + "\n\n" + body + "\n\n" + "\n".join(FOOTER)
        rows.append((f"{domain}/notes/{i}", f"Note {i}", content, _stamp(10 * i), f"n{i}"))
    for i in range(n_copies):
        body = near_copy(rng, bodies[i], changes=1)
        content = "\n".join(HEADER) + "\n\n" + body + "\n\n" + "\n".join(FOOTER)
        rows.append((f"{domain}/notes/{i}-updated", f"Note {i}", content, _stamp(10 * n_pages + i), f"n{i}"))
    return rows


SHOP_CHROME = [
    "Skip to main content | Menu | Departments | Deals of the day | Gift cards | Help",
    "Sign in or create an account to see your orders, lists and recommendations made for you",
    "Free delivery on orders over 30 euros to every country of the union, returns within 30 days",
    "Home / Shoes / Outdoor / Hiking and trail running",
]


def product_site(n=700, seed=3, sort_share=0.1, domain="https://shop.example.net"):
    """Rows (url, title, content, crawled, group) in crawl order: `n` products,
    each about 15 words of its own in about 580 words of chrome (a header
    and footer of 60 lines, and a box of the same 5 bestsellers), and
    for a `sort_share` of them a `&sort=price` URL with the same page right
    after it."""
    rng = random.Random(seed)
    names = [" ".join(words(rng, 3)).title() for _ in range(n)]
    header = SHOP_CHROME + [" ".join(words(rng, 9)) for _ in range(26)]
    footer = [" ".join(words(rng, 9)) for _ in range(30)]
    bestsellers = names[:5]
    rows = []
    t = 0
    for i in range(n):
        own = f"{names[i]}\n" + " ".join(words(rng, 12))
        box = ["Customers also viewed"] + bestsellers
        content = "\n".join(header) + "\n\n" + own + "\n\n" + "\n".join(box) + "\n\n" + "\n".join(footer)
        url = f"{domain}/product?id={i}"
        title = f"{names[i]} | Example Shop"
        rows.append((url, title, content, _stamp(t), f"p{i}"))
        t += 60
        if rng.random() < sort_share:
            rows.append((url + "&sort=price", title, content, _stamp(t), f"p{i}"))
            t += 60
    return rows


def shop_with_changing_boxes(path, products=20, seed=5):
    """A database at `path` of HTML product pages, each also copied to a
    mirror whose header, menu, "customers also viewed" box and footer
    differ from the original's (they change with every fetch): the chrome
    differs per page, so repeated lines cannot catch it, but its structure
    (header, nav, aside, footer) can. Returns `path`."""
    rng = random.Random(seed)

    def text(r, n):
        return " ".join(words(r, n))

    def page(i, own):
        r = random.Random(rng.random())
        box = "".join(f"<li>{text(r, 12)}</li>" for _ in range(8))
        return (f"<html><body><header><p>{text(r, 30)}</p></header><nav>{text(r, 20)}</nav>"
                f"<main><h1>Product {i}</h1><p>{own}</p></main><aside><h2>Customers also viewed</h2>"
                f"<ul>{box}</ul></aside><footer>{text(r, 20)}</footer></body></html>")
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE pages (url TEXT, title TEXT, content TEXT, crawled TEXT)")
    for i in range(products):
        own = text(random.Random(10_000 + i), 60)
        conn.execute("INSERT INTO pages VALUES (?, ?, ?, '2026-01-01')",
                     (f"https://shop.example.com/p/{i}", f"Product {i}", page(i, own)))
        conn.execute("INSERT INTO pages VALUES (?, ?, ?, '2026-01-02')",
                     (f"https://mirror.example.net/p/{i}", f"Product {i}", page(i, own)))
    conn.commit()
    conn.close()
    return path
