"""sqlite-utils plugin: the sqlite-dedup functions in every connection
sqlite-utils opens (`sqlite-utils query`, `Database`), and the command
`sqlite-utils dedup crawl.db [options]`."""
import json

import click
import sqlite_dedup
import sqlite_utils


@sqlite_utils.hookimpl
def prepare_connection(conn):
    sqlite_dedup.load(conn)


@sqlite_utils.hookimpl
def register_commands(cli):
    @cli.command(name="dedup")
    @click.argument("path", type=click.Path(exists=True, dir_okay=False))
    @click.option("--threshold", type=float, help="near-duplicate when the measure > threshold (default 0.9; 0.2 with --measure resemblance)")
    @click.option("--measure", type=click.Choice(["levenshtein", "resemblance"]), help="what a pair is measured by: levenshtein (default) or resemblance (word shingles, Text::DeDuper's)")
    @click.option("--ngram-size", type=click.IntRange(1, 64), help="measure resemblance: words a shingle (default 5)")
    @click.option("--stoplist", help="measure resemblance: words left out before shingling, separated by spaces")
    @click.option("--mode", "--near-mode", type=click.Choice(["window", "lsh"]), help="near-duplicate candidates")
    @click.option("--distance", type=int, help="window mode: the reference's distance (50)")
    @click.option("--n-min", type=int, help="drop rows of domains with fewer pages")
    @click.option("--url-options", help="extra canonical_url options, e.g. strip_www,https")
    @click.option("--keep-params", is_flag=True, help="keep all but tracking query parameters (discard_params = 0)")
    @click.option("--lsh-bands", type=int, help="lsh mode: bands of the signature (32)")
    @click.option("--lsh-rows", type=int, help="lsh mode: signature values per band (4)")
    @click.option("--lsh-election", type=click.Choice(["chain", "direct"]), help="lsh mode: 'direct' (default, no drift) or 'chain'")
    @click.option("--boilerplate", type=click.Choice(["keep", "strip"]), help="'strip': compare texts without the lines a site repeats")
    @click.option("--boilerplate-min-pages", type=int, help="'strip': pages of a domain a line must be in to be chrome (5)")
    @click.option("--url-rules", type=float, help="drop parameters learned to never change content with this probability (0: never)")
    @click.option("--table", help="the table of pages (default pages)")
    @click.option("--prefer", multiple=True, help="an SQL ordering term deciding which copy survives (repeatable)")
    @click.option("--compat", type=click.Choice(["reference", "none"]), help="'reference': the reference's behaviour")
    @click.option("--columns", help="the table's columns for the pipeline's names, as JSON: '{\"url\": \"link\"}'")
    @click.option("--lsh-shingles", type=click.Choice(["char", "word"]), help="lsh mode: what the signature's shingles are made of (default char)")
    @click.option("--lsh-shingle-size", type=click.IntRange(1, 64), help="lsh mode: characters or words a shingle (default 5)")
    @click.option("--lsh-sketch", type=click.Choice(["minhash", "oph"]), help="lsh mode: 'oph' makes the signature with one hash a shingle (default minhash)")
    @click.option("--busy-timeout", type=click.IntRange(min=0), help="milliseconds to wait for another connection's lock (default 5000; 0: fail at once)")
    @click.option("--against", help="also compare with another database's pages (a path, read-only); only PATH's pages are removed")
    @click.option("--fix-urls", is_flag=True, help="probe the hosts not probed yet and canonicalize by their answers (http -> https, www. dropped)")
    @click.option("--paragraphs", type=click.Choice(["keep", "dedup"]), help="'dedup': cut from each kept page the paragraphs a page before it holds (default keep)")
    @click.option("--paragraph-min", type=click.IntRange(min=1), help="paragraphs dedup: the fewest characters a paragraph cut has (default 100)")
    @click.option("--action", type=click.Choice(["delete", "label"]), help="'label': delete nothing, write every row's cluster to dedup_clusters")
    @click.option("--full", is_flag=True, help="compare every row, even when only some are new since the last run")
    @click.option("--dry-run", is_flag=True, help="print what a run would remove, per phase and domain; change nothing")
    @click.option("--restore", is_flag=True, help="undo the latest run instead")
    def dedup(path, threshold, measure, ngram_size, stoplist, mode, distance, n_min, url_options, keep_params, lsh_bands, lsh_rows, lsh_election,
              lsh_shingles, lsh_shingle_size, lsh_sketch,
              boilerplate, boilerplate_min_pages, url_rules, table, prefer, compat, columns, busy_timeout, against,
              fix_urls, paragraphs, paragraph_min, action, full, dry_run, restore):
        """Deduplicate the pages of PATH in one transaction (nothing changes on error)."""
        from sqlite_dedup.cli import database_problem
        problem = database_problem(path)  # (a file that is not a database: named, with its path)
        if problem:
            raise click.ClickException(problem)
        try:
            db = sqlite_utils.Database(path)  # (loads the extension: a missing library is an error here)
            if busy_timeout is not None:
                # (dedup_restore takes no settings: lent 0, it would wait the
                # busy_timeout setting's 5 s; 1 ms is the shortest wait.)
                sqlite_dedup._lend_busy_timeout(db.conn, max(busy_timeout, 1) if restore else busy_timeout)
            if restore:
                click.echo(sqlite_dedup.restore(db.conn))
                return
            settings = {k: v for k, v in {"threshold": threshold, "measure": measure, "ngram_size": ngram_size,
                                          "stoplist": stoplist, "near_mode": mode, "distance": distance,
                                          "n_min": n_min, "url_options": url_options,
                                          "discard_params": 0 if keep_params else None,
                                          "lsh_bands": lsh_bands, "lsh_rows": lsh_rows,
                                          "lsh_election": lsh_election, "lsh_shingles": lsh_shingles,
                                          "lsh_shingle_size": lsh_shingle_size, "lsh_sketch": lsh_sketch,
                                          "boilerplate": boilerplate,
                                          "boilerplate_min_pages": boilerplate_min_pages, "url_rules": url_rules,
                                          "table": table, "prefer": list(prefer) or None,
                                          "compat": compat, "columns": columns, "busy_timeout": busy_timeout,
                                          "against": against, "fix_urls": True if fix_urls else None,
                                          "paragraphs": paragraphs, "paragraph_min": paragraph_min,
                                          "action": action, "full": True if full else None}.items() if v is not None}
            if fix_urls:
                from sqlite_dedup.cli import print_probed
                print_probed(sqlite_dedup.fix_urls(db.conn, table=table or "pages"))
            if dry_run:
                from sqlite_dedup.cli import print_plan
                print_plan(sqlite_dedup.plan(db.conn, **settings))
                return
            # (The report says whether the run was incremental, or full and why.)
            click.echo(db.execute("SELECT dedup_run(?)", [json.dumps(settings)]).fetchone()[0])
        except Exception as e:  # the sqlite3 module sqlite-utils uses may be another
            # An ordinary error (nothing to undo, a bad setting, no table):
            # its message, not a traceback. Nothing was changed.
            raise click.ClickException(str(e)) from None
