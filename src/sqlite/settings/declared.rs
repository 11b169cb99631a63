//! Every setting, declared once: its name, the values it takes and the
//! rule an error states, whether `dedup_runs.settings` records it and
//! whether the phase scripts read it from `temp._dedup_run`, its command-line
//! flag, and how it is read into and out of [`Settings`]. The parse
//! ([`crate::sqlite::settings::check`]), the recorded JSON
//! ([`Settings::to_json`]), the run's row
//! ([`crate::sqlite::settings::record`]), the known keys and the CLI's flags
//! (`dedup_settings_table()`, which `python/sqlite_dedup/settings.json`
//! holds for the Python layers) all come from [`SETTINGS`].
//!
//! Adding a setting: a field of [`Settings`] with its default, and a row
//! here. Rules across settings (`lsh_bands * lsh_rows`, `compat` with
//! `fix_urls`) stay in `check.rs`.

use crate::core::sketch::ShingleKind;
use crate::sqlite::ground::json::json_string;
use crate::sqlite::settings::choices::{
    Action, Boilerplate, Compat, LshElection, LshSketch, MeasureKind, NearMode, Paragraphs,
};
use crate::sqlite::settings::values::Settings;
use rusqlite::types::Value;

/// The values a setting takes.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Kind {
    /// A number in [0.0, 1.0]; NULL as 0 when `null_is_off`.
    Unit {
        /// NULL means 0 (off).
        null_is_off: bool,
    },
    /// An integer of at least this.
    IntegerFrom(i64),
    /// An integer in this range (both ends in).
    IntegerIn(i64, i64),
    /// Milliseconds: an integer in [0, 2^31).
    Milliseconds,
    /// 0 or 1 (JSON's `true` and `false` too); NULL as 0 when `null_is_off`.
    Flag {
        /// NULL means 0 (off).
        null_is_off: bool,
    },
    /// Any text; NULL as the empty text.
    Text,
    /// A label of at most this many characters; NULL as none.
    Label(usize),
    /// A name (not empty, no NUL); NULL as none when `null_is_none`.
    Name {
        /// NULL means none (the empty text).
        null_is_none: bool,
    },
    /// One of these words; NULL as `null`.
    Choice {
        /// The words.
        words: &'static [&'static str],
        /// What NULL means.
        null: NullIs,
    },
    /// Checked by its own code in `check.rs` (JSON, or with another
    /// setting): its values' kind as `dedup_settings_table()` names it.
    Own(&'static str),
}

/// What NULL means for a choice.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum NullIs {
    /// An error.
    Refused,
    /// This word.
    Word(&'static str),
    /// The value other settings left (its default).
    Unchanged,
}

/// Where the run keeps a setting.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Recorded {
    /// In `dedup_runs.settings`, always.
    Always,
    /// In `dedup_runs.settings` as JSON (not as a text), always.
    AsJson,
    /// In `dedup_runs.settings` when not its default (older runs lack it).
    WhenSet,
    /// Never: it changes how the run waits or what it costs, not its result.
    Never,
}

/// A setting's command-line flag (`sqlite-dedup run`, `plan`, `similar`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Cli {
    /// The flag, e.g. `--n-min`.
    pub flag: &'static str,
    /// The placeholder of its value in the help (`""`: none).
    pub metavar: &'static str,
    /// Its help.
    pub help: &'static str,
}

/// One setting.
pub struct Setting {
    /// Its key in `dedup_settings` and the JSON argument.
    pub name: &'static str,
    /// The values it takes.
    pub kind: Kind,
    /// What an error says it must be (`threshold must be in [0.0, 1.0]`).
    pub rule: &'static str,
    /// Whether and how `dedup_runs.settings` records it.
    pub recorded: Recorded,
    /// Its column's type in `temp._dedup_run`, when the scripts read it.
    pub run_row: Option<&'static str>,
    /// Its command-line flag, when it has one of this form (the CLI's
    /// other forms: `--keep-params`, `--prefer` repeated, `--near-mode`).
    pub cli: Option<Cli>,
    /// Its value as the run uses it (recorded and in the run's row).
    pub value: fn(&Settings) -> Value,
    /// Sets it from a value its kind accepted.
    pub set: fn(&mut Settings, Value),
}

