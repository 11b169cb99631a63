//! Each setting's rule, once: its type and range, the closed choices by
//! their words, a misspelt key matched to the setting it is a slip for.

use crate::core::sketch::ShingleKind;
use crate::core::url::UrlOptions;
use crate::sqlite::ground::error::Code;
use crate::sqlite::ground::error::{fail, DedupError};
use crate::sqlite::ground::shown::{describe_value, excerpt, truncate};
use crate::sqlite::settings::choices::{Compat, LshElection, MeasureKind};
use crate::sqlite::settings::declared::{keys, setting, Kind, SETTINGS};
use crate::sqlite::settings::values::Settings;
use crate::sqlite::tables::schema::{self};
use rusqlite::types::Value;
use rusqlite::{Connection, Result};

/// The keys of `pairs` that name no setting, for an error: each quoted,
/// with the setting it is likely a slip for (`'treshold' (did you mean
/// threshold?)`), then the known keys; `None` when every key is known.
pub fn unknown_keys(pairs: &[(String, Value)]) -> Option<String> {
    let unknown: Vec<String> = pairs
        .iter()
        .filter(|(k, _)| setting(k).is_none())
        .map(|(k, _)| {
            let quoted = format!("'{}'", k.replace('\'', "''"));
            match likely_key(k) {
                Some(known) => format!("{quoted} (did you mean {known}?)"),
                None => quoted,
            }
        })
        .collect();
    (!unknown.is_empty()).then(|| {
        format!(
            "{} (known: {})",
            truncate(&unknown.join(", "), 300),
            keys().join(", ")
        )
    })
}

/// The setting `key` is most likely a slip for: the same but for case, or
/// within two insertions or deletions of it (a letter left out, doubled,
/// swapped), the nearest first.
fn likely_key(key: &str) -> Option<&'static str> {
    use crate::core::similarity::{indel_distance, CodePoints};
    let lower = key.to_lowercase();
    let lower = CodePoints::new(&lower);
    SETTINGS
        .iter()
        .filter_map(|known| {
            indel_distance(&lower, &CodePoints::new(known.name), 2).map(|d| (d, known.name))
        })
        .min_by_key(|(d, _)| *d)
        .map(|(_, known)| known)
}

/// Checks `(key, value)` pairs, later pairs overriding earlier ones: each
/// setting by its row of [`SETTINGS`], then the rules across settings.
pub fn parse(pairs: &[(String, Value)]) -> std::result::Result<Settings, DedupError> {
    if let Some(unknown) = unknown_keys(pairs) {
        return fail(
            Code::Setting,
            format!("dedup: unknown setting, got {unknown}"),
        );
    }
    let get = |key: &str| {
        pairs
            .iter()
            .rev()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.clone())
    };
    let mut s = Settings::default();
    for setting in SETTINGS.iter().filter(|d| !matches!(d.kind, Kind::Own(_))) {
        if let Some(v) = checked(pairs, setting.name, setting.rule, |v| setting.kind.check(v))? {
            (setting.set)(&mut s, v);
        }
    }
    let spec = s.canonical_options();
    if let Err(e) = UrlOptions::parse(&spec) {
        return fail(
            Code::Setting,
            format!("dedup: url_options: {e}, got {}", excerpt(&spec)),
        );
    }
    let bands = get("lsh_bands").unwrap_or(Value::Integer(s.lsh_bands));
    let rows = get("lsh_rows").unwrap_or(Value::Integer(s.lsh_rows));
    match (&bands, &rows) {
        (Value::Integer(b), Value::Integer(r))
            if *b >= 1 && *r >= 1 && b.saturating_mul(*r) <= 4096 =>
        {
            s.lsh_bands = *b;
            s.lsh_rows = *r;
        }
        _ => {
            return fail(Code::Setting, format!(
                "dedup: lsh_bands and lsh_rows must be integers >= 1 with lsh_bands * lsh_rows <= 4096, got {} and {}",
                describe_value(&bands),
                describe_value(&rows)
            ))
        }
    }
    if let Some(v) = get("columns") {
        s.columns = match &v {
            Value::Null => Vec::new(),
            Value::Text(t) => parse_columns(t)?.ok_or(()).or_else(|_| {
                fail(Code::Setting, format!(
                    "dedup: columns must be a JSON object from the pipeline's names ({}) to the table's columns, e.g. {{\"url\": \"link\"}}, got {}",
                    schema::PAGE_COLUMNS.join(", "),
                    describe_value(&v)
                ))
            })?,
            other => {
                return fail(Code::Setting, format!(
                    "dedup: columns must be a JSON object, got {}",
                    describe_value(other)
                ))
            }
        };
    }
    if s.action == crate::sqlite::settings::choices::Action::Label && !s.against.is_empty() {
        return fail(Code::Setting, "dedup: action 'label' cannot be combined with against (the labels are of this table's rows; a cluster's representative may be a page of the other database)".into());
    }
    if s.compat == Compat::Reference && s.fix_urls {
        return fail(Code::Setting, "dedup: fix_urls cannot be combined with compat = 'reference' (that is the reference with its own fix_urls off, as its outputs here were made; our answers are per host, its probes per URL)".into());
    }
    // (lsh is not the reference's; its chain election is the window's.)
    let election_given = matches!(get("lsh_election"), Some(Value::Text(_)));
    if s.compat == Compat::Reference && !election_given {
        s.lsh_election = LshElection::Chain;
    }
    if let Some(v) = get("prefer") {
        s.prefer = parse_prefer(&v)?;
        if let Value::Text(t) = v {
            s.prefer_json = t;
        }
    }
    if let Some(v) = get("stoplist") {
        s.stoplist = parse_stoplist(&v)?;
    }
    measure_rules(&mut s, &get)?;
    paragraph_rules(&s, &get)?;
    Ok(s)
}

