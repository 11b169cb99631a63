//! The run's settings as the run uses them: [`Settings`], every field
//! checked, its closed choices enums, each default once.

use crate::core::measure::Measure;
use crate::core::sketch::ShingleKind;
use crate::sqlite::settings::choices::{
    Action, Boilerplate, Compat, LshElection, LshSketch, MeasureKind, NearMode, Paragraphs,
};

/// `paragraph_min`'s default: paragraphs of fewer characters are never cut
/// (benches/results/paragraphs-2026-12-06.md).
pub const DEFAULT_PARAGRAPH_MIN: i64 = 100;

/// Checked settings of one run.
#[derive(Debug, Clone, PartialEq)]
pub struct Settings {
    /// Near-duplicate when the measure is above it (`lev_ratio >
    /// threshold`); 1.0 skips phase 4.
    pub threshold: f64,
    /// What phase 4 measures a pair by.
    pub measure: MeasureKind,
    /// `resemblance`: words a shingle.
    pub ngram_size: i64,
    /// `resemblance`: words left out before shingling, separated by spaces.
    pub stoplist: String,
    /// The reference's window: each row against the next `distance - 1`.
    pub distance: i64,
    /// Keep only `lang`/`v` query parameters (else all but tracking ones).
    pub discard_params: bool,
    /// Drop rows of domains with fewer surviving pages (0: keep all).
    pub n_min: i64,
    /// Extra `canonical_url` options.
    pub url_options: String,
    /// `window` or `lsh`.
    pub near_mode: NearMode,
    /// `lsh` mode: bands of the signature.
    pub lsh_bands: i64,
    /// `lsh` mode: signature values per band.
    pub lsh_rows: i64,
    /// `lsh` mode: what the signature's shingles are made of.
    pub lsh_shingles: ShingleKind,
    /// `lsh` mode: the shingles' size (characters or words).
    pub lsh_shingle_size: i64,
    /// `lsh` mode: classic MinHash or one-permutation MinHash.
    pub lsh_sketch: LshSketch,
    /// `keep` (the default) or `dedup`: a kept page's paragraph that a page
    /// before it in the election order holds is cut from its text.
    pub paragraphs: Paragraphs,
    /// `paragraphs`: the fewest characters a paragraph must have to be cut.
    pub paragraph_min: i64,
    /// What a run does with the duplicates it finds: delete them, or
    /// label every row with its cluster.
    pub action: Action,
    /// The table of pages (in the main schema).
    pub table: String,
    /// Milliseconds to wait for a lock held by another connection.
    pub busy_timeout: i64,
    /// `keep` (the reference) or `strip`: segments found in at least
    /// `boilerplate_min_pages` pages of a domain are left out of the texts
    /// the near-duplicate phase compares.
    pub boilerplate: Boilerplate,
    /// Pages (of distinct content) of one domain a segment must be in to be
    /// boilerplate.
    pub boilerplate_min_pages: i64,
    /// Canonical URLs also drop the parameters `dedup_url_rules` says never
    /// change content with at least this probability; 0 (the default) never.
    pub url_rules: f64,
    /// `none` (our defaults) or `reference`: the reference pipeline's
    /// behaviour exactly (query parameters dropped whatever the content, no
    /// https preference).
    pub compat: Compat,
    /// SQL ordering terms over the table's columns, applied before the
    /// built-in election rules in every phase.
    pub prefer: Vec<String>,
    /// `prefer` as the JSON array it was given in.
    pub prefer_json: String,
    /// Where `prefer` came from: the caller's SQL, or the database's own
    /// `dedup_settings` (compiled only under [`crate::sqlite::settings::untrusted`]'s rules).
    pub prefer_from: Origin,
    /// The table's columns for the pipeline's names (`url`, `parsed`, ...)
    /// when they are named otherwise: (pipeline name, column).
    pub columns: Vec<(String, String)>,
    /// `lsh` mode's election: `chain` (the window scan's) or `direct` (no
    /// removed row ends far from its final survivor).
    pub lsh_election: LshElection,
    /// A full run even when the index would allow an incremental one (not
    /// recorded: it changes the run's cost, never its result).
    pub full: bool,
    /// A label recorded with the run (`sqlite-dedup spark` names its job so,
    /// and skips the shards whose runs carry it); empty: none.
    pub job: String,
    /// Another database whose pages this run compares with the table's
    /// (a path, or the name of an attached schema): only the table's rows
    /// leave (`pipeline/inputs/against/`); empty: none.
    pub against: String,
    /// Where `against` came from (a path read from `dedup_settings` is
    /// refused: a database may not make the run open another file).
    pub against_from: Origin,
    /// Canonical URLs use the answers `dedup_url_fixes` holds for their host
    /// (http upgraded to https, `www.` dropped, where the probe found so:
    /// `pipeline/inputs/url_fixes.rs`).
    pub fix_urls: bool,
}

/// Who wrote a setting that is compiled as SQL.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Origin {
    /// The call's JSON argument (or a default): the caller's own SQL.
    #[default]
    Caller,
    /// The database's `dedup_settings`: data, held to a schema's rules.
    Database,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            threshold: crate::core::near_dups::DEFAULT_THRESHOLD,
            measure: MeasureKind::default(),
            ngram_size: 5,
            stoplist: String::new(),
            distance: crate::core::near_dups::DEFAULT_DISTANCE,
            discard_params: true,
            n_min: 0,
            url_options: String::new(),
            near_mode: NearMode::default(),
            lsh_bands: 32,
            lsh_rows: 4,
            lsh_shingles: ShingleKind::Char,
            lsh_shingle_size: 5,
            lsh_sketch: LshSketch::default(),
            paragraphs: Paragraphs::default(),
            paragraph_min: DEFAULT_PARAGRAPH_MIN,
            action: Action::Delete,
            table: "pages".into(),
            busy_timeout: 5000,
            boilerplate: Boilerplate::default(),
            boilerplate_min_pages: 5,
            url_rules: 0.0,
            compat: Compat::default(),
            prefer: Vec::new(),
            prefer_json: "[]".into(),
            prefer_from: Origin::Caller,
            columns: Vec::new(),
            lsh_election: LshElection::default(),
            full: false,
            job: String::new(),
            against: String::new(),
            against_from: Origin::Caller,
            fix_urls: false,
        }
    }
}

impl Settings {
    /// The measure phase 4 compares by.
    pub fn measure(&self) -> Measure {
        match self.measure {
            MeasureKind::Levenshtein => Measure::Levenshtein,
            MeasureKind::Resemblance => Measure::resemblance(self.ngram_size, &self.stoplist)
                .unwrap_or(Measure::Levenshtein),
        }
    }

    /// The `canonical_url` options the run uses (the reference's rules
    /// under `compat = 'reference'`; `keep_params` when `discard_params`
    /// is 0).
    pub fn canonical_options(&self) -> String {
        let rules = if self.compat == Compat::Reference {
            "reference,"
        } else {
            ""
        };
        let keep = if self.discard_params {
            ""
        } else {
            "keep_params,"
        };
        format!("{rules}{keep}{}", self.url_options)
    }

    /// The options of the strict canonical URL (every parameter kept but
    /// tracking ones and learned rules), by which phase 2 groups when
    /// dropping the others would join pages whose contents differ: `None`
    /// under `compat = 'reference'` or with `discard_params` off (then the
    /// canonical URL already keeps them).
    pub fn strict_options(&self) -> Option<String> {
        (self.discard_params && self.compat != Compat::Reference)
            .then(|| format!("keep_params,{}", self.url_options))
    }
}
