"""sqlite-dedup for Python: load the extension into a connection (the standard
sqlite3 module or apsw) and run, restore or explain the dedup pipeline.

    import sqlite3, sqlite_dedup
    conn = sqlite3.connect("crawl.db")
    sqlite_dedup.load(conn)                          # (run, plan and restore load it when not)
    report = sqlite_dedup.run(conn, threshold=0.9)   # a dict
"""
import json
import os

__all__ = ["loadable_path", "load", "run", "restore", "explain", "similar", "dedup", "fix_urls", "stats",
           "ExtensionLoadError", "error_code", "dedup_file"]
__version__ = "0.2.0"


class DedupError(ValueError):
    """A value of the extension's own tables that is not what it wrote (a
    hand edit), named with its table, column and run."""


from ._loader import ExtensionLoadError, load, loadable_path  # noqa: E402 (the package's API)
from ._pages import dedup  # noqa: E402
from ._errors import error_code  # noqa: E402
from ._sql import quoted as _quoted  # noqa: E402
from . import _fix_urls, _phases  # noqa: E402,F401 (_phases: the phases, for the layers)


def fix_urls(conn, table="pages", column="url", timeout=2.0, workers=8, refresh=False, resolver=None,
             context=None, allow_private=False, max_hosts=1000, deadline=300.0):
    """Probes, per host of the table's URLs, whether https answers (hosts
    with http URLs) and whether the bare host serves what its `www.` name
    does, `workers` requests at a time, each within `timeout` seconds, all
    within `deadline`, at most `max_hosts` hosts; keeps the answers in
    dedup_url_fixes, which a run with `fix_urls=True` then uses (http ->
    https, `www.` dropped, where they say so). Hosts probed before are
    skipped unless `refresh`; a host whose name resolves to an address that
    is not public is not probed unless `allow_private`. `resolver(host,
    port) -> (address, port)` replaces DNS, `context` (an ssl.SSLContext)
    verifies https. Returns {probed, https, drop_www, skipped, left, notes}.
    Loads the extension first when the connection has not (`load`)."""
    _loaded(conn, "fix_urls")
    return _fix_urls.fix_urls(conn, table, column, timeout, workers, refresh, resolver, context, allow_private,
                              max_hosts, deadline)




def dedup_file(src, out, db=None, fields=None, **settings):
    """Deduplicates the corpus file `src` (.jsonl, .jsonl.gz, .parquet) into
    `out`, of the same kind, with the settings of `dedup_run`: the kept
    records in their order, each as given (docs/clients/command.md,
    "sqlite-dedup dedup"). `db`: a new SQLite file to run through and keep
    (default: a temporary one); `fields`: the file's fields for the
    pipeline's names (`{"parsed": "body"}`). Returns {read, kept, report,
    db}; raises ValueError naming a bad record's line, and the run's error."""
    import sqlite3
    from ._files import dedup_file as through

    def connect(path):
        conn = sqlite3.connect(path, isolation_level=None)
        load(conn)
        return conn
    return through(connect, src, out, db=db, settings=settings, fields=fields)


def _lend_busy_timeout(conn, ms):
    """Makes `ms` the wait for another connection's lock: the connection's
    own busy timeout, which a run takes before its `busy_timeout` setting
    (Python's own is 5 s; 0, no wait, leaves the setting to say so). (A
    negative `ms` is left to the setting's check to refuse.) Whether it lent."""
    if isinstance(ms, int) and not isinstance(ms, bool) and ms >= 0:
        conn.execute(f"PRAGMA busy_timeout = {ms}")
        return True
    return False


class _BusyTimeoutFor:
    """For one call: the `busy_timeout` setting, when given, as the
    connection's own busy timeout (which a run takes first), and the
    connection's own put back afterwards."""

    def __init__(self, conn, settings):
        self.conn, self.ms, self.before = conn, settings.get("busy_timeout"), None

    def __enter__(self):
        before = _one(self.conn, "PRAGMA busy_timeout")
        if _lend_busy_timeout(self.conn, self.ms):
            self.before = before

    def __exit__(self, *exc):
        if self.before is not None:
            _lend_busy_timeout(self.conn, self.before)


def _connection(conn, function):
    """Refuses, with a TypeError naming what it got, anything but a
    connection (a path is the likeliest mistake)."""
    if isinstance(conn, (str, bytes, os.PathLike)) or not callable(getattr(conn, "execute", None)):
        got = repr(conn)
        got = got if len(got) <= 80 else got[:77] + "..."
        raise TypeError(f"{function}: conn must be a sqlite3.Connection or an apsw.Connection, got "
                        f"{type(conn).__name__} {got} (open the file first: conn = sqlite3.connect(path))")


