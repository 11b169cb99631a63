-- Phase 4's placeholders, as a view (04a_near_input.sql reads it, and so
-- does dedup_prepare for a run made elsewhere): the rows an earlier run
-- removed in phase 4 or 5 (temp._dedup_archive: the runner's view of
-- dedup_removed) keep their window slot (url, id), never compared, so a
-- second run sees the windows the first one saw and removes nothing more.
-- (The 'lsh' mode has no windows, so no placeholders.)
DROP VIEW IF EXISTS temp._dedup_placeholders;
CREATE TEMP VIEW _dedup_placeholders AS
WITH archived AS (
  SELECT d.url, d.dedup_rowid, d.content, d.parsed,
         CASE WHEN r.url_rules > 0 AND dedup_invalid_text(d.url, d.content, d.parsed) IS NULL
              THEN r.url_options || coalesce(',tracking+=' || url_rule_params(d.url, r.url_rules), '')
              ELSE r.url_options END AS opts
  FROM _dedup_archive AS d CROSS JOIN _dedup_run AS r
  WHERE d.dedup_phase IN (4, 5) AND r.near_mode = 'window' AND r.threshold < 1.0
)
SELECT canonical_url(d.url, d.opts) AS url, d.dedup_rowid AS id
FROM archived AS d
WHERE dedup_invalid_text(d.url, d.content, d.parsed) IS NULL
  AND (d.parsed <> '' OR (d.parsed IS NULL AND d.content <> ''))
  AND canonical_url(d.url, d.opts) IS NOT NULL;
