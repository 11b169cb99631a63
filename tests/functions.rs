//! SQL in, exact values out: the registered functions on a bundled SQLite.

use rusqlite::{Connection, Result};

fn db() -> Connection {
    let db = Connection::open_in_memory().unwrap();
    dedup::register(&db).unwrap();
    db
}

fn one<T: rusqlite::types::FromSql>(db: &Connection, sql: &str) -> Result<T> {
    db.query_row(sql, [], |r| r.get(0))
}

fn err(db: &Connection, sql: &str) -> String {
    match db.query_row(sql, [], |r| r.get::<_, rusqlite::types::Value>(0)) {
        Ok(v) => panic!("expected an error from {sql}, got {v:?}"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn register_adds_exactly_these_functions_and_modules() {
    let plain = Connection::open_in_memory().unwrap();
    let names = |db: &Connection, sql: &str| -> Vec<String> {
        let mut s = db.prepare(sql).unwrap();
        let v = s
            .query_map([], |r| r.get(0))
            .unwrap()
            .collect::<Result<Vec<String>>>()
            .unwrap();
        v
    };
    let q = "SELECT DISTINCT name FROM pragma_function_list ORDER BY name";
    let before = names(&plain, q);
    let after = names(&db(), q);
    let added: Vec<String> = after.into_iter().filter(|n| !before.contains(n)).collect();
    assert_eq!(
        added,
        [
            "canonical_url",
            "content_hash",
            "dedup_apply",
            "dedup_apply_plan",
            "dedup_chars",
            "dedup_debug",
            "dedup_differing_params",
            "dedup_error_codes",
            "dedup_extra_params",
            "dedup_fingerprint",
            "dedup_histogram",
            "dedup_invalid_text",
            "dedup_learn_url_rules",
            "dedup_pack_keys",
            "dedup_phase1_arrow",
            "dedup_phases",
            "dedup_plan",
            "dedup_prepare",
            "dedup_progress",
            "dedup_require",
            "dedup_restore",
            "dedup_row_digest",
            "dedup_rows_arrow",
            "dedup_run",
            "dedup_settings_checked",
            "dedup_settings_table",
            "dedup_similar",
            "dedup_sort_key",
            "dedup_version",
            "dupe_probability",
            "hamming_distance",
            "html_text",
            "is_html",
            "lev_ratio",
            "lsh_keys",
            "lsh_params",
            "lsh_probability",
            "main_text",
            "minhash",
            "minhash_jaccard",
            "minhash_oph",
            "near_dups_stats",
            "normalize_text",
            "paragraph_at",
            "paragraph_keys",
            "shingle_resemblance",
            "simhash",
            "strip_segments",
            "url_discard_reason",
            "url_domain",
            "url_host",
            "url_rule_params",
            "url_wayback"
        ]
    );
    let q = "SELECT name FROM pragma_module_list ORDER BY name";
    let before = names(&plain, q);
    let added: Vec<String> = names(&db(), q)
        .into_iter()
        .filter(|n| !before.contains(n))
        .collect();
    assert_eq!(
        added,
        [
            "dedup_band_entries",
            "dedup_elected",
            "dedup_held_statements",
            "dedup_phase1",
            "dedup_similar",
            "lsh_bands",
            "near_dups",
            "near_dups_among",
            "segments"
        ]
    );
}

#[test]
fn null_in_null_out() {
    let db = db();
    for f in [
        "normalize_text(NULL)",
        "content_hash(NULL)",
        "canonical_url(NULL)",
        "url_domain(NULL)",
        "url_wayback(NULL)",
        "url_host(NULL)",
        "url_discard_reason(NULL)",
        "lev_ratio(NULL, 'a')",
        "lev_ratio('a', NULL, 0.5)",
        "shingle_resemblance(NULL, 'a')",
        "shingle_resemblance('a', NULL, 3, 'the')",
        "strip_segments(NULL, '[1]')",
        "dupe_probability(NULL)",
        "url_rule_params(NULL)",
    ] {
        let v: Option<String> = one(&db, &format!("SELECT {f}")).unwrap();
        assert_eq!(v, None, "{f}");
    }
}

#[test]
fn issue_examples_give_exact_values() {
    let db = db();
    let u: String = one(
        &db,
        "SELECT canonical_url('HTTP://WWW.Example.COM:80/a/./b/../page/?utm_source=x&lang=fr#top')",
    )
    .unwrap();
    assert_eq!(u, "http://www.example.com/a/page?lang=fr");
    let u: String = one(
        &db,
        "SELECT canonical_url('http://WWW.Example.COM/a/', 'strip_www,https')",
    )
    .unwrap();
    assert_eq!(u, "https://example.com/a");
    // sha1("hello world"), checked with sha1sum.
    let h: String = one(
        &db,
        "SELECT content_hash('  Hello' || char(10) || 'World ')",
    )
    .unwrap();
    assert_eq!(h, "2aae6c35c94fcfb415dbe95f408b9ce91ee846ed");
    let r: f64 = one(&db, "SELECT lev_ratio('kitten', 'sitting')").unwrap();
    assert_eq!(r, 1.0 - 5.0 / 13.0);
    let r: f64 = one(&db, "SELECT lev_ratio('kitten', 'sitting', 0.9)").unwrap();
    assert_eq!(r, 0.0);
    let r: f64 = one(
        &db,
        "SELECT shingle_resemblance('a b c d e', 'a b c d f', 2)",
    )
    .unwrap();
    assert_eq!(r, 0.6);
    let r: f64 = one(
        &db,
        "SELECT shingle_resemblance('the cat sat', 'a cat sat', 5, 'the a')",
    )
    .unwrap();
    assert_eq!(r, 1.0);
    let v: String = one(&db, "SELECT dedup_version()").unwrap();
    assert_eq!(v, format!("v{}", env!("CARGO_PKG_VERSION")));
}

#[test]
fn url_helpers() {
    let db = db();
    let w = "https://web.archive.org/web/20240101000000/https://en.m.wikipedia.org/wiki/Rust/";
    let (u, d, wb): (String, String, String) = db
        .query_row(
            "SELECT canonical_url(?1), url_domain(?1), url_wayback(?1)",
            [w],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )
        .unwrap();
    assert_eq!(u, "https://en.wikipedia.org/wiki/Rust");
    assert_eq!(d, "en.wikipedia.org");
    assert_eq!(
        wb,
        "https://web.archive.org/web/20240101000000/https://en.m.wikipedia.org/wiki/Rust"
    );
    let reason: String = one(&db, "SELECT url_discard_reason('https://x.org/tag/a')").unwrap();
    assert_eq!(reason, "ignored: /tag/");
    let reason: String = one(&db, "SELECT url_discard_reason('mailto:a@b.c')").unwrap();
    assert_eq!(reason, "unparseable: scheme 'mailto' is not http(s)");
    let kept: Option<String> = one(&db, "SELECT url_discard_reason('https://x.org/a')").unwrap();
    assert_eq!(kept, None);
    let none: Option<String> = one(&db, "SELECT canonical_url('https://x.org/tag/a')").unwrap();
    assert_eq!(none, None);
    let u: String = one(
        &db,
        "SELECT canonical_url('https://x.org/tag/a', 'ignore=/login/')",
    )
    .unwrap();
    assert_eq!(u, "https://x.org/tag/a");
    // Options computed per row (no auxiliary data), alternating: each row
    // gets its own (the parsed options are cached by their text).
    let mut stmt = db
        .prepare(
            "SELECT canonical_url('https://www.x.org/a?id=1', o), url_domain('https://www.x.org/a', o)
             FROM (SELECT value AS o FROM json_each('[\"strip_www\", \"keep=id\", \"strip_www\", \"\"]'))",
        )
        .unwrap();
    let rows: Vec<(String, String)> = stmt
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .map(|r| r.unwrap())
        .collect();
    assert_eq!(
        rows,
        [
            ("https://x.org/a", "x.org"),
            ("https://www.x.org/a?id=1", "www.x.org"),
            ("https://x.org/a", "x.org"),
            ("https://www.x.org/a", "www.x.org"),
        ]
        .map(|(u, d)| (u.to_string(), d.to_string()))
    );
}

#[test]
fn error_messages_name_function_problem_and_value() {
    let db = db();
    assert_eq!(
        err(&db, "SELECT canonical_url(42)"),
        "canonical_url[argument]: url must be TEXT, got integer 42"
    );
    assert_eq!(
        err(&db, "SELECT canonical_url('a', 'b', 'c')"),
        "canonical_url[argument]: expected 1 to 2 arguments, got 3"
    );
    assert_eq!(
        err(&db, "SELECT canonical_url('https://x.org', 'nope')"),
        format!(
            "canonical_url[argument]: unknown option 'nope' (known: {}), got 'nope'",
            dedup::url::OPTION_WORDS
        )
    );
    assert_eq!(
        err(&db, "SELECT content_hash(x'00ff')"),
        "content_hash[argument]: text must be TEXT, got blob of 2 bytes"
    );
    assert_eq!(
        err(&db, "SELECT content_hash(CAST(x'61ff' AS TEXT))"),
        "content_hash[argument]: text is not valid UTF-8 (byte 1), got text of 2 bytes"
    );
    assert_eq!(
        err(&db, "SELECT normalize_text()"),
        "normalize_text[argument]: expected 1 argument, got 0"
    );
    assert_eq!(
        err(&db, "SELECT lev_ratio('a', 'b', 1.5)"),
        "lev_ratio[argument]: score_cutoff must be in [0.0, 1.0], got real 1.5"
    );
    assert_eq!(
        err(&db, "SELECT lev_ratio('a', 'b', 'x')"),
        "lev_ratio[argument]: score_cutoff must be a number, got text 'x'"
    );
    assert_eq!(
        err(&db, "SELECT lev_ratio('a')"),
        "lev_ratio[argument]: expected 2 to 3 arguments, got 1"
    );
    assert_eq!(
        err(&db, "SELECT shingle_resemblance('a', 'b', 0)"),
        "shingle_resemblance[argument]: n must be an integer in [1, 64], got integer 0"
    );
    assert_eq!(
        err(&db, "SELECT shingle_resemblance('a', 'b', 2, 7)"),
        "shingle_resemblance[argument]: stopwords must be TEXT, got integer 7"
    );
    assert_eq!(
        err(&db, "SELECT dedup_require(0, 'stop here')"),
        "stop here"
    );
    assert_eq!(
        err(&db, "SELECT dedup_run(1)"),
        "dedup_run[setting]: settings must be a JSON object as TEXT, got integer 1"
    );
    assert_eq!(
        err(&db, "SELECT dedup_run('[1]')"),
        "dedup_run[setting]: settings must be a JSON object, got '[1]'"
    );
    // Text that is not JSON is named as such (not SQLite's bare "malformed
    // JSON"), and each function names itself.
    assert_eq!(
        err(&db, "SELECT dedup_run('{\"threshold\": 0.9,}')"),
        "dedup_run[setting]: settings must be a JSON object, got '{\"threshold\": 0.9,}' (not valid JSON)"
    );
    assert_eq!(
        err(&db, "SELECT dedup_plan('')"),
        "dedup_plan[setting]: settings must be a JSON object, got '' (not valid JSON)"
    );
    assert_eq!(
        err(&db, "SELECT dedup_plan('[1]')"),
        "dedup_plan[setting]: settings must be a JSON object, got '[1]'"
    );
    // JSON's true is 1 in SQL: a number setting must not take it.
    assert_eq!(
        err(&db, r#"SELECT dedup_run('{"distance": true}')"#),
        r#"dedup_run[setting]: distance is not a true-or-false setting (only discard_params, full and fix_urls are), got true in '{"distance": true}'"#
    );
    assert_eq!(
        err(
            &db,
            r#"SELECT dedup_run('{"full": false, "threshold": false}')"#
        ),
        r#"dedup_run[setting]: threshold is not a true-or-false setting (only discard_params, full and fix_urls are), got false in '{"full": false, "threshold": false}'"#
    );
    assert_eq!(
        err(
            &db,
            r#"SELECT dedup_run('{"threshold": 0.9, "distance": 5, "threshold": 0.5}')"#
        ),
        r#"dedup_run[setting]: settings must name each setting once, got 'threshold' twice in '{"threshold": 0.9, "distance": 5, "threshold": 0.5}'"#
    );
}

#[test]
fn lev_ratio_refuses_inputs_beyond_its_work_limit_but_not_those_the_length_bound_decides() {
    let db = db();
    let big = "SELECT lev_ratio(printf('%.*c', 400000, 'a'), printf('%.*c', 300000, 'b'))";
    assert_eq!(
        err(&db, big),
        "lev_ratio[argument]: inputs too long: len(a) * len(b) must be at most 100000000000, got 400000 * 300000"
    );
    let decided: f64 = one(
        &db,
        "SELECT lev_ratio(printf('%.*c', 400000, 'a'), printf('%.*c', 300000, 'b'), 0.9)",
    )
    .unwrap();
    assert_eq!(decided, 0.0);
}

#[test]
fn fifty_megabyte_inputs_do_not_crash() {
    let db = db();
    let n: i64 = one(
        &db,
        "SELECT length(normalize_text(printf('%.*c', 50000000, 'A')))",
    )
    .unwrap();
    assert_eq!(n, 50_000_000);
    let h: String = one(
        &db,
        "SELECT content_hash(replace(printf('%.*c', 25000000, 'x'), 'x', 'ab '))",
    )
    .unwrap();
    assert_eq!(h.len(), 40);
    let r: f64 = one(&db, "SELECT shingle_resemblance(replace(printf('%.*c', 10000000, 'x'), 'x', 'w '), 'w w w w w')").unwrap();
    assert_eq!(r, 1.0);
}

#[test]
fn near_dups_scans_a_table_in_pos_order() {
    let db = db();
    let none: Option<String> = one(&db, "SELECT near_dups_stats()").unwrap();
    assert_eq!(none, None);
    db.execute_batch(
        "CREATE TABLE t(pos INTEGER, id INTEGER, text TEXT, rank INTEGER);
         INSERT INTO t VALUES (1, 10, 'the quick brown fox', 2), (2, 20, 'the quick brown fix', 1),
                              (3, 30, 'unrelated text', 3), (4, 40, 'the quick brown fox', 4);",
    )
    .unwrap();
    let mut s = db
        .prepare("SELECT id, survivor, anchor, ratio FROM near_dups('t', 0.8, 2)")
        .unwrap();
    let rows: Vec<(i64, i64, i64, f64)> = s
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))
        .unwrap()
        .collect::<Result<_>>()
        .unwrap();
    let r = 1.0 - 2.0 / 38.0;
    // Row 10's window (20, 30) groups 10 and 20; 20 wins on rank. Row 20's
    // window (30, 40) groups 20 and 40; 20 wins again.
    assert_eq!(rows, vec![(10, 20, 10, r), (40, 20, 20, r)]);
    // Pairs: 10-20, 10-30, 20-30, 20-40 (row 30's only neighbour, 40, is
    // gone). Row 30 is within the length bound of the others (5 characters
    // shorter, 6 allowed at 0.8) but its letter counts are far from theirs.
    assert_eq!(
        one::<String>(&db, "SELECT near_dups_stats()").unwrap(),
        r#"{"rows":4,"pairs":4,"rejected_by_length":0,"rejected_by_histogram":2,"levenshtein":2,"matches":2}"#
    );
}

#[test]
fn a_placeholder_of_n_slots_takes_n_places_in_the_window() {
    let db = db();
    // Rows 10 and 40 are near; a window of 2 rows ahead reaches from 10 to
    // 40 only if fewer than 2 slots lie between them.
    db.execute_batch(
        "CREATE TABLE t(pos INTEGER, id INTEGER, text TEXT, rank INTEGER, slots INTEGER);
         INSERT INTO t VALUES (1, 10, 'the quick brown fox', 2, NULL), (2, 20, NULL, 0, 1),
                              (3, 40, 'the quick brown fix', 1, NULL);
         CREATE TABLE wide(pos INTEGER, id INTEGER, text TEXT, rank INTEGER, slots INTEGER);
         INSERT INTO wide SELECT pos, id, text, rank, CASE WHEN id = 20 THEN 2 END FROM t;
         CREATE TABLE expanded(pos INTEGER, id INTEGER, text TEXT, rank INTEGER);
         INSERT INTO expanded VALUES (1, 10, 'the quick brown fox', 2), (2, 20, NULL, 0),
                                     (3, 21, NULL, 0), (4, 40, 'the quick brown fix', 1);",
    )
    .unwrap();
    let removed = |input: &str| -> Vec<(i64, i64)> {
        db.prepare(&format!(
            "SELECT id, survivor FROM near_dups('{input}', 0.8, 2)"
        ))
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .collect::<Result<_>>()
        .unwrap()
    };
    assert_eq!(removed("t"), vec![(10, 40)]);
    assert_eq!(removed("wide"), vec![]);
    assert_eq!(removed("expanded"), vec![]);
    db.execute_batch("UPDATE wide SET slots = 0 WHERE id = 20")
        .unwrap();
    assert_eq!(
        err(&db, "SELECT * FROM near_dups('wide', 0.8, 2)"),
        "near_dups[argument]: slots in the input must be at least 1, and 1 for a row with a text, got 0 in the row at pos integer 2"
    );
    db.execute_batch("UPDATE wide SET slots = 2 WHERE id = 10")
        .unwrap();
    assert_eq!(
        err(&db, "SELECT * FROM near_dups('wide', 0.8, 2)"),
        "near_dups[argument]: slots in the input must be at least 1, and 1 for a row with a text, got 2 in the row at pos integer 1"
    );
}

/// `dedup_elected` elects what `first_value(id) OVER (PARTITION BY grp
/// ORDER BY ...)` elects, on values of every type: integers equal to reals
/// (one group, as SQLite compares them), texts and BLOBs of the same bytes
/// (two groups), NULL groups (one), NULLs first ascending and last
/// descending, texts by their bytes.
#[test]
fn dedup_elected_elects_as_first_value_over_a_partition() {
    let db = db();
    db.execute_batch("CREATE TABLE t(id INTEGER, grp, a, b)")
        .unwrap();
    let pool = [
        "NULL",
        "1",
        "1.0",
        "2",
        "-3",
        "2.5",
        "'1'",
        "'a'",
        "'a '",
        "'B'",
        "X'61'",
        "X''",
        "''",
        "9007199254740993",
        "9007199254740992.0",
        "9007199254740994.0",
        "9223372036854775807",
        "-0.0",
        "0",
    ];
    let mut seed = 11u64;
    let mut pick = |n: usize| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        (seed % n as u64) as usize
    };
    for id in 0..600 {
        let (g, a, b) = (pick(pool.len()), pick(pool.len()), pick(pool.len()));
        db.execute_batch(&format!(
            "INSERT INTO t VALUES ({id}, {}, {}, {})",
            pool[g], pool[a], pool[b]
        ))
        .unwrap();
    }
    for ranking in ["a, b DESC, id", "b desc, a ASC, id DESC", "a"] {
        let rows = |sql: &str| -> Vec<(i64, i64)> {
            let mut s = db.prepare(sql).unwrap();
            let v = s
                .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
                .unwrap()
                .collect::<Result<Vec<_>>>()
                .unwrap();
            v
        };
        let ours = rows(&format!(
            "SELECT id, survivor FROM dedup_elected('t', 'grp', '{ranking}') ORDER BY id"
        ));
        let sqlite = rows(&format!(
            "SELECT id, first_value(id) OVER (PARTITION BY grp ORDER BY {ranking}) FROM t ORDER BY id"
        ));
        assert_eq!(ours.len(), 600);
        if ranking == "a" {
            // (Ties: SQLite's pick among equal rows is its own; only each
            // group's survivor's value of a must be the least.)
            let a_of = |id: i64| -> Option<Vec<u8>> {
                one(
                    &db,
                    &format!("SELECT dedup_sort_key(a) FROM t WHERE id = {id}"),
                )
                .unwrap()
            };
            for ((id, s), (_, t)) in ours.iter().zip(&sqlite) {
                assert_eq!(a_of(*s), a_of(*t), "row {id}");
            }
        } else {
            assert_eq!(ours, sqlite, "{ranking}");
        }
    }
}

#[test]
fn dedup_elected_errors() {
    let db = db();
    db.execute_batch("CREATE TABLE t(id, grp, a); INSERT INTO t VALUES ('x', 1, 2);")
        .unwrap();
    assert_eq!(
        err(&db, "SELECT * FROM dedup_elected('nope', 'grp', 'a')"),
        "dedup_elected[argument]: input must be the name of a table or view, got 'nope'"
    );
    assert_eq!(
        err(&db, "SELECT * FROM dedup_elected('t', 'g', 'a')"),
        "dedup_elected[argument]: input must have the column grp names, got 't' without 'g'"
    );
    assert_eq!(
        err(&db, "SELECT * FROM dedup_elected('t', 'grp', 'a DOWN')"),
        "dedup_elected[argument]: ranking must list columns of input, each optionally followed by ASC or DESC \
         ('a DOWN' is not a column and a direction), got 'a DOWN'"
    );
    assert_eq!(
        err(&db, "SELECT * FROM dedup_elected('t', 'grp', 'a, zz')"),
        "dedup_elected[argument]: ranking must list columns of input, each optionally followed by ASC or DESC \
         (no column 'zz'), got 'a, zz'"
    );
    assert_eq!(
        err(&db, "SELECT * FROM dedup_elected('t', 'grp', 'a')"),
        "dedup_elected[argument]: id in 't' must be an integer, got text 'x'"
    );
    assert_eq!(
        err(&db, "SELECT * FROM dedup_elected('t', 'grp', 3)"),
        "dedup_elected[argument]: ranking must be a list of columns, got integer 3"
    );
}

#[test]
fn near_dups_errors() {
    let db = db();
    db.execute_batch("CREATE TABLE t(pos, id, text, rank); CREATE TABLE u(a, b);")
        .unwrap();
    assert_eq!(
        err(&db, "SELECT * FROM near_dups('t', 1.5, 3)"),
        "near_dups[argument]: threshold must be in [0.0, 1.0], got 1.5"
    );
    assert_eq!(
        err(&db, "SELECT * FROM near_dups('t', 0.9, -1)"),
        "near_dups[argument]: distance must be a non-negative integer, got -1"
    );
    assert_eq!(
        err(&db, "SELECT * FROM near_dups('nope', 0.9, 3)"),
        "near_dups[argument]: input must be the name of a table or view, got 'nope'"
    );
    assert_eq!(
        err(&db, "SELECT * FROM near_dups('u', 0.9, 3)"),
        "near_dups[argument]: input must have columns pos, id, text, rank (missing pos, id, text, rank), got 'u'"
    );
    assert_eq!(
        err(&db, "SELECT * FROM near_dups(3, 0.9, 3)"),
        "near_dups[argument]: input must be the name of a table or view, got integer 3"
    );
    assert_eq!(
        err(&db, "SELECT * FROM near_dups"),
        "near_dups[argument]: input table or view name is required, got no argument"
    );
}

#[test]
fn near_dups_among_elects_over_candidate_pairs_whatever_their_distance() {
    let db = db();
    db.execute_batch(
        "CREATE TABLE t(pos INTEGER PRIMARY KEY, id INTEGER, text TEXT, rank INTEGER);
         INSERT INTO t VALUES (1, 10, 'the quick brown fox', 2), (2, 20, 'unrelated text', 1),
                              (3, 30, 'more unrelated words', 3), (4, 40, 'the quick brown fix', 1),
                              (5, 50, NULL, 0);
         CREATE TABLE p(a, b);
         INSERT INTO p VALUES (40, 10), (10, 40), (20, 30), (50, 10);",
    )
    .unwrap();
    let rows = |sql: &str| -> Vec<(i64, i64, i64, f64)> {
        let mut s = db.prepare(sql).unwrap();
        let v = s
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))
            .unwrap()
            .collect::<Result<_>>()
            .unwrap();
        v
    };
    // 10 and 40 are three rows apart: a window of 2 misses them.
    assert!(rows("SELECT id, survivor, anchor, ratio FROM near_dups('t', 0.8, 2)").is_empty());
    // The pair joins them; 40 wins on rank. 50 is a placeholder (NULL text).
    let r = 1.0 - 2.0 / 38.0;
    assert_eq!(
        rows("SELECT id, survivor, anchor, ratio FROM near_dups_among('t', 'p', 0.8)"),
        vec![(10, 40, 10, r)]
    );
    // The repeated pair is compared once. 20-30 (14 and 20 characters) is
    // within the length bound at 0.8 (indel distance 6 allowed of 34) but
    // not the letter-count bound.
    assert_eq!(
        one::<String>(&db, "SELECT near_dups_stats()").unwrap(),
        r#"{"rows":5,"pairs":2,"rejected_by_length":0,"rejected_by_histogram":1,"levenshtein":1,"matches":1}"#
    );
    // The default threshold is 0.9, which this pair (0.947) passes too.
    assert_eq!(
        rows("SELECT * FROM near_dups_among('t', 'p')"),
        vec![(10, 40, 10, r)]
    );
    // Every pair of the table gives the unbounded window.
    db.execute_batch(
        "CREATE TABLE all_pairs AS SELECT x.id AS a, y.id AS b FROM t x, t y WHERE x.id < y.id",
    )
    .unwrap();
    assert_eq!(
        rows("SELECT * FROM near_dups_among('t', 'all_pairs', 0.8)"),
        rows("SELECT * FROM near_dups('t', 0.8, 1000)")
    );
    // Keys: rows sharing a band and key pair up (20 and 30 share key 5 in
    // different bands only); one key for every row is every pair again.
    db.execute_batch(
        "CREATE TABLE k(band, key, id);
         INSERT INTO k VALUES (0, 7, 10), (0, 7, 40), (1, 7, 40), (1, 7, 10), (0, 5, 20), (1, 5, 30),
                              (2, 9, 50), (2, 8, 10);
         CREATE TABLE one_key AS SELECT 0 AS band, 1 AS key, id FROM t;",
    )
    .unwrap();
    assert_eq!(
        rows("SELECT * FROM near_dups_among('t', 'k', 0.8)"),
        vec![(10, 40, 10, r)]
    );
    assert_eq!(
        one::<String>(&db, "SELECT near_dups_stats()").unwrap(),
        r#"{"rows":5,"pairs":1,"rejected_by_length":0,"rejected_by_histogram":0,"levenshtein":1,"matches":1}"#
    );
    assert_eq!(
        rows("SELECT * FROM near_dups_among('t', 'one_key', 0.5)"),
        rows("SELECT * FROM near_dups('t', 0.5, 1000)")
    );
    // Packed keys: the same keys as k, one blob a row (band i the i-th
    // little-endian key); a NULL blob carries none.
    db.execute_batch(
        "CREATE TABLE pk(id, keys);
         INSERT INTO pk VALUES
           (10, x'070000000000000007000000000000000800000000000000'),
           (40, x'07000000000000000700000000000000'),
           (20, x'0500000000000000'),
           (30, x'06000000000000000500000000000000'),
           (50, NULL);",
    )
    .unwrap();
    assert_eq!(
        rows("SELECT * FROM near_dups_among('t', 'pk', 0.8)"),
        vec![(10, 40, 10, r)]
    );
    assert_eq!(
        one::<String>(&db, "SELECT near_dups_stats()").unwrap(),
        r#"{"rows":5,"pairs":1,"rejected_by_length":0,"rejected_by_histogram":0,"levenshtein":1,"matches":1}"#
    );
}

