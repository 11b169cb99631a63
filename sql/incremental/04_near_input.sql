-- An incremental run's phase-4 input: the rows of _dedup_near_rows
-- (src/sqlite/pipeline/incremental/near_input.rs: the new rows, and the last run's
-- rows and placeholders within `distance` of a place where the order
-- changed, each run of slots no comparison needs as one placeholder row
-- with its count), with what the election and the texts need, ranked as a
-- full run ranks them (only the order of ranks counts: only these rows are
-- compared). A settled row (one of the last run's) from the index, a new
-- row from phase 1 (its prefer_rank: 1 for this table's rows in a plan made
-- on the database `against` names, which is the record; else 0).
INSERT INTO _dedup_near_input (pos, id, placeholder, rank, domain, fill_parsed, url, own, settled, tlen, need, slots)
SELECT pos, id, placeholder,
       row_number() OVER (
         ORDER BY placeholder ASC, prefer_rank ASC, external ASC, datetime DESC NULLS LAST,
                  crawled DESC NULLS LAST, length DESC, https DESC, url ASC, id ASC
       ),
       domain, fill_parsed, url, 1 - placeholder, settled, tlen, NULL, slots
FROM (
  SELECT r.pos, r.id, r.placeholder, r.slots, r.settled, r.tlen, x.pos_url AS url,
         x.domain, NULL AS fill_parsed, x.https, 0 AS prefer_rank,
         CASE WHEN x.category = 'external' THEN 1 ELSE 0 END AS external,
         NULLIF(x.datetime, '') AS datetime, NULLIF(x.crawled, '') AS crawled,
         coalesce(x.length, 0) AS length
  FROM _dedup_near_rows AS r LEFT JOIN main.dedup_index AS x ON x.rid = r.id
  WHERE r.placeholder = 0 AND r.settled IS NOT NULL
  UNION ALL
  SELECT r.pos, r.id, r.placeholder, r.slots, r.settled, r.tlen, r.url,
         p.domain, p.fill_parsed, p.https, coalesce(p.prefer_rank, 0),
         CASE WHEN p.category = 'external' THEN 1 ELSE 0 END,
         NULLIF(p.datetime, ''), NULLIF(p.crawled, ''), coalesce(p.length, 0)
  FROM _dedup_near_rows AS r LEFT JOIN _dedup_prepared AS p ON p.source_rowid = r.id
  WHERE r.placeholder = 0 AND r.settled IS NULL
  UNION ALL
  SELECT pos, id, 1, slots, NULL, NULL, NULL, NULL, NULL, 0, 0, 1, NULL, NULL, 0
  FROM _dedup_near_rows WHERE placeholder = 1
);
-- (Emptied, not dropped: a plan may run under a statement that reads, as
-- dedup_similar's table form does, and SQLite drops no table then.)
DELETE FROM temp._dedup_near_rows;
