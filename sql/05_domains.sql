-- Phase 5: domain frequencies of the survivors, and the optional n_min
-- filter (rows of domains with fewer than n_min pages leave; NULL domains
-- stay). dedup_domains keeps the counts of the domains that remain. (An
-- incremental run counts only the domains it touches, in
-- sql/incremental/05_domains.sql.)
DROP TABLE IF EXISTS temp._dedup_domain_counts;
CREATE TEMP TABLE _dedup_domain_counts AS
SELECT p.domain, count(*) AS pages
FROM _dedup_exact_winners AS w
JOIN _dedup_prepared AS p ON p.source_rowid = w.source_rowid
WHERE w.source_rowid NOT IN (SELECT source_rowid FROM _dedup_near_removed)
  AND (SELECT kind FROM _dedup_incremental) = 'full'
GROUP BY p.domain;

DROP TABLE IF EXISTS temp._dedup_domain_removed;
CREATE TEMP TABLE _dedup_domain_removed AS
SELECT w.source_rowid, c.domain, c.pages
FROM _dedup_exact_winners AS w
JOIN _dedup_prepared AS p ON p.source_rowid = w.source_rowid
JOIN _dedup_domain_counts AS c ON c.domain = p.domain
CROSS JOIN _dedup_run AS r
WHERE w.source_rowid NOT IN (SELECT source_rowid FROM _dedup_near_removed)
  AND c.pages < r.n_min;
