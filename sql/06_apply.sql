-- Phase 6: archive every removed row whole, then rewrite pages in place.
-- _dedup_removal reads every phase's table: if any phase failed, it does not
-- exist and none of the statements below can touch pages.
DROP TABLE IF EXISTS temp._dedup_removal;
CREATE TEMP TABLE _dedup_removal AS
SELECT source_rowid, 1 AS phase, discard_reason AS reason, NULL AS survivor, NULL AS ratio
FROM _dedup_prepared WHERE canonical_url IS NULL
UNION ALL
SELECT source_rowid, 2, 'same canonical URL', survivor, NULL
FROM _dedup_url_ranked WHERE survivor <> source_rowid
UNION ALL
SELECT source_rowid, 3, 'same content hash', survivor, NULL
FROM _dedup_content_ranked WHERE survivor <> source_rowid
UNION ALL
SELECT source_rowid, 4, 'near duplicate: lev_ratio above threshold', survivor, ratio
FROM _dedup_near_removed
UNION ALL
SELECT source_rowid, 5, 'domain ' || quote(domain) || ' has ' || pages || ' page(s), fewer than n_min', NULL, NULL
FROM _dedup_domain_removed;

INSERT INTO dedup_removed
SELECT g.rowid, r.run, x.phase, x.reason, x.survivor, x.ratio, g.*
FROM _dedup_removal AS x
JOIN pages AS g ON g.rowid = x.source_rowid
CROSS JOIN _dedup_run AS r;

-- dedup_rewritten: the original values of the survivors' rewritten columns.
CREATE TABLE IF NOT EXISTS dedup_rewritten (
  dedup_run INTEGER, dedup_rowid INTEGER,
  url TEXT, domain TEXT, wayback TEXT, parsed_was_null INTEGER, content_hash TEXT, length INTEGER
);
INSERT INTO dedup_rewritten
SELECT r.run, g.rowid, g.url, g.domain, g.wayback, g.parsed IS NULL, g.content_hash, g.length
FROM pages AS g
JOIN _dedup_prepared AS p ON p.source_rowid = g.rowid
CROSS JOIN _dedup_run AS r
WHERE g.rowid NOT IN (SELECT source_rowid FROM _dedup_removal)
  AND (g.url IS NOT p.canonical_url OR g.domain IS NOT p.domain
       OR (p.wayback IS NOT NULL AND g.wayback IS NOT p.wayback) OR p.fill_parsed IS NOT NULL
       OR (g.content_hash IS NULL AND p.content_hash IS NOT NULL)
       OR (g.length IS NULL AND p.length IS NOT NULL));

-- Gate: every removed row is archived, or nothing below runs.
DROP TABLE IF EXISTS temp._dedup_archived;
CREATE TEMP TABLE _dedup_archived AS
SELECT dedup_require(
         (SELECT count(*) FROM dedup_removed WHERE dedup_run = r.run) = (SELECT count(*) FROM _dedup_removal),
         'dedup: could not archive the removed rows in dedup_removed, got '
         || (SELECT count(*) FROM dedup_removed WHERE dedup_run = r.run) || ' of '
         || (SELECT count(*) FROM _dedup_removal)
         || ' (did the pages schema change since dedup_removed was created?)') AS ok
FROM _dedup_run AS r;

UPDATE pages
SET url = p.canonical_url,
    domain = p.domain,
    wayback = coalesce(p.wayback, pages.wayback),
    parsed = coalesce(p.fill_parsed, pages.parsed),
    content_hash = coalesce(pages.content_hash, p.content_hash),
    length = coalesce(pages.length, p.length)
FROM _dedup_prepared AS p
WHERE p.source_rowid = pages.rowid
  AND pages.rowid NOT IN (SELECT source_rowid FROM _dedup_removal)
  -- Only rows that change: rewriting a row rewrites its whole text.
  AND (pages.url IS NOT p.canonical_url OR pages.domain IS NOT p.domain
       OR (p.wayback IS NOT NULL AND pages.wayback IS NOT p.wayback) OR p.fill_parsed IS NOT NULL
       OR (pages.content_hash IS NULL AND p.content_hash IS NOT NULL)
       OR (pages.length IS NULL AND p.length IS NOT NULL))
  AND EXISTS (SELECT 1 FROM _dedup_archived);

DELETE FROM pages
WHERE rowid IN (SELECT source_rowid FROM _dedup_removal)
  AND EXISTS (SELECT 1 FROM _dedup_archived);

CREATE TABLE IF NOT EXISTS dedup_domains (domain TEXT PRIMARY KEY, pages INTEGER);
DELETE FROM dedup_domains WHERE EXISTS (SELECT 1 FROM _dedup_archived);
INSERT INTO dedup_domains
SELECT c.domain, c.pages
FROM _dedup_domain_counts AS c CROSS JOIN _dedup_run AS r
WHERE (c.pages >= r.n_min OR c.domain IS NULL) AND EXISTS (SELECT 1 FROM _dedup_archived);

INSERT INTO dedup_runs (run, finished, rows_before, rows_after, settings)
SELECT r.run, datetime('now'), r.rows_before, (SELECT count(*) FROM pages),
       json_object('threshold', r.threshold, 'distance', r.distance,
                   'discard_params', r.discard_params, 'n_min', r.n_min, 'url_options', r.url_options,
                   'near_mode', r.near_mode, 'lsh_bands', r.lsh_bands, 'lsh_rows', r.lsh_rows)
FROM _dedup_run AS r
WHERE EXISTS (SELECT 1 FROM _dedup_archived);

-- Report: what this run removed, by phase.
SELECT 'run ' || r.run || ': ' || r.rows_before || ' rows -> ' || (SELECT count(*) FROM pages) || ' rows' AS report
FROM _dedup_run AS r
UNION ALL
SELECT '  phase ' || phase || ' (' || CASE phase WHEN 1 THEN 'URL ignored/unparseable' WHEN 2 THEN 'same canonical URL'
       WHEN 3 THEN 'same content hash' WHEN 4 THEN 'near duplicate' ELSE 'small domain' END
       || '): ' || count(*) || ' removed'
FROM (SELECT phase FROM _dedup_removal) GROUP BY phase;

DROP TABLE IF EXISTS temp._dedup_archived;
DROP TABLE IF EXISTS temp._dedup_removal;
DROP TABLE IF EXISTS temp._dedup_domain_removed;
DROP TABLE IF EXISTS temp._dedup_domain_counts;
DROP TABLE IF EXISTS temp._dedup_near_removed;
DROP VIEW IF EXISTS temp._dedup_lsh_pairs;
DROP TABLE IF EXISTS temp._dedup_lsh_bands;
DROP VIEW IF EXISTS temp._dedup_near_texts;
DROP TABLE IF EXISTS temp._dedup_near_input;
DROP TABLE IF EXISTS temp._dedup_exact_winners;
DROP TABLE IF EXISTS temp._dedup_content_ranked;
DROP TABLE IF EXISTS temp._dedup_url_ranked;
DROP TABLE IF EXISTS temp._dedup_prepared;
DROP TABLE IF EXISTS temp._dedup_run;
DROP TABLE IF EXISTS temp._dedup_check;
