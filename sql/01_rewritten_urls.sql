-- Phase 1 again, for the rows a run rewrote only the URL columns of
-- (url, domain, wayback): what 01_canonicalize.sql's row statement makes
-- of such a row as it now is. The index (src/sqlite/pipeline/incremental/index.rs)
-- runs it after the apply, on temp._dedup_url_only: the _dedup_prepared
-- values from before the rewrite of rows that were not skipped and had no
-- text filled (fill_parsed NULL). Their parsed, content_hash and length
-- columns then hold what phase 1 took from them before (a NULL hash or
-- length was filled with the value phase 1 computed), so only the URL's
-- functions run again, on the new URL, with the options of
-- 01_canonicalize.sql (keep the two equal); the rows' texts are not read.
-- A row the run filled goes through the whole row statement again.
WITH src AS (
  SELECT g.rid, g.url, r.url_options, r.strict_options, r.compat,
         CASE WHEN r.url_rules > 0
              THEN coalesce(',tracking+=' || url_rule_params(g.url, r.url_rules), '')
              ELSE '' END AS learned
  FROM temp._dedup_source AS g CROSS JOIN temp._dedup_run AS r
  WHERE g.rid IN (SELECT source_rowid FROM temp._dedup_url_only) LIMIT -1
),
opted AS (
  SELECT *, url_options || learned AS opts, strict_options || learned AS strict_opts FROM src LIMIT -1
)
INSERT INTO _dedup_prepared
SELECT b.source_rowid,
       NULL,
       canonical_url(s.url, s.opts),
       url_domain(s.url, s.opts),
       url_wayback(s.url),
       CASE WHEN s.url IS NULL THEN 'unparseable: NULL url'
            ELSE url_discard_reason(s.url, s.opts) END,
       b.content_hash,
       b.datetime,
       b.crawled,
       b.length,
       b.category,
       NULL,
       b.has_text,
       CASE WHEN s.strict_opts IS NOT NULL THEN canonical_url(s.url, s.strict_opts) END,
       s.compat <> 'reference' AND s.url LIKE 'https://%',
       b.prefer_rank,
       NULL
FROM opted AS s JOIN temp._dedup_url_only AS b ON b.source_rowid = s.rid;
