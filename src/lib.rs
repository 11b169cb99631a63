//! sqlite-dedup: a SQLite extension that finds and removes duplicate and
//! near-duplicate web pages.
//!
//! [`register`] adds every SQL function and module to a connection; the
//! `loadable_extension` feature adds the entry point `sqlite3_dedup_init`.
//! The algorithms live in modules that know nothing of SQLite: [`text`],
//! [`hash`], [`url`], [`similarity`] and [`near_dups`].

pub mod control;
pub mod hash;
pub mod lcs;
pub mod meta;
pub mod near_dups;
pub mod similarity;
pub mod sketch;
pub mod sketch_sql;
pub mod sql;
pub mod text;
pub mod url;
pub mod vtab;

use rusqlite::{Connection, Result};

/// The oldest SQLite the extension loads into (the API level of its
/// bindings); older hosts refuse the load with an error message.
pub const MIN_SQLITE_VERSION: &str = "3.34.1";

/// Registers every function and module of the extension on `db`.
pub fn register(db: &Connection) -> Result<()> {
    meta::register(db)?;
    sql::register_scalars(db)?;
    sketch_sql::register(db)?;
    control::register(db)?;
    vtab::register(db)?;
    Ok(())
}

/// Entry point SQLite looks for when loading `libdedup.so` or `dedup0.so`.
///
/// # Safety
/// Called by SQLite with valid pointers, as `sqlite3_load_extension` does.
#[cfg(feature = "loadable_extension")]
#[no_mangle]
pub unsafe extern "C" fn sqlite3_dedup_init(
    db: *mut rusqlite::ffi::sqlite3,
    pz_err_msg: *mut *mut std::os::raw::c_char,
    p_api: *mut rusqlite::ffi::sqlite3_api_routines,
) -> std::os::raw::c_int {
    Connection::extension_init2(db, pz_err_msg, p_api, |db| {
        register(&db)?;
        Ok(false)
    })
}
