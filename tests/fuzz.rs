//! A fuzz harness for every scalar and table-valued function: biased random
//! inputs (URLs with nested wrappers and many parameters, texts in many
//! scripts with control characters and NULs, invalid UTF-8, extreme
//! numbers, real and corrupted signatures, wrong argument counts) through
//! SQL, for a time budget (`DEDUP_FUZZ_SECONDS`, default 10; CI gives it
//! 60) from a seed (`DEDUP_FUZZ_SEED`; unset, a fresh one each run; CI
//! fixes one so that whether a change lands never depends on luck: explore
//! fresh seeds for long before a release). Each call must return a value or an error of the documented form;
//! never a panic (caught at the FFI boundary and reported as "internal
//! error"), a NUL in a message, or a result out of its range; canonical
//! URLs and normalized text must be fixpoints. The statements in
//! `tests/fuzz-corpus/*.sql` (inputs that once failed) are replayed first;
//! a new failure is printed as such a statement, to be added there.

use std::time::{Duration, Instant};

use rusqlite::types::Value;
use rusqlite::{params_from_iter, Connection};

fn db() -> Connection {
    let db = Connection::open_in_memory().unwrap();
    dedup::register(&db).unwrap();
    // A learned URL model, so dupe_probability and url_rule_params look
    // things up instead of finding no tables.
    db.execute_batch(
        "CREATE TABLE pages (url TEXT, content TEXT);
         INSERT INTO pages VALUES ('https://a.example/p?x=1', 'one two three four five'),
           ('https://a.example/p?x=1&s=2', 'one two three four five'),
           ('https://a.example/p?x=2', 'six seven eight nine ten'),
           ('http://www.a.example/p', 'one two three four five');
         SELECT dedup_learn_url_rules();",
    )
    .unwrap();
    db
}

/// xorshift64*: deterministic for a seed.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
    fn pick<T: Copy>(&mut self, items: &[T]) -> T {
        items[self.below(items.len())]
    }
}

const PIECES: &[&str] = &[
    "a",
    "Z",
    " ",
    "  ",
    "\n",
    "\n\n",
    "\t",
    "\r\n",
    "|",
    "'",
    "''",
    "`",
    "\"",
    "TM",
    "™",
    "…",
    "—",
    "Σ",
    "ς",
    "İ",
    "ß",
    "²",
    "½",
    "北京",
    "数据",
    "Привет",
    "مرحبا",
    "ﬁ",
    "e\u{301}",
    "\u{0}",
    "\u{1}",
    "\u{7f}",
    "\u{200b}",
    "\u{feff}",
    "\u{10ffff}",
    "\u{fffd}",
    "%",
    "%41",
    "%zz",
    "#",
    "?",
    "&",
    "=",
    "/",
    "//",
    "..",
    "http://",
    "https://",
    "web.archive.org/web/2020/",
    "web.archive.org/web/1id_/",
    "www.",
    "m.",
    ".wikipedia.org",
    "utm_source=x",
    "lang=fr",
    "page=2",
    "#page=3&zoom=50",
    "/tag/",
    "x.org",
    ":8080",
];

fn text(rng: &mut Rng) -> String {
    let mut s = String::new();
    let n = match rng.below(10) {
        0 => 0,
        1..=6 => rng.below(20),
        7 | 8 => rng.below(200),
        _ => rng.below(3000),
    };
    for _ in 0..n {
        s.push_str(rng.pick(PIECES));
    }
    s
}

