-- Phase 0a: settings and input checks.
-- Settings live in dedup_settings (key, value), created empty on first run;
-- a key it does not set takes its default. Set them before running, e.g.
--   INSERT OR REPLACE INTO dedup_settings VALUES ('threshold', 0.85);
-- Keys and defaults:
--   threshold      0.9  near-duplicate when lev_ratio > threshold; 1.0 skips phase 4
--   distance       50   reference meaning: compare each row with the next distance - 1 rows
--   near_mode      'window'  phase 4 compares rows within distance in URL order (the
--                       reference); 'lsh': any two rows of the table that share a
--                       MinHash LSH band key (char 5-grams), verified by lev_ratio
--   lsh_bands      32   'lsh' mode: bands of the signature (num_perm = bands * rows)
--   lsh_rows       4    'lsh' mode: signature values per band
--   discard_params 1    1: keep only lang/v query parameters; 0: keep all but tracking ones
--   n_min          0    drop rows of domains with fewer surviving pages (0: keep all)
--   url_options    ''   extra canonical_url options, e.g. 'strip_www,https'
-- Every later statement reads temp._dedup_run: when a check here fails,
-- that table does not exist and nothing after it can change the database.
-- Input checks first: a missing table or column is reported before anything
-- else runs.
DROP TABLE IF EXISTS temp._dedup_check;
CREATE TEMP TABLE _dedup_check AS
WITH required(name) AS (
  VALUES ('url'), ('domain'), ('title'), ('content'), ('parsed'), ('length'),
         ('content_hash'), ('datetime'), ('crawled'), ('category'), ('wayback')
),
missing AS (
  SELECT group_concat(name, ', ') AS names FROM required
  WHERE name NOT IN (SELECT lower(name) FROM pragma_table_info('pages'))
)
SELECT dedup_require(
         pages_exists AND names IS NULL,
         CASE WHEN NOT pages_exists THEN 'dedup: table pages not found, got none in this database'
              ELSE 'dedup: pages lacks required column(s), got none named ' || names
                   || ' (add them, e.g. ALTER TABLE pages ADD COLUMN crawled TEXT)' END) AS ok
FROM (SELECT EXISTS (SELECT 1 FROM sqlite_schema WHERE type = 'table' AND name = 'pages') AS pages_exists,
             names FROM missing);

CREATE TABLE IF NOT EXISTS dedup_settings (key TEXT PRIMARY KEY, value);
-- One row per completed run.
CREATE TABLE IF NOT EXISTS dedup_runs (
  run INTEGER PRIMARY KEY,
  finished TEXT,
  rows_before INTEGER,
  rows_after INTEGER,
  settings TEXT
);

-- Rows removed by the runs: every pages column, with why (see 06_apply.sql).
CREATE TABLE IF NOT EXISTS dedup_removed AS
SELECT 0 AS dedup_rowid, 0 AS dedup_run, 0 AS dedup_phase, '' AS dedup_reason,
       0 AS dedup_survivor, 0.0 AS dedup_ratio, *
FROM pages WHERE 0;

DROP TABLE IF EXISTS temp._dedup_run;
CREATE TEMP TABLE _dedup_run AS
WITH s AS (
  SELECT
    -- Defaults apply to the keys the table does not set.
    coalesce((SELECT value FROM dedup_settings WHERE key = 'threshold'), 0.9) AS threshold,
    coalesce((SELECT value FROM dedup_settings WHERE key = 'distance'), 50) AS distance,
    coalesce((SELECT value FROM dedup_settings WHERE key = 'discard_params'), 1) AS discard_params,
    coalesce((SELECT value FROM dedup_settings WHERE key = 'n_min'), 0) AS n_min,
    coalesce((SELECT value FROM dedup_settings WHERE key = 'url_options'), '') AS url_options,
    coalesce((SELECT value FROM dedup_settings WHERE key = 'near_mode'), 'window') AS near_mode,
    coalesce((SELECT value FROM dedup_settings WHERE key = 'lsh_bands'), 32) AS lsh_bands,
    coalesce((SELECT value FROM dedup_settings WHERE key = 'lsh_rows'), 4) AS lsh_rows
)
SELECT
  coalesce((SELECT max(run) FROM dedup_runs), 0) + 1 AS run,
  (SELECT count(*) FROM pages) AS rows_before,
  threshold, CAST(distance AS INTEGER) AS distance, discard_params, CAST(n_min AS INTEGER) AS n_min,
  CASE WHEN discard_params THEN '' ELSE 'keep_params,' END || coalesce(url_options, '') AS url_options,
  near_mode, lsh_bands, lsh_rows
FROM s, _dedup_check
WHERE dedup_require(NOT EXISTS (SELECT 1 FROM dedup_settings WHERE key NOT IN
        ('threshold', 'distance', 'discard_params', 'n_min', 'url_options', 'near_mode', 'lsh_bands', 'lsh_rows')),
        'dedup: unknown setting in dedup_settings, got '
        || (SELECT group_concat(quote(key)) FROM dedup_settings WHERE key NOT IN
        ('threshold', 'distance', 'discard_params', 'n_min', 'url_options', 'near_mode', 'lsh_bands', 'lsh_rows')))
  AND dedup_require(typeof(threshold) IN ('integer', 'real') AND threshold BETWEEN 0.0 AND 1.0,
        'dedup: threshold must be in [0.0, 1.0], got ' || quote(threshold))
  AND dedup_require(typeof(distance) = 'integer' AND distance >= 1,
        'dedup: distance must be an integer >= 1 (rows compared: distance - 1), got ' || quote(distance))
  AND dedup_require(discard_params IN (0, 1),
        'dedup: discard_params must be 0 or 1, got ' || quote(discard_params))
  AND dedup_require(typeof(n_min) = 'integer' AND n_min >= 0,
        'dedup: n_min must be a non-negative integer, got ' || quote(n_min))
  AND dedup_require(url_options IS NULL OR typeof(url_options) = 'text',
        'dedup: url_options must be text, got ' || quote(url_options))
  AND dedup_require(near_mode IN ('window', 'lsh'),
        'dedup: near_mode must be ''window'' or ''lsh'', got ' || quote(near_mode))
  AND dedup_require(typeof(lsh_bands) = 'integer' AND typeof(lsh_rows) = 'integer'
                    AND lsh_bands >= 1 AND lsh_rows >= 1 AND lsh_bands * lsh_rows <= 4096,
        'dedup: lsh_bands and lsh_rows must be integers >= 1 with lsh_bands * lsh_rows <= 4096, got '
        || quote(lsh_bands) || ' and ' || quote(lsh_rows))
  -- Rejects unknown canonical_url options before any work.
  AND canonical_url('http://x.org', CASE WHEN discard_params THEN '' ELSE 'keep_params,' END
        || coalesce(url_options, '')) IS NOT NULL;