/// The rules of `paragraphs` across settings: `paragraph_min` is its
/// alone; the reference edits no text; a run `against` another database
/// or one that labels edits none either.
fn paragraph_rules(
    s: &Settings,
    get: &dyn Fn(&str) -> Option<Value>,
) -> std::result::Result<(), DedupError> {
    use crate::sqlite::settings::choices::{Action, Paragraphs};
    if s.paragraphs == Paragraphs::Keep {
        if !matches!(get("paragraph_min"), None | Some(Value::Null)) {
            return fail(Code::Setting, "dedup: paragraph_min applies to paragraphs 'dedup' only, got paragraph_min with paragraphs 'keep'".into());
        }
        return Ok(());
    }
    let with = if s.compat == Compat::Reference {
        "compat = 'reference' (the reference edits no text)"
    } else if !s.against.is_empty() {
        "against (a paragraph's owner may be a page of the other database, whose text a run does not edit)"
    } else if s.action == Action::Label {
        "action 'label' (a labelling run changes no row)"
    } else {
        return Ok(());
    };
    fail(
        Code::Setting,
        format!("dedup: paragraphs 'dedup' cannot be combined with {with}"),
    )
}

/// The rules of `measure` across settings: resemblance's threshold is
/// Text::DeDuper's 0.2 unless given, its lsh signature is of its own word
/// shingles (a Jaccard estimate of the measure itself), with more bands
/// of fewer rows unless given; `ngram_size` and `stoplist` are
/// resemblance's alone; the reference knows only Levenshtein.
fn measure_rules(
    s: &mut Settings,
    get: &dyn Fn(&str) -> Option<Value>,
) -> std::result::Result<(), DedupError> {
    let given = |key: &str| !matches!(get(key), None | Some(Value::Null));
    if s.measure == MeasureKind::Levenshtein {
        if let Some(key) = ["ngram_size", "stoplist"].into_iter().find(|k| given(k)) {
            return fail(Code::Setting, format!(
                "dedup: {key} applies to measure 'resemblance' only, got {key} with measure 'levenshtein'"
            ));
        }
        return Ok(());
    }
    if s.compat == Compat::Reference {
        return fail(Code::Setting, "dedup: measure 'resemblance' cannot be combined with compat = 'reference' (the reference measures by lev_ratio)".into());
    }
    if !given("threshold") {
        s.threshold = crate::core::measure::DEFAULT_RESEMBLANCE_THRESHOLD;
    }
    if (given("lsh_shingles") && s.lsh_shingles != ShingleKind::Word)
        || (given("lsh_shingle_size") && s.lsh_shingle_size != s.ngram_size)
    {
        return fail(Code::Setting, format!(
            "dedup: with measure 'resemblance', lsh's shingles are its own ({} words), got lsh_shingles '{}' and lsh_shingle_size {}",
            s.ngram_size, s.lsh_shingles.as_str(), s.lsh_shingle_size
        ));
    }
    s.lsh_shingles = ShingleKind::Word;
    s.lsh_shingle_size = s.ngram_size;
    if !given("lsh_bands") && !given("lsh_rows") {
        (s.lsh_bands, s.lsh_rows) = RESEMBLANCE_BANDS;
    }
    Ok(())
}

