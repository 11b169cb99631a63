//! The tables a run reads and writes: the user's pages table as a source
//! ([`schema`]), the survivor columns a run rewrites ([`rewrites`]) and a
//! survivor's identity as the run left it ([`identity`]); the
//! extension's own tables, their names and statements ([`own_schema`]) and
//! their checks and creation ([`own_tables`]), and the triggers it makes
//! ([`trackers`]).

pub mod identity;
pub mod own_schema;
pub mod own_tables;
pub mod rewrites;
pub mod schema;
pub mod trackers;
