-- Undoes the latest dedup run: every removed row back in the table (under a
-- new rowid when a later row took its old one), the survivors' rewritten
-- columns back to their old values. One statement, one transaction.
--   sqlite3 crawl.db '.load ./dedup0' '.read sql/restore.sql'
SELECT dedup_restore();
