-- Undo the most recent dedup run: put its removed rows back into pages (with
-- their original rowids) and restore the survivors' rewritten columns.
-- Run it again to undo the run before. Needs the extension loaded.
BEGIN;
DROP TABLE IF EXISTS temp._dedup_restore;
CREATE TEMP TABLE _dedup_restore AS
SELECT max(run) AS run,
       (SELECT group_concat('"' || replace(name, '"', '""') || '"', ', ') FROM pragma_table_info('pages')) AS cols
FROM dedup_runs
WHERE dedup_require(EXISTS (SELECT 1 FROM dedup_runs), 'dedup restore: no run to undo, got an empty dedup_runs');

SELECT dedup_eval('INSERT INTO pages (rowid, ' || cols || ') SELECT dedup_rowid, ' || cols
                  || ' FROM dedup_removed WHERE dedup_run = ' || run || ' ORDER BY dedup_rowid')
FROM _dedup_restore;

UPDATE pages
SET url = w.url, domain = w.domain, wayback = w.wayback,
    parsed = CASE WHEN w.parsed_was_null THEN NULL ELSE pages.parsed END,
    content_hash = w.content_hash, length = w.length
FROM dedup_rewritten AS w, _dedup_restore AS r
WHERE w.dedup_run = r.run AND w.dedup_rowid = pages.rowid;

DELETE FROM dedup_removed WHERE dedup_run = (SELECT run FROM _dedup_restore);
DELETE FROM dedup_rewritten WHERE dedup_run = (SELECT run FROM _dedup_restore);
DELETE FROM dedup_runs WHERE run = (SELECT run FROM _dedup_restore);
SELECT 'restored run ' || run FROM _dedup_restore;
DROP TABLE temp._dedup_restore;
COMMIT;