def _loaded(conn, function):
    """A connection with the extension's functions: loaded here
    ([`load`]) when it has not been (its errors say why it cannot be)."""
    _connection(conn, function)
    try:
        _one(conn, "SELECT dedup_version()")
    except Exception as e:  # sqlite3.OperationalError, apsw.SQLError
        if "no such function" not in str(e):
            raise
        load(conn)


def _one(conn, sql, params=()):
    row = conn.execute(sql, params).fetchone()
    return None if row is None else row[0]


def run(conn, **settings):
    """Runs the whole pipeline in one transaction (see the README for the
    settings: threshold, distance, near_mode, n_min, ...); returns the report
    as a dict: run, rows_before, rows_after, removed per phase, skipped rows,
    seconds per phase. Raises the SQL error, with nothing changed, when the
    run fails. A `busy_timeout` given here is how long this call waits for
    another connection's lock (the connection's own timeout is put back).
    Loads the extension first when the connection has not (`load`)."""
    _loaded(conn, "run")
    with _BusyTimeoutFor(conn, settings):
        _one(conn, "SELECT dedup_run(?)", (json.dumps(settings),))
    return json.loads(_one(conn, "SELECT report FROM dedup_runs ORDER BY run DESC LIMIT 1"))


def plan(conn, examples=3, **settings):
    """What a run with these settings would remove, changing nothing
    (dedup_plan; the plan stays in the connection: SELECT dedup_apply()
    applies it). A dict: report (the plan's report text), removed (rows per
    phase), domains (per phase, the domains losing most rows: [domain,
    rows]), examples (per phase, the first `examples` removals: rowid, url,
    reason, survivor, survivor_url). Loads the extension first when the
    connection has not (`load`)."""
    _loaded(conn, "plan")
    if isinstance(examples, bool) or not isinstance(examples, int) or examples < 0:
        raise TypeError(f"plan: examples must be an int >= 0, got {type(examples).__name__} {examples!r}")
    with _BusyTimeoutFor(conn, settings):
        text = _one(conn, "SELECT dedup_plan(?)", (json.dumps(settings),))
    removed, domains, shown = {}, {}, {}
    rows = conn.execute(
        "SELECT r.phase, r.source_rowid, g.url, r.reason, r.survivor, s.url, "
        "coalesce(p.domain, url_domain(g.url, 'ignore=')) "
        "FROM temp._dedup_removal AS r JOIN temp._dedup_source AS g ON g.rid = r.source_rowid "
        "LEFT JOIN temp._dedup_source AS s ON s.rid = r.survivor "
        "LEFT JOIN temp._dedup_prepared AS p ON p.source_rowid = r.source_rowid "
        "ORDER BY r.phase, r.source_rowid").fetchall()
    for phase, rowid, url, reason, survivor, survivor_url, domain in rows:
        removed[phase] = removed.get(phase, 0) + 1
        per = domains.setdefault(phase, {})
        per[domain] = per.get(domain, 0) + 1
        if len(shown.setdefault(phase, [])) < examples:
            shown[phase].append({"rowid": rowid, "url": url, "reason": reason, "survivor": survivor,
                                 "survivor_url": survivor_url})
    top = {phase: sorted(per.items(), key=lambda kv: (-kv[1], kv[0] or ""))[:10] for phase, per in domains.items()}
    return {"report": text, "removed": removed, "domains": top, "examples": shown}


def similar(conn, text, url=None, page=None, **settings):
    """The stored rows that decide a fetched page's fate in the next run,
    before it is stored (`dedup_similar`): a list of dicts with rowid, url,
    phase, reason, ratio and survivor ("kept": the stored row survives and
    the page would be removed; "new": the page would remove it; None: a
    rule removes the page, rowid None). `page` is a dict of the page's other
    columns (title, datetime, crawled, ...; crawled is now when not given);
    settings go on top of the last run's. Changes nothing. Needs a run's
    incremental index (run once first). Loads the extension first when the
    connection has not (`load`)."""
    _loaded(conn, "similar")
    if not isinstance(text, str):
        raise TypeError(f"similar: text must be a str, got {type(text).__name__} {text!r:.60}")
    if url is not None and not isinstance(url, str):
        raise TypeError(f"similar: url must be a str or None, got {type(url).__name__} {url!r:.60}")
    if page is not None and not isinstance(page, dict):
        raise TypeError(f"similar: page must be a dict of the page's columns, got {type(page).__name__}")
    names = ("rowid", "url", "phase", "reason", "ratio", "survivor")
    with _BusyTimeoutFor(conn, settings):
        rows = conn.execute(f"SELECT {', '.join(names)} FROM dedup_similar(?, ?, ?, ?)",
                            (text, url, json.dumps(settings) if settings else None,
                             json.dumps(page, default=str) if page else None)).fetchall()
    return [dict(zip(names, row)) for row in rows]