fn real(v: &Value) -> f64 {
    match *v {
        Value::Integer(i) => i as f64,
        Value::Real(r) => r,
        _ => 0.0,
    }
}

fn integer(v: &Value) -> i64 {
    match *v {
        Value::Integer(i) => i,
        _ => 0,
    }
}

fn text(v: Value) -> String {
    match v {
        Value::Text(t) => t,
        _ => String::new(),
    }
}

/// Every setting, in the order `dedup_runs.settings` records them.
pub const SETTINGS: [Setting; 30] = [
    Setting {
        name: "threshold",
        kind: Kind::Unit { null_is_off: false },
        rule: "must be in [0.0, 1.0]",
        recorded: Recorded::Always,
        run_row: Some("REAL"),
        cli: Some(Cli { flag: "--threshold", metavar: "", help: "near-duplicate when the measure > threshold (default 0.9; 0.2 with --measure resemblance)" }),
        value: |s| Value::Real(s.threshold),
        set: |s, v| s.threshold = real(&v),
    },
    Setting {
        name: "measure",
        kind: Kind::Choice { words: MeasureKind::WORDS, null: NullIs::Word("levenshtein") },
        rule: "must be 'levenshtein' (lev_ratio, the reference's) or 'resemblance' (Broder's, of word shingles, as Text::DeDuper)",
        recorded: Recorded::WhenSet,
        run_row: Some("TEXT"),
        cli: Some(Cli { flag: "--measure", metavar: "", help: "what a pair is measured by: levenshtein (default) or resemblance (word shingles, Text::DeDuper's)" }),
        value: |s| Value::Text(s.measure.as_str().into()),
        set: |s, v| s.measure = MeasureKind::from_word(&text(v)).unwrap_or_default(),
    },
    Setting {
        name: "ngram_size",
        kind: Kind::IntegerIn(1, 64),
        rule: "must be an integer in [1, 64]",
        recorded: Recorded::WhenSet,
        run_row: Some("INTEGER"),
        cli: Some(Cli { flag: "--ngram-size", metavar: "N", help: "measure resemblance: words a shingle (default 5)" }),
        value: |s| Value::Integer(s.ngram_size),
        set: |s, v| s.ngram_size = integer(&v),
    },
    Setting {
        name: "stoplist",
        kind: Kind::Own("text"),
        rule: "must be a JSON array of words or one text of words separated by spaces",
        recorded: Recorded::WhenSet,
        run_row: Some("TEXT"),
        cli: Some(Cli { flag: "--stoplist", metavar: "WORDS", help: "measure resemblance: words left out before shingling, separated by spaces" }),
        value: |s| Value::Text(s.stoplist.clone()),
        set: |_, _| {},
    },
    Setting {
        name: "distance",
        kind: Kind::IntegerFrom(1),
        rule: "must be an integer >= 1 (rows compared: distance - 1)",
        recorded: Recorded::Always,
        run_row: Some("INTEGER"),
        cli: Some(Cli { flag: "--distance", metavar: "", help: "window mode: rows compared, the reference's distance (50)" }),
        value: |s| Value::Integer(s.distance),
        set: |s, v| s.distance = integer(&v),
    },
    Setting {
        name: "discard_params",
        kind: Kind::Flag { null_is_off: false },
        rule: "must be 0 or 1",
        recorded: Recorded::Always,
        run_row: Some("INTEGER"),
        cli: None,
        value: |s| Value::Integer(s.discard_params as i64),
        set: |s, v| s.discard_params = integer(&v) == 1,
    },
    Setting {
        name: "n_min",
        kind: Kind::IntegerFrom(0),
        rule: "must be a non-negative integer",
        recorded: Recorded::Always,
        run_row: Some("INTEGER"),
        cli: Some(Cli { flag: "--n-min", metavar: "", help: "drop rows of domains with fewer pages (0)" }),
        value: |s| Value::Integer(s.n_min),
        set: |s, v| s.n_min = integer(&v),
    },
    Setting {
        name: "url_options",
        kind: Kind::Text,
        rule: "must be text",
        recorded: Recorded::Always,
        run_row: Some("TEXT"),
        cli: Some(Cli { flag: "--url-options", metavar: "", help: "extra canonical_url options, e.g. strip_www,https" }),
        // (As the run uses them: with the options compat and discard_params give.)
        value: |s| Value::Text(s.canonical_options()),
        set: |s, v| s.url_options = text(v),
    },
    Setting {
        name: "near_mode",
        kind: Kind::Choice { words: NearMode::WORDS, null: NullIs::Refused },
        rule: "must be 'window' or 'lsh'",
        recorded: Recorded::Always,
        run_row: Some("TEXT"),
        cli: None,
        value: |s| Value::Text(s.near_mode.as_str().into()),
        set: |s, v| s.near_mode = NearMode::from_word(&text(v)).unwrap_or_default(),
    },
    Setting {
        name: "lsh_bands",
        kind: Kind::Own("integer"),
        rule: "must be an integer >= 1 with lsh_bands * lsh_rows <= 4096",
        recorded: Recorded::Always,
        run_row: Some("INTEGER"),
        cli: Some(Cli { flag: "--lsh-bands", metavar: "", help: "lsh mode: bands of the signature (32)" }),
        value: |s| Value::Integer(s.lsh_bands),
        set: |s, v| s.lsh_bands = integer(&v),
    },
    Setting {
        name: "lsh_rows",
        kind: Kind::Own("integer"),
        rule: "must be an integer >= 1 with lsh_bands * lsh_rows <= 4096",
        recorded: Recorded::Always,
        run_row: Some("INTEGER"),
        cli: Some(Cli { flag: "--lsh-rows", metavar: "", help: "lsh mode: signature values per band (4)" }),
        value: |s| Value::Integer(s.lsh_rows),
        set: |s, v| s.lsh_rows = integer(&v),
    },
    Setting {
        name: "table",
        kind: Kind::Name { null_is_none: false },
        rule: "must be the name of a table",
        recorded: Recorded::Always,
        run_row: None,
        cli: Some(Cli { flag: "--table", metavar: "", help: "the table of pages (default pages)" }),
        value: |s| Value::Text(s.table.clone()),
        set: |s, v| s.table = text(v),
    },
    Setting {
        name: "boilerplate",
        kind: Kind::Choice { words: Boilerplate::WORDS, null: NullIs::Refused },
        rule: "must be 'keep' or 'strip'",
        recorded: Recorded::Always,
        run_row: Some("TEXT"),
        cli: Some(Cli { flag: "--boilerplate", metavar: "", help: "'strip': compare texts without the lines a site repeats (default keep)" }),
        value: |s| Value::Text(s.boilerplate.as_str().into()),
        set: |s, v| s.boilerplate = Boilerplate::from_word(&text(v)).unwrap_or_default(),
    },
    Setting {
        name: "boilerplate_min_pages",
        kind: Kind::IntegerFrom(2),
        rule: "must be an integer >= 2",
        recorded: Recorded::Always,
        run_row: Some("INTEGER"),
        cli: Some(Cli { flag: "--boilerplate-min-pages", metavar: "N", help: "'strip': pages (and distinct titles) of a domain a line must be in to be chrome (5)" }),
        value: |s| Value::Integer(s.boilerplate_min_pages),
        set: |s, v| s.boilerplate_min_pages = integer(&v),
    },
    Setting {
        name: "url_rules",
        kind: Kind::Unit { null_is_off: true },
        rule: "must be 0 (off) or the probability a rule needs, in (0.0, 1.0]",
        recorded: Recorded::Always,
        run_row: Some("REAL"),
        cli: Some(Cli { flag: "--url-rules", metavar: "P", help: "drop parameters learned to never change content with probability >= P (0: never)" }),
        value: |s| Value::Real(s.url_rules),
        set: |s, v| s.url_rules = real(&v),
    },
    Setting {
        name: "compat",
        kind: Kind::Choice { words: Compat::WORDS, null: NullIs::Word("none") },
        rule: "must be 'reference' (the reference pipeline's behaviour exactly) or 'none'",
        recorded: Recorded::Always,
        run_row: Some("TEXT"),
        cli: Some(Cli { flag: "--compat", metavar: "", help: "'reference': the reference pipeline's behaviour exactly (default: none)" }),
        value: |s| Value::Text(s.compat.as_str().into()),
        set: |s, v| s.compat = Compat::from_word(&text(v)).unwrap_or_default(),
    },
    Setting {
        name: "prefer",
        kind: Kind::Own("json"),
        rule: "must be a JSON array of SQL ordering terms (e.g. [\"crawled ASC\"])",
        recorded: Recorded::AsJson,
        run_row: None,
        cli: None,
        value: |s| Value::Text(s.prefer_json.clone()),
        set: |_, _| {},
    },
    Setting {
        name: "columns",
        kind: Kind::Own("json"),
        rule: "must be a JSON object from the pipeline's names to the table's columns",
        recorded: Recorded::AsJson,
        run_row: None,
        cli: Some(Cli { flag: "--columns", metavar: "JSON", help: "the table's columns for the pipeline's names, e.g. '{\"url\": \"link\", \"parsed\": \"body\"}'" }),
        value: |s| Value::Text(columns_json(&s.columns)),
        set: |_, _| {},
    },
    Setting {
        name: "lsh_election",
        kind: Kind::Choice { words: LshElection::WORDS, null: NullIs::Unchanged },
        rule: "must be 'chain' (the window scan's election) or 'direct' (no drift)",
        recorded: Recorded::Always,
        run_row: Some("TEXT"),
        cli: None,
        value: |s| Value::Text(s.lsh_election.as_str().into()),
        set: |s, v| {
            if let Value::Text(t) = v {
                s.lsh_election = LshElection::from_word(&t).unwrap_or_default();
            }
        },
    },
    Setting {
        name: "lsh_shingles",
        kind: Kind::Choice { words: ShingleKind::WORDS, null: NullIs::Refused },
        rule: "must be 'char' (characters) or 'word' (words)",
        recorded: Recorded::WhenSet,
        run_row: Some("TEXT"),
        cli: Some(Cli { flag: "--lsh-shingles", metavar: "", help: "lsh mode: what the signature's shingles are made of (default char)" }),
        value: |s| Value::Text(s.lsh_shingles.as_str().into()),
        set: |s, v| s.lsh_shingles = ShingleKind::from_word(&text(v)).unwrap_or(ShingleKind::Char),
    },
    Setting {
        name: "lsh_shingle_size",
        kind: Kind::IntegerIn(1, 64),
        rule: "must be an integer in [1, 64]",
        recorded: Recorded::WhenSet,
        run_row: Some("INTEGER"),
        cli: Some(Cli { flag: "--lsh-shingle-size", metavar: "N", help: "lsh mode: characters or words a shingle (default 5)" }),
        value: |s| Value::Integer(s.lsh_shingle_size),
        set: |s, v| s.lsh_shingle_size = integer(&v),
    },
    Setting {
        name: "lsh_sketch",
        kind: Kind::Choice { words: LshSketch::WORDS, null: NullIs::Refused },
        rule: "must be 'minhash' (a hash a shingle per permutation) or 'oph' (one-permutation MinHash, one hash a shingle)",
        recorded: Recorded::WhenSet,
        run_row: Some("TEXT"),
        cli: Some(Cli { flag: "--lsh-sketch", metavar: "", help: "lsh mode: 'oph' makes the signature with one hash a shingle (default minhash)" }),
        value: |s| Value::Text(s.lsh_sketch.as_str().into()),
        set: |s, v| s.lsh_sketch = LshSketch::from_word(&text(v)).unwrap_or_default(),
    },
    Setting {
        name: "paragraphs",
        kind: Kind::Choice { words: Paragraphs::WORDS, null: NullIs::Word("keep") },
        rule: "must be 'keep' (texts as they are) or 'dedup' (a kept page's paragraph that a page before it holds is cut from its text)",
        recorded: Recorded::WhenSet,
        run_row: Some("TEXT"),
        cli: Some(Cli { flag: "--paragraphs", metavar: "", help: "'dedup': cut from each kept page the paragraphs a page before it holds (default keep)" }),
        value: |s| Value::Text(s.paragraphs.as_str().into()),
        set: |s, v| s.paragraphs = Paragraphs::from_word(&text(v)).unwrap_or_default(),
    },
    Setting {
        name: "paragraph_min",
        kind: Kind::IntegerFrom(1),
        rule: "must be an integer >= 1 (characters)",
        recorded: Recorded::WhenSet,
        run_row: Some("INTEGER"),
        cli: Some(Cli { flag: "--paragraph-min", metavar: "N", help: "paragraphs dedup: the fewest characters a paragraph cut has (default 100)" }),
        value: |s| Value::Integer(s.paragraph_min),
        set: |s, v| s.paragraph_min = integer(&v),
    },
    Setting {
        name: "action",
        kind: Kind::Choice { words: Action::WORDS, null: NullIs::Word("delete") },
        rule: "must be 'delete' (the duplicates are removed) or 'label' (every row labelled with its cluster in dedup_clusters, nothing deleted)",
        recorded: Recorded::Never,
        run_row: None,
        cli: Some(Cli { flag: "--action", metavar: "", help: "'label': delete nothing, write every row's cluster to dedup_clusters (default delete)" }),
        value: |s| Value::Text(s.action.as_str().into()),
        set: |s, v| s.action = Action::from_word(&text(v)).unwrap_or_default(),
    },
    Setting {
        name: "full",
        kind: Kind::Flag { null_is_off: true },
        rule: "must be true or false (1 or 0)",
        recorded: Recorded::Never,
        run_row: None,
        cli: None,
        value: |s| Value::Integer(s.full as i64),
        set: |s, v| s.full = integer(&v) == 1,
    },
    Setting {
        name: "job",
        kind: Kind::Label(200),
        rule: "must be a label of at most 200 characters",
        recorded: Recorded::WhenSet,
        run_row: None,
        cli: None,
        value: |s| Value::Text(s.job.clone()),
        set: |s, v| s.job = text(v),
    },
    Setting {
        name: "against",
        kind: Kind::Name { null_is_none: true },
        rule: "must be the path of an SQLite database file or the name of an attached schema",
        recorded: Recorded::WhenSet,
        run_row: None,
        cli: Some(Cli { flag: "--against", metavar: "DB", help: "also compare with another database's pages (a path, opened read-only and left as it is); only this database's pages are removed (docs/crawl-time.md)" }),
        value: |s| Value::Text(s.against.clone()),
        set: |s, v| s.against = text(v),
    },
    Setting {
        name: "fix_urls",
        kind: Kind::Flag { null_is_off: true },
        rule: "must be true or false (1 or 0)",
        recorded: Recorded::WhenSet,
        run_row: Some("INTEGER"),
        cli: None,
        value: |s| Value::Integer(s.fix_urls as i64),
        set: |s, v| s.fix_urls = integer(&v) == 1,
    },
    Setting {
        name: "busy_timeout",
        kind: Kind::Milliseconds,
        rule: "must be milliseconds (an integer >= 0)",
        recorded: Recorded::Never,
        run_row: None,
        cli: Some(Cli { flag: "--busy-timeout", metavar: "MS", help: "milliseconds to wait for another connection's lock (default 5000; 0: fail at once)" }),
        value: |s| Value::Integer(s.busy_timeout),
        set: |s, v| s.busy_timeout = integer(&v),
    },
];

