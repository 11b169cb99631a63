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
-- domain and fill_parsed are copied from _dedup_prepared so that reading a
-- text (by pos, in the scan) looks up pages only, not _dedup_prepared too:
-- on 1M pages a text read costs 17 us through _dedup_prepared, 13 without.
-- (url and own = 1 for the table's rows, not placeholders: for the index
-- of incremental runs, see below.)
CREATE TEMP TABLE _dedup_near_input (pos INTEGER PRIMARY KEY, id INTEGER, placeholder INTEGER, rank INTEGER,
                                     domain TEXT, fill_parsed TEXT, url TEXT, own INTEGER);
WITH live AS (
  SELECT p.canonical_url AS url, p.source_rowid AS id,
         0 AS placeholder, p.domain, p.fill_parsed, p.prefer_rank, p.https,
         CASE WHEN p.category = 'external' THEN 1 ELSE 0 END AS external,
         NULLIF(p.datetime, '') AS datetime, NULLIF(p.crawled, '') AS crawled,
         coalesce(p.length, 0) AS length
  FROM _dedup_exact_winners AS w
  JOIN _dedup_prepared AS p ON p.source_rowid = w.source_rowid
  WHERE p.has_text
),
-- Rows an earlier run removed in phase 4 or 5 (temp._dedup_archive: the
-- runner's view of dedup_removed) keep their window slot (as
-- placeholders, never compared), so a second run sees the windows the first
-- one saw and removes nothing more. (The 'lsh' mode has no windows, so no
-- placeholders.)
archived AS (
  SELECT d.url, d.dedup_rowid, d.dedup_phase, d.content, d.parsed,
         CASE WHEN r.url_rules > 0 AND dedup_invalid_text(d.url, d.content, d.parsed) IS NULL
              THEN r.url_options || coalesce(',tracking+=' || url_rule_params(d.url, r.url_rules), '')
              ELSE r.url_options END AS opts
  FROM _dedup_archive AS d CROSS JOIN _dedup_run AS r
  WHERE d.dedup_phase IN (4, 5) AND r.near_mode = 'window' AND r.threshold < 1.0
),
placeholders AS (
  SELECT canonical_url(d.url, d.opts) AS url, d.dedup_rowid AS id,
         1 AS placeholder, NULL AS domain, NULL AS fill_parsed, 0 AS prefer_rank, 0 AS https, 1 AS external, NULL AS datetime, NULL AS crawled, 0 AS length
  FROM archived AS d
  WHERE dedup_invalid_text(d.url, d.content, d.parsed) IS NULL
    AND (d.parsed <> '' OR (d.parsed IS NULL AND d.content <> ''))
    AND canonical_url(d.url, d.opts) IS NOT NULL
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
       domain, fill_parsed, url, 1 - placeholder
FROM (SELECT * FROM live UNION ALL SELECT * FROM placeholders)
WHERE (SELECT threshold FROM _dedup_run) < 1.0;

-- An incremental run (src/sqlite/pipeline/index.rs) compares only the rows
-- within distance of a dirty one: a row new or changed since the last run,
-- or the first row after one that left this order since (deleted, changed,
-- or removed in phases 2-3 by a new copy: the rows around it came closer).
-- The last run left no two rows near within a window, so the other rows
-- are never in a group; _dedup_near_texts gives them no text (a slot,
-- never compared).
DROP TABLE IF EXISTS temp._dedup_dirty_pos;
CREATE TEMP TABLE _dedup_dirty_pos (pos INTEGER PRIMARY KEY);
INSERT OR IGNORE INTO _dedup_dirty_pos
SELECT i.pos FROM _dedup_near_input AS i
WHERE i.own = 1 AND i.id IN (SELECT rid FROM _dedup_dirty);
-- (Rows that left the order: those gone since the last run, and the last
-- run's rows that phases 2-3 removed now, for a new copy; a clean row's
-- place in the order is its canonical URL, as in the last run.)
DROP TABLE IF EXISTS temp._dedup_ghosts;
CREATE TEMP TABLE _dedup_ghosts (url TEXT, id INTEGER);
INSERT INTO _dedup_ghosts
SELECT pos_url, rid FROM _dedup_gone WHERE pos_url IS NOT NULL
UNION ALL
SELECT p.canonical_url, p.source_rowid
FROM _dedup_prepared AS p
WHERE (SELECT kind FROM _dedup_incremental) = 'incremental'
  AND p.has_text AND p.skip_reason IS NULL AND p.canonical_url IS NOT NULL
  AND p.source_rowid NOT IN (SELECT rid FROM _dedup_dirty)
  AND p.source_rowid NOT IN (SELECT source_rowid FROM _dedup_exact_winners);
INSERT OR IGNORE INTO _dedup_dirty_pos
SELECT next_pos FROM (
  SELECT ghost, min(pos) OVER (ORDER BY url, id, placeholder, ghost DESC
                               ROWS BETWEEN CURRENT ROW AND UNBOUNDED FOLLOWING) AS next_pos
  FROM (SELECT url, placeholder, id, pos, 0 AS ghost FROM _dedup_near_input
        WHERE EXISTS (SELECT 1 FROM _dedup_ghosts)
        UNION ALL
        SELECT url, 0, id, NULL, 1 FROM _dedup_ghosts))
WHERE ghost = 1 AND next_pos IS NOT NULL;
DROP TABLE temp._dedup_ghosts;

-- boilerplate = 'strip': the segments (lines of content, see segments())
-- found in at least boilerplate_min_pages of a domain's rows compared here
-- (distinct URLs and contents) with as many distinct titles, as a JSON array
-- of hashes per domain. Chrome is what a site repeats across its different
-- pages; a paragraph repeated across the versions of one page (one title)
-- is that page's content. (A row without a title counts as its own title.)
DROP TABLE IF EXISTS temp._dedup_chrome;
CREATE TEMP TABLE _dedup_chrome (domain TEXT PRIMARY KEY, segments INTEGER, hashes TEXT);
INSERT INTO _dedup_chrome
SELECT domain, count(*), json_group_array(hash)
FROM (
  SELECT p.domain, s.hash
  FROM _dedup_run AS r
  JOIN _dedup_near_input AS i ON i.placeholder = 0
  JOIN _dedup_prepared AS p ON p.source_rowid = i.id
  JOIN _dedup_source AS g ON g.rid = i.id
  JOIN segments(g.content) AS s
  WHERE r.boilerplate = 'strip' AND p.domain IS NOT NULL AND typeof(g.content) = 'text'
  GROUP BY p.domain, s.hash
  HAVING count(DISTINCT i.id) >= (SELECT boilerplate_min_pages FROM _dedup_run)
     AND count(DISTINCT coalesce(g.title, 'row ' || i.id)) >= (SELECT boilerplate_min_pages FROM _dedup_run)
)
GROUP BY domain;

-- The window mode reads the texts from pages as the scan reaches them ('lsh'
-- copies them first, below). With
-- boilerplate stripped, a row whose content holds some of its domain's
-- chrome is compared as normalize_text(title, blank line, content without
-- those lines), the way parsed is made; other rows as they are.
CREATE TEMP VIEW _dedup_near_texts AS
SELECT i.pos, i.id, i.rank,
       CASE WHEN i.placeholder = 0
                 AND ((SELECT kind FROM _dedup_incremental) = 'full'
                      OR EXISTS (SELECT 1 FROM _dedup_dirty_pos AS d
                                 WHERE d.pos BETWEEN i.pos - (SELECT distance FROM _dedup_run)
                                                 AND i.pos + (SELECT distance FROM _dedup_run))) THEN
         (SELECT coalesce(
                   CASE WHEN c.hashes IS NOT NULL THEN
                     normalize_text(coalesce(g.title, '') || char(10, 10)
                                    || nullif(strip_segments(g.content, c.hashes), g.content))
                   END,
                   i.fill_parsed, g.parsed)
          FROM _dedup_source AS g
          LEFT JOIN _dedup_chrome AS c ON c.domain = i.domain
          WHERE g.rid = i.id)
       END AS text
FROM _dedup_near_input AS i;

-- 'lsh' mode reads a text several times, in an order unrelated to where
-- pages stores it (a candidate may be any later row): the texts are copied
-- once, in scan order, into a compact temp table (no overflow pages, no
-- other columns). On 1M pages a random text read costs 5 us there against
-- 12 us through _dedup_near_texts, and the scan reads 3.3M texts; the copy
-- takes 2.5 s and temp disk as large as the texts (553 MB). Dropped at the
-- end of this phase. (The window mode reads each text once, in order.)
DROP TABLE IF EXISTS temp._dedup_near_copy;
CREATE TEMP TABLE _dedup_near_copy (pos INTEGER PRIMARY KEY, id INTEGER, rank INTEGER, text TEXT);
INSERT INTO _dedup_near_copy
SELECT t.pos, t.id, t.rank, t.text
FROM _dedup_run AS r
JOIN _dedup_near_texts AS t
WHERE r.near_mode = 'lsh' AND r.threshold < 1.0;

-- 'lsh' mode: band keys of every row's signature (char 5-grams,
-- lsh_bands * lsh_rows permutations); rows sharing a band and key are
-- candidates. Only the keys are kept: memory holds the band table, not the
-- texts. near_dups_among groups the rows by shared key and
-- generates each row's candidates as the scan reaches it (a pair sharing
-- several bands is compared once), so the pairs are never all held. With
-- lsh_election = 'direct' it removes a row only for a winner it is verified
-- near, and never removes a winner afterwards: no removed row ends far from
-- its final survivor (the default 'chain' is the window scan's election).
DROP TABLE IF EXISTS temp._dedup_lsh_bands;
CREATE TEMP TABLE _dedup_lsh_bands (band INTEGER, key INTEGER, id INTEGER);
INSERT INTO _dedup_lsh_bands
SELECT b.band, b.key, t.id
FROM _dedup_run AS r
JOIN _dedup_near_copy AS t
JOIN lsh_bands(minhash(t.text, r.lsh_bands * r.lsh_rows, 'char', 5), r.lsh_bands, r.lsh_rows) AS b
WHERE r.near_mode = 'lsh';

DROP TABLE IF EXISTS temp._dedup_near_removed;
CREATE TEMP TABLE _dedup_near_removed AS
SELECT n.id AS source_rowid, n.survivor, n.anchor, n.ratio
FROM _dedup_run AS r, near_dups('_dedup_near_texts', r.threshold, r.distance - 1) AS n
WHERE r.near_mode = 'window'
UNION ALL
SELECT n.id, n.survivor, n.anchor, n.ratio
FROM _dedup_run AS r,
     near_dups_among('_dedup_near_copy', '_dedup_lsh_bands', r.threshold,
                     r.lsh_election) AS n
WHERE r.near_mode = 'lsh';
DROP TABLE temp._dedup_near_copy;
