-- sqlean-style checks run by the sqlite3 shell against the release build:
-- every line must print NN|1 (tests/sql/run checks it).
.load ./target/release/libdedup
select '01', canonical_url('HTTP://WWW.Example.COM:80/a/./b/../page/?utm_source=x&lang=fr#top') = 'http://www.example.com/a/page?lang=fr';
select '02', canonical_url('https://requests.readthedocs.io/en/v2.9.1/') = 'https://requests.readthedocs.io/en/v2.9.1';
select '03', canonical_url('https://x.org/category/news/') is null;
select '04', canonical_url('https://requests.readthedocs.io/_/downloads/en/latest/pdf/#page=7') = 'https://requests.readthedocs.io/_/downloads/en/latest/pdf#page=7';
select '05', canonical_url('https://x.org/a?b=1&lang=de', 'keep_params') = 'https://x.org/a?b=1&lang=de';
select '06', url_domain('https://Fr.M.Wikipedia.org/wiki/Paris') = 'fr.wikipedia.org';
select '07', url_wayback('https://x.org/a') is null;
select '08', content_hash('abc') = 'a9993e364706816aba3e25717850c26c9cd0d89d';
select '09', content_hash('') is null and content_hash(' ' || char(10)) is null;
select '10', normalize_text('Один  ДВА' || char(10,10,10) || 'Три') = 'odin dva' || char(10,10) || 'tri';
select '11', lev_ratio('', '') = 1.0;
select '12', lev_ratio('abcdefghijklmnopqrst', 'abcdefghijklmnopqrXY') = 0.9;
select '13', lev_ratio('abcdefghijklmnopqrst', 'abcdefghijklmnopqrXY', 0.9) = 0.9;
select '14', lev_ratio('北京大学', '北京大字') = 0.75;
select '15', shingle_resemblance('Hello world', 'hello, WORLD!') = 1.0;
select '16', shingle_resemblance('', '') = 0.0;
select '17', dedup_version() like 'v%';
select '18', dedup_debug() like '%SQLite: 3.%';
select '19', (select count(*) from pragma_function_list where name in ('canonical_url', 'content_hash', 'lev_ratio', 'shingle_resemblance', 'normalize_text')) >= 5;
select '20', minhash_jaccard(minhash('北京大学的图书馆很大'), minhash('北京大学的图书馆很大')) = 1.0 and length(minhash('x')) = 8 + 4 * 128;
select '21', (select count(*) from lsh_bands(minhash('some page text'), 32)) = 32;
create temp table t(pos integer primary key, id, text, rank);
insert into t values (1, 10, 'the quick brown fox', 2), (2, 20, 'unrelated', 0), (3, 30, 'the quick brown fix', 1);
create temp table p(a, b);
insert into p values (10, 30);
select '22', (select group_concat(id || '>' || survivor) from near_dups_among('t', 'p', 0.8)) = '10>30';
select '23', (select count(*) from near_dups('t', 0.8, 1)) = 0;
select '24', (select group_concat(position || ':' || segment, ',') from segments('Menu' || char(13, 10) || '  Body text ' || char(10, 10) || 'Back to top')) = '1:Menu,2:Body text,3:Back to top';
select '25', (select hash from segments('Back  to TOP')) = 3375702861845214564;
select '26', strip_segments('Menu' || char(10) || 'Body', json_array((select hash from segments('menu')))) = 'Body' and strip_segments('Body', '[]') = 'Body';
select '27', dupe_probability('https://nothing-learned.example/?a=1') is null and url_rule_params('https://nothing-learned.example/?a=1') is null;