/// Every setting's name, in the table's order.
pub fn keys() -> Vec<&'static str> {
    SETTINGS.iter().map(|s| s.name).collect()
}

/// The setting named `name`.
pub fn setting(name: &str) -> Option<&'static Setting> {
    SETTINGS.iter().find(|s| s.name == name)
}

impl Kind {
    /// The value as the setting keeps it, or `None` when this kind does
    /// not take `v` (a [`Kind::Own`] setting takes every value here: its
    /// own code checks it).
    pub fn check(&self, v: &Value) -> Option<Value> {
        match (*self, v) {
            (Kind::Unit { null_is_off: true }, Value::Null) => Some(Value::Real(0.0)),
            (Kind::Unit { .. }, Value::Integer(i)) if (0..=1).contains(i) => {
                Some(Value::Real(*i as f64))
            }
            (Kind::Unit { .. }, Value::Real(r)) if (0.0..=1.0).contains(r) => Some(Value::Real(*r)),
            (Kind::IntegerFrom(min), Value::Integer(i)) if *i >= min => Some(v.clone()),
            (Kind::IntegerIn(lo, hi), Value::Integer(i)) if (lo..=hi).contains(i) => {
                Some(v.clone())
            }
            (Kind::Milliseconds, Value::Integer(i)) if (0..=i32::MAX as i64).contains(i) => {
                Some(v.clone())
            }
            (Kind::Flag { .. }, Value::Integer(0 | 1)) => Some(v.clone()),
            (Kind::Flag { null_is_off: true }, Value::Null) => Some(Value::Integer(0)),
            (Kind::Text | Kind::Label(_), Value::Null) => Some(Value::Text(String::new())),
            (Kind::Text, Value::Text(_)) => Some(v.clone()),
            (Kind::Label(max), Value::Text(t)) if t.chars().count() <= max => Some(v.clone()),
            (Kind::Name { .. }, Value::Text(t)) if !t.is_empty() && !t.contains('\0') => {
                Some(v.clone())
            }
            (Kind::Name { null_is_none: true }, Value::Null) => Some(Value::Text(String::new())),
            (Kind::Choice { words, .. }, Value::Text(t)) if words.contains(&t.as_str()) => {
                Some(v.clone())
            }
            (
                Kind::Choice {
                    null: NullIs::Word(w),
                    ..
                },
                Value::Null,
            ) => Some(Value::Text(w.into())),
            (
                Kind::Choice {
                    null: NullIs::Unchanged,
                    ..
                },
                Value::Null,
            ) => Some(Value::Null),
            (Kind::Own(_), _) => Some(v.clone()),
            _ => None,
        }
    }

