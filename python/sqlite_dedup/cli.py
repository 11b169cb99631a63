"""The `sqlite-dedup` command: run, restore, explain and stats on a crawl
database, without the sqlite3 shell."""
import argparse
import json
import os
import sqlite3
import sys
import threading

import sqlite_dedup
from sqlite_dedup._options import add_near_mode_options, add_setting_flags, database_problem, given_settings


def connect_to(pairs):
    """A resolver from curl-style `HOST:PORT:HOST2:PORT2` pairs (None
    without any): requests to HOST:PORT connect to HOST2:PORT2."""
    if not pairs:
        return None
    table = {}
    for pair in pairs:
        parts = pair.split(":")
        if len(parts) != 4 or not parts[1].isdigit() or not parts[3].isdigit():
            raise SystemExit(f"sqlite-dedup: --connect-to must be HOST:PORT:HOST2:PORT2, got {pair!r}")
        table[(parts[0].lower(), int(parts[1]))] = (parts[2], int(parts[3]))
    return lambda host, port: table.get((host.lower(), port), (host, port))


def print_probed(found):
    """The answer of a probe, in words."""
    print(f"fix_urls: probed {found['probed']} host(s): {found['https']} answer https, {found['drop_www']} serve "
          f"the same without www.; {found['skipped']} probed before or with nothing to probe "
          "(answers in dedup_url_fixes)")
    if found.get("left"):
        print(f"  {found['left']} host(s) not answered, asked again next time:")
        for note in found["notes"]:
            print(f"    {note}")


def connect(path):
    """A connection with the extension loaded: the standard module if it can
    load extensions, else apsw if installed. Exits with the reason (status 1)
    when neither can load it."""
    conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    try:
        if not hasattr(conn, "enable_load_extension"):
            try:
                import apsw
            except ImportError:  # load() names the fix
                pass
            else:
                conn.close()
                conn = apsw.Connection(path)
        sqlite_dedup.load(conn)
        return conn
    except Exception as e:  # ExtensionLoadError, sqlite3.Error, apsw.Error: the message says why
        print(f"sqlite-dedup: cannot load the extension: {e}", file=sys.stderr)
        raise SystemExit(1) from None


def with_progress(conn, sql, params, out=sys.stderr, every=0.2, draw=True):
    """Runs `sql` on `conn` in a thread while a second connection (same
    process, so the same extension state) reads dedup_progress() and draws
    one line per phase on `out` (when `draw`): the phase, and in the
    near-duplicate scan rows done of total with a time estimate. Ctrl-C
    interrupts the statement (the main thread stays free to see it) and
    raises KeyboardInterrupt once the statement has ended, unless it had
    finished."""
    result = {}

    def work():
        try:
            result["value"] = conn.execute(sql, params).fetchone()[0]
        except BaseException as e:  # reported by the caller
            result["error"] = e

    thread = threading.Thread(target=work)
    thread.start()
    probe = connect(":memory:") if draw else None
    last, width = None, 0

    def line_of(p, finished=False):
        """The display line of a progress state (a finished phase: all rows)."""
        text = f"[{p['step']}/{p['steps']}] {p['phase']}"
        if p["total"]:
            done = p["total"] if finished else p["done"]
            frac = min(done / p["total"], 1.0)
            text += f" [{'#' * int(frac * 20):<20}] {done}/{p['total']} rows"
            if done and not finished:
                left = p["seconds"] * (p["total"] - done) / done
                text += f", {p['seconds']:.0f} s, ~{left:.0f} s left"
            elif finished:
                text += f", {p['seconds']:.0f} s"
        else:
            text += f" {p['seconds']:.0f} s"
        return text

    def draw(text):
        nonlocal width
        out.write("\r" + text.ljust(width))
        width = len(text)
        out.flush()

    while thread.is_alive():
        try:
            thread.join(every)
        except KeyboardInterrupt:
            conn.interrupt()
            thread.join()
            if "value" in result:
                break
            raise
        if probe is None:
            continue
        raw = probe.execute("SELECT dedup_progress()").fetchone()[0]
        if not raw:
            continue
        p = json.loads(raw)
        if last is not None and p["phase"] != last["phase"]:
            # The phase before ended: its line shows every row through.
            draw(line_of(last, finished=True))
            out.write("\n")
            width = 0
        last = p
        draw(line_of(p))
    if last is not None:
        if "value" in result:
            draw(line_of(last, finished=True))
        out.write("\n")
        out.flush()
    if "error" in result:
        raise result["error"]
    return result["value"]


