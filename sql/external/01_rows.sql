-- Each row as a run made elsewhere reads it (dedup_prepare; `sqlite-dedup
-- spark` elects over many shards at once): phase 1's values, the prefer
-- setting's key (first in every election, NULL without the setting:
-- src/sqlite/pipeline/run/prefer.rs), what chrome counting counts of it,
-- and phase 4's placeholders. dedup_rows_arrow adds the keys of every
-- election (src/sqlite/pipeline/external.rs, push_row: the one place they
-- are made, for pages that arrive as Arrow batches too)
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
       p.strict_url,
       p.domain,
       p.content_hash,
       p.category,
       p.https,
       p.datetime,
       p.crawled,
       p.length,
       (SELECT f.prefer_key FROM _dedup_prefer AS f WHERE f.rid = p.source_rowid) AS prefer_key,
       -- (boilerplate = 'strip': what 04b_near_dups.sql counts of a row to
       -- find its domain's chrome, the title as it counts them and the
       -- distinct hashes of the content's segments, comma-separated)
       CASE WHEN r.boilerplate = 'strip' THEN quote(coalesce(g.title, 'row ' || p.source_rowid)) END AS title_key,
       CASE WHEN r.boilerplate = 'strip' AND p.domain IS NOT NULL AND typeof(g.content) = 'text'
            THEN (SELECT group_concat(DISTINCT s.hash) FROM segments(g.content) AS s) END AS segments,
       p.has_text,
       p.fill_parsed,
       g.parsed
FROM _dedup_prepared AS p
JOIN _dedup_source AS g ON g.rid = p.source_rowid
CROSS JOIN _dedup_run AS r
UNION ALL
SELECT h.id, 1, NULL, NULL, h.url, NULL, NULL, NULL, NULL, 0,
       NULL, NULL, NULL, NULL, NULL, NULL, 0, NULL, NULL
FROM _dedup_rows_placeholders AS h;
