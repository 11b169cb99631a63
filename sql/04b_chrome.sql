-- Phase 4, with boilerplate = 'strip' only (the runner skips it otherwise:
-- with `against` the pages are a compound view, which SQLite reads whole
-- before a join that groups): each domain's chrome, into _dedup_chrome
-- (made empty by 04a_near_input.sql), before 04b_near_dups.sql scans.
-- boilerplate = 'strip': the segments (lines of content, see segments())
-- found in at least boilerplate_min_pages of a domain's rows compared here
-- (distinct URLs and contents) with as many distinct titles, as a JSON array
-- of hashes per domain. Chrome is what a site repeats across its different
-- pages; a paragraph repeated across the versions of one page (one title)
-- is that page's content. (A row without a title counts as its own title.)
INSERT INTO _dedup_chrome
SELECT domain, count(*), json_group_array(hash)
FROM (
  SELECT p.domain, s.hash
  FROM _dedup_run AS r
  JOIN _dedup_near_input AS i ON i.placeholder = 0
  JOIN _dedup_prepared AS p ON p.source_rowid = i.id
  JOIN _dedup_pages AS g ON g.rid = i.id
  JOIN segments(g.content) AS s
  WHERE r.boilerplate = 'strip' AND p.domain IS NOT NULL AND typeof(g.content) = 'text'
  GROUP BY p.domain, s.hash
  HAVING count(DISTINCT i.id) >= (SELECT boilerplate_min_pages FROM _dedup_run)
     AND count(DISTINCT coalesce(g.title, 'row ' || i.id)) >= (SELECT boilerplate_min_pages FROM _dedup_run)
)
GROUP BY domain;
