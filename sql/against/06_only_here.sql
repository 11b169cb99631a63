-- Phase 6, with the against setting: the plan kept to this table's rows.
-- The other database's rows (temp._dedup_against, rids below every rowid
-- of the table, see src/sqlite/pipeline/run/against.rs) took part in
-- every phase as the table's own; they never leave. A removal whose
-- survivor is there keeps no survivor rowid (it is no row here): a
-- 'survivor elsewhere' note names it (its database, rowid and URL there),
-- as a Spark job's names a survivor in another shard. The other rows' notes
-- and phase 4's figures go; the domain counts are the table's own.
INSERT INTO _dedup_notes
SELECT x.source_rowid, 'survivor elsewhere', NULL, NULL,
       'survivor in ' || o.name || ', rowid ' || a.their_rowid || coalesce(' (' || a.url || ')', '')
FROM _dedup_removal AS x
JOIN _dedup_against AS a ON a.rid = x.survivor
CROSS JOIN _dedup_against_of AS o
WHERE x.source_rowid NOT IN (SELECT rid FROM _dedup_against);
UPDATE _dedup_removal SET survivor = NULL WHERE survivor IN (SELECT rid FROM _dedup_against);
DELETE FROM _dedup_removal WHERE source_rowid IN (SELECT rid FROM _dedup_against);

DELETE FROM _dedup_notes
WHERE rowid_ IN (SELECT rid FROM _dedup_against)
   OR (kind = 'final' AND other IN (SELECT rid FROM _dedup_against));
DELETE FROM _dedup_final WHERE removed IN (SELECT rid FROM _dedup_against);
DELETE FROM _dedup_drift WHERE removed IN (SELECT rid FROM _dedup_against);
DELETE FROM _dedup_prepared WHERE source_rowid IN (SELECT rid FROM _dedup_against);

DELETE FROM _dedup_domain_counts;
INSERT INTO _dedup_domain_counts
SELECT domain, count(*) FROM _dedup_prepared
WHERE skip_reason IS NULL AND canonical_url IS NOT NULL
  AND source_rowid NOT IN (SELECT source_rowid FROM _dedup_removal)
GROUP BY domain;
