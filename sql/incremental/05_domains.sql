-- An incremental run's phase 5: only the domains whose count of kept pages
-- can change (those of the new rows, of the rows gone since, and of the
-- last run's rows removed now) are counted again, from their last count;
-- the others keep theirs (in dedup_domains), at or above n_min. A domain
-- that falls below n_min loses its rows, the last run's ones (from the
-- index) and the new ones.
DROP TABLE IF EXISTS temp._dedup_lost;
-- (the last run's rows that phases 2-4 remove now)
CREATE TEMP TABLE _dedup_lost (rid INTEGER PRIMARY KEY);
INSERT OR IGNORE INTO _dedup_lost
SELECT rid FROM _dedup_clean WHERE rid NOT IN (SELECT source_rowid FROM _dedup_exact_winners)
UNION ALL
SELECT n.source_rowid FROM _dedup_near_removed AS n
WHERE n.source_rowid NOT IN (SELECT rid FROM _dedup_dirty);
-- Each change to a domain's count: -1 for a last run's row gone or removed
-- now, +1 for a new row kept.
DROP TABLE IF EXISTS temp._dedup_domain_delta;
CREATE TEMP TABLE _dedup_domain_delta AS
-- (Looked up by rowid: a scan of the index would cost a full run's.)
SELECT x.domain, -1 AS d
FROM (SELECT rid FROM _dedup_gone UNION SELECT rid FROM _dedup_lost) AS k
JOIN main.dedup_index AS x ON x.rid = k.rid
WHERE x.skip_reason IS NULL
UNION ALL
SELECT p.domain, 1 FROM _dedup_exact_winners AS w JOIN _dedup_prepared AS p ON p.source_rowid = w.source_rowid
WHERE p.source_rowid IN (SELECT rid FROM _dedup_dirty)
  AND p.source_rowid NOT IN (SELECT source_rowid FROM _dedup_near_removed);
DROP TABLE IF EXISTS temp._dedup_domains_touched;
CREATE TEMP TABLE _dedup_domains_touched (domain TEXT);
INSERT INTO _dedup_domains_touched SELECT DISTINCT domain FROM _dedup_domain_delta;
-- Their counts: the last run's (dedup_domains; a domain absent there kept
-- no page) and the changes.
INSERT INTO _dedup_domain_counts
SELECT t.domain,
       coalesce((SELECT c.pages FROM main.dedup_domains AS c WHERE c.domain IS t.domain), 0) + sum(t.d)
FROM _dedup_domain_delta AS t GROUP BY t.domain;
-- (Emptied, not dropped: a plan may run under a statement that reads, as
-- dedup_similar's table form does, and SQLite drops no table then.)
DELETE FROM temp._dedup_domain_delta;
-- A domain below n_min loses its kept rows (read by domain only then: the
-- CROSS JOINs keep the index the inner loop; a run with n_min 0 does not
-- enter it, and its index has no dedup_index_domain).
INSERT INTO _dedup_domain_removed
SELECT x.rid, c.domain, c.pages
FROM _dedup_run AS r CROSS JOIN _dedup_domain_counts AS c
CROSS JOIN main.dedup_index AS x ON x.domain = c.domain
WHERE r.n_min > 0 AND c.pages < r.n_min AND x.skip_reason IS NULL
  AND x.rid NOT IN (SELECT rid FROM _dedup_dirty) AND x.rid NOT IN (SELECT rid FROM _dedup_gone)
  AND x.rid NOT IN (SELECT rid FROM _dedup_lost)
UNION ALL
SELECT p.source_rowid, c.domain, c.pages
FROM _dedup_run AS r CROSS JOIN _dedup_domain_counts AS c
CROSS JOIN _dedup_prepared AS p ON p.domain = c.domain
JOIN _dedup_exact_winners AS w ON w.source_rowid = p.source_rowid
WHERE r.n_min > 0 AND c.pages < r.n_min AND p.source_rowid IN (SELECT rid FROM _dedup_dirty)
  AND p.source_rowid NOT IN (SELECT source_rowid FROM _dedup_near_removed);
-- Phase 6's pages kept apart: the last run's rows sharing a canonical URL
-- with one of its rows removed now in phases 4-5 may be apart no more.
INSERT INTO _dedup_prepared
SELECT x.rid, NULL, x.canonical_url, x.domain, NULL, NULL, x.content_hash, x.datetime, x.crawled,
       x.length, x.category, NULL, x.has_text, x.strict_url, x.https, 0, NULL
FROM (SELECT DISTINCT o.url_key, o.canonical_url
      FROM (SELECT source_rowid FROM _dedup_near_removed UNION SELECT source_rowid FROM _dedup_domain_removed) AS k
      JOIN main.dedup_index AS o ON o.rid = k.source_rowid) AS u
CROSS JOIN _dedup_index_keys AS k ON k.key = u.url_key
CROSS JOIN main.dedup_index AS x ON x.rid = k.rid AND x.url_key = k.key AND x.canonical_url = u.canonical_url
WHERE x.skip_reason IS NULL
  AND x.rid NOT IN (SELECT source_rowid FROM _dedup_prepared)
  AND x.rid NOT IN (SELECT rid FROM _dedup_gone);
