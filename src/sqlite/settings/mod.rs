//! The run's settings: each declared once ([`declared`]); as the user writes them ([`read`]: `dedup_settings`
//! and the call's JSON argument), each rule once ([`check`]), as the run
//! uses them ([`values`], with the closed choices of [`choices`]), written
//! for the phase scripts ([`record`]); and SQL read from the database held
//! to an untrusted schema's rules ([`untrusted`]).

pub mod check;
pub mod choices;
pub mod declared;
pub mod read;
pub mod record;
pub mod untrusted;
pub mod values;
