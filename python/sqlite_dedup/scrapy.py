"""A Scrapy downloader middleware that skips requests likely to bring
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
- `AVOID_DUP_CONTENT_STORE` (True): each response's visible text
  (`html_text`) is stored (url, title, content, crawled) in the table the
  database's settings name (`dedup_settings`' `table`, else `pages`;
  created when missing) and learned from in one transaction (both or
  neither: an error leaves the file as it was and is raised); False when
  the crawl's own pipeline stores its pages in that table (the middleware
  then learns what is stored by the next response).

Stats: `avoid_dup_content/skipped`, `avoid_dup_content/explored`,
`avoid_dup_content/learned`.
"""
import datetime
import random
import sqlite3

from scrapy.exceptions import IgnoreRequest, NotConfigured
from scrapy.http import TextResponse

from ._loader import load
from ._sql import quoted

META_KEY = "avoid_dup_content"


class AvoidDupContentMiddleware:
    """Skips requests whose URL the learned rules say brings no new content
    (see the module's doc for the settings)."""

    def __init__(self, database, threshold=0.98, exploration=0.05, initial_queue_limit=300, store=True,
                 stats=None, rng=None):
        for name, value in (("AVOID_DUP_CONTENT_THRESHOLD", threshold),
                            ("AVOID_DUP_CONTENT_EXPLORATION", exploration)):
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 1:
                raise ValueError(f"{name} must be a number in [0, 1], got {value!r}")
        if isinstance(initial_queue_limit, bool) or not isinstance(initial_queue_limit, int) or initial_queue_limit < 0:
            raise ValueError(f"AVOID_DUP_CONTENT_INITIAL_QUEUE_LIMIT must be an int >= 0, got {initial_queue_limit!r}")
        if not database or not isinstance(database, str):
            raise ValueError("AVOID_DUP_CONTENT_DATABASE must name the crawl's SQLite file, got "
                             f"{database!r}")
        self.threshold, self.exploration, self.initial = float(threshold), float(exploration), initial_queue_limit
        self.store, self.stats = store, stats
        self.random = rng or random.Random()
        self.conn = sqlite3.connect(database, isolation_level=None, check_same_thread=False)
        self.conn.execute("PRAGMA busy_timeout = 10000")
        load(self.conn)
        self.table = self._table()
        if store:
            self.conn.execute(f"CREATE TABLE IF NOT EXISTS {quoted(self.table)} "
                              "(url TEXT, title TEXT, content TEXT, crawled TEXT)")
        self.learned = self._learned()

    @classmethod
    def from_crawler(cls, crawler):
        s = crawler.settings
        if not s.getbool("AVOID_DUP_CONTENT_ENABLED"):
            raise NotConfigured
        return cls(
            database=s.get("AVOID_DUP_CONTENT_DATABASE"),
            threshold=s.getfloat("AVOID_DUP_CONTENT_THRESHOLD", 0.98),
            exploration=s.getfloat("AVOID_DUP_CONTENT_EXPLORATION", 0.05),
            initial_queue_limit=s.getint("AVOID_DUP_CONTENT_INITIAL_QUEUE_LIMIT", 300),
            store=s.getbool("AVOID_DUP_CONTENT_STORE", True),
            stats=crawler.stats)

    def process_request(self, request, spider=None):
        if not request.meta.get(META_KEY) or self.learned < self.initial:
            return None
        probability = self.conn.execute("SELECT dupe_probability(?)", (request.url,)).fetchone()[0]
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
        """Closes the database (Scrapy's `spider_closed` would; also for use
        outside a crawl)."""
        self.conn.close()

    def _table(self):
        """The table the database's settings name, else `pages`."""
        has_settings = self.conn.execute(
            "SELECT count(*) FROM sqlite_schema WHERE name = 'dedup_settings'").fetchone()[0]
        row = has_settings and self.conn.execute(
            "SELECT value FROM dedup_settings WHERE key = 'table'").fetchone()
        return row[0] if row and isinstance(row[0], str) else "pages"

    def _learned(self):
        """Pages the database has learned (every process's)."""
        exists = self.conn.execute(
            "SELECT count(*) FROM sqlite_schema WHERE name = 'dedup_url_seen' AND type = 'table'").fetchone()[0]
        return self.conn.execute("SELECT count(*) FROM dedup_url_seen").fetchone()[0] if exists else 0

    def _count(self, what):
        if self.stats is not None:
            self.stats.inc_value(f"avoid_dup_content/{what}")
