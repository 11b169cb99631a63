//! The incremental index: what a run leaves for the next one (the kept
//! rows' phase-1 values, their window order and band keys, the change log
//! and its triggers), the decision whether a run can be incremental, and
//! the rows an incremental run reads; mirrors `sql/incremental/`
//! (docs/incremental.md).

pub mod band_entries;
pub mod changes;
pub mod index;
pub mod index_bands;
pub mod index_functions;
pub mod index_keys;
pub mod index_paragraphs;
pub mod index_state;
pub mod lsh_input;
pub mod near_input;
pub mod run_kind;
pub mod snapshot;
pub mod trigger_writes;
