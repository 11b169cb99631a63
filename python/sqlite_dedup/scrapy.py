"""Scrapy: a downloader middleware that skips requests likely to bring
content the crawl already has: a drop-in for MaybeDont's
`AvoidDupContentMiddleware` (the same settings and `meta` key), backed by
the URL rules the extension learns (`dupe_probability`,
`dedup_learn_url_rules`) in a SQLite database. The model lives in that
file, so every crawler process shares it and a restart keeps it; it learns
from each response as it arrives.

    DOWNLOADER_MIDDLEWARES = {"sqlite_dedup.scrapy.AvoidDupContentMiddleware": 200}
    AVOID_DUP_CONTENT_ENABLED = True
    AVOID_DUP_CONTENT_DATABASE = "crawl.db"

Only requests with `avoid_dup_content` in their `meta` are considered.
Settings (MaybeDont's, with its defaults, then this middleware's own):

- `AVOID_DUP_CONTENT_THRESHOLD` (0.98): a request whose probability of
  bringing no new content is above it is skipped (`IgnoreRequest`),
- `AVOID_DUP_CONTENT_EXPLORATION` (0.05): but this share of them is still
  fetched, so that the rules keep being tested,
- `AVOID_DUP_CONTENT_INITIAL_QUEUE_LIMIT` (300): nothing is skipped before
  the database has learned this many pages,
- `AVOID_DUP_CONTENT_DATABASE` (required): the SQLite file,
- `AVOID_DUP_CONTENT_SKIP_REFETCHES` (False): whether a URL fetched before,
  as this very URL, may be skipped by its domain's refetch rule. Off, a
  re-crawl into the same database fetches every URL it fetched before
  again (an index page that now links to new pages among them); the rules
  still skip other forms of fetched pages (a session id, a print view).
  MaybeDont's model lives in its process, so its re-crawl starts empty;
  ours lives in the file (benches/results/scrapy-recrawl-*.md measures
  both settings on a site that changed between two crawls),
- `AVOID_DUP_CONTENT_JOURNAL` ("wal"): the database's journal mode: "wal"
  (with `synchronous = NORMAL` on this connection: a commit a response
  without an fsync each; a power cut may lose the last responses' rows,
  never the file), or "keep" to leave the file's mode as it is,
- `AVOID_DUP_CONTENT_STORE` (True): each response's visible text
  (`html_text`) is stored (url, title, content, crawled) in the table the
  database's settings name (`dedup_settings`' `table`, else `pages`;
  created when missing) and learned from in one transaction (both or
  neither: an error leaves the file as it was and is raised); False when
  the crawl's own pipeline stores its pages in that table (the middleware
  then learns what is stored by the next response).

Stats: `avoid_dup_content/skipped`, `avoid_dup_content/explored`,
`avoid_dup_content/learned`. The database is closed when the spider
closes.

And an item pipeline, `DedupPipeline`, that drops an item the next run
would remove (asked with `dedup_similar`) and stores the others (see its
doc). `pip install "sqlite-dedup[scrapy]"` brings Scrapy.
"""
import datetime
import random
import sqlite3

try:
    from scrapy import signals
    from scrapy.exceptions import IgnoreRequest, NotConfigured
    from scrapy.http import TextResponse
except ImportError as e:  # (the extra not installed)
    raise ImportError(f"sqlite_dedup.scrapy needs Scrapy ({e}): pip install \"sqlite-dedup[scrapy]\" "
                      "(or pip install scrapy)") from None

from ._loader import load
from ._sql import quoted

META_KEY = "avoid_dup_content"


def _now():
    """Now, in UTC, as `crawled` holds it."""
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M:%S")


def _pages_table(conn):
    """The table the database's settings name, else `pages`."""
    has_settings = conn.execute("SELECT count(*) FROM sqlite_schema WHERE name = 'dedup_settings'").fetchone()[0]
    row = has_settings and conn.execute("SELECT value FROM dedup_settings WHERE key = 'table'").fetchone()
    return row[0] if row and isinstance(row[0], str) else "pages"


