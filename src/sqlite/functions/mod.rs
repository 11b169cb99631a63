//! The scalar functions: [`scalars`] (URLs, texts, hashes, similarities),
//! [`sketches`] (MinHash, LSH bands, SimHash), [`sort_key`], [`segments`]
//! (repeated segments), [`paragraphs`] (a text's paragraphs and their
//! keys), [`control`] and [`meta`] (`dedup_version`, `dedup_debug`).

pub mod control;
pub mod meta;
pub mod paragraphs;
pub mod scalars;
pub mod segments;
pub mod sketches;
pub mod sort_key;
