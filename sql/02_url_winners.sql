-- Phase 2: one survivor per canonical URL (per strict URL when the run keeps
-- pages apart whose URLs differ in a parameter other than tracking ones:
-- see 01_canonicalize.sql; those with the same text meet in phase 3).
-- Election: the prefer setting's order, then non-external first, newer
-- datetime, newer crawled, longer content (the reference's
-- _ELECTION_ORDER_URL), https, lower source rowid; NULL dates and lengths
-- last. dedup_elected() ranks as first_value(id) OVER (PARTITION BY url ORDER BY
-- the ranking) would, from a sort in memory (faster than SQLite's sorter:
-- benches/results/design-measurements.md, "The election sorts in memory"); _dedup_url_ranked keeps each
-- row's survivor.
DROP VIEW IF EXISTS temp._dedup_url_ballots;
CREATE TEMP VIEW _dedup_url_ballots AS
SELECT source_rowid AS id,
       coalesce(strict_url, canonical_url) AS url,
       prefer_rank,
       CASE WHEN category = 'external' THEN 1 ELSE 0 END AS external,
       datetime, crawled, length, https
FROM _dedup_prepared
WHERE canonical_url IS NOT NULL AND skip_reason IS NULL;
DROP TABLE IF EXISTS temp._dedup_url_ranked;
CREATE TEMP TABLE _dedup_url_ranked AS
SELECT id AS source_rowid, survivor
FROM dedup_elected('_dedup_url_ballots', 'url',
             'prefer_rank, external, datetime DESC, crawled DESC, length DESC, https DESC, id');
DROP VIEW temp._dedup_url_ballots;
