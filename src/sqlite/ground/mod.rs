//! The ground every room of the bindings stands on, knowing none of them:
//! the error of a run ([`error`]) and of a function's arguments
//! ([`arguments`]), quoting names and values into SQL ([`quote`]), the one
//! transaction a call runs in ([`atomic`]), seeing an interrupt from inside
//! a call ([`interrupt`]), the statements kept prepared across calls
//! ([`held`]), how far a call is ([`progress`]), values in messages ([`shown`]), JSON ([`json`]), the step
//! clock ([`trace`]), keeping the library mapped ([`stay_loaded`]), and the
//! registration of every function on another connection ([`registrar`]).

pub mod arguments;
pub mod atomic;
pub mod error;
pub mod held;
pub mod interrupt;
pub mod json;
pub mod progress;
pub mod quote;
pub mod registrar;
pub mod shown;
pub mod stay_loaded;
pub mod trace;
