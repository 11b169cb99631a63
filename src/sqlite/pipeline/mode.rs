//! What a plan computes on this connection: the run's variant, which the
//! entry point decides (never a setting, never recorded): all phases, phase
//! 1 only, a plan made elsewhere read back, or all phases on the other
//! database's connection of a run `against` it.

/// The run's variant, passed to [`crate::sqlite::pipeline::run::plan::plan`].
#[derive(Debug, Clone, PartialEq, Default)]
pub enum RunMode {
    /// All of them (`dedup_run`, `dedup_plan`).
    #[default]
    All,
    /// Phase 1 only, for a caller that elects elsewhere (`dedup_prepare`):
    /// of the rows whose rowid is at least `.0` and below `.1` (each bound
    /// `None`: unbounded), so that several tasks can share a table.
    PrepareOnly(Option<i64>, Option<i64>),
    /// Phase 1, then the decisions of a plan made elsewhere, read from this
    /// table (`dedup_apply_plan`), and with `paragraphs = 'dedup'` its
    /// paragraph cuts, from the second.
    FromPlan(String, Option<String>),
    /// Phase 1, then the decisions of a plan made on another database's
    /// connection, against its index (`inputs/against/indexed.rs`).
    Made(Made),
    /// All phases on the other database's connection of a run `against`
    /// it: the rows of `temp._dedup_extra` (rid, and the pipeline's
    /// columns) join the table's as new ones, and rank after them.
    There,
}

/// A plan made on another database's connection for this table's rows.
#[derive(Debug, Clone, PartialEq)]
pub struct Made {
    /// The plan's rows, as `dedup_apply_plan` reads them.
    pub rows: Vec<PlanRow>,
    /// The other database's name (its file's).
    pub there: String,
    /// The pages there the run compared.
    pub compared: i64,
}

/// One row of a plan made elsewhere: a removal (phase, reason, survivor
/// here or none, ratio) or a page kept apart (phase `None`, the URL it
/// keeps), with a note for explain.
#[derive(Debug, Clone, PartialEq)]
pub struct PlanRow {
    /// The row's rowid here.
    pub rid: i64,
    /// 1 to 5, or `None` for a page kept apart.
    pub phase: Option<i64>,
    /// The run's reason.
    pub reason: Option<String>,
    /// The survivor's rowid here (`None`: it is elsewhere).
    pub survivor: Option<i64>,
    /// Phase 4's ratio.
    pub ratio: Option<f64>,
    /// A page kept apart: the URL it keeps.
    pub rewrite_url: Option<String>,
    /// For explain (`survivor in old.db, rowid 17 (https://a.example/x)`).
    pub note: Option<String>,
}
