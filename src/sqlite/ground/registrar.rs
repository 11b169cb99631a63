//! Every function of the extension registered on another connection a call
//! opens (the plan `against` makes on the other database's connection runs
//! the pipeline's SQL there), without the room that makes that connection
//! naming the layer's root: the root leaves its `register` here when it
//! registers itself ([`set`]), and the connection's opener asks for it
//! ([`register`]).

use std::sync::OnceLock;

use rusqlite::{Connection, Result};

static REGISTER: OnceLock<fn(&Connection) -> Result<()>> = OnceLock::new();

/// Keeps `register`, the layer's registration of everything (the first
/// kept stays).
pub fn set(register: fn(&Connection) -> Result<()>) {
    let _ = REGISTER.set(register);
}

/// Registers every function of the extension on `db`; an error when the
/// layer has registered itself nowhere yet (it has, on the connection of
/// any call that opens another).
pub fn register(db: &Connection) -> Result<()> {
    match REGISTER.get() {
        Some(register) => register(db),
        None => Err(rusqlite::Error::UserFunctionError(
            "dedup[internal]: the extension's functions could not be registered on a second connection (the extension was not registered yet)".into(),
        )),
    }
}
