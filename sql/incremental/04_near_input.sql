-- An incremental run's phase-4 input: the new rows, and the last run's
-- rows and placeholders within `distance` of a place where the order
-- changed (_dedup_neighbours; see 04_keys.sql), in the order a full run
-- scans them (url, id, placeholder) and ranked as it ranks them (only the
-- order of ranks counts). The others are left out: the last run left no
-- two of its rows near each other within a window, so they meet nothing.
-- For the same reason a pair of the last run's rows is not compared
-- (settled alike: near_dups skips it) unless a row that left the order
-- lay between them (then they came closer): settled is the number of such
-- rows before the row. The runner then marks the settled rows whose text
-- no comparison needs (need = 0: src/sqlite/pipeline/index.rs, prune), by
-- the lengths and histograms of the texts (the index keeps the settled
-- rows'; prune reads them there, and the new rows' from their texts).
DROP TABLE IF EXISTS temp._dedup_near_rows;
CREATE TEMP TABLE _dedup_near_rows AS
  SELECT p.canonical_url AS url, p.source_rowid AS id, 0 AS placeholder, p.domain, p.fill_parsed,
         p.https, CASE WHEN p.category = 'external' THEN 1 ELSE 0 END AS external,
         NULLIF(p.datetime, '') AS datetime, NULLIF(p.crawled, '') AS crawled,
         coalesce(p.length, 0) AS length, NULL AS settled,
         (SELECT dedup_chars(coalesce(p.fill_parsed, s.parsed)) FROM _dedup_source AS s WHERE s.rid = p.source_rowid) AS tlen
  FROM _dedup_exact_winners AS w JOIN _dedup_prepared AS p ON p.source_rowid = w.source_rowid
  WHERE p.has_text AND p.source_rowid IN (SELECT rid FROM _dedup_dirty)
  UNION ALL
  SELECT n.url, n.id, 0, x.domain, NULL, x.https, CASE WHEN x.category = 'external' THEN 1 ELSE 0 END,
         NULLIF(x.datetime, ''), NULLIF(x.crawled, ''), coalesce(x.length, 0), n.settled, x.tlen
  FROM (
    -- (settled: the ghosts before the row, counted in one pass in order)
    SELECT url, id, ghost, sum(ghost) OVER (ORDER BY url, id, ghost DESC ROWS UNBOUNDED PRECEDING) AS settled
    FROM (SELECT url, id, 0 AS ghost FROM _dedup_neighbours WHERE placeholder = 0
          UNION ALL
          SELECT url, id, 1 FROM _dedup_ghosts)
  ) AS n JOIN main.dedup_index AS x ON x.rid = n.id
  WHERE n.ghost = 0
  UNION ALL
  SELECT url, id, 1, NULL, NULL, 0, 1, NULL, NULL, 0, NULL, NULL
  FROM _dedup_neighbours WHERE placeholder = 1;
INSERT INTO _dedup_near_input (pos, id, placeholder, rank, domain, fill_parsed, url, own, settled, tlen)
SELECT row_number() OVER (ORDER BY url, id, placeholder),
       id,
       placeholder,
       row_number() OVER (
         ORDER BY placeholder ASC, external ASC, datetime DESC NULLS LAST,
                  crawled DESC NULLS LAST, length DESC, https DESC, url ASC, id ASC
       ),
       domain, fill_parsed, url, 1 - placeholder, settled, tlen
FROM _dedup_near_rows
WHERE (SELECT threshold FROM _dedup_run) < 1.0;
DROP TABLE temp._dedup_near_rows;
