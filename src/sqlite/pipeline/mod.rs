//! The pipeline runner: `dedup_run()` plans a run with the SQL phases of
//! `sql/` (embedded) and applies it, all in one statement and one
//! transaction; `dedup_plan()` / `dedup_apply()` do the two halves (a dry
//! run, then the writes); `dedup_restore()` undoes the latest run.

pub mod apply;
pub mod atomic;
pub mod choices;
pub mod error;
pub mod functions;
pub mod incremental;
pub mod json;
pub mod kept_apart;
pub mod locate;
pub mod own_schema;
pub mod own_tables;
pub mod plan;
pub mod progress;
pub mod report;
pub mod restore;
pub mod rewrites;
pub mod rows_arrow;
pub mod schema;
pub mod scripts;
pub mod settings;
pub mod shown;
mod trace;
pub mod untrusted;

pub use functions::register;
