-- Runs the whole dedup pipeline on the pages table and prints its report.
--   sqlite3 crawl.db '.load ./dedup0' '.read sql/dedup.sql'
-- dedup_run() plans the run with the phase scripts 01-06 of this folder
-- (embedded in the extension) and applies it, in one statement and one
-- transaction: it finishes, or the database is left exactly as it was.
-- Settings: dedup_settings(key, value), or a JSON object argument, e.g.
--   SELECT dedup_run('{"threshold": 0.85}');
SELECT dedup_run();