/// `lsh_keys` blobs and `lsh_bands` rows of the same signatures give the
/// same scan, in both elections, on texts with near copies far apart.
#[test]
fn near_dups_among_gives_the_same_answer_from_packed_keys_and_band_rows() {
    let db = db();
    db.execute_batch(
        "CREATE TABLE t(pos INTEGER PRIMARY KEY, id INTEGER, text TEXT, rank INTEGER)",
    )
    .unwrap();
    let words = [
        "council", "river", "budget", "school", "harbour", "library", "museum", "station",
        "market", "garden", "bridge", "tower",
    ];
    let mut insert = db.prepare("INSERT INTO t VALUES (?1, ?2, ?3, ?4)").unwrap();
    for i in 0..240i64 {
        // 40 stories, each in six versions: one word changed, or a sentence added.
        let story = i % 40;
        let version = i / 40;
        let mut text: String = (0..12)
            .map(|k| {
                format!(
                    "The {} of town {story} met on day {k}. ",
                    words[((story + k) % 12) as usize]
                )
            })
            .collect();
        match version {
            0 => {}
            1 => text = text.replacen("met", "gathered", 1),
            2 => text.push_str("A late note was added."),
            3 => text = text.replacen("day 3", "day 30", 1),
            4 => text = text.replace("town", "city"),
            _ => {
                // Letters of a linear congruential sequence: near nothing.
                let mut x = i as u64;
                text = (0..300)
                    .map(|_| {
                        x = x
                            .wrapping_mul(6364136223846793005)
                            .wrapping_add(1442695040888963407);
                        (b'a' + (x >> 59) as u8 % 26) as char
                    })
                    .collect();
            }
        }
        insert
            .execute(rusqlite::params![i + 1, 1000 + i, text, (i * 7) % 5])
            .unwrap();
    }
    drop(insert);
    db.execute_batch(
        "INSERT INTO t VALUES (241, 2000, NULL, 0);
         CREATE TABLE bands AS SELECT b.band, b.key, t.id FROM t, lsh_bands(minhash_oph(t.text, 64), 16, 4) AS b;
         CREATE TABLE packed AS SELECT id, lsh_keys(minhash_oph(text, 64), 16, 4) AS keys FROM t;
         CREATE VIEW packed_view AS SELECT id, lsh_keys(minhash_oph(text, 64), 16) AS keys FROM t;",
    )
    .unwrap();
    let rows = |sql: &str| -> Vec<(i64, i64, i64, f64)> {
        let mut s = db.prepare(sql).unwrap();
        let v = s
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))
            .unwrap()
            .collect::<Result<_>>()
            .unwrap();
        v
    };
    for election in ["chain", "direct"] {
        let scan = |pairs: &str| {
            rows(&format!(
                "SELECT * FROM near_dups_among('t', '{pairs}', 0.9, '{election}') ORDER BY id"
            ))
        };
        let from_bands = scan("bands");
        // Most versions of a story are near its first; the unrelated pages are not.
        assert!(from_bands.len() >= 120, "{election}: {from_bands:?}");
        assert!(from_bands.iter().all(|&(id, ..)| id < 1200), "{election}");
        assert_eq!(scan("packed"), from_bands, "{election}");
        assert_eq!(scan("packed_view"), from_bands, "{election}");
    }
}

