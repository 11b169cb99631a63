//! The pipeline runner: `dedup_run()` plans a run with the SQL phases of
//! `sql/` (embedded) and applies it, all in one statement and one
//! transaction; `dedup_plan()` / `dedup_apply()` do the two halves (a dry
//! run, then the writes); `dedup_restore()` undoes the latest run.
//!
//! From the top down (ARCHITECTURE.md draws it): [`functions`] (the SQL
//! entry points) → [`run`] (plan, apply, report, restore) → [`inputs`]
//! (what a run reads beside its table: another database, the ranking, the
//! hosts' answers) → [`external`] (a run made elsewhere: its rows out, its
//! plan back in) → [`incremental`] (the index and the run decision) →
//! [`scripts`] (the embedded SQL) and [`mode`] (the run's variant); below
//! them, outside the pipeline, the settings, the tables and the ground
//! (`crate::sqlite`).

pub mod external;
pub mod functions;
pub mod incremental;
pub mod inputs;
pub mod mode;
pub mod run;
pub mod scripts;

pub use functions::register;
