//! The pipeline runner: `dedup_run()` plans a run with the SQL phases of
//! `sql/` (embedded) and applies it, all in one statement and one
//! transaction; `dedup_plan()` / `dedup_apply()` do the two halves (a dry
//! run, then the writes); `dedup_restore()` undoes the latest run.
//!
//! From the top down (ARCHITECTURE.md draws it): [`functions`] (the SQL
//! entry points) → [`run`] (plan, apply, report, restore) → [`incremental`]
//! (the index and the run decision) → [`settings`] and [`tables`] → the
//! ground every room uses ([`error`], [`scripts`], `trace`, [`json`],
//! [`shown`]); [`external`] holds the rows handed to a run made elsewhere.

pub mod error;
pub mod external;
pub mod functions;
pub mod incremental;
pub mod json;
pub mod run;
pub mod scripts;
pub mod settings;
pub mod shown;
pub mod tables;
mod trace;

pub use functions::register;