#[test]
fn near_dups_among_skips_the_pairs_of_rows_settled_alike() {
    let db = db();
    // 10 and 40 are near (0.947); 20 is near both of them too.
    db.execute_batch(
        "CREATE TABLE t(pos INTEGER PRIMARY KEY, id INTEGER, text TEXT, rank INTEGER, settled INTEGER);
         INSERT INTO t VALUES (1, 10, 'the quick brown fox', 2, 0), (2, 20, 'the quick brown fax', 3, NULL),
                              (3, 40, 'the quick brown fix', 1, 0);
         CREATE TABLE k(band, key, id);
         INSERT INTO k VALUES (0, 7, 10), (0, 7, 20), (0, 7, 40);",
    )
    .unwrap();
    let removed = |sql: &str| -> Vec<(i64, i64)> {
        let mut s = db.prepare(sql).unwrap();
        let v = s
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
            .unwrap()
            .collect::<Result<_>>()
            .unwrap();
        v
    };
    // 10 and 40, settled alike, are not compared (the mechanics only: an
    // incremental run settles rows known apart): 10's group is 10 and 20,
    // 10 wins on rank, and 40 stays beside 10.
    assert_eq!(
        removed("SELECT id, survivor FROM near_dups_among('t', 'k', 0.9) ORDER BY id"),
        vec![(20, 10)]
    );
    assert_eq!(
        one::<String>(&db, "SELECT near_dups_stats()").unwrap(),
        r#"{"rows":3,"pairs":1,"rejected_by_length":0,"rejected_by_histogram":0,"levenshtein":1,"matches":1,"settled":1}"#
    );
    // With no settled values every pair is compared: 40 wins over 10.
    db.execute_batch("UPDATE t SET settled = NULL").unwrap();
    assert_eq!(
        removed("SELECT id, survivor FROM near_dups_among('t', 'k', 0.9) ORDER BY id"),
        vec![(10, 40), (20, 40)]
    );
    // A settled value that is not an integer is refused, naming the row.
    db.execute_batch("UPDATE t SET settled = 'x' WHERE id = 20")
        .unwrap();
    assert_eq!(
        err(&db, "SELECT * FROM near_dups_among('t', 'k', 0.9)"),
        "near_dups_among[argument]: settled in 't' must be an integer, got text 'x' in the row at pos 2"
    );
}

