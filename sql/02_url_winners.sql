-- Phase 2: one survivor per canonical URL.
-- Election: non-external first, newer datetime, newer crawled, longer
-- content, lower source rowid (the reference's _ELECTION_ORDER_URL).
DROP TABLE IF EXISTS temp._dedup_url_ranked;
CREATE TEMP TABLE _dedup_url_ranked AS
SELECT source_rowid,
       first_value(source_rowid) OVER w AS survivor
-- NOT INDEXED: one sort of the rows beats walking the canonical_url index
-- and looking up each row (0.25 s against 0.30 s at 100k pages).
FROM _dedup_prepared NOT INDEXED
WHERE canonical_url IS NOT NULL AND skip_reason IS NULL
WINDOW w AS (
  PARTITION BY canonical_url
  ORDER BY CASE WHEN category = 'external' THEN 1 ELSE 0 END ASC,
           datetime DESC NULLS LAST,
           crawled DESC NULLS LAST,
           length DESC NULLS LAST,
           source_rowid ASC
);
