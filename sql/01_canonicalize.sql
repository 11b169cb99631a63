-- Phases 0 and 1: prepare missing text fields and canonicalize every URL.
-- _dedup_prepared holds one row per pages row. canonical_url is NULL for a
-- row that leaves the pipeline here (discard_reason says why). Rows without
-- parsed text but with content get parsed/content_hash/length computed
-- (fill_parsed is set); pages is only written in the last phase.
DROP TABLE IF EXISTS temp._dedup_prepared;
CREATE TEMP TABLE _dedup_prepared (
  source_rowid   INTEGER PRIMARY KEY,
  canonical_url  TEXT,
  domain         TEXT,
  wayback        TEXT,
  discard_reason TEXT,
  content_hash   TEXT,
  datetime       TEXT,
  crawled        TEXT,
  length         INTEGER,
  category       TEXT,
  fill_parsed    TEXT
);
WITH src AS (
  SELECT rowid AS rid, url, parsed, content_hash, length, datetime, crawled, category,
         CASE WHEN parsed IS NULL AND content <> ''
              THEN normalize_text(coalesce(title, '') || char(10, 10) || content) END AS fill
  FROM pages
)
INSERT INTO _dedup_prepared
SELECT s.rid,
       canonical_url(s.url, r.url_options),
       url_domain(s.url, r.url_options),
       url_wayback(s.url),
       CASE WHEN s.url IS NULL THEN 'unparseable: NULL url'
            ELSE url_discard_reason(s.url, r.url_options) END,
       CASE WHEN s.fill IS NOT NULL THEN content_hash(s.fill)
            WHEN s.content_hash IS NULL AND s.parsed <> '' THEN content_hash(s.parsed)
            ELSE s.content_hash END,
       s.datetime,
       s.crawled,
       NULLIF(CASE WHEN s.fill IS NOT NULL THEN length(s.fill)
                   WHEN s.length IS NULL AND s.parsed <> '' THEN length(s.parsed)
                   ELSE s.length END, 0),
       s.category,
       s.fill
FROM src AS s CROSS JOIN _dedup_run AS r;
CREATE INDEX temp._dedup_prepared_url ON _dedup_prepared (canonical_url);
