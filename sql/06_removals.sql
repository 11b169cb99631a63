-- Phase 6: the plan. _dedup_removal lists every row the run removes, with
-- its phase, reason, the row it lost to and the ratio; skipped rows (see
-- 01_canonicalize.sql) are never in it. The runner then applies the plan in
-- one transaction: it archives these rows whole in dedup_removed, deletes
-- them, rewrites the survivors' changed columns (keeping the old values in
-- dedup_rewritten) and records the run in dedup_runs.
DROP TABLE IF EXISTS temp._dedup_removal;
CREATE TEMP TABLE _dedup_removal (
  source_rowid INTEGER PRIMARY KEY, phase INTEGER, reason TEXT, survivor INTEGER, ratio REAL
);
-- (stripped: the rows of phase 4's pairs compared without some chrome.)
WITH stripped(id) AS (
  SELECT p.source_rowid
  FROM _dedup_prepared AS p
  JOIN _dedup_chrome AS c ON c.domain = p.domain
  JOIN _dedup_pages AS g ON g.rid = p.source_rowid
  WHERE p.source_rowid IN (SELECT source_rowid FROM _dedup_near_removed UNION SELECT survivor FROM _dedup_near_removed)
    AND strip_segments(g.content, c.hashes) <> g.content
)
-- (Inserted in rowid order: appended to the table's b-tree, not put
-- between its rows: benches/results/design-measurements.md, "Rows inserted in rowid order".)
INSERT INTO _dedup_removal
SELECT * FROM (
SELECT source_rowid, 1 AS phase, discard_reason AS reason, NULL AS survivor, NULL AS ratio
FROM _dedup_prepared WHERE canonical_url IS NULL AND skip_reason IS NULL
UNION ALL
SELECT source_rowid, 2, 'same canonical URL', survivor, NULL
FROM _dedup_url_ranked WHERE survivor <> source_rowid
UNION ALL
SELECT source_rowid, 3, 'same content hash', survivor, NULL
FROM _dedup_content_ranked WHERE survivor <> source_rowid
UNION ALL
SELECT n.source_rowid, 4,
       'near duplicate: '
         || CASE (SELECT measure FROM _dedup_run) WHEN 'resemblance' THEN 'resemblance' ELSE 'lev_ratio' END
         || ' above threshold'
         || CASE WHEN EXISTS (SELECT 1 FROM _dedup_chrome)
                  AND (n.source_rowid IN (SELECT id FROM stripped) OR n.survivor IN (SELECT id FROM stripped))
                 THEN ' (boilerplate stripped)' ELSE '' END,
       n.survivor, n.ratio
FROM _dedup_near_removed AS n
UNION ALL
SELECT source_rowid, 5, 'domain ' || quote(domain) || ' has ' || pages || ' page(s), fewer than n_min', NULL, NULL
FROM _dedup_domain_removed
) ORDER BY source_rowid;

-- Survivors that share a canonical URL were kept apart by phase 2 (their
-- URLs differ in a parameter that is neither tracking nor learned, and
-- their texts differ): they keep their strict URL, since dropping the
-- parameter would give them one. _dedup_kept_apart counts them by domain
-- and parameter, for the report.
DROP TABLE IF EXISTS temp._dedup_kept_apart;
CREATE TEMP TABLE _dedup_kept_apart (domain TEXT, params TEXT, pages INTEGER);
DROP TABLE IF EXISTS temp._dedup_apart;
DROP TABLE IF EXISTS temp._dedup_apart_all;
-- Phase 2 left one survivor per URL key, coalesce(strict_url,
-- canonical_url), so a canonical URL two survivors share is the canonical
-- URL of a survivor whose strict URL differs from it (a few rows): the
-- groups are counted among those URLs only, each looked up by
-- _dedup_prepared_url (benches/results/design-measurements.md, "Kept-apart groups among few URLs"). An
-- incremental run prepares only some rows: the index's other kept rows
-- of such URLs come from temp._dedup_index_apart (empty in a full run).
CREATE TEMP TABLE _dedup_apart_all AS
WITH survivors AS (
  SELECT p.source_rowid, p.domain, p.canonical_url, p.strict_url FROM _dedup_prepared AS p
  WHERE p.strict_url IS NOT NULL AND p.skip_reason IS NULL AND p.canonical_url IS NOT NULL
    AND p.source_rowid NOT IN (SELECT source_rowid FROM _dedup_removal)
), others AS (
  SELECT k.source_rowid, k.domain, k.canonical_url, k.strict_url FROM _dedup_index_apart AS k
  WHERE k.source_rowid NOT IN (SELECT source_rowid FROM _dedup_prepared)
    AND k.source_rowid NOT IN (SELECT source_rowid FROM _dedup_removal)
), urls AS (
  SELECT s.canonical_url FROM _dedup_prepared AS s
  WHERE s.strict_url IS NOT s.canonical_url AND s.strict_url IS NOT NULL
    AND s.skip_reason IS NULL AND s.canonical_url IS NOT NULL
    AND s.source_rowid NOT IN (SELECT source_rowid FROM _dedup_removal)
  UNION SELECT canonical_url FROM others WHERE strict_url IS NOT canonical_url
)
SELECT * FROM survivors WHERE canonical_url IN (SELECT canonical_url FROM urls)
UNION ALL
SELECT * FROM others WHERE canonical_url IN (SELECT canonical_url FROM urls);
CREATE TEMP TABLE _dedup_apart AS
SELECT * FROM _dedup_apart_all
WHERE canonical_url IN (SELECT canonical_url FROM _dedup_apart_all GROUP BY canonical_url HAVING count(*) > 1);
-- (Emptied, not dropped: a plan may run under a statement that reads, as
-- dedup_similar's table form does, and SQLite drops no table then.)
DELETE FROM temp._dedup_apart_all;
-- (A group's parameters: those dropped from its pages' URLs whose values
-- differ between them, each once. Its pages: the table's own, not those of
-- the database the run is against.)
INSERT INTO _dedup_kept_apart
SELECT domain, params, sum(pages) FROM (
  SELECT min(a.domain) AS domain, nullif(dedup_differing_params(a.strict_url, a.canonical_url), '') AS params,
         sum(a.source_rowid NOT IN (SELECT rid FROM _dedup_against)) AS pages
  FROM _dedup_apart AS a GROUP BY a.canonical_url
) WHERE pages > 0 GROUP BY domain, params ORDER BY sum(pages) DESC, domain, params;
-- Each kept-apart page's note, for explain (kept in dedup_notes).
DROP TABLE IF EXISTS temp._dedup_notes;
CREATE TEMP TABLE _dedup_notes (rowid_ INTEGER, kind TEXT, other INTEGER, ratio REAL, note TEXT);
INSERT INTO _dedup_notes
SELECT a.source_rowid, 'kept apart', NULL, NULL,
       'kept apart from ' || (g.pages - 1) || ' other page(s) that share the URL ' || a.canonical_url
       || ' without ' || CASE WHEN instr(g.params, ',') THEN 'parameters ' ELSE 'parameter ' END
       || '`' || replace(coalesce(g.params, '?'), ',', '`, `') || '`'
       || ': their texts differ, so the parameter changes content on ' || coalesce(a.domain, 'this site')
FROM _dedup_apart AS a
JOIN (SELECT canonical_url, count(*) AS pages,
             nullif(dedup_differing_params(strict_url, canonical_url), '') AS params
      FROM _dedup_apart GROUP BY canonical_url) AS g ON g.canonical_url = a.canonical_url;
UPDATE _dedup_prepared SET rewrite_url = strict_url
WHERE source_rowid IN (SELECT source_rowid FROM _dedup_apart);
DELETE FROM temp._dedup_apart;

-- Each phase-4 removal's final survivor in this run (following phase-4
-- survivors removed in turn) and its ratio to it, for explain (kept in
-- dedup_notes) and drift: the removals whose final survivor is at or below
-- the threshold. The window scan's election (the reference's) removes a row
-- for its group's best row, which need not be near it; lsh_election =
-- 'direct' never does. A removal for the anchor it was compared with, which
-- then stayed, has that pair's ratio; the others are compared here with the
-- threshold as cutoff (lev_ratio's banded kernel; or the run's resemblance,
-- measure = 'resemblance'): the ratio when above it,
-- else 0.0, kept as NULL with below = 1. (The exact ratio of those pairs
-- would take the unbanded kernel, many times slower: benches/results/design-measurements.md, "Final ratios
-- with the banded kernel".) Pairs past the size cap get no ratio.
DROP TABLE IF EXISTS temp._dedup_final;
CREATE TEMP TABLE _dedup_final (removed INTEGER PRIMARY KEY, final INTEGER, ratio REAL, below INTEGER);
DROP TABLE IF EXISTS temp._dedup_drift;
CREATE TEMP TABLE _dedup_drift (removed INTEGER, final INTEGER);
CREATE INDEX IF NOT EXISTS temp._dedup_near_input_id ON _dedup_near_input (id);
CREATE INDEX IF NOT EXISTS temp._dedup_near_removed_id ON _dedup_near_removed (source_rowid);
WITH RECURSIVE chain(id, at, depth) AS (
  SELECT source_rowid, survivor, 0 FROM _dedup_near_removed
  UNION ALL
  SELECT c.id, n.survivor, c.depth + 1
  FROM chain AS c JOIN _dedup_near_removed AS n ON n.source_rowid = c.at
  WHERE c.depth < 10000
),
last AS (
  SELECT c.id, c.at FROM chain AS c
  WHERE NOT EXISTS (SELECT 1 FROM _dedup_near_removed AS n WHERE n.source_rowid = c.at)
)
INSERT INTO _dedup_final
SELECT id, at, nullif(ratio, 0.0), ratio = 0.0 FROM (
  SELECT l.id, l.at,
         CASE WHEN r.survivor = r.anchor AND l.at = r.anchor THEN r.ratio
              ELSE (SELECT CASE s.measure
                             WHEN 'resemblance' THEN
                               (SELECT CASE WHEN x > s.threshold THEN x ELSE 0.0 END
                                FROM (SELECT shingle_resemblance(a.text, b.text, s.ngram_size, s.stoplist) AS x))
                             ELSE lev_ratio(a.text, b.text, s.threshold) END
                    FROM _dedup_near_texts AS a, _dedup_near_texts AS b, _dedup_run AS s
                    WHERE a.id = l.id AND b.id = l.at
                      AND CAST(length(a.text) AS REAL) * length(b.text) <= 1e11) END AS ratio
  -- (In rowid order: the texts are read, and the rows inserted, in the
  -- order the tables keep them: benches/results/design-measurements.md, "Rows inserted in rowid order".)
  FROM last AS l JOIN _dedup_near_removed AS r ON r.source_rowid = l.id ORDER BY l.id);
INSERT INTO _dedup_drift
SELECT f.removed, f.final FROM _dedup_final AS f CROSS JOIN _dedup_run AS s
WHERE f.below OR f.ratio <= s.threshold;
INSERT INTO _dedup_notes
SELECT f.removed, 'final', f.final, f.ratio,
       CASE WHEN f.below THEN 'at or below the threshold ' || s.threshold || ' (not measured further)' END
FROM _dedup_final AS f CROSS JOIN _dedup_run AS s WHERE f.final IS NOT NULL;
