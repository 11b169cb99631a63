-- An incremental run, before phase 4: where the scan order changed since
-- the last run. _dedup_ghosts: the last run's rows that left the order
-- (gone or changed since, or removed now in phases 2-3 for a new row), at
-- the place they had. _dedup_keys: those places and the new rows' own.
-- The runner then takes the `distance` rows of the last run's order
-- (main.dedup_index_order) on each side of each key
-- (src/sqlite/pipeline/incremental/near_input.rs).
DROP TABLE IF EXISTS temp._dedup_ghosts;
CREATE TEMP TABLE _dedup_ghosts (url TEXT, id INTEGER, PRIMARY KEY (url, id));
INSERT OR IGNORE INTO _dedup_ghosts
SELECT pos_url, rid FROM _dedup_gone WHERE pos_url IS NOT NULL
UNION ALL
SELECT x.pos_url, x.rid FROM _dedup_clean AS c JOIN main.dedup_index AS x ON x.rid = c.rid
WHERE x.pos_url IS NOT NULL AND c.rid NOT IN (SELECT source_rowid FROM _dedup_exact_winners);
DROP TABLE IF EXISTS temp._dedup_keys;
CREATE TEMP TABLE _dedup_keys (url TEXT, id INTEGER, PRIMARY KEY (url, id));
INSERT OR IGNORE INTO _dedup_keys
SELECT url, id FROM _dedup_ghosts
UNION ALL
SELECT p.canonical_url, p.source_rowid
FROM _dedup_exact_winners AS w JOIN _dedup_prepared AS p ON p.source_rowid = w.source_rowid
WHERE p.has_text AND p.source_rowid IN (SELECT rid FROM _dedup_dirty)
  AND (SELECT threshold FROM _dedup_run) < 1.0;
