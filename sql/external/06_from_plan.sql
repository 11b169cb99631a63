-- Phases 2–6 from a plan made elsewhere (dedup_apply_plan; `sqlite-dedup
-- spark` elects over many shards at once). temp._dedup_external, copied
-- from the caller's table and checked by the runner, has a row for each row
-- of this table the plan removes (phase 1–5, reason, survivor: a rowid of
-- this table, or NULL when the survivor is in another shard, ratio) or
-- keeps apart (phase NULL, rewrite_url: the URL it keeps), with an
-- optional note for explain (kept in dedup_notes: 'kept apart' for a row
-- kept, 'survivor elsewhere' for a removed one). Phase 1 ran here as in
-- any run, so the survivors' columns are rewritten as a run would.
DROP TABLE IF EXISTS temp._dedup_removal;
CREATE TEMP TABLE _dedup_removal (
  source_rowid INTEGER PRIMARY KEY, phase INTEGER, reason TEXT, survivor INTEGER, ratio REAL
);
INSERT INTO _dedup_removal
SELECT rid, phase, reason, survivor, ratio FROM _dedup_external WHERE phase IS NOT NULL;

UPDATE _dedup_prepared
SET rewrite_url = (SELECT e.rewrite_url FROM _dedup_external AS e WHERE e.rid = source_rowid)
WHERE source_rowid IN (SELECT rid FROM _dedup_external WHERE phase IS NULL AND rewrite_url IS NOT NULL);

DROP TABLE IF EXISTS temp._dedup_notes;
CREATE TEMP TABLE _dedup_notes (rowid_ INTEGER, kind TEXT, other INTEGER, ratio REAL, note TEXT);
INSERT INTO _dedup_notes
SELECT rid, CASE WHEN phase IS NULL THEN 'kept apart' ELSE 'survivor elsewhere' END, NULL, NULL, note
FROM _dedup_external WHERE note IS NOT NULL;

-- What the report and the runner read of phases 4–6: the plan's own
-- figures stay with the job that made it.
DROP TABLE IF EXISTS temp._dedup_kept_apart;
CREATE TEMP TABLE _dedup_kept_apart (domain TEXT, params TEXT, pages INTEGER);
DROP TABLE IF EXISTS temp._dedup_chrome;
CREATE TEMP TABLE _dedup_chrome (domain TEXT PRIMARY KEY, segments INTEGER, hashes TEXT);
DROP TABLE IF EXISTS temp._dedup_drift;
CREATE TEMP TABLE _dedup_drift (removed INTEGER, final INTEGER);
-- dedup_domains: this shard's own pages per domain after the run.
DROP TABLE IF EXISTS temp._dedup_domain_counts;
CREATE TEMP TABLE _dedup_domain_counts AS
SELECT domain, count(*) AS pages FROM _dedup_prepared
WHERE skip_reason IS NULL AND canonical_url IS NOT NULL
  AND source_rowid NOT IN (SELECT source_rowid FROM _dedup_removal)
GROUP BY domain;
