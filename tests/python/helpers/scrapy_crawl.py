"""A Scrapy crawl of a local site, in a process of its own (Twisted's
reactor runs once per process), with one of two avoid-duplicate-content
middlewares: ours (`sqlite_dedup.scrapy`) or MaybeDont's.

    python3 scrapy_crawl.py STREAM.json ours|maybedont DB OUT.json

STREAM.json is a list of URLs on 127.0.0.1, requested one after the other
(each once the previous one is answered or skipped), all with
`avoid_dup_content` in meta. OUT.json gets the URLs fetched, those skipped,
and the seconds spent inside the middleware's two hooks."""
import json
import sys
import time

import scrapy
from scrapy.crawler import CrawlerProcess
from scrapy.exceptions import IgnoreRequest

stream_path, which, database, out_path = sys.argv[1:5]
package = sys.argv[5] if len(sys.argv) > 5 else None
if package:
    sys.path.insert(0, package)
STREAM = json.load(open(stream_path))

if which == "ours":
    from sqlite_dedup.scrapy import AvoidDupContentMiddleware as Base
else:
    import random

    import maybedont.predict
    from maybedont.scrapy_middleware import AvoidDupContentMiddleware as Base

    # MaybeDont samples a set with random.sample, which Python 3.11 refuses
    # once a path has over 200 URLs: give it a sorted list (its behaviour
    # on 3.10).
    class _Random:
        def sample(self, population, k):
            return random.sample(sorted(population), k)

        def __getattr__(self, name):
            return getattr(random, name)

    maybedont.predict.random = _Random()

SPENT = [0.0]


class Timed(Base):
    """The middleware, with the time inside its hooks counted."""

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


FETCHED, SKIPPED = [], []


class Stream(scrapy.Spider):
    name = "stream"

    async def start(self):
        yield self.request(0)

    def start_requests(self):  # (Scrapy before 2.13)
        yield self.request(0)

    def request(self, i):
        return scrapy.Request(STREAM[i], callback=self.parse, errback=self.skipped, dont_filter=True,
                              meta={"avoid_dup_content": True, "i": i})

    def next(self, i):
        if i + 1 < len(STREAM):
            yield self.request(i + 1)

    def parse(self, response):
        FETCHED.append(STREAM[response.meta["i"]])
        yield from self.next(response.meta["i"])

    def skipped(self, failure):
        i = failure.request.meta["i"]
        if failure.check(IgnoreRequest):
            SKIPPED.append(STREAM[i])
        else:
            raise RuntimeError(f"{STREAM[i]}: {failure.value!r}")
        yield from self.next(i)


process = CrawlerProcess(settings={
    "LOG_LEVEL": "ERROR", "ROBOTSTXT_OBEY": False, "CONCURRENT_REQUESTS": 1, "DOWNLOAD_DELAY": 0,
    "TELNETCONSOLE_ENABLED": False, "COOKIES_ENABLED": False, "RETRY_ENABLED": False,
    "DOWNLOADER_MIDDLEWARES": {"__main__.Timed": 200},
    "AVOID_DUP_CONTENT_ENABLED": True, "AVOID_DUP_CONTENT_DATABASE": database,
    "AVOID_DUP_CONTENT_EXPLORATION": 0.0,
})
process.crawl(Stream)
process.start()
json.dump({"fetched": FETCHED, "skipped": SKIPPED, "seconds": SPENT[0]}, open(out_path, "w"))
