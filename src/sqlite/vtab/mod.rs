//! Table-valued functions.

pub mod arguments;
pub mod elected;
pub mod held_statements;
pub mod lsh_bands;
pub mod near_dups;
pub mod near_dups_among;
pub mod phase1;
pub mod reads_tables;
pub mod rows_cursor;
pub mod scan_table;
pub mod segments;
mod stepped;

use rusqlite::{Connection, Result};

/// Registers the extension's table-valued functions on `db`.
pub fn register(db: &Connection, held: crate::sqlite::ground::held::Held) -> Result<()> {
    held_statements::register(db, held)?;
    elected::register(db)?;
    let last = scan_table::LastScan::default();
    near_dups::register(db, last.clone())?;
    near_dups_among::register(db, last)?;
    lsh_bands::register(db)?;
    segments::register(db)?;
    phase1::register(db)
}