/// lsh's bands and rows under resemblance unless given: a pair of
/// resemblance 0.2 shares a band with probability 0.995, of 0.3 with
/// 1 - 1e-5 (`lsh_probability`).
pub const RESEMBLANCE_BANDS: (i64, i64) = (128, 2);

/// `stoplist`: a JSON array of words, or one text of words separated by
/// spaces or commas; NULL for none. The words, separated by one space.
fn parse_stoplist(v: &Value) -> std::result::Result<String, DedupError> {
    let bad = || {
        fail(Code::Setting, format!(
            "dedup: stoplist must be a JSON array of words or one text of words separated by spaces, got {}",
            describe_value(v)
        ))
    };
    let text = match v {
        Value::Null => return Ok(String::new()),
        Value::Text(t) => t,
        _ => return bad(),
    };
    let words: Vec<String> = if text.trim_start().starts_with('[') {
        match json_texts(text, true)? {
            Some(words) => words,
            None => return bad(),
        }
    } else {
        vec![text.clone()]
    };
    Ok(words
        .iter()
        .flat_map(|w| w.split(|c: char| c.is_whitespace() || c == ','))
        .filter(|w| !w.is_empty())
        .collect::<Vec<_>>()
        .join(" "))
}

/// The last value `pairs` give `key` as `check` reads it (`None` when not
/// given), or the error naming the setting, its `rule` and the value.
fn checked<T>(
    pairs: &[(String, Value)],
    key: &str,
    rule: &str,
    check: impl Fn(&Value) -> Option<T>,
) -> std::result::Result<Option<T>, DedupError> {
    let Some((_, value)) = pairs.iter().rev().find(|(k, _)| k == key) else {
        return Ok(None);
    };
    match check(value) {
        Some(v) => Ok(Some(v)),
        None => {
            // (A number written as text, which the number itself would
            // pass: say so, since the quotes are the whole mistake.)
            let as_number = match value {
                Value::Text(t) => {
                    let t = t.trim();
                    t.parse::<i64>()
                        .map(Value::Integer)
                        .or_else(|_| t.parse::<f64>().map(Value::Real))
                        .ok()
                }
                _ => None,
            };
            let hint = match as_number {
                Some(n) if check(&n).is_some() => format!(
                    " (a number written as text: give it without quotes, {})",
                    describe_value(&n)
                ),
                _ => String::new(),
            };
            fail(
                Code::Setting,
                format!("dedup: {key} {rule}, got {}{hint}", describe_value(value)),
            )
        }
    }
}

/// `columns`: a JSON object of pipeline names (of
/// [`schema::PAGE_COLUMNS`], each once) to column names; `None` when it is
/// not one.
pub fn parse_columns(text: &str) -> Result<Option<Vec<(String, String)>>> {
    let db = Connection::open_in_memory()?;
    let ok: bool = db.query_row(
        "SELECT CASE WHEN json_valid(?1) AND json_type(?1) = 'object' THEN NOT EXISTS
           (SELECT 1 FROM json_each(?1) WHERE type <> 'text' OR value = '') ELSE 0 END",
        [text],
        |r| r.get(0),
    )?;
    if !ok {
        return Ok(None);
    }
    let mut stmt = db.prepare("SELECT key, value FROM json_each(?1)")?;
    let pairs = stmt
        .query_map([text], |r| {
            Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?))
        })?
        .collect::<Result<Vec<_>>>()?;
    let known = pairs
        .iter()
        .all(|(k, _)| schema::PAGE_COLUMNS.contains(&k.as_str()));
    Ok(known.then_some(pairs))
}

/// `prefer`: a JSON array of strings (SQL ordering terms); NULL or `[]` for none.
fn parse_prefer(v: &Value) -> std::result::Result<Vec<String>, DedupError> {
    let bad = || {
        fail(Code::Setting, format!(
            "dedup: prefer must be a JSON array of SQL ordering terms (e.g. [\"crawled ASC\"]), got {}",
            describe_value(v)
        ))
    };
    let text = match v {
        Value::Null => return Ok(Vec::new()),
        Value::Text(t) => t,
        _ => return bad(),
    };
    json_texts(text, false)?.map_or_else(bad, Ok)
}

