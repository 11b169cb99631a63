"""Datasette plugin: the sqlite-dedup functions (lev_ratio, canonical_url,
minhash, ...) available to every query Datasette runs, and a review page of
what the runs removed at /-/dedup-review/DATABASE (sqlite_dedup.review).
The pipeline functions are DIRECTONLY and write: Datasette's read-only
queries cannot run them."""
import sqlite_dedup
from datasette import hookimpl
from datasette.utils.asgi import Response


@hookimpl
def prepare_connection(conn):
    sqlite_dedup.load(conn)


async def review(datasette, request):
    from sqlite_dedup.review import review_html
    name = request.url_vars["database"]
    try:
        db = datasette.get_database(name)
    except KeyError:
        return Response.html(f"no database {name!r}", status=404)
    link = lambda rowid: datasette.urls.table(name, "dedup_why") + f"?rowid={rowid}"
    page = await db.execute_fn(lambda conn: review_html(conn, title=f"sqlite-dedup review: {name}",
                                                        explain_url=link))
    return Response.html(page)


@hookimpl
def register_routes():
    return [(r"^/-/dedup-review/(?P<database>[^/]+)$", review)]