def pages_table(conn, runs):
    """The table of pages and its URL column, as the last of `runs`
    (`sqlite_dedup.stats`) named them (else as `dedup_settings` does; else
    `pages` and `url`)."""
    settings = (runs[-1].get("settings") or {}) if runs else {}
    if not runs:
        try:
            settings = dict(conn.execute("SELECT key, value FROM dedup_settings").fetchall())
        except sqlite3.Error:  # no such table: the defaults
            pass
    columns = settings.get("columns") or {}
    if isinstance(columns, str):
        try:
            columns = json.loads(columns)
        except ValueError:
            columns = {}
    table = settings.get("table") if isinstance(settings.get("table"), str) else "pages"
    url = columns.get("url", "url") if isinstance(columns, dict) else "url"
    return table, url


def print_plan(planned):
    """A plan as the command prints it: the report, then per phase the
    domains that lose most rows and a few examples."""
    print(planned["report"].replace("SELECT dedup_apply() applies it", "sqlite-dedup run applies it"))
    for phase in sorted(planned["removed"]):
        domains = ", ".join(f"{d or '(no domain)'} {n}" for d, n in planned["domains"][phase][:5])
        print(f"phase {phase}: {planned['removed'][phase]} row(s) would go; most from {domains}")
        for e in planned["examples"][phase]:
            kept = f"; kept: rowid {e['survivor']} ({e['survivor_url']})" if e["survivor"] is not None else ""
            print(f"  would remove rowid {e['rowid']} ({e['url']}): {e['reason']}{kept}")


def settings_of(args):
    """The settings the flags give (those not given left out)."""
    flag = lambda name: getattr(args, name, None)  # noqa: E731 (run's own flags)
    return {**given_settings(args), **{k: v for k, v in {
        "near_mode": args.mode, "discard_params": 0 if args.keep_params else None, "prefer": args.prefer,
        "lsh_election": args.lsh_election,
        "fix_urls": True if flag("fix_urls") else None,
        "full": True if flag("full") else None}.items() if v is not None}}


def dedup_file_command(args):
    """`sqlite-dedup dedup SRC -o OUT`: a corpus file through a run (docs/clients/command.md)."""
    from sqlite_dedup._files import FileError, dedup_file
    try:
        fields = json.loads(args.fields) if args.fields else {}
        if not isinstance(fields, dict) or not all(isinstance(v, str) for v in fields.values()):
            raise ValueError("not an object of field names")
    except ValueError as e:
        print(f"sqlite-dedup: --columns must be a JSON object of field names, got {args.fields!r} ({e})",
              file=sys.stderr)
        return 1
    tty = sys.stderr.isatty()

    def say(text):
        sys.stderr.write("\r" + text)
        sys.stderr.flush()

    def run(conn, sql, params):
        if tty:
            sys.stderr.write("\n")
        return with_progress(conn, sql, params, draw=tty)

    try:
        done = dedup_file(connect, args.src, args.output, db=args.db, settings=settings_of(args),
                          fields=fields, run=run, say=say if tty else None)
    except KeyboardInterrupt:
        print("sqlite-dedup: interrupted (Ctrl-C); nothing was written", file=sys.stderr)
        return 130
    except (FileError, OSError) as e:
        print(f"sqlite-dedup: {e}", file=sys.stderr)
        return 1
    except Exception as e:  # the run's error: sqlite3.Error, apsw.Error
        print(f"sqlite-dedup: {e}", file=sys.stderr)
        return 1
    out = sys.stderr if args.output == "-" else sys.stdout
    print(done["report"], file=out)
    print(f"kept {done['kept']} of {done['read']} records in {args.output}"
          + (f"; the run's database: {done['db']}" if done["db"] else ""), file=out)
    return 0


def _excerpt(text, most=80):
    """The first `most` characters of a text on one line, with ... when cut."""
    flat = " ".join(str(text or "").split())
    return flat if len(flat) <= most else flat[:most - 3] + "..."


