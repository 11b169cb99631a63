"""A small synthetic crawl database with every pattern the pipeline handles:
URL variants (tracking parameters, http/https, trailing slashes, wayback
copies), ignored URLs, exact copies on other domains, near-copies (a few
words changed) and distinct pages. Deterministic for a seed; needs nothing
outside the repository."""
import random
import sqlite3

SYLLABLES = ["ka", "lo", "mi", "ne", "ru", "sa", "ti", "vo", "ze", "pa", "do", "gu", "ha", "ji", "be", "fy"]

FULL_COLUMNS = ["url TEXT", "title TEXT", "content TEXT", "parsed TEXT", "datetime TEXT", "crawled TEXT",
                "category TEXT", "domain TEXT", "length INTEGER", "content_hash TEXT", "wayback TEXT"]


def words(rng, n):
    return [rng.choice(SYLLABLES) + rng.choice(SYLLABLES) + rng.choice(["", "n", "s", "r"]) for _ in range(n)]


def article(rng, n_words=160):
    w = words(rng, n_words)
    half = n_words // 2
    return " ".join(w[:half]) + "\n\n" + " ".join(w[half:])


def near_copy(rng, text, changes=3):
    tokens = text.split(" ")
    for _ in range(changes):
        tokens[rng.randrange(len(tokens))] = words(rng, 1)[0]
    return " ".join(tokens)


def pages(n_articles=60, seed=1):
    """Rows (url, title, text, datetime, crawled, category) of a crawl."""
    rng = random.Random(seed)
    rows = []
    for i in range(n_articles):
        site = f"site{i % 5}.example.org"
        text = article(rng)
        day = f"2024-0{1 + i % 9}-1{i % 10}"
        base = f"https://{site}/articles/{i}/"
        rows.append((base, f"Article {i}", text, day, day + " 10:00:00", None))
        kind = i % 6
        if kind == 0:
            rows.append((base + "?utm_source=feed", f"Article {i}", text, day, day + " 11:00:00", None))
        elif kind == 1:
            rows.append((f"https://mirror{i % 3}.example.net/copy/{i}/", f"Copy {i}", text, None, day + " 12:00:00",
                         "external"))
        elif kind == 2:
            rows.append((f"https://{site}/articles/{i}-v2/", f"Article {i} (updated)", near_copy(rng, text),
                         day, day + " 13:00:00", None))
        elif kind == 3:
            rows.append((f"https://{site}/tag/t{i}/", f"Tag {i}", article(rng, 40), None, day + " 14:00:00", None))
        elif kind == 4:
            rows.append((f"http://web.archive.org/web/2023{i:04d}/{base}", f"Article {i}", text, None,
                         day + " 15:00:00", None))
    rng.shuffle(rows)
    return rows


def make(path, n_articles=60, seed=1, columns=FULL_COLUMNS, table="pages", id_column=False, suffix=""):
    """Writes the crawl to `path` as table `table` with the given column
    definitions (any subset of FULL_COLUMNS that keeps url and content or
    parsed, with constraints appended); returns the path."""
    conn = sqlite3.connect(path)
    names = [c.split()[0] for c in columns]
    defs = (["id INTEGER PRIMARY KEY"] if id_column else []) + list(columns)
    conn.execute(f"CREATE TABLE {table} ({', '.join(defs)}){suffix}")
    for url, title, text, day, crawled, category in pages(n_articles, seed):
        values = {"url": url, "title": title, "content": text, "parsed": text, "datetime": day,
                  "crawled": crawled, "category": category, "domain": url.split("/")[2], "length": len(text),
                  "content_hash": None, "wayback": None}
        conn.execute(f"INSERT INTO {table} ({', '.join(names)}) VALUES ({', '.join('?' for _ in names)})",
                     [values.get(n) for n in names])
    conn.commit()
    conn.close()
    return path
