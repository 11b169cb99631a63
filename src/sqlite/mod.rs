//! The SQLite bindings, from the top down (ARCHITECTURE.md draws them):
//! the pipeline runner ([`pipeline`]) → the table-valued functions
//! ([`vtab`]) → the URL learner ([`url_learner`]) → the run's settings
//! ([`settings`]) → the tables a run reads and writes ([`tables`]) and the
//! scalar functions ([`functions`]) → the [`ground`] they all stand on.
//! Each room imports only rooms below it.

pub mod functions;
pub mod ground;
pub mod pipeline;
pub mod settings;
pub mod tables;
pub mod url_learner;
pub mod vtab;

use rusqlite::{Connection, Result};

/// Registers every function and module of the extension on `db`.
pub fn register(db: &Connection) -> Result<()> {
    ground::registrar::set(register);
    functions::meta::register(db)?;
    functions::scalars::register_scalars(db)?;
    functions::sketches::register(db)?;
    functions::sort_key::register(db)?;
    functions::segments::register(db)?;
    functions::paragraphs::register(db)?;
    functions::control::register(db)?;
    let held = ground::held::Held::default();
    vtab::register(db, held.clone())?;
    pipeline::register(db)?;
    url_learner::functions::register(db, held)?;
    Ok(())
}
