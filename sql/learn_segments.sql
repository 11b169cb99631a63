-- Builds dedup_segments: for every segment (a line of content, see
-- segments()) in how many pages of each domain it occurs. A page is a
-- distinct content (rows with one content_hash(content) count once); titles
-- counts the distinct titles of those pages (a row without a title counts as
-- its own). Order-independent; rebuilt whole each time from pages (url,
-- title, content). The pipeline's boilerplate = 'strip' leaves out the
-- segments with pages and titles both at least boilerplate_min_pages
-- (counted over the rows it compares). See docs/learning.md.
DROP TABLE IF EXISTS dedup_segments;
CREATE TABLE dedup_segments AS
SELECT p.domain AS domain, s.hash AS hash,
       count(DISTINCT coalesce(p.hash, 'row ' || p.id)) AS pages,
       count(DISTINCT coalesce(p.title, 'row ' || p.id)) AS titles,
       min(s.segment) AS segment
FROM (SELECT rowid AS id, url_domain(url) AS domain, title, content, content_hash(content) AS hash
      FROM pages
      WHERE typeof(content) = 'text' AND typeof(url) = 'text' AND url_domain(url) IS NOT NULL
      LIMIT -1) AS p
JOIN segments(p.content) AS s
GROUP BY 1, 2;
CREATE INDEX dedup_segments_pages ON dedup_segments (domain, pages);
