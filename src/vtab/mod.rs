//! Table-valued functions.

pub mod lsh_bands;
pub mod near_dups;

use rusqlite::{Connection, Result};

/// Registers the extension's table-valued functions on `db`.
pub fn register(db: &Connection) -> Result<()> {
    near_dups::register(db)?;
    lsh_bands::register(db)
}
