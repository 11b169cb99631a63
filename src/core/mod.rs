//! The pure algorithms: no SQLite types here. Each module is usable from
//! plain Rust; `crate::sqlite` binds them to SQL.

pub mod arrow_columns;
pub mod candidates;
pub mod chrome_pages;
pub mod diff;
pub mod election;
pub mod halt;
pub mod hash;
pub mod html;
pub mod invalid;
pub mod lcs;
pub mod lsh_prune;
pub mod measure;
pub mod near_dups;
pub mod ordering;
pub mod pair_scan;
pub mod parallel;
pub mod phase;
pub mod phase1;
pub mod phase1_batch;
pub mod pools;
pub mod scan_ahead;
pub mod segments;
pub mod shingles;
pub mod similarity;
pub mod sketch;
pub mod text;
pub mod url;
pub mod url_common;
pub mod url_host;
pub mod url_model;
pub mod url_options;
pub mod url_reference;
pub mod url_rules;
pub mod window_prune;
pub mod window_scan;
