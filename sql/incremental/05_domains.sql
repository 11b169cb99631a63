-- An incremental run's phase 5: only the domains whose count of kept pages
-- can change (those of the new rows, of the rows gone since, and of the
-- last run's rows removed now) are counted again; the others keep theirs
-- (in dedup_domains), at or above n_min. A domain that falls below n_min
-- loses its rows, the last run's ones (from the index) and the new ones.
DROP TABLE IF EXISTS temp._dedup_domains_touched;
CREATE TEMP TABLE _dedup_domains_touched (domain TEXT);
DROP TABLE IF EXISTS temp._dedup_lost;
-- (the last run's rows that phases 2-4 remove now)
CREATE TEMP TABLE _dedup_lost (rid INTEGER PRIMARY KEY);
INSERT OR IGNORE INTO _dedup_lost
SELECT rid FROM _dedup_clean WHERE rid NOT IN (SELECT source_rowid FROM _dedup_exact_winners)
UNION ALL
SELECT n.source_rowid FROM _dedup_near_removed AS n
WHERE n.source_rowid NOT IN (SELECT rid FROM _dedup_dirty);
INSERT INTO _dedup_domains_touched
SELECT DISTINCT domain FROM (
  SELECT p.domain FROM _dedup_prepared AS p WHERE p.source_rowid IN (SELECT rid FROM _dedup_dirty)
    AND p.source_rowid IN (SELECT source_rowid FROM _dedup_exact_winners)
  UNION ALL
  SELECT x.domain FROM _dedup_gone AS g JOIN main.dedup_index AS x ON x.rid = g.rid
  WHERE x.skip_reason IS NULL
  UNION ALL
  SELECT x.domain FROM _dedup_lost AS l JOIN main.dedup_index AS x ON x.rid = l.rid);
-- The kept rows of the touched domains.
DROP TABLE IF EXISTS temp._dedup_domain_rows;
CREATE TEMP TABLE _dedup_domain_rows AS
SELECT x.rid, x.domain
FROM _dedup_domains_touched AS t JOIN main.dedup_index AS x ON x.domain IS t.domain
WHERE x.skip_reason IS NULL
  AND x.rid NOT IN (SELECT rid FROM _dedup_dirty) AND x.rid NOT IN (SELECT rid FROM _dedup_gone)
  AND x.rid NOT IN (SELECT rid FROM _dedup_lost)
UNION ALL
SELECT p.source_rowid, p.domain
FROM _dedup_exact_winners AS w JOIN _dedup_prepared AS p ON p.source_rowid = w.source_rowid
WHERE p.source_rowid IN (SELECT rid FROM _dedup_dirty)
  AND p.source_rowid NOT IN (SELECT source_rowid FROM _dedup_near_removed);
INSERT INTO _dedup_domain_counts
SELECT domain, count(*) FROM _dedup_domain_rows GROUP BY domain;
INSERT INTO _dedup_domain_removed
SELECT d.rid, c.domain, c.pages
FROM _dedup_domain_rows AS d
JOIN _dedup_domain_counts AS c ON c.domain = d.domain
CROSS JOIN _dedup_run AS r
WHERE c.pages < r.n_min;
DROP TABLE temp._dedup_domain_rows;
-- Phase 6's pages kept apart: the last run's rows sharing a canonical URL
-- with one of its rows removed now in phases 4-5 may be apart no more.
INSERT INTO _dedup_prepared
SELECT x.rid, NULL, x.canonical_url, x.domain, NULL, NULL, x.content_hash, x.datetime, x.crawled,
       x.length, x.category, NULL, x.has_text, x.strict_url, x.https, 0, NULL
FROM main.dedup_index AS x
WHERE x.canonical_url IN (
        SELECT o.canonical_url FROM main.dedup_index AS o
        WHERE o.rid IN (SELECT source_rowid FROM _dedup_near_removed UNION SELECT source_rowid FROM _dedup_domain_removed))
  AND x.skip_reason IS NULL
  AND x.rid NOT IN (SELECT source_rowid FROM _dedup_prepared)
  AND x.rid NOT IN (SELECT rid FROM _dedup_gone);
