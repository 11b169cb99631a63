-- Phase 4: the scan of _dedup_near_input (04a_near_input.sql), by the mode
-- the settings name (see there).
-- The window mode reads the texts from pages as the scan reaches them ('lsh'
-- copies them first, below); near_dups skips the pairs of rows settled
-- alike (an incremental run's, see sql/incremental/04_near_input.sql). With
-- boilerplate stripped, a row whose content holds some of its domain's
-- chrome is compared as normalize_text(title, blank line, content without
-- those lines), the way parsed is made; other rows as they are.
DROP VIEW IF EXISTS temp._dedup_near_texts;
CREATE TEMP VIEW _dedup_near_texts AS
SELECT i.pos, i.id, i.rank,
       i.settled, i.slots,
       CASE WHEN i.placeholder = 0 AND i.need IS NOT 0 THEN
         (SELECT coalesce(
                   CASE WHEN c.hashes IS NOT NULL THEN
                     normalize_text(coalesce(g.title, '') || char(10, 10)
                                    || nullif(strip_segments(g.content, c.hashes), g.content))
                   END,
                   i.fill_parsed, g.parsed,
                   -- (an incremental run's settled rows, in a table without
                   -- parsed: their text as phase 1 makes it)
                   CASE WHEN i.settled IS NOT NULL AND g.content <> '' THEN
                     normalize_text(coalesce(g.title, '') || char(10, 10) ||
                       CASE WHEN (SELECT compat FROM _dedup_run) <> 'reference' AND is_html(g.content)
                            THEN html_text(g.content) ELSE g.content END)
                   END)
          -- (The row is the table's or, with against, the other
          -- database's: a seek in each; a join on the union view would
          -- read all of it for every row.)
          FROM (SELECT title, content, parsed FROM _dedup_source WHERE rid = i.id
                UNION ALL
                SELECT title, content, parsed FROM _dedup_against WHERE rid = i.id) AS g
          LEFT JOIN _dedup_chrome AS c ON c.domain = i.domain)
       END AS text
FROM _dedup_near_input AS i;

-- 'lsh' mode reads a text several times, in an order unrelated to where
-- pages stores it (a candidate may be any later row): the texts are copied
-- once, in scan order, into a compact temp table (no overflow pages, no
-- other columns): a random read there costs less than half of one through
-- _dedup_near_texts, and the scan reads each text several times; the copy
-- takes temp disk as large as the texts (benches/results/design-measurements.md, "lsh mode copies the
-- texts"). Dropped at the
-- end of this phase. (The window mode reads each text once, in order.)
DROP TABLE IF EXISTS temp._dedup_near_copy;
-- (settled: an incremental run's rows of the last run, known apart from
-- each other: see src/sqlite/pipeline/incremental/lsh_input.rs.)
CREATE TEMP TABLE _dedup_near_copy (pos INTEGER PRIMARY KEY, id INTEGER, rank INTEGER, text TEXT, settled INTEGER);
INSERT INTO _dedup_near_copy
SELECT t.pos, t.id, t.rank, t.text, t.settled
FROM _dedup_run AS r
JOIN _dedup_near_texts AS t
WHERE r.near_mode = 'lsh' AND r.threshold < 1.0;

-- 'lsh' mode: band keys of every row's signature (minhash, or minhash_oph
-- under lsh_sketch = 'oph'; char 5-grams, or the shingles lsh_shingles names: under measure = 'resemblance' its own word
-- shingles without its stoplist; lsh_bands * lsh_rows permutations); rows sharing a band and key are
-- candidates. A full run keeps each row's keys in one blob (lsh_keys), one
-- row a text; an incremental run's keys are band rows in _dedup_lsh_new
-- already, the last run's rows holding only the keys they share with a new
-- one (see src/sqlite/pipeline/incremental/lsh_input.rs). Only the keys are kept: memory holds the keys, not the
-- texts. near_dups_among groups the rows by shared key and
-- generates each row's candidates as the scan reaches it (a pair sharing
-- several bands is compared once), so the pairs are never all held. With
-- lsh_election = 'direct' it removes a row only for a winner it is verified
-- near, and never removes a winner afterwards: no removed row ends far from
-- its final survivor (the default 'chain' is the window scan's election).
-- (The incremental index takes a full run's keys from _dedup_lsh_keys and an
-- incremental run's from _dedup_lsh_bands: src/sqlite/pipeline/incremental/index_bands.rs.)
DROP TABLE IF EXISTS temp._dedup_lsh_keys;
CREATE TEMP TABLE _dedup_lsh_keys (id INTEGER PRIMARY KEY, keys BLOB);
INSERT INTO _dedup_lsh_keys
SELECT t.id,
       lsh_keys(CASE r.lsh_sketch
                  WHEN 'oph' THEN minhash_oph(t.text, r.lsh_bands * r.lsh_rows, r.lsh_shingles, r.lsh_shingle_size, nullif(r.stoplist, ''))
                  ELSE minhash(t.text, r.lsh_bands * r.lsh_rows, r.lsh_shingles, r.lsh_shingle_size, nullif(r.stoplist, ''))
                END,
                r.lsh_bands, r.lsh_rows)
FROM _dedup_run AS r
CROSS JOIN _dedup_incremental AS k
JOIN _dedup_near_copy AS t
WHERE r.near_mode = 'lsh' AND k.kind = 'full';
DROP TABLE IF EXISTS temp._dedup_lsh_bands;
CREATE TEMP TABLE _dedup_lsh_bands (band INTEGER, key INTEGER, id INTEGER);
INSERT INTO _dedup_lsh_bands SELECT band, key, id FROM _dedup_lsh_new;

DROP TABLE IF EXISTS temp._dedup_near_removed;
CREATE TEMP TABLE _dedup_near_removed AS
SELECT n.id AS source_rowid, n.survivor, n.anchor, n.ratio
FROM _dedup_run AS r, near_dups('_dedup_near_texts', r.threshold, r.distance - 1, r.measure_spec) AS n
WHERE r.near_mode = 'window'
UNION ALL
SELECT n.id, n.survivor, n.anchor, n.ratio
FROM _dedup_run AS r,
     _dedup_incremental AS k,
     near_dups_among('_dedup_near_copy',
                     CASE k.kind WHEN 'full' THEN '_dedup_lsh_keys' ELSE '_dedup_lsh_bands' END,
                     r.threshold, r.lsh_election, r.measure_spec) AS n
WHERE r.near_mode = 'lsh';
-- (Emptied, not dropped: a plan may run under a statement that reads, as
-- dedup_similar's table form does, and SQLite drops no table then.)
DELETE FROM temp._dedup_near_copy;