fn url(rng: &mut Rng) -> String {
    let mut s = String::new();
    for _ in 0..rng.below(3) {
        s.push_str(rng.pick(&[
            "http://web.archive.org/web/2019/",
            "https://web.archive.org/web/1id_/",
        ]));
    }
    s.push_str(rng.pick(&["http://", "https://", "HTTP://", "ftp://", "", "//"]));
    for _ in 0..rng.below(3) {
        s.push_str(rng.pick(&["www.", "m.", "en.", "WWW."]));
    }
    s.push_str(rng.pick(&[
        "x.org",
        "a.b.c",
        "wikipedia.org",
        "xn--n3h.com",
        "[::1]",
        "1.2.3.4",
        "",
    ]));
    for _ in 0..rng.below(4) {
        s.push('/');
        s.push_str(&text(rng).chars().take(8).collect::<String>());
    }
    let params = if rng.below(20) == 0 {
        rng.below(5000)
    } else {
        rng.below(5)
    };
    for i in 0..params {
        s.push(if i == 0 { '?' } else { rng.pick(&['&', '?']) });
        s.push_str(rng.pick(&["utm_source", "lang", "v", "id", "a", "PHPSESSID", "x"]));
        s.push('=');
        s.push_str(&rng.below(100).to_string());
    }
    if rng.below(3) == 0 {
        s.push_str(rng.pick(&[
            "#",
            "#/a/",
            "#!/b",
            "#page=2",
            "#page=2&zoom=9",
            "#\u{1}",
            "#x",
        ]));
    }
    s
}

fn value(rng: &mut Rng) -> Value {
    match rng.below(14) {
        0 => Value::Null,
        1 => Value::Integer(rng.pick(&[0, 1, -1, 2, 5, 64, 65, 4096, 4097, i64::MAX, i64::MIN])),
        2 => Value::Real(rng.pick(&[
            0.0,
            0.5,
            0.9,
            1.0,
            1.5,
            -0.1,
            f64::INFINITY,
            f64::NAN,
            1e300,
        ])),
        3 => Value::Blob((0..rng.below(64)).map(|_| rng.next() as u8).collect()),
        4..=7 => Value::Text(text(rng)),
        8..=10 => Value::Text(url(rng)),
        11 => Value::Text(
            rng.pick(&[
                "",
                "keep_params",
                "strip_www,https",
                "ignore+=.org",
                "bogus",
                "keep=",
                "char",
                "word",
                "the a",
            ])
            .to_string(),
        ),
        _ => Value::Text(rng.below(70).to_string()),
    }
}

/// (function, fewest arguments, most arguments).
const FUNCTIONS: &[(&str, usize, usize)] = &[
    ("normalize_text", 1, 1),
    ("content_hash", 1, 1),
    ("canonical_url", 1, 2),
    ("url_domain", 1, 2),
    ("url_wayback", 1, 1),
    ("url_discard_reason", 1, 2),
    ("lev_ratio", 2, 3),
    ("shingle_resemblance", 2, 4),
    ("minhash", 1, 4),
    ("minhash_jaccard", 2, 2),
    ("lsh_params", 1, 2),
    ("lsh_probability", 3, 3),
    ("simhash", 1, 3),
    ("hamming_distance", 2, 2),
    ("dedup_invalid_text", 3, 3),
    ("dedup_row_digest", 0, 4),
    ("strip_segments", 2, 2),
    ("dupe_probability", 1, 2),
    ("url_rule_params", 1, 2),
];

/// Checks one call's outcome; `Err(reason)` when it breaks a rule.
/// With `args`, the fixpoint checks run too (they call again with the same
/// options).
fn check(
    db: &Connection,
    name: &str,
    args: Option<&[Value]>,
    outcome: rusqlite::Result<Value>,
) -> Result<(), String> {
    match outcome {
        Err(e) => {
            let message = e.to_string();
            if message.contains("internal error") {
                return Err(format!("panic: {message}"));
            }
            if message.contains('\0') || message.len() > 2000 {
                return Err(format!(
                    "message not escaped or too long ({} bytes)",
                    message.len()
                ));
            }
            let documented =
                message.starts_with(&format!("{name}[argument]: ")) && message.contains(", got ");
            // ("constraint failed" alone is what SQLite says when it dropped
            // a function's message: a failure here.)
            let sqlite_own =
                message.contains("wrong number of arguments") || message.contains("out of memory");
            if !documented && !sqlite_own {
                return Err(format!("undocumented error form: {message}"));
            }
            Ok(())
        }
        Ok(v) => {
            match (name, &v) {
                (
                    "lev_ratio" | "shingle_resemblance" | "minhash_jaccard" | "lsh_probability",
                    Value::Real(r),
                ) if !(0.0..=1.0).contains(r) => return Err(format!("{name} out of [0, 1]: {r}")),
                ("canonical_url", Value::Text(u)) if args.is_some() => {
                    let args = args.unwrap_or_default();
                    let mut again_args = vec![Value::Text(u.clone())];
                    again_args.extend(args.iter().skip(1).cloned());
                    let again: Value = call(db, name, &again_args)
                        .map_err(|e| format!("second call failed: {e}"))?;
                    if again != v {
                        return Err(format!("not a fixpoint: {u:?} -> {again:?}"));
                    }
                }
                ("normalize_text", Value::Text(t)) => {
                    let again =
                        call(db, name, &[Value::Text(t.clone())]).map_err(|e| e.to_string())?;
                    if again != v {
                        return Err(format!("normalize not idempotent on {t:?}"));
                    }
                }
                _ => {}
            }
            Ok(())
        }
    }
}