class AvoidDupContentMiddleware:
    """Skips requests whose URL the learned rules say brings no new content
    (see the module's doc for the settings)."""

    def __init__(self, database, threshold=0.98, exploration=0.05, initial_queue_limit=300, store=True,
                 stats=None, rng=None, skip_refetches=False, journal="wal"):
        for name, value in (("AVOID_DUP_CONTENT_THRESHOLD", threshold),
                            ("AVOID_DUP_CONTENT_EXPLORATION", exploration)):
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 1:
                raise ValueError(f"{name} must be a number in [0, 1], got {value!r}")
        if isinstance(initial_queue_limit, bool) or not isinstance(initial_queue_limit, int) or initial_queue_limit < 0:
            raise ValueError(f"AVOID_DUP_CONTENT_INITIAL_QUEUE_LIMIT must be an int >= 0, got {initial_queue_limit!r}")
        if not database or not isinstance(database, str):
            raise ValueError("AVOID_DUP_CONTENT_DATABASE must name the crawl's SQLite file, got "
                             f"{database!r}")
        if journal not in ("wal", "keep"):
            raise ValueError(f"AVOID_DUP_CONTENT_JOURNAL must be 'wal' or 'keep', got {journal!r}")
        self.threshold, self.exploration, self.initial = float(threshold), float(exploration), initial_queue_limit
        self.store, self.stats = store, stats
        self.refetches = 1 if skip_refetches else 0
        self.random = rng or random.Random()
        self.conn = sqlite3.connect(database, isolation_level=None, check_same_thread=False)
        self.conn.execute("PRAGMA busy_timeout = 10000")
        if journal == "wal":
            self.conn.execute("PRAGMA journal_mode = WAL")
            self.conn.execute("PRAGMA synchronous = NORMAL")
        load(self.conn)
        self.table = _pages_table(self.conn)
        if store:
            self.conn.execute(f"CREATE TABLE IF NOT EXISTS {quoted(self.table)} "
                              "(url TEXT, title TEXT, content TEXT, crawled TEXT)")
        self.learned = self._learned()

    @classmethod
    def from_crawler(cls, crawler):
        s = crawler.settings
        if not s.getbool("AVOID_DUP_CONTENT_ENABLED"):
            raise NotConfigured
        middleware = cls(
            database=s.get("AVOID_DUP_CONTENT_DATABASE"),
            threshold=s.getfloat("AVOID_DUP_CONTENT_THRESHOLD", 0.98),
            exploration=s.getfloat("AVOID_DUP_CONTENT_EXPLORATION", 0.05),
            initial_queue_limit=s.getint("AVOID_DUP_CONTENT_INITIAL_QUEUE_LIMIT", 300),
            store=s.getbool("AVOID_DUP_CONTENT_STORE", True),
            skip_refetches=s.getbool("AVOID_DUP_CONTENT_SKIP_REFETCHES", False),
            journal=s.get("AVOID_DUP_CONTENT_JOURNAL", "wal"),
            stats=crawler.stats)
        crawler.signals.connect(middleware.spider_closed, signal=signals.spider_closed)
        return middleware

    def spider_closed(self, spider=None):
        """Closes the database when the crawl ends."""
        self.close()

    def process_request(self, request, spider=None):
        if not request.meta.get(META_KEY) or self.learned < self.initial:
            return None
        probability = self.conn.execute("SELECT dupe_probability(?, ?)", (request.url, self.refetches)).fetchone()[0]
        if probability is None or probability <= self.threshold:
            return None
        if self.random.random() < self.exploration:
            self._count("explored")
            return None
        self._count("skipped")
        raise IgnoreRequest(f"likely duplicate content (probability {probability:.3f}): {request.url}")

    def process_response(self, request, response, spider=None):
        if not request.meta.get(META_KEY) or not isinstance(response, TextResponse):
            return response
        # (The page stored and learned in one transaction: both or neither,
        # and one commit a response instead of two.)
        self.conn.execute("BEGIN IMMEDIATE")
        try:
            if self.store:
                title = response.xpath("//title/text()").get()
                crawled = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M:%S")
                self.conn.execute(
                    f"INSERT INTO {quoted(self.table)} (url, title, content, crawled) "
                    "VALUES (?1, ?2, CASE WHEN is_html(?3) THEN html_text(?3) ELSE ?3 END, ?4)",
                    (response.url, title.strip() if title else None, response.text, crawled))
            self.conn.execute("SELECT dedup_learn_url_rules()").fetchone()
        except BaseException:
            if self.conn.in_transaction:
                self.conn.execute("ROLLBACK")
            raise
        self.conn.execute("COMMIT")
        if self.learned < self.initial:
            self.learned = self._learned()
        self._count("learned")
        return response

    def close(self):
        """Closes the database (on `spider_closed`; also for use outside a
        crawl). A second call does nothing."""
        if self.conn is not None:
            self.conn.close()
            self.conn = None


    def _learned(self):
        """Pages the database has learned (every process's)."""
        exists = self.conn.execute(
            "SELECT count(*) FROM sqlite_schema WHERE name = 'dedup_url_seen' AND type = 'table'").fetchone()[0]
        return self.conn.execute("SELECT count(*) FROM dedup_url_seen").fetchone()[0] if exists else 0

    def _count(self, what):
        if self.stats is not None:
            self.stats.inc_value(f"avoid_dup_content/{what}")