def restore(conn):
    """Undoes the latest run; returns what was done, in words. Loads the
    extension first when the connection has not (`load`)."""
    _loaded(conn, "restore")
    return _one(conn, "SELECT dedup_restore()")


def explain(conn, page):
    """Why a page is gone: for a removed rowid (int) or URL (str), its run,
    phase, reason, ratio, the survivor it lost to, the final survivor
    (following survivors later removed) and, for a near duplicate, its ratio
    to the final survivor of its run (final_ratio; when that is at or below
    the threshold, final_note says so and the ratio is measured now) and,
    when a Spark job kept its survivor in another shard, where (elsewhere:
    `survivor in shard 3, rowid 17`), as a dict; None when no run removed it (or no run was ever applied). A page
    given as anything else (None, a float, bytes) is a TypeError, not None."""
    _connection(conn, "explain")
    if isinstance(page, bool) or not isinstance(page, (int, str)):
        raise TypeError(f"explain: page must be a rowid (int) or a URL (str), got {type(page).__name__} {page!r}")
    if not _one(conn, "SELECT count(*) FROM sqlite_schema WHERE name = 'dedup_why' AND type = 'view'"):
        return None
    column = "rowid" if isinstance(page, int) else "url"
    keys = ["rowid", "url", "run", "phase", "reason", "ratio", "survivor", "final_survivor", "chain", "final_url"]
    has_ratio = _one(conn, "SELECT count(*) FROM pragma_table_info('dedup_why') WHERE name = 'final_ratio'")
    if has_ratio:
        keys += ["final_ratio", "final_note"]
    cur = conn.execute(
        f"SELECT {', '.join(keys)} FROM dedup_why WHERE {column} = ? ORDER BY run DESC LIMIT 1", (page,))
    row = cur.fetchone()
    if row is None:
        return None
    why = dict(zip(keys, row))
    why.setdefault("final_ratio", None)
    why.setdefault("final_note", None)
    # (Read from a database: each value as the extension wrote it, or named.)
    for key, kinds, column in (("ratio", (int, float), "dedup_removed.dedup_ratio"),
                               ("final_ratio", (int, float), "dedup_notes.ratio"),
                               ("run", (int,), "dedup_removed.dedup_run"),
                               ("phase", (int,), "dedup_removed.dedup_phase")):
        value = why[key]
        if value is not None and (not isinstance(value, kinds) or isinstance(value, bool)):
            raise DedupError(f"explain: {column} of the removed row {why['rowid']!r} must be a "
                             f"{'number' if float in kinds else 'whole number'}, got {str(value)[:60]!r}; "
                             "the database was edited by hand")
    # (A Spark job's survivor in another shard: its note names the shard.)
    why["elsewhere"] = None
    if _one(conn, "SELECT count(*) FROM sqlite_schema WHERE name = 'dedup_notes' AND type = 'table'"):
        note = conn.execute("SELECT note FROM dedup_notes WHERE dedup_run = ? AND dedup_rowid = ? "
                            "AND kind = 'survivor elsewhere' LIMIT 1", (why["run"], why["rowid"])).fetchone()
        why["elsewhere"] = note[0] if note else None
    if why["final_ratio"] is None and why["final_note"] and why["final_survivor"] is not None:
        why["final_ratio"] = _ratio_now(conn, why)
    return why


def _ratio_now(conn, why):
    """The ratio of a drifted removal to its final survivor, measured now
    (the run only knew it was at or below the threshold): the texts phase 4
    compared, as phase 1 makes them (parsed, else title and content, the
    visible text of HTML), without boilerplate stripping. None when it
    cannot be measured here (no extension loaded, renamed columns)."""
    try:
        table, compat, measure, ngram_size, stoplist = conn.execute(
            "SELECT coalesce(json_extract(settings, '$.table'), 'pages'), json_extract(settings, '$.compat'), "
            "json_extract(settings, '$.measure'), coalesce(json_extract(settings, '$.ngram_size'), 5), "
            "coalesce(json_extract(settings, '$.stoplist'), '') FROM dedup_runs WHERE run = ?",
            (why["run"],)).fetchone()
        # (The run's measure: lev_ratio, or its resemblance.)
        measured, extra = (("shingle_resemblance", f", {int(ngram_size)}, ?") if measure == "resemblance"
                           else ("lev_ratio", ""))
        html = ("CASE WHEN ltrim(substr(d.content, 1, 64)) LIKE '<%' AND (instr(d.content, '</') > 0 "
                "OR ltrim(substr(d.content, 1, 64)) LIKE '<!doctype%') THEN html_text(d.content) ELSE d.content END"
                if compat != "reference" else "d.content")
        quoted = _quoted(table)
        return conn.execute(
            f"SELECT {measured}(coalesce(d.parsed, normalize_text(coalesce(d.title, '') || char(10, 10) || {html})), "
            f"p.parsed{extra}) FROM dedup_removed AS d, {quoted} AS p "
            "WHERE d.dedup_rowid = ? AND d.dedup_run = ? AND p.rowid = ?",
            ((stoplist,) if extra else ()) + (why["rowid"], why["run"], why["final_survivor"])).fetchone()[0]
    except Exception:  # an explanation without the figure is still one
        return None


