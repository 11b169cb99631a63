-- Phase 1 again, for the rows a run rewrote only the URL columns of
-- (url, domain, wayback): what 01_canonicalize.sql's row statement makes
-- of such a row as it now is. The index (src/sqlite/pipeline/incremental/index.rs)
-- runs it after the apply, on temp._dedup_url_only: the _dedup_prepared
-- values from before the rewrite of rows that were not skipped and had no
-- text filled (fill_parsed NULL). Their parsed, content_hash and length
-- columns then hold what phase 1 took from them before (a NULL hash or
-- length was filled with the value phase 1 computed), so only the URL's
-- rules run again (dedup_phase1 on the new URL alone, as the run's phase
-- 1 did), and the rows' texts are not read. A row the run filled goes
-- through the whole row statement again.
DROP VIEW IF EXISTS temp._dedup_url_only_rows;
CREATE TEMP VIEW _dedup_url_only_rows AS
SELECT g.rid, g.url, NULL AS title, NULL AS content, NULL AS parsed, NULL AS content_hash,
       NULL AS length, NULL AS datetime, NULL AS crawled, NULL AS category
FROM temp._dedup_source AS g
WHERE g.rid IN (SELECT source_rowid FROM temp._dedup_url_only);
CREATE INDEX temp._dedup_url_only_id ON _dedup_url_only (source_rowid);
INSERT INTO _dedup_prepared
SELECT b.source_rowid, NULL, p.canonical_url, p.domain, p.wayback, p.discard_reason,
       b.content_hash, b.datetime, b.crawled, b.length, b.category, NULL, b.has_text,
       p.strict_url, p.https, b.prefer_rank, NULL
FROM temp._dedup_run AS r
CROSS JOIN dedup_phase1('_dedup_url_only_rows', r.url_options, r.strict_options, r.compat, r.boilerplate,
                        r.url_rules, r.fix_urls) AS p
CROSS JOIN temp._dedup_url_only AS b ON b.source_rowid = p.source_rowid;
DROP VIEW temp._dedup_url_only_rows;
