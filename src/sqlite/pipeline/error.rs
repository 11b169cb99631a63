//! The error of a run: the message the caller sees, carried through every
//! step and turned into SQLite's error of the call.

use std::fmt;

use rusqlite::Error;

/// An error of a run, as the message the caller sees.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DedupError(String);

impl DedupError {
    /// An error with this message.
    pub fn new(message: impl Into<String>) -> Self {
        DedupError(message.into())
    }
}

impl fmt::Display for DedupError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl From<Error> for DedupError {
    fn from(e: Error) -> Self {
        DedupError(match e {
            Error::SqliteFailure(_, Some(m)) => m,
            other => other.to_string(),
        })
    }
}

impl From<DedupError> for Error {
    fn from(e: DedupError) -> Self {
        Error::UserFunctionError(e.0.into())
    }
}

/// `Err(DedupError(message))`.
pub fn fail<T>(message: String) -> std::result::Result<T, DedupError> {
    Err(DedupError(message))
}