class DedupPipeline:
    """A Scrapy item pipeline that asks, before an item is stored, what the
    next `dedup_run()` would do with it (`dedup_similar`, the run itself
    planned for the one page and taken back): an item the run would remove
    is dropped (`DropItem` naming the stored page it copies, or the rule
    that removes it), any other is stored in the table the database's
    settings name (`dedup_settings`' `table`, else `pages`).

        ITEM_PIPELINES = {"sqlite_dedup.scrapy.DedupPipeline": 300}
        DEDUP_DATABASE = "crawl.db"

    Settings:

    - `DEDUP_DATABASE` (else `AVOID_DUP_CONTENT_DATABASE`): the SQLite file,
    - `DEDUP_FIELDS` ({"url": "url", "content": "content", "title":
      "title"}): the item field of each page column; the item's other
      fields named as a column of the table are stored (and weighed: a
      `datetime` or `category` decides elections) too,
    - `DEDUP_SETTINGS` ({}): settings on top of the last run's, as
      `dedup_similar` takes them (`{"near_mode": "lsh"}` compares across
      hosts),
    - `DEDUP_STORE` (True): store the items kept; False to only drop
      duplicates (another pipeline stores),
    - `DEDUP_RUN_ON_CLOSE` (False): run `dedup_run()` when the spider
      closes, so that the next crawl is asked against this one,
    - `AVOID_DUP_CONTENT_JOURNAL` ("wal"), as the middleware's.

    An item without `crawled` is dated when the crawl started (one date for
    the crawl: among its own copies the election's other rules decide, not
    the second each arrived in; a page of an earlier crawl is older).

    Until the database has an index (a first `dedup_run()`), items are
    stored unchecked (stat `dedup/unchecked`, a warning once). Stats:
    `dedup/dropped`, `dedup/stored`, `dedup/unchecked`. An item without its
    URL or content field is an error naming the field."""

    def __init__(self, database, fields=None, settings=None, store=True, run_on_close=False, journal="wal",
                 stats=None, logger=None):
        if not database or not isinstance(database, str):
            raise ValueError(f"DEDUP_DATABASE must name the crawl's SQLite file, got {database!r}")
        if journal not in ("wal", "keep"):
            raise ValueError(f"AVOID_DUP_CONTENT_JOURNAL must be 'wal' or 'keep', got {journal!r}")
        self.fields = dict({"url": "url", "content": "content", "title": "title"}, **(fields or {}))
        if isinstance(settings, str):
            import json
            settings = json.loads(settings)
        if not isinstance(settings or {}, dict):
            raise ValueError(f"DEDUP_SETTINGS must be a dict of settings, got {settings!r}")
        self.settings = settings or {}
        self.store, self.run_on_close, self.stats, self.logger = store, run_on_close, stats, logger
        self.conn = sqlite3.connect(database, isolation_level=None, check_same_thread=False)
        self.conn.execute("PRAGMA busy_timeout = 10000")
        if journal == "wal":
            self.conn.execute("PRAGMA journal_mode = WAL")
            self.conn.execute("PRAGMA synchronous = NORMAL")
        load(self.conn)
        self.table = _pages_table(self.conn)
        self.conn.execute(f"CREATE TABLE IF NOT EXISTS {quoted(self.table)} "
                          "(url TEXT, title TEXT, content TEXT, crawled TEXT)")
        self.columns = {r[1].lower(): r[1] for r in self.conn.execute(f"PRAGMA table_info({quoted(self.table)})")}
        self.warned = False
        self.started = _now()

    @classmethod
    def from_crawler(cls, crawler):
        s = crawler.settings
        pipeline = cls(
            database=s.get("DEDUP_DATABASE") or s.get("AVOID_DUP_CONTENT_DATABASE"),
            fields=s.getdict("DEDUP_FIELDS"),
            settings=s.get("DEDUP_SETTINGS") or {},
            store=s.getbool("DEDUP_STORE", True),
            run_on_close=s.getbool("DEDUP_RUN_ON_CLOSE", False),
            journal=s.get("AVOID_DUP_CONTENT_JOURNAL", "wal"),
            stats=crawler.stats)
        return pipeline

    def open_spider(self, spider=None):
        self.logger = getattr(spider, "logger", None)
        self.started = _now()

    def process_item(self, item, spider=None):
        from scrapy.exceptions import DropItem
        page = dict(item)
        url, text = page.get(self.fields["url"]), page.get(self.fields["content"])
        for name, value in (("url", url), ("content", text)):
            if not isinstance(value, str):
                raise ValueError(f"DedupPipeline: the item's {self.fields[name]!r} field (the page's {name}) must "
                                 f"be a str, got {type(value).__name__} {value!r:.60}")
        row = self._row(page)
        if self._indexed():
            others = {k: v for k, v in row.items() if k.lower() not in ("url", "content")}
            import json
            matches = self.conn.execute(
                "SELECT rowid, url, phase, reason, ratio, survivor FROM dedup_similar(?, ?, ?, ?)",
                (text, url, json.dumps(self.settings) if self.settings else None,
                 json.dumps(others, default=str) if others else None)).fetchall()
            for rowid, other, phase, reason, ratio, survivor in matches:
                if survivor == "kept":
                    self._count("dropped")
                    ratio = f", ratio {ratio:.3f}" if isinstance(ratio, float) and phase == 4 else ""
                    raise DropItem(f"duplicate of {other} (rowid {rowid}; phase {phase}: {reason}{ratio})")
                if survivor is None and rowid is None:
                    self._count("dropped")
                    raise DropItem(f"the next run removes it (phase {phase}: {reason}): {url}")
        else:
            self._count("unchecked")
            if not self.warned and self.logger is not None:
                self.logger.warning("DedupPipeline: %s has no incremental index yet: items are stored unchecked "
                                    "until a run (sqlite-dedup run, or DEDUP_RUN_ON_CLOSE)", self.table)
            self.warned = True
        if self.store:
            names = list(row)
            self.conn.execute(f"INSERT INTO {quoted(self.table)} ({', '.join(quoted(n) for n in names)}) "
                              f"VALUES ({', '.join('?' * len(names))})", [row[n] for n in names])
            self._count("stored")
        return item

    def close_spider(self, spider=None):
        if self.conn is None:
            return
        if self.run_on_close:
            self.conn.execute("SELECT dedup_run()").fetchone()
        self.conn.close()
        self.conn = None

    def _row(self, page):
        """The item as the table's row: its mapped fields, its other fields
        named as columns, and `crawled` now when the table has it."""
        row = {}
        for column, field in self.fields.items():
            if column.lower() in self.columns and page.get(field) is not None:
                row[self.columns[column.lower()]] = page[field]
        for field, value in page.items():
            if field.lower() in self.columns and self.columns[field.lower()] not in row \
                    and field not in self.fields.values() and isinstance(value, (str, int, float)):
                row[self.columns[field.lower()]] = value
        if "crawled" in self.columns and self.columns["crawled"] not in row:
            row[self.columns["crawled"]] = self.started
        return row

    def _indexed(self):
        return self.conn.execute("SELECT count(*) FROM sqlite_schema WHERE name = 'dedup_index_state'").fetchone()[0] \
            and self.conn.execute("SELECT count(*) FROM dedup_index_state WHERE key = 'run'").fetchone()[0]

    def _count(self, what):
        if self.stats is not None:
            self.stats.inc_value(f"dedup/{what}")
