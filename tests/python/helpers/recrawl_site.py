"""A local site that changes between two crawls, for the Scrapy re-crawl
test and bench: a forum (index pages listing threads, newest first; a
thread reached under its plain URL and under URLs whose extra parameters
never change content: a session id, `start=0`, a print view) and a shop
(listing pages of products; a product also under `&sort=price`), linked
from a home page. Version 2 is the same site a month later: new threads and
products (on the first index pages, so every index page shows other
threads), replies added to a fifth of the threads, new prices on a tenth of
the products. Served on 127.0.0.1; each URL's content group is known, so a
crawl is scored by the groups it reached and the skips that lost one."""
import html
import http.server
import random
import threading

from crawl import article

PER_PAGE = 10


# How the site changes by version 2: (new threads, new products, share of
# threads edited, share of products repriced, newest first: whether the
# index pages list the newest threads first, so that every index page
# changes, or append them to the last page).
A_MONTH_LATER = (60, 40, 0.2, 0.1, True)
A_DAY_LATER = (5, 2, 0.005, 0.0, False)


def site(version, threads=200, products=200, seed=8, change=A_MONTH_LATER):
    """{path?query: (title, text, group, [links])} of `version` (1 or 2),
    version 2 changed by `change`."""
    new_threads, new_products, edit_share, reprice_share, newest_first = change
    n_threads = threads + (new_threads if version == 2 else 0)
    n_products = products + (new_products if version == 2 else 0)
    pages = {}
    # (Each thread's and product's own draws, so version 2 keeps version
    # 1's.)
    one = [random.Random(seed * 100003 + i) for i in range(n_threads)]
    texts = [article(r, 120) for r in one]
    edited = {i for i in range(threads) if one[i].random() < edit_share}
    variants = {i: [v for share, v in ((0.8, f"&sid={random.Random(7919 + i).getrandbits(40):010x}"),
                                       (0.6, "&start=0"), (0.4, "&view=print")) if one[i].random() < share]
                for i in range(n_threads)}
    rng = random.Random(seed)
    for i in range(n_threads):
        rev = 2 if (version == 2 and i in edited) else 1
        text = texts[i] + ("\n\nA reply, a month later: " + article(random.Random(i), 30) if rev == 2 else "")
        plain = f"/forum/thread?id={i}"
        pages[plain] = (f"Thread {i}", text, f"t{i}.{rev}", [])
        for v in variants[i]:
            body = text + ("\n\nPrinted from the forum" if v == "&view=print" else "")
            pages[plain + v] = (f"Thread {i}", body, f"t{i}.{rev}", [])
    order = list(range(n_threads - 1, -1, -1)) if newest_first else list(range(n_threads))
    n_index = (n_threads + PER_PAGE - 1) // PER_PAGE
    for p in range(n_index):
        shown = order[p * PER_PAGE:(p + 1) * PER_PAGE]
        links = []
        for i in shown:
            links.append(f"/forum/thread?id={i}")
            links += [f"/forum/thread?id={i}{v}" for v in variants[i]]
        if p + 1 < n_index:
            links.append(f"/forum?page={p + 2}")
        text = "Forum, page %d: " % (p + 1) + ", ".join(f"thread {i}" for i in shown)
        pages[f"/forum?page={p + 1}"] = (f"Forum page {p + 1}", text, f"forum{p + 1}:{','.join(map(str, shown))}",
                                         links)
    kin = [random.Random(seed * 200003 + i) for i in range(n_products)]
    names = [" ".join(article(r, 3).split()).title() for r in kin]
    repriced = {i for i in range(products) if kin[i].random() < reprice_share}
    sorted_too = {i for i in range(n_products) if kin[i].random() < 0.3}
    for i in range(n_products):
        rev = 2 if (version == 2 and i in repriced) else 1
        text = f"{names[i]}\n{article(random.Random(1000 + i), 40)}\nPrice: {9 + i % 50 + (rev - 1) * 3} EUR"
        pages[f"/product?id={i}"] = (names[i], text, f"p{i}.{rev}", [])
        if i in sorted_too:
            pages[f"/product?id={i}&sort=price"] = (names[i], text, f"p{i}.{rev}", [])
    n_shop = (n_products + PER_PAGE - 1) // PER_PAGE
    for p in range(n_shop):
        shown = (list(range(n_products - 1, -1, -1)) if newest_first else list(range(n_products)))[
            p * PER_PAGE:(p + 1) * PER_PAGE]
        links = []
        for i in shown:
            links.append(f"/product?id={i}")
            if i in sorted_too:
                links.append(f"/product?id={i}&sort=price")
        if p + 1 < n_shop:
            links.append(f"/shop?page={p + 2}")
        text = "Shop, page %d: " % (p + 1) + ", ".join(names[i] for i in shown)
        pages[f"/shop?page={p + 1}"] = (f"Shop page {p + 1}", text, f"shop{p + 1}:{','.join(map(str, shown))}",
                                        links)
    pages["/"] = ("Home", f"The site, version {version}", f"home{version}", ["/forum?page=1", "/shop?page=1"])
    return pages


class Served:
    """One version of the site on 127.0.0.1 while the context lasts; its
    version can be changed in place (`serve(pages)`), so both crawls see one
    host and port."""

    def __init__(self, pages):
        self.pages = pages

    def serve(self, pages):
        self.pages = pages

    def __enter__(self):
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                page = outer.pages.get(self.path)
                if page is None:
                    self.send_error(404)
                    return
                title, text, _, links = page
                body = "".join(f"<p>{html.escape(line)}</p>" for line in text.split("\n") if line.strip())
                body += "".join(f'<a href="{html.escape(link)}">{html.escape(link)}</a> ' for link in links)
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


def score(pages, base, result, before=()):
    """A crawl of `pages` (the version served): requests (fetched and
    skipped), the content groups the crawler has of all (fetched now, or in
    `before`, the groups an earlier crawl into the same store fetched: an
    unchanged page is there already), false skips (a skipped URL whose
    group it does not have: new or changed content lost), and the
    seconds."""
    group = {base + path: page[2] for path, page in pages.items()}
    fetched = {group[u] for u in result["fetched"] if u in group} | (set(before) & set(group.values()))
    skipped = [u for u in result["skipped"] if u in group]
    false = sum(group[u] not in fetched for u in skipped)
    return {"requests": len(result["fetched"]) + len(skipped), "fetched": len(result["fetched"]),
            "have": sorted(fetched),
            "skipped": len(skipped), "false skips": false, "groups had": len(fetched),
            "groups": len(set(group.values())), "seconds": round(result["seconds"], 2),
            "hook seconds": round(result.get("hooks", 0.0), 2)}