fn call(db: &Connection, name: &str, args: &[Value]) -> rusqlite::Result<Value> {
    let marks = vec!["?"; args.len()].join(", ");
    db.query_row(
        &format!("SELECT {name}({marks})"),
        params_from_iter(args),
        |r| r.get(0),
    )
}

/// The call as an SQL statement with literal values (for the corpus).
fn as_sql(name: &str, args: &[Value]) -> String {
    let lit = |v: &Value| match v {
        Value::Null => "NULL".to_string(),
        Value::Integer(i) => i.to_string(),
        Value::Real(r) if r.is_nan() => "NULL".to_string(),
        Value::Real(r) if r.is_infinite() => if *r > 0.0 { "1e999" } else { "-1e999" }.to_string(),
        Value::Real(r) => format!("{r:e}"),
        Value::Text(t) => format!(
            "CAST(X'{}' AS TEXT)",
            t.bytes().map(|b| format!("{b:02X}")).collect::<String>()
        ),
        Value::Blob(b) => format!(
            "X'{}'",
            b.iter().map(|b| format!("{b:02X}")).collect::<String>()
        ),
    };
    format!(
        "SELECT {name}({});",
        args.iter().map(lit).collect::<Vec<_>>().join(", ")
    )
}

#[test]
fn corpus_of_found_inputs_is_replayed() {
    let db = db();
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fuzz-corpus");
    let mut replayed = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        for line in std::fs::read_to_string(&path).unwrap().lines() {
            let line = line.trim();
            if line.is_empty() || line.starts_with("--") {
                continue;
            }
            let name = line
                .trim_start_matches("SELECT ")
                .split('(')
                .next()
                .unwrap()
                .to_string();
            let outcome = db.query_row(line, [], |r| r.get::<_, Value>(0));
            check(&db, &name, None, outcome)
                .unwrap_or_else(|e| panic!("{}: {line}: {e}", path.display()));
            replayed += 1;
        }
    }
    assert!(replayed >= 10, "the corpus holds {replayed} cases");
}

#[test]
fn random_calls_within_the_budget() {
    let seconds: u64 = std::env::var("DEDUP_FUZZ_SECONDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(10);
    let seed: u64 = std::env::var("DEDUP_FUZZ_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_nanos() as u64
                | 1
        });
    let mut rng = Rng(seed);
    let db = db();
    let deadline = Instant::now() + Duration::from_secs(seconds);
    let (mut calls, mut errors, mut failures) = (0u64, 0u64, Vec::new());
    while Instant::now() < deadline && failures.len() < 5 {
        let (name, min, max) = rng.pick(FUNCTIONS);
        // Now and then a wrong argument count.
        let n = if rng.below(20) == 0 {
            rng.below(6)
        } else {
            min + rng.below(max - min + 1)
        };
        let mut args: Vec<Value> = (0..n).map(|_| value(&mut rng)).collect();
        if name.starts_with("minhash_jaccard") || name == "hamming_distance" || rng.below(8) == 0 {
            // Real signatures, sometimes cut or with a flipped byte.
            for a in args.iter_mut() {
                if let Ok(Value::Blob(mut b)) = db.query_row(
                    "SELECT minhash(?1, ?2)",
                    rusqlite::params![text(&mut rng), rng.pick(&[1i64, 16, 128])],
                    |r| r.get::<_, Value>(0),
                ) {
                    match rng.below(3) {
                        0 => b.truncate(rng.below(b.len() + 1)),
                        1 if !b.is_empty() => {
                            let i = rng.below(b.len());
                            b[i] ^= 0xff;
                        }
                        _ => {}
                    }
                    *a = Value::Blob(b);
                }
            }
        }
        let outcome = call(&db, name, &args);
        errors += outcome.is_err() as u64;
        if let Err(why) = check(&db, name, Some(&args), outcome) {
            failures.push(format!("{why}\n  {}", as_sql(name, &args)));
        }
        calls += 1;
        if calls % 50 == 0 {
            tables(&db, &mut rng, &mut failures);
        }
    }
    eprintln!("fuzz: seed {seed}, {calls} calls ({errors} errors) in {seconds} s");
    assert!(
        failures.is_empty(),
        "seed {seed}: add these to tests/fuzz-corpus/:\n{}",
        failures.join("\n")
    );
}

