-- Inputs that once broke a rule (see tests/fuzz.rs); each line is replayed by `cargo test`.
-- canonical_url fixpoints: a route fragment that trims to nothing, a lone %, nested wrappers.
SELECT canonical_url('http://a.org#/' || char(14));
SELECT canonical_url('http://a.org#!/' || char(14));
SELECT canonical_url('http://a.org/%%34A');
SELECT canonical_url('http://web.archive.org/web/2020/https://web.archive.org/web/2019id_/http://en.m.m.wikipedia.org/wiki/X/');
SELECT canonical_url('http://www.www.x.org/a', 'strip_www');
SELECT canonical_url('https://x.org/doc.pdf#page=2&zoom=100');
-- A NUL in a value quoted by a message (SQLite dropped the whole message).
SELECT lev_ratio('a', 'b', 'x' || char(0) || 'y');
SELECT canonical_url('http://x.org', 'bogus' || char(0));
SELECT shingle_resemblance('a', 'b', 'n' || char(0));
-- Many parameters (quadratic before).
SELECT length(canonical_url('https://x.org/p?' || replace(hex(zeroblob(20000)), '00', 'a=1&'), 'keep_params'));
-- Corrupted and mismatched signatures.
SELECT minhash_jaccard(minhash('abc'), substr(minhash('abc'), 1, 9));
SELECT minhash_jaccard(minhash('abc', 16), minhash('abc', 32));
SELECT hamming_distance(simhash('a'), 'x' || char(0));
SELECT minhash('abc', 4097);
SELECT lsh_params(1.5);
SELECT lsh_probability(0.5, 0, 4);
-- Invalid UTF-8 and blobs.
SELECT normalize_text(CAST(X'FF00FE' AS TEXT));
SELECT content_hash(X'00');
SELECT dedup_invalid_text(X'00', CAST(X'C3' AS TEXT), 1);
SELECT url_discard_reason('ftp://' || hex(zeroblob(5000)));
-- A host that trims to a number (`²..` is `2..`, trimmed `2`, which parses as 0.0.0.2).
SELECT canonical_url(CAST(X'687474703A2F2F7765622E617263686976652E6F72672F7765622F323031392F68747470733A2F2F2FC2B22E2E3F0D0A26203F783D33393F613D39382675746D5F736F757263653D3739' AS TEXT));
SELECT canonical_url('https://2../a');
-- A wrapper revealed by the rules (a zero-width space in the host, a newline in the path); a query of slashes alone.
SELECT canonical_url(CAST(X'68747470733A2F2FE2808B7765622E617263686976652E6F72672F7765622F323032302F0A68747470733A2F2F25C2B2782E6F726765CC8127E695B0E68DAE' AS TEXT));
SELECT canonical_url(CAST(X'687474703A2F2F7765622E617263686976652E6F72672F7765622F323031392F68747470733A2F2F7765622E617263686976652E6F72672F7765622F3169645F2F6674703A2F2F786E2D2D6E33682E636F6D2F3F2F23E280A6233F69643D3537' AS TEXT), CAST(X'6B6565705F706172616D73' AS TEXT));
SELECT canonical_url(CAST(X'68747470733A2F2F7765622E617263686976652E6F72672F7765622F3169645F2F2FD09FD180D0B8D0B2D0B5D182EFBFBD3F2F0A0A23EFBFBDCF82E280A6012F2F0A0A22CF82C39F2323703F6C616E673D333F5048505345535349443D32363F6C616E673D363623' AS TEXT), CAST(X'6B6565705F706172616D73' AS TEXT));
