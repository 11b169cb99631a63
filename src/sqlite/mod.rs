//! The SQLite bindings: argument checking, NULL handling and error messages
//! around the pure algorithms of `crate::core`, the table-valued functions,
//! and the pipeline runner that applies a run atomically.

pub mod control;
pub mod drop_rules;
pub mod interrupt;
pub mod meta;
pub mod pipeline;
pub mod scalars;
pub mod segments;
pub mod sketches;
pub mod sort_key;
pub mod stay_loaded;
pub mod url_chrome;
pub mod url_learn;
pub mod url_memory;
pub mod url_model;
pub mod url_rules;
pub mod url_state;
pub mod vtab;

use rusqlite::{Connection, Result};

/// Registers every function and module of the extension on `db`.
pub fn register(db: &Connection) -> Result<()> {
    meta::register(db)?;
    scalars::register_scalars(db)?;
    sketches::register(db)?;
    sort_key::register(db)?;
    segments::register(db)?;
    control::register(db)?;
    let held = vtab::held_statements::Held::default();
    vtab::register(db, held.clone())?;
    pipeline::register(db)?;
    url_rules::register(db, held)?;
    Ok(())
}
