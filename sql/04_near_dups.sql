-- Phase 4: near-duplicates in a window of the URL-sorted survivors.
-- _dedup_near_input is what near_dups scans: pos = URL order (BINARY),
-- rank = election order (non-external, newer datetime, newer crawled,
-- longer, then earlier in URL order; empty dates count as missing, as in the
-- reference's Python election). Skipped when threshold = 1.0.
-- The reference compares each row with the next distance - 1 rows and merges
-- on ratio > threshold: near_dups takes the number of rows ahead.
DROP TABLE IF EXISTS temp._dedup_near_input;
CREATE TEMP TABLE _dedup_near_input (pos INTEGER PRIMARY KEY, id INTEGER, text TEXT, rank INTEGER);
INSERT INTO _dedup_near_input
SELECT row_number() OVER (ORDER BY p.canonical_url) AS pos,
       p.source_rowid AS id,
       coalesce(p.fill_parsed, g.parsed) AS text,
       row_number() OVER (
         ORDER BY CASE WHEN p.category = 'external' THEN 1 ELSE 0 END ASC,
                  NULLIF(p.datetime, '') DESC NULLS LAST,
                  NULLIF(p.crawled, '') DESC NULLS LAST,
                  coalesce(p.length, 0) DESC,
                  p.canonical_url ASC
       ) AS rank
FROM _dedup_exact_winners AS w
JOIN _dedup_prepared AS p ON p.source_rowid = w.source_rowid
JOIN pages AS g ON g.rowid = w.source_rowid
CROSS JOIN _dedup_run AS r
WHERE coalesce(p.fill_parsed, g.parsed) <> ''
  AND r.threshold < 1.0;

DROP TABLE IF EXISTS temp._dedup_near_removed;
CREATE TEMP TABLE _dedup_near_removed AS
SELECT n.id AS source_rowid, n.survivor, n.anchor, n.ratio
FROM _dedup_run AS r, near_dups('_dedup_near_input', r.threshold, r.distance - 1) AS n;