def main(argv=None):
    """The `sqlite-dedup` command: parses `argv` (default: the process's
    arguments), runs the subcommand named and returns its exit code."""
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["spark"]:
        from sqlite_dedup.spark.cli import main as spark_main
        return spark_main(argv[1:])
    parser = argparse.ArgumentParser(prog="sqlite-dedup", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    # The settings, for run, plan and similar (each as the run reads it);
    # then the flags of run and plan alone.
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("db")
    add_setting_flags(common)
    common.add_argument("--keep-params", action="store_true",
                     help="keep all but tracking query parameters (setting discard_params = 0)")
    add_near_mode_options(common)
    common.add_argument("--prefer", action="append", metavar="TERM",
                     help="an SQL ordering term over the table's columns that decides which copy survives, "
                          "before the built-in rules (repeatable), e.g. \"url LIKE 'https://docs.example.org/%%' DESC\"")
    runs = argparse.ArgumentParser(add_help=False, parents=[common])
    runs.add_argument("--fix-urls", action="store_true",
                      help="probe the hosts not probed yet (as fix-urls does) and canonicalize by their answers: "
                           "http -> https, www. dropped, where the host serves so (setting fix_urls)")
    runs.add_argument("--full", action="store_true",
                      help="compare every row even when only some are new since the last run (docs/incremental.md)")
    runs.add_argument("--dry-run", action="store_true",
                      help="plan the run and print what it would remove, changing nothing (dedup_plan)")
    runs.add_argument("--json", action="store_true", help="print the report as JSON")
    runs.add_argument("--secure-delete", choices=["on", "fast", "off"],
                     help="PRAGMA secure_delete for the run (default: as SQLite was built; Debian: on). "
                          "'fast' makes the writes about a third faster there: freed pages keep their old "
                          "bytes until reused (the removed rows are in dedup_removed anyway)")
    sub.add_parser("run", parents=[runs],
                   help="deduplicate the pages of DB (one transaction; nothing changes on error)")
    sub.add_parser("plan", parents=[runs],
                   help="what a run would remove, per phase and per domain, with examples; changes nothing")
    restore = sub.add_parser("restore", help="undo the latest run")
    restore.add_argument("db")
    restore.add_argument("--all", action="store_true", help="undo every run, latest first")
    restore.add_argument("--busy-timeout", type=int, metavar="MS",
                         help="milliseconds to wait for another connection's lock (default 5000; 0: fail at once)")
    explain = sub.add_parser("explain", help="why a page was removed, and the page it lost to")
    explain.add_argument("db")
    explain.add_argument("page", help="a removed rowid or URL")
    stats = sub.add_parser("stats", help="the runs recorded in DB")
    stats.add_argument("db")
    report = sub.add_parser("report", help="a review page of what the runs removed, as one HTML file")
    report.add_argument("db")
    report.add_argument("-o", "--output", default="report.html", help="the file to write (default report.html)")
    similar = sub.add_parser("similar", parents=[common],
                             help="what the next run would do with a page, before it is stored "
                                  "(dedup_similar; changes nothing; the settings go on top of the last run's)")
    similar.add_argument("url", help="the page's URL")
    similar.add_argument("file", nargs="?", default="-", help="the page's content (HTML or text; default: stdin)")
    similar.add_argument("--title", help="the page's title")
    similar.add_argument("--page", metavar="JSON",
                         help="the page's other columns as a JSON object, e.g. '{\"crawled\": \"2026-12-01\", "
                              "\"category\": \"external\"}' (the pipeline's names or the table's)")
    similar.add_argument("--json", action="store_true", help="print the answer as JSON")
    fix = sub.add_parser("fix-urls", help="probe each host: does https answer, does the host without www. "
                                          "serve the same (kept in dedup_url_fixes; run --fix-urls uses them)")
    fix.add_argument("db")
    fix.add_argument("--table", default="pages", help="the table of pages (default pages)")
    fix.add_argument("--timeout", type=float, default=2.0, help="seconds each request may take (2)")
    fix.add_argument("--workers", type=int, default=8, help="requests in flight at once (8)")
    fix.add_argument("--refresh", action="store_true", help="probe the hosts probed before again")
    fix.add_argument("--connect-to", action="append", default=[], metavar="HOST:PORT:HOST2:PORT2",
                     help="connect to HOST2:PORT2 for requests to HOST:PORT, as curl's option (repeatable)")
    fix.add_argument("--cafile", help="a PEM file of the certificates that verify https (default: the system's)")
    fix.add_argument("--allow-private", action="store_true",
                     help="also probe hosts whose names resolve to loopback, private or reserved addresses")
    fix.add_argument("--max-hosts", type=int, default=1000, help="hosts probed at most (1000); the rest next time")
    fix.add_argument("--deadline", type=float, default=300.0,
                     help="seconds the whole probe may take (300); hosts left then are probed next time")
    files = sub.add_parser("dedup", help="deduplicate a corpus file (JSONL, .jsonl.gz, Parquet) into another, "
                                         "every field of the kept records kept")
    files.add_argument("src", help="the corpus file: .jsonl, .jsonl.gz or .parquet (- : JSONL on stdin)")
    files.add_argument("-o", "--output", required=True, help="the file of kept records, of the same kind (- : stdout)")
    files.add_argument("--db", help="a new SQLite file to run through and keep (review, explain, restore); "
                                    "default: a temporary one, removed")
    files.add_argument("--columns", dest="fields", metavar="JSON",
                       help="the file's fields for the pipeline's names, e.g. '{\"parsed\": \"body\"}' "
                            "(default: the same names; text as parsed when there is no content or parsed)")
    add_setting_flags(files, skip={"table", "against", "columns", "action"})
    files.add_argument("--keep-params", action="store_true",
                       help="keep all but tracking query parameters (setting discard_params = 0)")
    add_near_mode_options(files)
    files.add_argument("--prefer", action="append", metavar="TERM",
                       help="an SQL ordering term over the pipeline's columns deciding which copy survives")
    sub.add_parser("spark", help="the same dedup over many shards on Apache Spark (sqlite-dedup spark run --help)")
    args = parser.parse_args(argv)
    if args.command == "dedup":
        return dedup_file_command(args)
    problem = database_problem(args.db)
    if problem:
        print(f"sqlite-dedup: {problem}", file=sys.stderr)
        return 1
    conn = connect(args.db)
    try:
        if args.command in ("run", "plan"):
            settings = settings_of(args)
            if args.busy_timeout is not None:
                # (The connection's own timeout comes first: Python's is 5 s.)
                sqlite_dedup._lend_busy_timeout(conn, args.busy_timeout)
            if args.secure_delete:
                value = {"on": "1", "off": "0", "fast": "fast"}[args.secure_delete]
                conn.execute(f"PRAGMA secure_delete = {value}")
            if args.fix_urls:
                print_probed(sqlite_dedup.fix_urls(conn, table=args.table or "pages"))
            if args.dry_run or args.command == "plan":
                print_plan(sqlite_dedup.plan(conn, **settings))
                return 0
            sql, params = "SELECT dedup_run(?)", (json.dumps(settings),)
            text = with_progress(conn, sql, params, draw=sys.stderr.isatty())
            if args.json:
                print(json.dumps(json.loads(conn.execute(
                    "SELECT report FROM dedup_runs ORDER BY run DESC LIMIT 1").fetchone()[0]), indent=1))
            else:
                print(text)
        elif args.command == "restore":
            if args.busy_timeout is not None and args.busy_timeout < 0:
                print(f"sqlite-dedup: --busy-timeout must be milliseconds >= 0, got {args.busy_timeout}",
                      file=sys.stderr)
                return 1
            if args.busy_timeout is not None:
                # (dedup_restore takes no settings: a connection without a
                # timeout of its own, 0, would wait the busy_timeout setting's
                # 5 s. 1 ms is the shortest wait it can be lent.)
                sqlite_dedup._lend_busy_timeout(conn, max(args.busy_timeout, 1))
            print(with_progress(conn, "SELECT dedup_restore()", (), draw=False))
            while args.all and conn.execute(
                    "SELECT count(*) FROM sqlite_schema WHERE name = 'dedup_runs'").fetchone()[0]:
                print(with_progress(conn, "SELECT dedup_restore()", (), draw=False))
        elif args.command == "explain":
            page = int(args.page) if args.page.isdigit() else args.page
            why = sqlite_dedup.explain(conn, page)
            if why is None:
                runs = sqlite_dedup.stats(conn)
                table, url = pages_table(conn, runs)
                column = "rowid" if isinstance(page, int) else url
                try:
                    kept = conn.execute(f"SELECT rowid FROM {sqlite_dedup._quoted(table)} WHERE {sqlite_dedup._quoted(column)} = ?",
                                        (page,)).fetchone()
                except sqlite3.Error:  # no such table or column: the message below says enough
                    kept = None
                if kept:
                    print(f"{'rowid' if isinstance(page, int) else 'url'} {args.page}: "
                          f"kept (it is in {table}; no run removed it)")
                    note = sqlite_dedup.kept_apart(conn, kept[0])
                    if note:
                        print(f"  {note}")
                    held = sqlite_dedup.paragraphs(conn, kept[0])
                    for cut in held["cut"]:
                        print(f"  paragraph {cut['position']} ({cut['length']} characters) cut by run {cut['run']}: "
                              f"held by rowid {cut['owner']} ({cut['owner_url']}): "
                              f"{_excerpt(cut['paragraph'])!r}")
                    if held["kept_whole"]:
                        print(f"  {held['kept_whole']}")
                    return 0
                print(f"sqlite-dedup: no page {args.page!r}: not in {table}, and "
                      + ("no run removed it" if runs else "no run is recorded in this database"), file=sys.stderr)
                return 1
            print(f"rowid {why['rowid']} ({why['url']}): removed by run {why['run']}, phase {why['phase']}: "
                  f"{why['reason']}" + (f" (ratio {why['ratio']:.4f})" if why["ratio"] is not None else ""))
            if why["final_survivor"] is not None:
                print(f"lost to: {why['chain']}; kept: rowid {why['final_survivor']} ({why['final_url']})"
                      + (f"; ratio to it {why['final_ratio']:.4f}" if why["final_ratio"] is not None else "")
                      + (f" ({why['final_note']})" if why["final_note"] else ""))
            elif why.get("elsewhere"):
                where = ("another shard of the same Spark job" if why["elsewhere"].startswith("survivor in shard ")
                         else "the database the run was against")
                print(f"lost to: {why['elsewhere']} ({where})")
        elif args.command == "report":
            from sqlite_dedup.review import review_html
            # (The page made first: a failure leaves no file half written.)
            page = review_html(conn, title=f"sqlite-dedup review: {os.path.basename(args.db)}")
            try:
                with open(args.output, "w", encoding="utf-8") as f:
                    f.write(page)
            except OSError as e:
                print(f"sqlite-dedup: cannot write the report to {args.output!r}: {e.strerror or e}",
                      file=sys.stderr)
                return 1
            print(f"wrote {args.output}")
        elif args.command == "fix-urls":
            resolver, context = connect_to(args.connect_to), None
            if args.cafile:
                import ssl
                context = ssl.create_default_context(cafile=args.cafile)
            try:
                print_probed(sqlite_dedup.fix_urls(conn, table=args.table, timeout=args.timeout,
                                                   workers=args.workers, refresh=args.refresh,
                                                   resolver=resolver, context=context,
                                                   allow_private=args.allow_private, max_hosts=args.max_hosts,
                                                   deadline=args.deadline))
            except ValueError as e:
                print(f"sqlite-dedup: {e}", file=sys.stderr)
                return 1
        elif args.command == "similar":
            try:
                if args.file == "-":
                    text = sys.stdin.read()
                else:
                    with open(args.file, encoding="utf-8") as f:
                        text = f.read()
            except (OSError, UnicodeDecodeError) as e:
                print(f"sqlite-dedup: cannot read the page from {args.file!r}: {e}", file=sys.stderr)
                return 1
            page = {}
            if args.page:
                try:
                    page = json.loads(args.page)
                except ValueError as e:
                    print(f"sqlite-dedup: --page must be a JSON object of the page's columns, got {args.page!r:.80} "
                          f"({e})", file=sys.stderr)
                    return 1
                if not isinstance(page, dict):
                    print(f"sqlite-dedup: --page must be a JSON object of the page's columns, got {args.page!r:.80}",
                          file=sys.stderr)
                    return 1
            if args.title:
                page["title"] = args.title
            found = sqlite_dedup.similar(conn, text, args.url, page=page or None, **settings_of(args))
            if args.json:
                print(json.dumps(found, indent=1))
                return 0
            if not found:
                print("new: no stored page decides its fate")
            for m in found:
                ratio = f" (ratio {m['ratio']:.4f})" if m["ratio"] is not None else ""
                if m["survivor"] == "kept":
                    print(f"removed by rowid {m['rowid']} ({m['url']}), phase {m['phase']}: {m['reason']}{ratio}")
                elif m["survivor"] == "new":
                    print(f"would remove rowid {m['rowid']} ({m['url']}), phase {m['phase']}: {m['reason']}{ratio}")
                else:
                    print(f"removed in phase {m['phase']}: {m['reason']}")
        elif args.command == "stats":
            runs = sqlite_dedup.stats(conn)
            if not runs:
                print("no run is recorded in this database")
            for r in runs:
                removed = ", ".join(f"phase {p}: {n}" for p, n in r.get("removed", {}).items())
                print(f"run {r['run']} ({r.get('finished')}): {r.get('rows_before')} -> {r.get('rows_after')} rows"
                      + (f"; {removed}" if removed else ""))
    except KeyboardInterrupt:
        print("sqlite-dedup: interrupted (Ctrl-C); a run or restore left the database as it was", file=sys.stderr)
        return 130
    except Exception as e:  # sqlite3.Error, apsw.Error: the message says what is wrong
        message = str(e)
        if sqlite_dedup.error_code(e) == "no_table":
            message += " (from this command: --table NAME)"
        print(f"sqlite-dedup: {message}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
