"""Datasette plugin: the sqlite-dedup functions (lev_ratio, canonical_url,
minhash, ...) available to every query Datasette runs, and a review page of
what the runs removed at /-/dedup-review/DATABASE (sqlite_dedup.review).
The pipeline functions are DIRECTONLY and write: Datasette's read-only
queries cannot run them. The review page answers only an actor who may view
the database and the tables it shows (as the database's own pages do), with
a Content-Security-Policy that allows no script but its own."""
import urllib.parse

import sqlite_dedup
from datasette import hookimpl
from datasette.utils.asgi import Forbidden, Response

# The tables the page reads (the pages table is added per database).
SHOWN_TABLES = ("dedup_runs", "dedup_removed", "dedup_why", "dedup_notes")


@hookimpl
def prepare_connection(conn):
    sqlite_dedup.load(conn)


async def _allowed(datasette, actor, name, tables):
    """Whether `actor` may view database `name` and each of `tables`, by the
    same checks Datasette makes for their own pages."""
    checks = [("view-instance", None), ("view-database", name)] + [("view-table", (name, t)) for t in tables]
    for action, resource in checks:
        if hasattr(datasette, "permission_allowed"):
            ok = await datasette.permission_allowed(actor, action, resource=resource, default=True)
        else:  # (Datasette 1.0's name for the same check)
            ok = await datasette.allowed(actor=actor, action=action, resource=resource)
        if not ok:
            return False
    return True


async def review(datasette, request):
    from sqlite_dedup.review import content_security_policy_of, review_html
    name = request.url_vars["database"]
    try:
        db = datasette.get_database(name)
    except KeyError:
        return Response.html("no such database", status=404)

    def pages_table(conn):
        from sqlite_dedup.review import pages_table_of
        return pages_table_of(conn)

    table = await db.execute_fn(pages_table)
    if not await _allowed(datasette, request.actor, name, SHOWN_TABLES + (table,)):
        raise Forbidden("You do not have permission to view this database's review")
    link = lambda rowid: (datasette.urls.table(name, "dedup_why") + "?rowid="
                          + urllib.parse.quote(str(rowid), safe=""))
    page = await db.execute_fn(lambda conn: review_html(conn, title=f"sqlite-dedup review: {name}",
                                                        explain_url=link))
    return Response.html(page, headers={"Content-Security-Policy": content_security_policy_of(page)})


@hookimpl
def database_actions(datasette, actor, database, request):
    """A link to the review page in the database page's actions, for a
    database a run has written to and an actor who may read the review."""
    async def inner():
        db = datasette.get_database(database)
        if not await db.table_exists("dedup_runs"):
            return []

        def pages_table(conn):
            from sqlite_dedup.review import pages_table_of
            return pages_table_of(conn)

        table = await db.execute_fn(pages_table)
        if not await _allowed(datasette, actor, database, SHOWN_TABLES + (table,)):
            return []
        return [{"href": datasette.urls.path(f"/-/dedup-review/{urllib.parse.quote(database, safe='')}"),
                 "label": "Review what sqlite-dedup removed"}]
    return inner


@hookimpl
def register_routes():
    return [(r"^/-/dedup-review/(?P<database>[^/]+)$", review)]
