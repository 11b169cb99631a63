//! The SQL phases of `sql/`, embedded in the binary: each phase's steps
//! in order, and phase 1's row statement that the incremental index runs
//! again on rows a run rewrote.

/// When a step of a phase runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum When {
    /// In every run.
    Always,
    /// In incremental runs only (after the phase's other scripts: see
    /// [`crate::sqlite::pipeline::incremental::run_kind`]).
    Incremental,
    /// In runs with the `against` setting only
    /// ([`crate::sqlite::pipeline::run::against`]).
    Against,
    /// In runs with `boilerplate = 'strip'` only.
    Strip,
}

/// One step of a phase: an SQL script of `sql/` (embedded in the binary),
/// or an incremental run's phase-4 rows ([`crate::sqlite::pipeline::incremental::near_input::build`],
/// [`crate::sqlite::pipeline::incremental::lsh_input::build`]).
#[derive(Debug, Clone, Copy)]
pub enum Step {
    /// A script: its file name, its text and when it runs.
    Script(&'static str, &'static str, When),
    /// An incremental run's rows of phase 4: in window mode the new rows
    /// and the last run's around each place the scan order changed, each
    /// run of rows no comparison needs as one slot row
    /// ([`crate::sqlite::pipeline::incremental::near_input::build`]); in lsh mode the new rows and the
    /// kept rows that share a band key with one and may be near it
    /// ([`crate::sqlite::pipeline::incremental::lsh_input::build`]).
    NearInput,
    /// With `paragraphs = 'dedup'`: each kept page's paragraphs against the
    /// kept pages' before it ([`crate::sqlite::pipeline::run::paragraphs`]).
    Paragraphs,
}

/// The phases, in order: a name and its steps.
pub const PHASES: [(&str, &[Step]); 6] = [
    (
        "01_canonicalize",
        &[
            Step::Script("01_canonicalize.sql", PHASE1, When::Always),
            Step::Script(
                "incremental/01_clean_rows.sql",
                include_str!("../../../sql/incremental/01_clean_rows.sql"),
                When::Incremental,
            ),
        ],
    ),
    (
        "02_url_winners",
        &[Step::Script(
            "02_url_winners.sql",
            include_str!("../../../sql/02_url_winners.sql"),
            When::Always,
        )],
    ),
    (
        "03_content_winners",
        &[Step::Script(
            "03_content_winners.sql",
            include_str!("../../../sql/03_content_winners.sql"),
            When::Always,
        )],
    ),
    (
        "04_near_dups",
        &[
            Step::Script("04_placeholders.sql", PLACEHOLDERS, When::Always),
            Step::Script(
                "04a_near_input.sql",
                include_str!("../../../sql/04a_near_input.sql"),
                When::Always,
            ),
            Step::Script(
                "incremental/04_keys.sql",
                include_str!("../../../sql/incremental/04_keys.sql"),
                When::Incremental,
            ),
            Step::Script(
                "incremental/04_lsh_keys.sql",
                include_str!("../../../sql/incremental/04_lsh_keys.sql"),
                When::Incremental,
            ),
            Step::NearInput,
            Step::Script(
                "incremental/04_near_input.sql",
                include_str!("../../../sql/incremental/04_near_input.sql"),
                When::Incremental,
            ),
            Step::Script(
                "04b_chrome.sql",
                include_str!("../../../sql/04b_chrome.sql"),
                When::Strip,
            ),
            Step::Script(
                "04b_near_dups.sql",
                include_str!("../../../sql/04b_near_dups.sql"),
                When::Always,
            ),
        ],
    ),
    (
        "05_domains",
        &[
            Step::Script(
                "05_domains.sql",
                include_str!("../../../sql/05_domains.sql"),
                When::Always,
            ),
            Step::Script(
                "incremental/05_domains.sql",
                include_str!("../../../sql/incremental/05_domains.sql"),
                When::Incremental,
            ),
        ],
    ),
    (
        "06_removals",
        &[
            Step::Script(
                "06_removals.sql",
                include_str!("../../../sql/06_removals.sql"),
                When::Always,
            ),
            Step::Script(
                "against/06_only_here.sql",
                include_str!("../../../sql/against/06_only_here.sql"),
                When::Against,
            ),
            Step::Paragraphs,
        ],
    ),
];

/// A run that elects elsewhere (`dedup_prepare`): phase 1 and the view of
/// each row as `sqlite-dedup spark` reads it (`temp._dedup_rows`).
pub const PREPARE_ONLY: [(&str, &[Step]); 1] = [(
    "01_canonicalize",
    &[
        Step::Script("01_canonicalize.sql", PHASE1, When::Always),
        Step::Script("04_placeholders.sql", PLACEHOLDERS, When::Always),
        Step::Script(
            "external/01_rows.sql",
            include_str!("../../../sql/external/01_rows.sql"),
            When::Always,
        ),
    ],
)];

/// A run whose phases 2–5 were decided elsewhere (`dedup_apply_plan`):
/// phase 1, then the plan in place of phase 6's.
pub const EXTERNAL: [(&str, &[Step]); 2] = [
    (
        "01_canonicalize",
        &[Step::Script("01_canonicalize.sql", PHASE1, When::Always)],
    ),
    (
        "06_from_plan",
        &[
            Step::Script(
                "external/06_from_plan.sql",
                include_str!("../../../sql/external/06_from_plan.sql"),
                When::Always,
            ),
            Step::Paragraphs,
        ],
    ),
];

/// Phase 4's placeholders (the view `temp._dedup_placeholders`).
const PLACEHOLDERS: &str = include_str!("../../../sql/04_placeholders.sql");

/// Phase 1's script.
const PHASE1: &str = include_str!("../../../sql/01_canonicalize.sql");

/// Phase 1's values of rows a run rewrote only the URL columns of, into
/// `temp._dedup_prepared` (from `temp._dedup_url_only`: see the script).
pub const REWRITTEN_URLS: &str = include_str!("../../../sql/01_rewritten_urls.sql");

/// Phase 1's statement that prepares the rows of `temp._dedup_todo` into
/// `temp._dedup_prepared` (between its `-- @rows` markers).
pub fn prepare_rows_sql() -> &'static str {
    PHASE1.split("-- @rows").nth(1).unwrap_or("")
}
