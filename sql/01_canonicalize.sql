-- Phases 0 and 1: prepare missing text fields and canonicalize every URL.
-- Reads temp._dedup_todo (the rows of temp._dedup_source to prepare: every
-- row, or in an incremental run the new and changed ones; _dedup_source is
-- the pages table with rid = rowid and every optional column, NULL where
-- the table lacks it) and temp._dedup_run (the checked settings), all
-- written by the runner (dedup_run / dedup_plan). The statement between
-- the @rows markers is also what the incremental index runs on rows a run
-- rewrote (src/sqlite/pipeline/incremental/index.rs).
-- _dedup_prepared holds one row per source row. A row whose url, content or
-- parsed is a BLOB or invalid UTF-8 is skipped (skip_reason says why): never
-- compared, never removed. canonical_url is NULL for a row that leaves the
-- pipeline here (discard_reason says why). Rows without parsed text but
-- with content get parsed/content_hash/length computed (fill_parsed is set;
-- content that is HTML gives its visible text, html_text, or with
-- boilerplate = 'strip' main_text (without nav, header, footer, aside), but
-- under compat = 'reference', which compares the markup);
-- has_text notes whether the text phase 4 compares is empty, while the text
-- is at hand (phase 4 then need not read it to know);
-- nothing is written to the user's tables before the runner applies the plan.
-- With the url_rules setting on, each URL's options also drop the
-- parameters dedup_url_rules says never change content on its domain/path
-- (url_rule_params), so those variants meet in phase 2. With fix_urls on,
-- they also take their host's options from temp._dedup_url_fixes (https,
-- strip_www: what a probe found the host serves; see
-- src/sqlite/pipeline/run/url_fixes.rs).
-- strict_url is the canonical URL that keeps every query parameter but the
-- tracking ones and learned rules (set only when the run drops the others:
-- see _dedup_run.strict_options): phase 2 groups by it, so pages whose
-- identity is a parameter (?id=) stay apart unless their texts meet later.
-- https notes an https URL (the last tie-break of every election; 0 under
-- compat = 'reference'); prefer_rank is the row's place in the prefer
-- setting's order (0 without it), first in every election.
DROP TABLE IF EXISTS temp._dedup_prepared;
CREATE TEMP TABLE _dedup_prepared (
  source_rowid   INTEGER PRIMARY KEY,
  skip_reason    TEXT,
  canonical_url  TEXT,
  domain         TEXT,
  wayback        TEXT,
  discard_reason TEXT,
  content_hash   TEXT,
  datetime       TEXT,
  crawled        TEXT,
  length         INTEGER,
  category       TEXT,
  fill_parsed    TEXT,
  has_text       INTEGER, -- parsed (or fill_parsed) is not empty: phase 4 compares only these
  strict_url     TEXT,
  https          INTEGER,
  prefer_rank    INTEGER,
  rewrite_url    TEXT     -- set by phase 6 for pages kept apart: their strict URL
);
-- @rows
-- (The per-row rules are dedup_phase1's, src/core/phase1.rs: the one
-- place they live, which a run made elsewhere (Spark) calls too.)
INSERT INTO _dedup_prepared
SELECT p.source_rowid, p.skip_reason, p.canonical_url, p.domain, p.wayback, p.discard_reason,
       p.content_hash, p.datetime, p.crawled, p.length, p.category, p.fill_parsed, p.has_text,
       p.strict_url, p.https,
       coalesce((SELECT f.prefer_rank FROM _dedup_prefer AS f WHERE f.rid = p.source_rowid), 0),
       NULL
FROM _dedup_run AS r,
     dedup_phase1('_dedup_todo', r.url_options, r.strict_options, r.compat, r.boilerplate,
                  r.url_rules, r.fix_urls) AS p;
-- @rows
CREATE INDEX temp._dedup_prepared_url ON _dedup_prepared (canonical_url);
