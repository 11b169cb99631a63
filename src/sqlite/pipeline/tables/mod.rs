//! The tables a run reads and writes: the user's pages table as a source
//! ([`schema`]), another database's pages compared with it ([`against`]) and the survivor columns a run rewrites ([`rewrites`]); the
//! extension's own tables, their names and statements ([`own_schema`]) and
//! their checks and creation ([`own_tables`]), the triggers it makes
//! ([`trackers`]), and the hosts' answers of a `fix_urls` probe
//! ([`url_fixes`]).

pub mod against;
pub mod own_schema;
pub mod own_tables;
pub mod rewrites;
pub mod schema;
pub mod trackers;
pub mod url_fixes;
