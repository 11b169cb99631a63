"""Datasette plugin: the sqlite-dedup functions (lev_ratio, canonical_url,
minhash, ...) available to every query Datasette runs. The pipeline
functions are DIRECTONLY and write: Datasette's read-only queries cannot
run them."""
import sqlite_dedup
from datasette import hookimpl


@hookimpl
def prepare_connection(conn):
    sqlite_dedup.load(conn)
