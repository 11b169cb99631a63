-- An incremental run in lsh mode, phase 4's rows (the window mode builds
-- them in src/sqlite/pipeline/near_input.rs instead): the new rows, and
-- the last run's rows that share a band and key with one of them, looked
-- up in main.dedup_index_bands (each kept row's band keys).
-- Nothing else can change: the last run left no two rows near (a second
-- run removes nothing), so every pair a full run would find near holds a
-- new row, and a full run's election on the rows these pairs join is this
-- scan's (their order by URL and by rank is the same among fewer rows).
-- The last run's rows are settled (group 0: their pairs are not compared);
-- gone rows and the rows phases 2-3 removed now for a new copy are left
-- out. Writes temp._dedup_near_rows, which incremental/04_near_input.sql
-- ranks, and temp._dedup_lsh_new: the band keys phase 4 pairs the rows by
-- (the new rows' all, computed from their texts; the last run's rows'
-- those a new row shares, read from the index).
INSERT INTO _dedup_lsh_new (band, key, id)
SELECT b.band, b.key, p.source_rowid
FROM _dedup_run AS r
CROSS JOIN _dedup_exact_winners AS w
JOIN _dedup_prepared AS p ON p.source_rowid = w.source_rowid
JOIN _dedup_source AS g ON g.rid = p.source_rowid
JOIN lsh_bands(minhash(coalesce(p.fill_parsed, g.parsed), r.lsh_bands * r.lsh_rows, 'char', 5),
               r.lsh_bands, r.lsh_rows) AS b
WHERE r.near_mode = 'lsh' AND r.threshold < 1.0
  AND p.has_text AND p.source_rowid IN (SELECT rid FROM _dedup_dirty);
INSERT INTO _dedup_near_rows (pos, id, placeholder, slots, settled, tlen, url)
SELECT row_number() OVER (ORDER BY url, id), id, 0, NULL, settled, tlen, url
FROM (
  SELECT p.source_rowid AS id, NULL AS settled, NULL AS tlen, p.canonical_url AS url
  FROM _dedup_run AS r
  CROSS JOIN _dedup_exact_winners AS w
  JOIN _dedup_prepared AS p ON p.source_rowid = w.source_rowid
  WHERE r.near_mode = 'lsh' AND r.threshold < 1.0
    AND p.has_text AND p.source_rowid IN (SELECT rid FROM _dedup_dirty)
  UNION ALL
  SELECT x.rid, 0, x.tlen, x.pos_url
  FROM (SELECT DISTINCT s.rid
        FROM (SELECT DISTINCT band, key FROM _dedup_lsh_new) AS k
        CROSS JOIN main.dedup_index_bands AS s ON s.band = k.band AND s.key = k.key) AS n
  JOIN main.dedup_index AS x ON x.rid = n.rid
  WHERE x.pos_url IS NOT NULL
    AND n.rid NOT IN (SELECT rid FROM _dedup_dirty)
    AND n.rid NOT IN (SELECT rid FROM _dedup_gone)
    AND n.rid NOT IN (SELECT c.rid FROM _dedup_clean AS c
                      WHERE c.rid NOT IN (SELECT source_rowid FROM _dedup_exact_winners))
);
-- (+s.rid: else SQLite looks up every (band, key, rid) of the IN list,
-- keys times rows: 90 s for a 0.1% batch at 1M pages.)
INSERT INTO _dedup_lsh_new (band, key, id)
SELECT s.band, s.key, s.rid
FROM (SELECT DISTINCT band, key FROM _dedup_lsh_new) AS k
CROSS JOIN main.dedup_index_bands AS s ON s.band = k.band AND s.key = k.key
WHERE +s.rid IN (SELECT id FROM _dedup_near_rows WHERE settled IS NOT NULL);
