//! sqlite-dedup: a SQLite extension that finds and removes duplicate and
//! near-duplicate web pages.
//!
//! [`register`] adds every SQL function and module to a connection; the
//! `loadable_extension` feature adds the entry point `sqlite3_dedup_init`.
//! The algorithms live in [`core`], which knows nothing of SQLite; the
//! bindings, table-valued functions and pipeline runner in [`sqlite`];
//! [`arrow_abi`] is phase 1 over Arrow buffers for the Python package's
//! Spark layer, called through the C ABI, not SQL.

pub mod arrow_abi;
pub mod core;
pub mod sqlite;

pub use crate::core::{hash, lcs, measure, near_dups, similarity, sketch, text, url};
pub use crate::sqlite::functions::meta::MIN_SQLITE_VERSION;
pub use crate::sqlite::register;

#[cfg(feature = "loadable_extension")]
use rusqlite::Connection;

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
        // Before anything can start the thread pool: see `stay_loaded`.
        crate::sqlite::ground::stay_loaded::pin();
        register(&db)?;
        Ok(false)
    })
}
