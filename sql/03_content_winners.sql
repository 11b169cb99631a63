-- Phase 3: one survivor per content hash among the URL survivors; rows
-- without a hash (archival stubs) pass through.
-- Election: as phase 2, but the shorter canonical URL instead of the longer
-- content (the reference's _ELECTION_ORDER_CONTENT; "https:" counts as long
-- as "http:"); prefer first, https last as there.
DROP VIEW IF EXISTS temp._dedup_content_ballots;
CREATE TEMP VIEW _dedup_content_ballots AS
SELECT p.source_rowid AS id,
       p.content_hash,
       p.prefer_rank,
       CASE WHEN p.category = 'external' THEN 1 ELSE 0 END AS external,
       p.datetime, p.crawled,
       length(p.canonical_url) - p.https AS url_length,
       p.https
-- (The URL survivors as a list, in rowid order: each row of _dedup_prepared
-- then read by a seek forward, not one at random per survivor.)
FROM _dedup_prepared AS p
WHERE p.content_hash IS NOT NULL
  AND p.source_rowid IN (SELECT u.source_rowid FROM _dedup_url_ranked AS u WHERE u.survivor = u.source_rowid);
DROP TABLE IF EXISTS temp._dedup_content_ranked;
CREATE TEMP TABLE _dedup_content_ranked AS
SELECT id AS source_rowid, survivor
FROM dedup_elected('_dedup_content_ballots', 'content_hash',
             'prefer_rank, external, datetime DESC, crawled DESC, url_length, https DESC, id');
DROP VIEW temp._dedup_content_ballots;
-- Survivors of phases 2 and 3, inserted in rowid order (appended to the
-- b-tree, not put between its rows), not looked up per URL survivor
-- (benches/results/design-measurements.md, "Rows inserted in rowid order").
DROP TABLE IF EXISTS temp._dedup_exact_winners;
CREATE TEMP TABLE _dedup_exact_winners (source_rowid INTEGER PRIMARY KEY);
INSERT INTO _dedup_exact_winners
SELECT source_rowid FROM (
SELECT source_rowid FROM _dedup_content_ranked WHERE survivor = source_rowid
UNION ALL
SELECT u.source_rowid
FROM _dedup_url_ranked AS u
WHERE u.survivor = u.source_rowid
  AND u.source_rowid IN (SELECT source_rowid FROM _dedup_prepared WHERE content_hash IS NULL)
) ORDER BY source_rowid;