def kept_apart(conn, rowid):
    """Why a kept page was not merged with pages whose URLs differ from its
    own only in a query parameter (a sentence naming the parameter and the
    domain), from the latest run that kept it apart; None otherwise. A
    rowid that is not an int is a TypeError."""
    _connection(conn, "kept_apart")
    if isinstance(rowid, bool) or not isinstance(rowid, int):
        raise TypeError(f"kept_apart: rowid must be an int, got {type(rowid).__name__} {rowid!r}")
    exists = _one(conn, "SELECT count(*) FROM sqlite_schema WHERE name = 'dedup_notes' AND type = 'table'")
    if not exists:
        return None
    row = conn.execute(
        "SELECT note FROM dedup_notes WHERE dedup_rowid = ? AND kind = 'kept apart' ORDER BY dedup_run DESC LIMIT 1",
        (rowid,)).fetchone()
    return row[0] if row else None


def paragraphs(conn, rowid):
    """The paragraphs runs with `paragraphs = 'dedup'` cut from a kept
    page's text (`dedup_paragraphs`), latest run first: a list of dicts with
    run, position (among the page's paragraphs, from 1), length
    (characters), owner (the rowid of the page before it that holds the
    paragraph), owner_url and paragraph (its text); and whether a run kept
    the page whole because pages before it hold each of its paragraphs
    (`kept_whole`: that note, or None). A rowid that is not an int is a
    TypeError."""
    _connection(conn, "paragraphs")
    if isinstance(rowid, bool) or not isinstance(rowid, int):
        raise TypeError(f"paragraphs: rowid must be an int, got {type(rowid).__name__} {rowid!r}")
    names = ("run", "position", "length", "owner", "owner_url", "paragraph")
    cut = []
    if _one(conn, "SELECT count(*) FROM sqlite_schema WHERE name = 'dedup_paragraphs' AND type = 'table'"):
        cut = [dict(zip(names, row)) for row in conn.execute(
            "SELECT dedup_run, position, length, owner, owner_url, paragraph FROM dedup_paragraphs "
            "WHERE dedup_rowid = ? ORDER BY dedup_run DESC, position", (rowid,))]
    whole = None
    if _one(conn, "SELECT count(*) FROM sqlite_schema WHERE name = 'dedup_notes' AND type = 'table'"):
        row = conn.execute("SELECT note FROM dedup_notes WHERE dedup_rowid = ? AND kind = 'paragraphs held' "
                           "ORDER BY dedup_run DESC LIMIT 1", (rowid,)).fetchone()
        whole = row[0] if row else None
    return {"cut": cut, "kept_whole": whole}


def stats(conn):
    """The runs recorded in the database: a list of their reports."""
    _connection(conn, "stats")
    exists = _one(conn, "SELECT count(*) FROM sqlite_schema WHERE name = 'dedup_runs' AND type = 'table'")
    if not exists:
        return []
    runs = []
    for n, f, s, r in conn.execute("SELECT run, finished, settings, report FROM dedup_runs ORDER BY run"):
        if not r:
            runs.append({"run": n, "finished": f})
            continue
        parsed = {}
        for column, text in (("report", r), ("settings", s)):
            try:
                value = json.loads(text) if text is not None else {}
            except (TypeError, ValueError) as e:
                raise DedupError(f"stats: dedup_runs.{column} of run {n!r} must be the JSON this extension "
                                 f"wrote, got {str(text)[:60]!r} ({e}); the database was edited by hand") from None
            if not isinstance(value, dict):
                raise DedupError(f"stats: dedup_runs.{column} of run {n!r} must be a JSON object, got "
                                 f"{str(text)[:60]!r}; the database was edited by hand")
            parsed[column] = value
        removed = parsed["report"].get("removed", {})
        if not isinstance(removed, dict) or not all(
                isinstance(k, str) and isinstance(v, int) and not isinstance(v, bool) for k, v in removed.items()):
            raise DedupError(f"stats: dedup_runs.report of run {n!r} must hold `removed` as an object of phase: "
                             f"count, got {json.dumps(removed)[:60]}; the database was edited by hand")
        for key in ("rows_before", "rows_after"):
            v = parsed["report"].get(key)
            if v is not None and (not isinstance(v, int) or isinstance(v, bool)):
                raise DedupError(f"stats: dedup_runs.report of run {n!r} must hold `{key}` as a count, got "
                                 f"{json.dumps(v)[:60]}; the database was edited by hand")
        runs.append(dict(parsed["report"], finished=f, settings=parsed["settings"]))
    return runs
