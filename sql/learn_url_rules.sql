-- Learns which URL parameters (and paths) never change a page's content,
-- from the pages table and the archive of earlier runs, into dedup_url_rules
-- (domain, path, param, value, observations, duplicates, probability).
-- Incremental: each call reads only the rows added since the last one.
-- Then: SELECT dupe_probability(url) before fetching a URL, and the
-- url_rules setting of dedup_run to drop the learned parameters.
-- See docs/learning.md.
SELECT dedup_learn_url_rules();
