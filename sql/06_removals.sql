-- Phase 6: the plan. _dedup_removal lists every row the run removes, with
-- its phase, reason, the row it lost to and the ratio; skipped rows (see
-- 01_canonicalize.sql) are never in it. The runner then applies the plan in
-- one transaction: it archives these rows whole in dedup_removed, deletes
-- them, rewrites the survivors' changed columns (keeping the old values in
-- dedup_rewritten) and records the run in dedup_runs.
DROP TABLE IF EXISTS temp._dedup_removal;
CREATE TEMP TABLE _dedup_removal (
  source_rowid INTEGER PRIMARY KEY, phase INTEGER, reason TEXT, survivor INTEGER, ratio REAL
);
-- (stripped: the rows of phase 4's pairs compared without some chrome.)
WITH stripped(id) AS (
  SELECT p.source_rowid
  FROM _dedup_prepared AS p
  JOIN _dedup_chrome AS c ON c.domain = p.domain
  JOIN _dedup_source AS g ON g.rid = p.source_rowid
  WHERE p.source_rowid IN (SELECT source_rowid FROM _dedup_near_removed UNION SELECT survivor FROM _dedup_near_removed)
    AND strip_segments(g.content, c.hashes) <> g.content
)
INSERT INTO _dedup_removal
SELECT source_rowid, 1 AS phase, discard_reason AS reason, NULL AS survivor, NULL AS ratio
FROM _dedup_prepared WHERE canonical_url IS NULL AND skip_reason IS NULL
UNION ALL
SELECT source_rowid, 2, 'same canonical URL', survivor, NULL
FROM _dedup_url_ranked WHERE survivor <> source_rowid
UNION ALL
SELECT source_rowid, 3, 'same content hash', survivor, NULL
FROM _dedup_content_ranked WHERE survivor <> source_rowid
UNION ALL
SELECT n.source_rowid, 4,
       'near duplicate: lev_ratio above threshold'
         || CASE WHEN EXISTS (SELECT 1 FROM _dedup_chrome)
                  AND (n.source_rowid IN (SELECT id FROM stripped) OR n.survivor IN (SELECT id FROM stripped))
                 THEN ' (boilerplate stripped)' ELSE '' END,
       n.survivor, n.ratio
FROM _dedup_near_removed AS n
UNION ALL
SELECT source_rowid, 5, 'domain ' || quote(domain) || ' has ' || pages || ' page(s), fewer than n_min', NULL, NULL
FROM _dedup_domain_removed;

-- Survivors that share a canonical URL were kept apart by phase 2 (their
-- URLs differ in a parameter that is neither tracking nor learned, and
-- their texts differ): they keep their strict URL, since dropping the
-- parameter would give them one. _dedup_kept_apart counts them by domain
-- and parameter, for the report.
DROP TABLE IF EXISTS temp._dedup_kept_apart;
CREATE TEMP TABLE _dedup_kept_apart (domain TEXT, params TEXT, pages INTEGER);
DROP TABLE IF EXISTS temp._dedup_apart;
CREATE TEMP TABLE _dedup_apart AS
SELECT p.source_rowid, p.domain, p.canonical_url, p.strict_url
FROM _dedup_prepared AS p
WHERE p.strict_url IS NOT NULL AND p.skip_reason IS NULL AND p.canonical_url IS NOT NULL
  AND p.source_rowid NOT IN (SELECT source_rowid FROM _dedup_removal)
  AND p.canonical_url IN (
    SELECT q.canonical_url FROM _dedup_prepared AS q
    WHERE q.strict_url IS NOT NULL AND q.skip_reason IS NULL AND q.canonical_url IS NOT NULL
      AND q.source_rowid NOT IN (SELECT source_rowid FROM _dedup_removal)
    GROUP BY q.canonical_url HAVING count(*) > 1);
-- (A group's parameters: those dropped from any of its pages' URLs.)
INSERT INTO _dedup_kept_apart
SELECT domain, params, sum(pages) FROM (
  SELECT min(a.domain) AS domain, group_concat(DISTINCT nullif(dedup_extra_params(a.strict_url, a.canonical_url), '')) AS params,
         count(*) AS pages
  FROM _dedup_apart AS a GROUP BY a.canonical_url
) GROUP BY domain, params ORDER BY sum(pages) DESC, domain, params;
UPDATE _dedup_prepared SET canonical_url = strict_url
WHERE source_rowid IN (SELECT source_rowid FROM _dedup_apart);
DROP TABLE temp._dedup_apart;

-- Drift, for the report: phase-4 removals whose final survivor in this run
-- (following phase-4 survivors removed in turn) is at or below the
-- threshold. The window scan's election (the reference's) removes a row for
-- its group's best row, which need not be near it; lsh_election = 'direct'
-- never does. A removal for the anchor it was compared with, which then
-- stayed, is near by construction; the others are compared here (lev_ratio
-- with the threshold as cutoff; pairs past its size cap are not counted).
DROP TABLE IF EXISTS temp._dedup_drift;
CREATE TEMP TABLE _dedup_drift (removed INTEGER, final INTEGER);
CREATE INDEX IF NOT EXISTS temp._dedup_near_input_id ON _dedup_near_input (id);
CREATE INDEX IF NOT EXISTS temp._dedup_near_removed_id ON _dedup_near_removed (source_rowid);
WITH RECURSIVE chain(id, at, depth) AS (
  SELECT source_rowid, survivor, 0 FROM _dedup_near_removed
  UNION ALL
  SELECT c.id, n.survivor, c.depth + 1
  FROM chain AS c JOIN _dedup_near_removed AS n ON n.source_rowid = c.at
  WHERE c.depth < 10000
),
last AS (
  SELECT c.id, c.at FROM chain AS c
  WHERE NOT EXISTS (SELECT 1 FROM _dedup_near_removed AS n WHERE n.source_rowid = c.at)
),
texts AS (
  SELECT l.id, l.at,
         (SELECT text FROM _dedup_near_texts WHERE id = l.id) AS a,
         (SELECT text FROM _dedup_near_texts WHERE id = l.at) AS b
  FROM last AS l JOIN _dedup_near_removed AS r ON r.source_rowid = l.id
  WHERE NOT (r.survivor = r.anchor AND l.at = r.anchor)
)
INSERT INTO _dedup_drift
SELECT t.id, t.at FROM texts AS t CROSS JOIN _dedup_run AS s
WHERE t.a IS NOT NULL AND t.b IS NOT NULL
  AND CAST(length(t.a) AS REAL) * length(t.b) <= 1e11
  AND lev_ratio(t.a, t.b, s.threshold) <= s.threshold;
