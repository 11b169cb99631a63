-- An incremental run (src/sqlite/pipeline/incremental/run_kind.rs), after phase 1: phase 1
-- prepared only the new and changed rows (temp._dedup_dirty). The rows of
-- the last run's table that they can meet join them here, from the index
-- (main.dedup_index, phase 1's values of each row): those with the same
-- URL key (phase 2) or content hash (phase 3) as a new row, and, for phase
-- 6's pages kept apart, those sharing a canonical URL with a new row, with
-- a row gone since, or with one of these. The last run left one row per URL
-- key and per hash, so the other rows' groups hold them alone: unchanged.
DROP TABLE IF EXISTS temp._dedup_clean;
CREATE TEMP TABLE _dedup_clean (rid INTEGER PRIMARY KEY);
INSERT OR IGNORE INTO _dedup_clean
-- (A URL key is the canonical URL but where the strict URL differs, which
-- only dedup_index_strict holds: two lookups, each by an index. The other
-- rows are found by their canonical URL's and content hash's 8-byte keys,
-- url_key and hash_key, dedup_fingerprint of the text, in _dedup_index_keys
-- (src/sqlite/pipeline/incremental/index_keys.rs): a lookup matches the key, then the
-- row's key, which an entry of a row that left no longer has, then the
-- text. CROSS JOIN: the small temp tables first, then the keys.)
SELECT x.rid FROM _dedup_prepared AS p
CROSS JOIN _dedup_index_keys AS k ON k.key = dedup_fingerprint(coalesce(p.strict_url, p.canonical_url))
CROSS JOIN main.dedup_index AS x ON x.rid = k.rid AND x.url_key = k.key
  AND x.canonical_url = coalesce(p.strict_url, p.canonical_url)
WHERE p.canonical_url IS NOT NULL AND p.skip_reason IS NULL
  AND (x.strict_url IS NULL OR x.strict_url = x.canonical_url)
UNION ALL
SELECT x.rid FROM _dedup_prepared AS p
JOIN main.dedup_index AS x ON x.strict_url = coalesce(p.strict_url, p.canonical_url)
WHERE p.canonical_url IS NOT NULL AND p.skip_reason IS NULL
  AND x.strict_url IS NOT x.canonical_url
UNION ALL
SELECT x.rid FROM _dedup_prepared AS p
CROSS JOIN _dedup_index_keys AS k ON k.key = dedup_fingerprint(p.content_hash)
CROSS JOIN main.dedup_index AS x ON x.rid = k.rid AND x.hash_key = k.key
  AND x.content_hash = p.content_hash
WHERE p.content_hash IS NOT NULL AND p.canonical_url IS NOT NULL AND p.skip_reason IS NULL
UNION ALL
SELECT x.rid FROM _dedup_prepared AS p
CROSS JOIN _dedup_index_keys AS k ON k.key = dedup_fingerprint(p.canonical_url)
CROSS JOIN main.dedup_index AS x ON x.rid = k.rid AND x.url_key = k.key
  AND x.canonical_url = p.canonical_url
WHERE p.canonical_url IS NOT NULL AND p.skip_reason IS NULL
UNION ALL
SELECT x.rid FROM _dedup_gone AS g
CROSS JOIN main.dedup_index AS o ON o.rid = g.rid
CROSS JOIN _dedup_index_keys AS k ON k.key = o.url_key
CROSS JOIN main.dedup_index AS x ON x.rid = k.rid AND x.url_key = k.key AND x.canonical_url = o.canonical_url;
INSERT OR IGNORE INTO _dedup_clean
-- (CROSS JOIN: the small temp tables first, else SQLite may scan the
-- index's canonical URLs whole.)
SELECT x.rid FROM _dedup_clean AS c
CROSS JOIN main.dedup_index AS o ON o.rid = c.rid
CROSS JOIN _dedup_index_keys AS k ON k.key = o.url_key
CROSS JOIN main.dedup_index AS x ON x.rid = k.rid AND x.url_key = k.key AND x.canonical_url = o.canonical_url;
-- (Each row looked up by its rowid: an IN over the index's skipped rows
-- would read the whole index: benches/results/design-measurements.md, "Clean rows looked up by rowid".)
DELETE FROM _dedup_clean
WHERE rid IN (SELECT rid FROM _dedup_dirty) OR rid IN (SELECT rid FROM _dedup_gone)
   OR EXISTS (SELECT 1 FROM main.dedup_index AS x
              WHERE x.rid = _dedup_clean.rid AND (x.skip_reason IS NOT NULL OR x.canonical_url IS NULL));
INSERT INTO _dedup_prepared
SELECT x.rid, NULL, x.canonical_url, x.domain, NULL, NULL, x.content_hash, x.datetime, x.crawled,
       x.length, x.category, NULL, x.has_text, x.strict_url, x.https, 0, NULL
FROM _dedup_clean AS c JOIN main.dedup_index AS x ON x.rid = c.rid;
