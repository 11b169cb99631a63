"""A link-following Scrapy crawl of a local site, in a process of its own,
with one avoid-duplicate-content middleware: ours (`sqlite_dedup.scrapy`),
MaybeDont's, or none; and, optionally, our item pipeline.

    python3 scrapy_recrawl.py START_URL ours|maybedont|none DB OUT.json PACKAGE [SETTINGS.json]

Every link of a fetched page on the same host is followed (Scrapy's
duplicate filter requests each URL once), every request with
`avoid_dup_content` in meta. OUT.json gets the URLs fetched, those the
middleware skipped, the items the pipeline dropped, the crawl's seconds
and those inside the middleware's hooks. SETTINGS.json: more Scrapy
settings (e.g. `AVOID_DUP_CONTENT_SKIP_REFETCHES`, `ITEM_PIPELINES`)."""
import json
import sys
import time
import urllib.parse

import scrapy
from scrapy.crawler import CrawlerProcess
from scrapy.exceptions import IgnoreRequest

start, which, database, out_path, package = sys.argv[1:6]
extra = json.load(open(sys.argv[6])) if len(sys.argv) > 6 else {}
sys.path.insert(0, package)

SPENT = [0.0]
middlewares = {}
if which != "none":
    if which == "ours":
        from sqlite_dedup.scrapy import AvoidDupContentMiddleware as Base
    else:
        import random

        import maybedont.predict
        from maybedont.scrapy_middleware import AvoidDupContentMiddleware as Base

        class _Random:  # (as scrapy_crawl.py: MaybeDont's sample on Python 3.11)
            def sample(self, population, k):
                return random.sample(sorted(population), k)

            def __getattr__(self, name):
                return getattr(random, name)

        maybedont.predict.random = _Random()

    class Timed(Base):
        def process_request(self, request, spider):
            began = time.perf_counter()
            try:
                return super().process_request(request, spider)
            finally:
                SPENT[0] += time.perf_counter() - began

        def process_response(self, request, response, spider):
            began = time.perf_counter()
            try:
                return super().process_response(request, response, spider)
            finally:
                SPENT[0] += time.perf_counter() - began

    middlewares = {"__main__.Timed": 200}

FETCHED, SKIPPED, DROPPED = [], [], []
HOST = urllib.parse.urlsplit(start).netloc


class Follow(scrapy.Spider):
    name = "follow"

    async def start(self):
        yield self.request(start)

    def start_requests(self):  # (Scrapy before 2.13)
        yield self.request(start)

    def request(self, url):
        return scrapy.Request(url, callback=self.parse, errback=self.skipped, meta={"avoid_dup_content": True})

    def parse(self, response):
        FETCHED.append(response.url)
        yield {"url": response.url, "title": response.xpath("//title/text()").get(),
               "content": "\n".join(response.xpath("//p/text()").getall())}
        for href in response.xpath("//a/@href").getall():
            url = response.urljoin(href)
            if urllib.parse.urlsplit(url).netloc == HOST:
                yield self.request(url)

    def skipped(self, failure):
        if failure.check(IgnoreRequest):
            SKIPPED.append(failure.request.url)
        else:
            raise RuntimeError(f"{failure.request.url}: {failure.value!r}")


class Dropped:
    """Counts the items a pipeline dropped (Scrapy's item_dropped signal)."""

    @classmethod
    def from_crawler(cls, crawler):
        ext = cls()
        # (A bound method of the extension, which Scrapy keeps: signals hold
        # their handlers weakly.)
        crawler.signals.connect(ext.dropped, signal=scrapy.signals.item_dropped)
        return ext

    def dropped(self, item, exception, **kwargs):
        DROPPED.append([item["url"], str(exception)])


settings = {
    "LOG_LEVEL": "ERROR", "ROBOTSTXT_OBEY": False, "CONCURRENT_REQUESTS": 1, "DOWNLOAD_DELAY": 0,
    "TELNETCONSOLE_ENABLED": False, "COOKIES_ENABLED": False, "RETRY_ENABLED": False,
    "DOWNLOADER_MIDDLEWARES": middlewares, "EXTENSIONS": {"__main__.Dropped": 0},
    "AVOID_DUP_CONTENT_ENABLED": which != "none", "AVOID_DUP_CONTENT_DATABASE": database,
    "AVOID_DUP_CONTENT_EXPLORATION": 0.0,
}
settings.update(extra)
began = time.perf_counter()
process = CrawlerProcess(settings=settings)
process.crawl(Follow)
process.start()
json.dump({"fetched": FETCHED, "skipped": SKIPPED, "dropped": DROPPED, "seconds": time.perf_counter() - began,
           "hooks": SPENT[0]}, open(out_path, "w"))
