-- An incremental run in lsh mode: the band keys of the new and changed
-- rows with a text (dirty winners of phases 2-3), computed from their
-- texts, into temp._dedup_lsh_new (made empty by 04a_near_input.sql).
-- src/sqlite/pipeline/incremental/lsh_input.rs then finds the kept rows of the last
-- run that share one of these keys (main.dedup_index_bands) and may be
-- near a new row, writes phase 4's rows and appends those kept rows'
-- entries of the shared keys.
INSERT INTO _dedup_lsh_new (band, key, id)
SELECT b.band, b.key, p.source_rowid
FROM _dedup_run AS r
CROSS JOIN _dedup_exact_winners AS w
JOIN _dedup_prepared AS p ON p.source_rowid = w.source_rowid
JOIN _dedup_source AS g ON g.rid = p.source_rowid
JOIN lsh_bands(CASE r.lsh_sketch
                 WHEN 'oph' THEN minhash_oph(coalesce(p.fill_parsed, g.parsed), r.lsh_bands * r.lsh_rows,
                                             r.lsh_shingles, r.lsh_shingle_size, nullif(r.stoplist, ''))
                 ELSE minhash(coalesce(p.fill_parsed, g.parsed), r.lsh_bands * r.lsh_rows,
                              r.lsh_shingles, r.lsh_shingle_size, nullif(r.stoplist, ''))
               END,
               r.lsh_bands, r.lsh_rows) AS b
WHERE r.near_mode = 'lsh' AND r.threshold < 1.0
  AND p.has_text AND p.source_rowid IN (SELECT rid FROM _dedup_dirty);