#[test]
fn near_dups_among_errors() {
    let db = db();
    db.execute_batch(
        "CREATE TABLE t(pos, id, text, rank); INSERT INTO t VALUES (1, 1, 'a', 0), (2, 2, 'b', 0);
         CREATE TABLE p(a, b); INSERT INTO p VALUES (1, 3);
         CREATE TABLE q(a, c);
         CREATE TABLE kx(band, key, id); INSERT INTO kx VALUES (0, 1, 1), (0, 1, 3);
         CREATE TABLE ky(band, key, id); INSERT INTO ky VALUES (0, 'k', 1);
         CREATE TABLE pz(id, keys); INSERT INTO pz VALUES (1, NULL), (2, 'k');
         CREATE TABLE pw(id, keys); INSERT INTO pw VALUES (1, x'010000000000000000');
         CREATE TABLE px(id, keys); INSERT INTO px VALUES (1, x'0100000000000000'), (3, x'0100000000000000');
         CREATE TABLE n(a, b); INSERT INTO n VALUES (1, NULL);
         CREATE TABLE d(pos, id, text, rank); INSERT INTO d VALUES (1, 1, 'a', 0), (2, 1, 'b', 0);",
    )
    .unwrap();
    for (sql, message) in [
        ("SELECT * FROM near_dups_among('t', 'p', 1.5)", "near_dups_among[argument]: threshold must be in [0.0, 1.0], got 1.5"),
        ("SELECT * FROM near_dups_among('t', 'p', 'x')", "near_dups_among[argument]: threshold must be a number in [0.0, 1.0], got text 'x'"),
        ("SELECT * FROM near_dups_among('t')", "near_dups_among[argument]: pairs table or view name is required, got no argument"),
        ("SELECT * FROM near_dups_among('t', 'nope')", "near_dups_among[argument]: pairs must be the name of a table or view, got 'nope'"),
        ("SELECT * FROM near_dups_among('t', 'q')", "near_dups_among[argument]: pairs must have columns a, b (pairs), band, key, id (keys) or id, keys (lsh_keys), got 'q' with columns a, c"),
        ("SELECT * FROM near_dups_among('t', 'pz')", "near_dups_among[argument]: keys in 'pz' must be lsh_keys blobs, got text 'k' at id 2"),
        ("SELECT * FROM near_dups_among('t', 'pw')", "near_dups_among[argument]: keys in 'pw': not the band keys of lsh_keys (8 bytes a band), got blob of 9 bytes at id 1"),
        ("SELECT * FROM near_dups_among('t', 'px')", "near_dups_among[argument]: pairs in 'px' must join ids of 't', got id 3"),
        ("SELECT * FROM near_dups_among('t', 'kx')", "near_dups_among[argument]: pairs in 'kx' must join ids of 't', got id 3"),
        ("SELECT * FROM near_dups_among('t', 'ky')", "near_dups_among[argument]: key in 'ky' must be an integer, got text 'k'"),
        ("SELECT * FROM near_dups_among('p', 't')", "near_dups_among[argument]: input must have columns pos, id, text, rank (missing pos, id, text, rank), got 'p'"),
        ("SELECT * FROM near_dups_among('t', 'p')", "near_dups_among[argument]: pairs in 'p' must join ids of 't', got id 3"),
        ("SELECT * FROM near_dups_among('t', 'n')", "near_dups_among[argument]: b in 'n' must be an integer, got NULL"),
        ("SELECT * FROM near_dups_among('d', 'n')", "near_dups_among[argument]: id in 'd' must be unique, got id 1 twice"),
    ] {
        assert_eq!(err(&db, sql), message, "{sql}");
    }
}