/// The table-valued functions on random inputs.
fn tables(db: &Connection, rng: &mut Rng, failures: &mut Vec<String>) {
    db.execute_batch(
        "DROP TABLE IF EXISTS t; DROP TABLE IF EXISTS p; DROP TABLE IF EXISTS k;
         CREATE TABLE t (pos, id, text, rank); CREATE TABLE p (a, b);
         CREATE TABLE k (band, key, id);",
    )
    .unwrap();
    let rows = rng.below(30);
    for i in 0..rows {
        let id = if rng.below(30) == 0 {
            value(rng)
        } else {
            Value::Integer(i as i64)
        };
        let rank = if rng.below(30) == 0 {
            value(rng)
        } else {
            Value::Integer(rng.below(10) as i64)
        };
        db.execute(
            "INSERT INTO t VALUES (?1, ?2, ?3, ?4)",
            rusqlite::params![i as i64, id, value(rng), rank],
        )
        .unwrap();
        for _ in 0..rng.below(4) {
            db.execute(
                "INSERT INTO p VALUES (?1, ?2)",
                rusqlite::params![rng.below(rows + 2) as i64, rng.below(rows + 2) as i64],
            )
            .unwrap();
            let key = if rng.below(30) == 0 {
                value(rng)
            } else {
                Value::Integer(rng.below(3) as i64)
            };
            db.execute(
                "INSERT INTO k VALUES (?1, ?2, ?3)",
                rusqlite::params![rng.below(2) as i64, key, rng.below(rows + 2) as i64],
            )
            .unwrap();
        }
    }
    let threshold = value(rng);
    let k = value(rng);
    for (name, sql, params) in [
        (
            "near_dups",
            "SELECT count(*) FROM near_dups('t', ?1, ?2)",
            vec![threshold.clone(), k.clone()],
        ),
        (
            "near_dups_among",
            "SELECT count(*) FROM near_dups_among('t', 'p', ?1)",
            vec![threshold.clone()],
        ),
        (
            "near_dups_among",
            "SELECT count(*) FROM near_dups_among('t', 'k', ?1)",
            vec![threshold.clone()],
        ),
        (
            "lsh_bands",
            "SELECT count(*) FROM lsh_bands(minhash(?1, 128), ?2, ?3)",
            vec![Value::Text(text(rng)), k.clone(), value(rng)],
        ),
        (
            "segments",
            "SELECT count(*), max(position) FROM segments(?1)",
            vec![value(rng)],
        ),
    ] {
        let outcome = db.query_row(sql, params_from_iter(&params), |r| r.get::<_, Value>(0));
        if let Err(e) = &outcome {
            let m = e.to_string();
            let ok = (m.starts_with(&format!("{name}[argument]: "))
                || m.starts_with("minhash[argument]: "))
                && m.contains(", got ");
            if m.contains("internal error") || m.contains('\0') || !ok {
                failures.push(format!("{name}: {m}"));
            }
        }
    }
}
