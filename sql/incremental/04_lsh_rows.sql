-- An incremental run in lsh mode, phase 4's rows (the window mode builds
-- them in src/sqlite/pipeline/near_input.rs instead): the new rows, and
-- the last run's rows that share a band key with one of them, looked up in
-- main.dedup_index_bands (each kept row's band keys, masked to 31 bits: a
-- masked key shared by chance only adds a row that meets no new row).
-- Nothing else can change: the last run left no two rows near (a second
-- run removes nothing), so every pair a full run would find near holds a
-- new row, and a full run's election on the rows these pairs join is this
-- scan's (their order by URL and by rank is the same among fewer rows).
-- The last run's rows are settled (group 0); gone rows and the rows phases
-- 2-3 removed now for a new copy are left out. Writes
-- temp._dedup_near_rows, which incremental/04_near_input.sql ranks.
DROP TABLE IF EXISTS temp._dedup_lsh_keys;
CREATE TEMP TABLE _dedup_lsh_keys (bk INTEGER PRIMARY KEY);
INSERT OR IGNORE INTO _dedup_lsh_keys
SELECT b.key & 2147483647
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
  FROM (SELECT DISTINCT s.rid FROM _dedup_lsh_keys AS k
        JOIN main.dedup_index_bands AS s ON s.bk = k.bk) AS n
  JOIN main.dedup_index AS x ON x.rid = n.rid
  WHERE x.pos_url IS NOT NULL
    AND n.rid NOT IN (SELECT rid FROM _dedup_dirty)
    AND n.rid NOT IN (SELECT rid FROM _dedup_gone)
    AND n.rid NOT IN (SELECT c.rid FROM _dedup_clean AS c
                      WHERE c.rid NOT IN (SELECT source_rowid FROM _dedup_exact_winners))
);
DROP TABLE temp._dedup_lsh_keys;