    /// Its name in `dedup_settings_table()`.
    fn as_str(&self) -> &'static str {
        match self {
            Kind::Unit { .. } => "unit",
            Kind::IntegerFrom(_) | Kind::IntegerIn(..) | Kind::Milliseconds => "integer",
            Kind::Flag { .. } => "flag",
            Kind::Text | Kind::Label(_) | Kind::Name { .. } => "text",
            Kind::Choice { .. } => "choice",
            Kind::Own(kind) => kind,
        }
    }
}

/// The `columns` setting as a JSON object.
pub fn columns_json(columns: &[(String, String)]) -> String {
    let pairs: Vec<String> = columns
        .iter()
        .map(|(k, v)| format!("{}:{}", json_string(k), json_string(v)))
        .collect();
    format!("{{{}}}", pairs.join(","))
}

/// A value as JSON (a number, a text, or null).
fn value_json(v: &Value) -> String {
    match v {
        Value::Integer(i) => i.to_string(),
        Value::Real(r) => format!("{r:?}"),
        Value::Text(t) => json_string(t),
        _ => "null".into(),
    }
}

/// The table as JSON (`dedup_settings_table()`): each setting's name, kind,
/// default, rule, choices, where it is recorded, and its flag.
pub fn table_json() -> String {
    let defaults = Settings::default();
    let rows: Vec<String> = SETTINGS
        .iter()
        .map(|s| {
            let words = match s.kind {
                Kind::Choice { words, .. } => {
                    let w: Vec<String> = words.iter().map(|w| json_string(w)).collect();
                    format!("[{}]", w.join(", "))
                }
                _ => "null".into(),
            };
            let recorded = match s.recorded {
                Recorded::Always | Recorded::AsJson => "always",
                Recorded::WhenSet => "when set",
                Recorded::Never => "never",
            };
            let cli = match s.cli {
                Some(c) => format!(
                    "{{\"flag\": {}, \"metavar\": {}, \"help\": {}}}",
                    json_string(c.flag),
                    if c.metavar.is_empty() { "null".into() } else { json_string(c.metavar) },
                    json_string(c.help)
                ),
                None => "null".into(),
            };
            let default = match s.name {
                // (The raw setting, not the options the run derives from it.)
                "url_options" => json_string(&defaults.url_options),
                _ => value_json(&(s.value)(&defaults)),
            };
            format!(
                "{{\"name\": {}, \"kind\": {}, \"default\": {}, \"rule\": {}, \"choices\": {}, \"recorded\": {}, \"cli\": {}}}",
                json_string(s.name),
                json_string(s.kind.as_str()),
                default,
                json_string(s.rule),
                words,
                json_string(recorded),
                cli
            )
        })
        .collect();
    format!("[\n{}\n]\n", rows.join(",\n"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_name_is_declared_once() {
        for (i, s) in SETTINGS.iter().enumerate() {
            assert!(
                SETTINGS[i + 1..].iter().all(|t| t.name != s.name),
                "{} twice",
                s.name
            );
        }
    }

    #[test]
    fn each_default_is_a_value_its_kind_takes_and_set_gives_back() {
        let defaults = Settings::default();
        for s in &SETTINGS {
            let v = (s.value)(&defaults);
            if matches!(s.kind, Kind::Own(_)) || s.name == "url_options" {
                continue;
            }
            // (A default of none is given as NULL.)
            let checked = s
                .kind
                .check(&v)
                .or_else(|| s.kind.check(&Value::Null))
                .unwrap_or_else(|| panic!("{}: {v:?}", s.name));
            let mut t = Settings::default();
            (s.set)(&mut t, checked);
            assert_eq!((s.value)(&t), v, "{}", s.name);
        }
    }

    #[test]
    fn kinds_take_what_their_rules_say() {
        let unit = Kind::Unit { null_is_off: false };
        assert_eq!(unit.check(&Value::Integer(1)), Some(Value::Real(1.0)));
        assert_eq!(unit.check(&Value::Real(1.5)), None);
        assert_eq!(unit.check(&Value::Null), None);
        let off = Kind::Unit { null_is_off: true };
        assert_eq!(off.check(&Value::Null), Some(Value::Real(0.0)));
        assert_eq!(Kind::IntegerFrom(2).check(&Value::Integer(1)), None);
        assert_eq!(Kind::Milliseconds.check(&Value::Integer(1 << 40)), None);
        let flag = Kind::Flag { null_is_off: false };
        assert_eq!(flag.check(&Value::Integer(2)), None);
        assert_eq!(flag.check(&Value::Null), None);
        assert_eq!(Kind::Label(3).check(&Value::Text("abcd".into())), None);
        let name = Kind::Name {
            null_is_none: false,
        };
        assert_eq!(name.check(&Value::Text(String::new())), None);
        assert_eq!(name.check(&Value::Text("a\0b".into())), None);
        let choice = Kind::Choice {
            words: &["a", "b"],
            null: NullIs::Refused,
        };
        assert_eq!(choice.check(&Value::Text("c".into())), None);
        assert_eq!(choice.check(&Value::Null), None);
    }
}