/// The texts of `text` when it is a JSON array of texts (none blank unless
/// `blank`), in order; `None` when it is not one.
fn json_texts(text: &str, blank: bool) -> Result<Option<Vec<String>>> {
    let db = Connection::open_in_memory()?;
    let ok: bool = db.query_row(
        "SELECT CASE WHEN json_valid(?1) AND json_type(?1) = 'array' THEN NOT EXISTS
           (SELECT 1 FROM json_each(?1) WHERE type <> 'text' OR (NOT ?2 AND trim(value) = '')) ELSE 0 END",
        rusqlite::params![text, blank],
        |r| r.get(0),
    )?;
    if !ok {
        return Ok(None);
    }
    let mut stmt = db.prepare("SELECT value FROM json_each(?1) ORDER BY key")?;
    let texts = stmt
        .query_map([text], |r| r.get::<_, String>(0))?
        .collect::<Result<Vec<_>>>()?;
    Ok(Some(texts))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pairs(p: &[(&str, Value)]) -> Vec<(String, Value)> {
        p.iter().map(|(k, v)| (k.to_string(), v.clone())).collect()
    }

    fn err(p: &[(&str, Value)]) -> String {
        parse(&pairs(p)).unwrap_err().to_string()
    }

    #[test]
    fn defaults_and_overrides() {
        assert_eq!(parse(&[]).unwrap(), Settings::default());
        let s = parse(&pairs(&[
            ("threshold", Value::Real(0.5)),
            ("threshold", Value::Integer(1)),
            ("discard_params", Value::Integer(0)),
            ("url_options", Value::Text("strip_www".into())),
        ]))
        .unwrap();
        assert_eq!(s.threshold, 1.0);
        assert_eq!(s.canonical_options(), "keep_params,strip_www");
    }

    #[test]
    fn a_number_written_as_text_is_named_so_only_where_the_number_would_do() {
        // (In the last three the number would fail too, or the setting is
        // not a number: no hint.)
        let cases = [
            ("threshold", "0.9", "must be in [0.0, 1.0], got '0.9' (a number written as text: give it without quotes, 0.9)"),
            ("threshold", "1.5", "must be in [0.0, 1.0], got '1.5'"),
            ("distance", "2.5", "must be an integer >= 1 (rows compared: distance - 1), got '2.5'"),
            ("near_mode", "1", "must be 'window' or 'lsh', got '1'"),
        ];
        for (key, value, said) in cases {
            assert_eq!(
                err(&[(key, Value::Text(value.into()))]),
                format!("dedup[setting]: {key} {said}")
            );
        }
    }

    #[test]
    fn each_setting_refuses_a_bad_value_with_its_rule() {
        let text = |t: &str| Value::Text(t.into());
        let cases = [
            ("threshold", Value::Integer(2), "must be in [0.0, 1.0], got 2"),
            ("threshold", text("0.8"), "must be in [0.0, 1.0], got '0.8' (a number written as text: give it without quotes, 0.8)"),
            ("distance", text(" 20"), "must be an integer >= 1 (rows compared: distance - 1), got ' 20' (a number written as text: give it without quotes, 20)"),
            ("distance", Value::Integer(0), "must be an integer >= 1 (rows compared: distance - 1), got 0"),
            ("discard_params", Value::Null, "must be 0 or 1, got NULL"),
            ("discard_params", Value::Integer(2), "must be 0 or 1, got 2"),
            ("full", text("yes"), "must be true or false (1 or 0), got 'yes'"),
            ("job", text(&"j".repeat(201)), "must be a label of at most 200 characters, got '"),
            ("n_min", Value::Integer(-1), "must be a non-negative integer, got -1"),
            ("url_options", Value::Integer(1), "must be text, got 1"),
            ("near_mode", text("minhash"), "must be 'window' or 'lsh', got 'minhash'"),
            ("near_mode", Value::Null, "must be 'window' or 'lsh', got NULL"),
            ("table", Value::Null, "must be the name of a table, got NULL"),
            ("busy_timeout", Value::Integer(-5), "must be milliseconds (an integer >= 0), got -5"),
            ("busy_timeout", Value::Integer(1 << 40), "must be milliseconds (an integer >= 0), got 1099511627776"),
            ("boilerplate", text("drop"), "must be 'keep' or 'strip', got 'drop'"),
            ("boilerplate_min_pages", Value::Integer(1), "must be an integer >= 2, got 1"),
            ("url_rules", Value::Real(1.5), "must be 0 (off) or the probability a rule needs, in (0.0, 1.0], got 1.5"),
            ("compat", text("ref"), "must be 'reference' (the reference pipeline's behaviour exactly) or 'none', got 'ref'"),
            ("lsh_election", Value::Integer(1), "must be 'chain' (the window scan's election) or 'direct' (no drift), got 1"),
            ("columns", Value::Integer(1), "must be a JSON object, got 1"),
            ("lsh_shingles", text("token"), "must be 'char' (characters) or 'word' (words), got 'token'"),
            ("lsh_shingle_size", Value::Integer(65), "must be an integer in [1, 64], got 65"),
            ("lsh_shingle_size", Value::Integer(0), "must be an integer in [1, 64], got 0"),
        ];
        for (key, value, rule) in cases {
            let message = err(&[(key, value.clone())]);
            assert!(
                message.starts_with(&format!("dedup[setting]: {key} {rule}")),
                "{key} = {value:?}: {message}"
            );
        }
        // NULL means the default where a setting allows it; the last of two
        // values of a key is the one checked and kept.
        let s = parse(&pairs(&[
            ("full", Value::Null),
            ("job", Value::Null),
            ("url_options", Value::Null),
            ("url_rules", Value::Null),
            ("compat", Value::Null),
            ("lsh_election", Value::Null),
            ("distance", Value::Integer(0)),
            ("distance", Value::Integer(7)),
        ]))
        .unwrap();
        assert_eq!(s.distance, 7);
        assert_eq!((s.full, s.url_rules), (false, 0.0));
        assert_eq!(
            (s.compat.as_str(), s.lsh_election.as_str()),
            ("none", "direct")
        );
        let s = parse(&pairs(&[
            ("compat", text("reference")),
            ("lsh_election", Value::Null),
        ]))
        .unwrap();
        assert_eq!(s.lsh_election, LshElection::Chain);
    }

    #[test]
    fn an_unknown_key_is_matched_to_the_setting_it_is_a_slip_for() {
        for (key, want) in [
            ("treshold", Some("threshold")),  // a letter left out
            ("Threshold", Some("threshold")), // case
            ("N_MIN", Some("n_min")),
            ("thresohld", Some("threshold")), // two letters swapped
            ("distancee", Some("distance")),  // a letter doubled
            ("nearmode", Some("near_mode")),
            ("tabel", Some("table")),
            ("bands", None), // lsh_bands is four away
            ("speed", None),
            ("", None),
        ] {
            assert_eq!(likely_key(key), want, "{key:?}");
        }
    }

    #[test]
    fn every_bad_value_is_named() {
        assert_eq!(
            err(&[("threshold", Value::Real(1.5))]),
            "dedup[setting]: threshold must be in [0.0, 1.0], got 1.5"
        );
        assert!(err(&[("treshold", Value::Real(0.8))]).starts_with(
            "dedup[setting]: unknown setting, got 'treshold' (did you mean threshold?) (known: threshold, "
        ));
        // An option that ignores the probe URL of earlier versions is valid.
        let s = parse(&pairs(&[(
            "url_options",
            Value::Text("ignore+=.org".into()),
        )]))
        .unwrap();
        assert_eq!(s.url_options, "ignore+=.org");
        assert!(err(&[("url_options", Value::Text("bogus".into()))])
            .starts_with("dedup[setting]: url_options: unknown option 'bogus'"));
        assert_eq!(
            err(&[("lsh_rows", Value::Integer(2000))]),
            "dedup[setting]: lsh_bands and lsh_rows must be integers >= 1 with lsh_bands * lsh_rows <= 4096, got 32 and 2000"
        );
        assert_eq!(
            err(&[("table", Value::Text(String::new()))]),
            "dedup[setting]: table must be the name of a table, got ''"
        );
        assert_eq!(
            err(&[("near_mode", Value::Text("a\0b".into()))]),
            "dedup[setting]: near_mode must be 'window' or 'lsh', got 'a\\u{0}b'"
        );
    }
}