#[test]
fn sketch_functions_give_hand_checked_values_and_clear_errors() {
    let db = db();
    // Same text, same signature: estimated Jaccard 1; 128 values of 4 bytes
    // after an 8-byte header.
    assert_eq!(
        one::<i64>(&db, "SELECT length(minhash('some page text'))").unwrap(),
        8 + 4 * 128
    );
    assert_eq!(
        one::<f64>(
            &db,
            "SELECT minhash_jaccard(minhash('some page text'), minhash('some page text'))"
        )
        .unwrap(),
        1.0
    );
    // No shingles: no signature.
    assert_eq!(
        one::<Option<Vec<u8>>>(&db, "SELECT minhash(' ,. ', 16, 'word', 3)").unwrap(),
        None
    );
    assert_eq!(
        one::<Option<f64>>(&db, "SELECT minhash_jaccard(NULL, minhash('a'))").unwrap(),
        None
    );
    // 0b1011 ^ 0b0110 = 0b1101.
    assert_eq!(
        one::<i64>(&db, "SELECT hamming_distance(11, 6)").unwrap(),
        3
    );
    assert_eq!(
        one::<i64>(&db, "SELECT hamming_distance(-1, 0)").unwrap(),
        64
    );
    // 1 - (1 - 0.5^1)^2 = 0.75.
    assert_eq!(
        one::<f64>(&db, "SELECT lsh_probability(0.5, 2, 1)").unwrap(),
        0.75
    );
    assert_eq!(
        one::<i64>(
            &db,
            "SELECT count(*) FROM lsh_bands(minhash('hello world', 8), 4)"
        )
        .unwrap(),
        4
    );
    assert_eq!(
        err(
            &db,
            "SELECT minhash_jaccard(minhash('a b c'), minhash('a b c', 64))"
        ),
        "minhash_jaccard[argument]: signatures must have the same shingles and size, got signatures differ \
         (char 5-grams, 128 permutations vs char 5-grams, 64 permutations)"
    );
    // One-permutation signatures: the same shape, their own format byte.
    assert_eq!(
        one::<i64>(&db, "SELECT length(minhash_oph('some page text'))").unwrap(),
        8 + 4 * 128
    );
    assert_eq!(
        one::<Vec<u8>>(&db, "SELECT substr(minhash_oph('some page text'), 1, 5)").unwrap(),
        b"MH\x02c\x05".to_vec()
    );
    assert_eq!(
        one::<f64>(
            &db,
            "SELECT minhash_jaccard(minhash_oph('some page text', 64, 'word', 1), \
             minhash_oph('page text some', 64, 'word', 1))"
        )
        .unwrap(),
        1.0
    );
    assert_eq!(
        one::<Option<Vec<u8>>>(&db, "SELECT minhash_oph(' ,. ', 16, 'word', 3)").unwrap(),
        None
    );
    assert_eq!(
        one::<i64>(
            &db,
            "SELECT count(*) FROM lsh_bands(minhash_oph('hello world', 8), 4)"
        )
        .unwrap(),
        4
    );
    assert_eq!(
        err(
            &db,
            "SELECT minhash_jaccard(minhash_oph('a b c'), minhash('a b c'))"
        ),
        "minhash_jaccard[argument]: signatures must have the same shingles and size, got signatures differ \
         (char 5-grams, 128 one-permutation bins vs char 5-grams, 128 permutations)"
    );
    assert_eq!(
        err(&db, "SELECT minhash_oph('x', 5000)"),
        "minhash_oph[argument]: num_perm must be an integer in [1, 4096], got integer 5000"
    );
    assert_eq!(
        err(&db, "SELECT minhash('x', 0)"),
        "minhash[argument]: num_perm must be an integer in [1, 4096], got integer 0"
    );
    assert_eq!(
        err(&db, "SELECT minhash('x', 16, 'line')"),
        "minhash[argument]: shingle kind must be 'word' or 'char', got 'line'"
    );
    assert_eq!(
        err(&db, "SELECT hamming_distance('a', 1)"),
        "hamming_distance[argument]: arguments must be INTEGER simhashes, got text 'a'"
    );
    assert_eq!(
        err(&db, "SELECT * FROM lsh_bands(minhash('x', 8), 3, 3)"),
        "lsh_bands[argument]: bands * rows must be at most the signature's 8 values, got 3 * 3"
    );
    assert_eq!(
        err(&db, "SELECT * FROM lsh_bands(x'00', 2)"),
        "lsh_bands[argument]: not a minhash signature, got blob of 1 bytes"
    );
    // lsh_keys: lsh_bands's keys, 8 little-endian bytes each, band after band.
    for sketch in ["minhash", "minhash_oph"] {
        let sig = format!("{sketch}('the quick brown fox jumps over the lazy dog', 12, 'char', 3)");
        let from_rows: String = one(
            &db,
            &format!(
                "SELECT group_concat(hex(substr(x'0000000000000000' ||                  zeroblob(0), 1, 0)) || printf('%016X', key), '') FROM                  (SELECT key FROM lsh_bands({sig}, 4, 3) ORDER BY band)"
            ),
        )
        .unwrap();
        // (printf gives the big-endian hex: reverse each key's bytes.)
        let little: String = from_rows
            .as_bytes()
            .chunks(16)
            .flat_map(|key| {
                key.chunks(2)
                    .rev()
                    .flat_map(|b| b.iter().map(|&c| c as char))
            })
            .collect();
        assert_eq!(
            one::<String>(&db, &format!("SELECT hex(lsh_keys({sig}, 4, 3))")).unwrap(),
            little,
            "{sketch}"
        );
    }
    assert_eq!(
        one::<i64>(&db, "SELECT length(lsh_keys(minhash('hello world', 8), 4))").unwrap(),
        32
    );
    assert_eq!(
        one::<Option<Vec<u8>>>(&db, "SELECT lsh_keys(NULL, 4)").unwrap(),
        None
    );
    for (sql, message) in [
        ("SELECT lsh_keys(minhash('x', 8), 5, 2)", "lsh_keys[argument]: bands * rows must be at most the signature's 8 values, got 5 * 2"),
        ("SELECT lsh_keys(minhash('x', 8), 9)", "lsh_keys[argument]: bands * rows must be at most the signature's 8 values, got 9 * num_perm / bands"),
        ("SELECT lsh_keys(minhash('x', 8), NULL)", "lsh_keys[argument]: bands is required, got NULL"),
        ("SELECT lsh_keys(minhash('x', 8), 0)", "lsh_keys[argument]: bands must be a positive integer, got integer 0"),
        ("SELECT lsh_keys(x'00', 2)", "lsh_keys[argument]: not a minhash signature, got blob of 1 bytes"),
        ("SELECT lsh_keys('x', 2)", "lsh_keys[argument]: not a minhash signature, got text 'x'"),
        ("SELECT lsh_keys(minhash('x', 8))", "lsh_keys[argument]: expected 2 to 3 arguments, got 1"),
    ] {
        assert_eq!(err(&db, sql), message, "{sql}");
    }
}

