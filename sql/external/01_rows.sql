-- Each row as a run made elsewhere reads it (dedup_prepare; `sqlite-dedup
-- spark` elects over many shards at once): phase 1's values, the keys of
-- every election as dedup_sort_key values (BLOBs whose byte order is
-- SQLite's order of the values, so that another engine sorts them as the
-- phase scripts do), the prefer setting's key (first in every election,
-- NULL without the setting: src/sqlite/pipeline/run/prefer.rs), the text
-- phase 4 compares, and phase 4's placeholders
-- (placeholder = 1: url and rid only; kept in a table here, so that reading
-- the view in batches of rids, as dedup_rows_arrow does, canonicalizes each
-- archived URL once, under the run's URL rules).
DROP TABLE IF EXISTS temp._dedup_rows_placeholders;
CREATE TEMP TABLE _dedup_rows_placeholders AS
SELECT h.id, h.url
FROM _dedup_placeholders AS h, _dedup_range AS r
-- (the rowid range of dedup_prepare, when a task prepares part of the table)
WHERE (r.lo IS NULL OR h.id >= r.lo) AND (r.hi IS NULL OR h.id < r.hi);
CREATE INDEX temp._dedup_rows_placeholders_id ON _dedup_rows_placeholders (id);
DROP VIEW IF EXISTS temp._dedup_rows;
CREATE TEMP VIEW _dedup_rows AS
SELECT p.source_rowid AS rid,
       0 AS placeholder,
       p.skip_reason,
       p.discard_reason,
       p.canonical_url,
       coalesce(p.strict_url, p.canonical_url) AS url_key,
       p.strict_url,
       CASE WHEN p.strict_url IS NOT NULL THEN dedup_extra_params(p.strict_url, p.canonical_url) END AS extra_params,
       p.domain,
       quote(p.content_hash) AS hash_key,
       p.content_hash IS NOT NULL AS has_hash,
       CASE WHEN p.category = 'external' THEN 1 ELSE 0 END AS external,
       p.https,
       dedup_sort_key(p.datetime) AS datetime_key,
       dedup_sort_key(p.crawled) AS crawled_key,
       dedup_sort_key(p.length) AS length_key,
       length(p.canonical_url) - p.https AS url_length,
       dedup_sort_key(NULLIF(p.datetime, '')) AS datetime4_key,
       dedup_sort_key(NULLIF(p.crawled, '')) AS crawled4_key,
       dedup_sort_key(coalesce(p.length, 0)) AS length4_key,
       (SELECT f.prefer_key FROM _dedup_prefer AS f WHERE f.rid = p.source_rowid) AS prefer_key,
       -- (boilerplate = 'strip': what 04b_near_dups.sql counts of a row to
       -- find its domain's chrome, the title as it counts them and the
       -- distinct hashes of the content's segments, comma-separated)
       CASE WHEN r.boilerplate = 'strip' THEN quote(coalesce(g.title, 'row ' || p.source_rowid)) END AS title_key,
       CASE WHEN r.boilerplate = 'strip' AND p.domain IS NOT NULL AND typeof(g.content) = 'text'
            THEN (SELECT group_concat(DISTINCT s.hash) FROM segments(g.content) AS s) END AS segments,
       p.has_text,
       CASE WHEN p.has_text AND p.skip_reason IS NULL AND p.canonical_url IS NOT NULL
            THEN coalesce(p.fill_parsed, g.parsed) END AS text
FROM _dedup_prepared AS p
JOIN _dedup_source AS g ON g.rid = p.source_rowid
CROSS JOIN _dedup_run AS r
UNION ALL
SELECT h.id, 1, NULL, NULL, h.url, NULL, NULL, NULL, NULL, NULL, 0, 1, 0,
       NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, 0, NULL
FROM _dedup_rows_placeholders AS h;
