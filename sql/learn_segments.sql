-- Builds dedup_segments: for every segment (a line of content, see
-- segments()) in how many pages of each domain it occurs. A page is a
-- distinct content (rows with one content_hash(content) count once); titles
-- counts the distinct titles of those pages (a row without a title counts as
-- its own). Order-independent; rebuilt whole each time from pages (url,
-- title, content). The pipeline's boilerplate = 'strip' leaves out the
-- segments with pages and titles both at least boilerplate_min_pages
-- (counted over the rows it compares). See docs/learning.md.
-- Safe without -bail: the new counts are added as one statement (a new
-- `built` generation), and only then are older generations deleted; if the
-- insert fails, the delete removes nothing that was the latest.
CREATE TABLE IF NOT EXISTS dedup_segments (domain TEXT, hash INTEGER, pages INTEGER, titles INTEGER,
                                           segment TEXT, built INTEGER);
INSERT INTO dedup_segments
SELECT p.domain, s.hash,
       count(DISTINCT coalesce(p.hash, 'row ' || p.id)),
       count(DISTINCT coalesce(p.title, 'row ' || p.id)),
       min(s.segment),
       (SELECT coalesce(max(built), 0) + 1 FROM dedup_segments)
FROM (SELECT rowid AS id, url_domain(url) AS domain, title, content, content_hash(content) AS hash
      FROM pages
      WHERE typeof(content) = 'text' AND typeof(url) = 'text' AND url_domain(url) IS NOT NULL
      LIMIT -1) AS p
JOIN segments(p.content) AS s
GROUP BY 1, 2;
DELETE FROM dedup_segments WHERE built < (SELECT max(built) FROM dedup_segments);
CREATE INDEX IF NOT EXISTS dedup_segments_pages ON dedup_segments (domain, pages);