/// The incremental workflow of the README: stored signatures and bands, a
/// new batch checked against them, a removed page removing its bands.
#[test]
fn incremental_lsh_workflow() {
    let db = db();
    let base = "the rust project is happy to announce a new version of rust ".repeat(8);
    db.execute_batch(
        "CREATE TABLE corpus (id INTEGER PRIMARY KEY, text TEXT, sig BLOB);
         CREATE TABLE corpus_bands (id INTEGER, band INTEGER, key INTEGER);
         CREATE INDEX corpus_bands_key ON corpus_bands (band, key);",
    )
    .unwrap();
    let add = |id: i64, text: &str| {
        db.execute(
            "INSERT INTO corpus VALUES (?1, ?2, minhash(?2))",
            (id, text),
        )
        .unwrap();
        db.execute(
            "INSERT INTO corpus_bands SELECT c.id, b.band, b.key
             FROM corpus c, lsh_bands(c.sig, 32, 4) b WHERE c.id = ?1",
            [id],
        )
        .unwrap();
    };
    add(1, &base);
    add(
        2,
        "a completely different page about gardening and tomatoes in spring",
    );
    // find_similar for a new document: candidates share a band, then the
    // exact measure decides.
    let query = "SELECT DISTINCT c.id FROM lsh_bands(minhash(?1), 32, 4) q
                 JOIN corpus_bands cb ON cb.band = q.band AND cb.key = q.key
                 JOIN corpus c ON c.id = cb.id
                 WHERE lev_ratio(c.text, ?1, 0.9) > 0.9";
    let found = |text: &str| -> Vec<i64> {
        let mut s = db.prepare(query).unwrap();
        let v = s
            .query_map([text], |r| r.get(0))
            .unwrap()
            .collect::<Result<Vec<i64>>>()
            .unwrap();
        v
    };
    let edited = base.replacen("happy", "glad", 1);
    assert_eq!(found(&edited), [1]);
    assert_eq!(
        found("nothing like the others at all, a recipe for soup"),
        Vec::<i64>::new()
    );
    db.execute_batch("DELETE FROM corpus_bands WHERE id = 1; DELETE FROM corpus WHERE id = 1;")
        .unwrap();
    assert_eq!(found(&edited), Vec::<i64>::new());
}

