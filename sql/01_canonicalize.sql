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
-- (LIMIT -1 keeps the subquery a co-routine: each function runs once a row.
-- The texts stop at the second layer: each column a layer passes on is
-- copied, so the last one gets only what it writes.)
WITH checked AS (
  SELECT rid, url, title, content, parsed, content_hash, length, datetime, crawled, category,
         dedup_invalid_text(url, content, parsed) AS problem
  FROM _dedup_todo LIMIT -1
),
src AS (
  SELECT rid, url, datetime, crawled, category, problem, r.url_options, r.strict_options, r.compat,
         CASE WHEN problem IS NULL AND parsed IS NULL AND content <> ''
              THEN normalize_text(coalesce(title, '') || char(10, 10) ||
                   CASE WHEN r.compat <> 'reference' AND is_html(content)
                        THEN CASE WHEN r.boilerplate = 'strip' THEN main_text(content) ELSE html_text(content) END
                        ELSE content END) END AS fill,
         CASE WHEN problem IS NULL AND content_hash IS NULL AND parsed <> '' THEN content_hash(parsed)
              ELSE content_hash END AS given_hash,
         CASE WHEN length IS NULL AND parsed <> '' THEN length(parsed) ELSE length END AS given_length,
         parsed <> '' AS parsed_text,
         CASE WHEN problem IS NULL AND r.url_rules > 0
              THEN coalesce(',tracking+=' || url_rule_params(url, r.url_rules), '')
              ELSE '' END
         || CASE WHEN problem IS NULL AND r.fix_urls
                 THEN coalesce((SELECT f.options FROM _dedup_url_fixes AS f WHERE f.host = url_host(url)), '')
                 ELSE '' END AS learned
  FROM checked CROSS JOIN _dedup_run AS r LIMIT -1
)
INSERT INTO _dedup_prepared
SELECT s.rid,
       s.problem,
       CASE WHEN s.problem IS NULL THEN canonical_url(s.url, s.url_options || s.learned) END,
       CASE WHEN s.problem IS NULL THEN url_domain(s.url, s.url_options || s.learned) END,
       CASE WHEN s.problem IS NULL THEN url_wayback(s.url) END,
       CASE WHEN s.problem IS NOT NULL THEN NULL
            WHEN s.url IS NULL THEN 'unparseable: NULL url'
            ELSE url_discard_reason(s.url, s.url_options || s.learned) END,
       CASE WHEN s.problem IS NOT NULL THEN NULL
            WHEN s.fill IS NOT NULL THEN content_hash(s.fill)
            ELSE s.given_hash END,
       s.datetime,
       s.crawled,
       NULLIF(CASE WHEN s.fill IS NOT NULL THEN length(s.fill) ELSE s.given_length END, 0),
       s.category,
       s.fill,
       coalesce(s.fill <> '', s.parsed_text, 0),
       CASE WHEN s.problem IS NULL AND s.strict_options IS NOT NULL THEN canonical_url(s.url, s.strict_options || s.learned) END,
       s.compat <> 'reference' AND s.problem IS NULL AND s.url LIKE 'https://%',
       coalesce((SELECT f.prefer_rank FROM _dedup_prefer AS f WHERE f.rid = s.rid), 0),
       NULL
FROM src AS s;
-- @rows
CREATE INDEX temp._dedup_prepared_url ON _dedup_prepared (canonical_url);
