-- Phase 4, its input: the rows near_dups scans, in scan order (a full run;
-- an incremental run builds it from the index instead, in
-- sql/incremental/04_near_input.sql). 04b_near_dups.sql scans it.
-- Phase 4: near-duplicates among the survivors, by one of two modes:
--   'window' (default, the reference): each row against the next distance - 1
--            rows in URL order, with near_dups;
--   'lsh':   each row against every later row (URL order) that shares a
--            MinHash LSH band and key with it, with near_dups_among: the same
--            election as an unbounded window, restricted to candidate pairs,
--            each verified by lev_ratio (no false positives).
-- _dedup_near_input (texts joined in by the view _dedup_near_texts) is what near_dups scans: pos = URL order (BINARY),
-- rank = election order (non-external, newer datetime, newer crawled,
-- longer, then earlier in URL order; empty dates count as missing, as in the
-- reference's Python election), after the prefer setting's order and with
-- https before URL order. Skipped when threshold = 1.0.
-- (Survivors share a canonical URL only when phase 2 kept them apart by
-- their strict URLs: then the id orders them.)
-- The reference compares each row with the next distance - 1 rows and merges
-- on ratio > threshold: near_dups takes the number of rows ahead.
DROP VIEW IF EXISTS temp._dedup_near_texts;
DROP TABLE IF EXISTS temp._dedup_near_input;
-- (lsh mode: the band keys an incremental run reads from its index, in
-- src/sqlite/pipeline/incremental/lsh_input.rs; 04b_near_dups.sql computes a full
-- run's.)
DROP TABLE IF EXISTS temp._dedup_lsh_new;
CREATE TEMP TABLE _dedup_lsh_new (band INTEGER, key INTEGER, id INTEGER);
-- (boilerplate = 'strip': each domain's chrome, filled by 04b_chrome.sql.)
DROP TABLE IF EXISTS temp._dedup_chrome;
CREATE TEMP TABLE _dedup_chrome (domain TEXT PRIMARY KEY, segments INTEGER, hashes TEXT);
-- domain and fill_parsed are copied from _dedup_prepared so that reading a
-- text (by pos, in the scan) looks up pages only, not _dedup_prepared too:
-- a fifth less a read (benches/results/design-measurements.md, "Phase 4's input copies domain and fill_parsed").
-- (url and own = 1 for the table's rows, not placeholders: for the index
-- of incremental runs, see below.)
-- settled, tlen, need, slots: NULL in a full run; an incremental run's
-- rows the last run compared already, the length of the text compared, 0
-- for a row no comparison needs, and the window slots a placeholder row
-- stands for (see src/sqlite/pipeline/incremental/near_input.rs).
CREATE TEMP TABLE _dedup_near_input (pos INTEGER PRIMARY KEY, id INTEGER, placeholder INTEGER, rank INTEGER,
                                     domain TEXT, fill_parsed TEXT, url TEXT, own INTEGER, settled INTEGER,
                                     tlen INTEGER, need INTEGER, slots INTEGER);
WITH live AS (
  SELECT p.canonical_url AS url, p.source_rowid AS id,
         0 AS placeholder, p.domain, p.fill_parsed, p.prefer_rank, p.https,
         CASE WHEN p.category = 'external' THEN 1 ELSE 0 END AS external,
         NULLIF(p.datetime, '') AS datetime, NULLIF(p.crawled, '') AS crawled,
         coalesce(p.length, 0) AS length
  -- (_dedup_incremental first, CROSS JOIN: an incremental run reads
  -- nothing here, the placeholders' view over the archive included.)
  FROM _dedup_incremental AS k
  CROSS JOIN _dedup_exact_winners AS w
  JOIN _dedup_prepared AS p ON p.source_rowid = w.source_rowid
  WHERE p.has_text AND k.kind = 'full'
),
-- Rows an earlier run removed in phase 4 or 5 keep their window slot as
-- placeholders (sql/04_placeholders.sql).
placeholders AS (
  SELECT url, id, 1 AS placeholder, NULL AS domain, NULL AS fill_parsed, 0 AS prefer_rank, 0 AS https,
         1 AS external, NULL AS datetime, NULL AS crawled, 0 AS length
  FROM _dedup_incremental AS k CROSS JOIN _dedup_placeholders
  WHERE k.kind = 'full'
)
-- (A placeholder takes the slot its row had when it was live: by url, then
-- id, as live rows; sorting placeholders after the live rows of their URL
-- moved a kept row one slot closer to those before it.)
INSERT INTO _dedup_near_input
SELECT row_number() OVER (ORDER BY url, id, placeholder) AS pos,
       id,
       placeholder,
       row_number() OVER (
         ORDER BY placeholder ASC, prefer_rank ASC, external ASC, datetime DESC NULLS LAST,
                  crawled DESC NULLS LAST, length DESC, https DESC, url ASC, id ASC
       ) AS rank,
       domain, fill_parsed, url, 1 - placeholder, NULL, NULL, NULL, NULL
FROM (SELECT * FROM live UNION ALL SELECT * FROM placeholders)
WHERE (SELECT threshold FROM _dedup_run) < 1.0
  AND (SELECT kind FROM _dedup_incremental) = 'full';