#[test]
fn dedup_histogram_counts_characters_as_the_bounds_do() {
    // Hand-checked: 'h', 'e' twice, 'l' three times, 'o' once; é (U+00E9 =
    // 233) folds into bucket 233 % 128 = 105 ('i'); the NUL counts.
    let db = db();
    let bytes: Vec<u8> = db
        .query_row(
            "SELECT dedup_histogram('hello' || char(233) || char(0) || 'el')",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(bytes, [0, 1, b'e', 2, b'h', 1, b'i', 1, b'l', 3, b'o', 1]);
    let other: Option<Vec<u8>> = db
        .query_row("SELECT dedup_histogram(x'41')", [], |r| r.get(0))
        .unwrap();
    assert_eq!(other, None);
}

#[test]
fn dedup_chars_counts_code_points_past_a_nul() {
    // SQLite's length() stops at the first NUL; phase 4's bounds count
    // every code point, and so does dedup_chars.
    let db = db();
    let (chars, sqlite): (i64, i64) = db
        .query_row(
            "SELECT dedup_chars(x), length(x) FROM (SELECT 'h' || char(233) || char(0) || 'ab' AS x)",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    assert_eq!((chars, sqlite), (5, 2));
    let other: Option<i64> = db
        .query_row("SELECT dedup_chars(x'41')", [], |r| r.get(0))
        .unwrap();
    assert_eq!(other, None);
}
