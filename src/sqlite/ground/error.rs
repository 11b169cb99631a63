//! The error of a run: the message the caller sees, carried through every
//! step and turned into SQLite's error of the call.

use std::fmt;

use rusqlite::Error;

/// An error of a run, as the message the caller sees.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DedupError(String, Kind);

/// What kind of error: most are the run's own words; a value read from a
/// table that is not of the type the reader expects (the extension's own
/// tables edited outside it) is told apart, so the run can say where.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// The run's own error.
    Run,
    /// A value of another type than its reader expects.
    WrongType,
}

impl DedupError {
    /// An error with this message.
    pub fn new(message: impl Into<String>) -> Self {
        DedupError(message.into(), Kind::Run)
    }

    /// An error of a value of another type than its reader expects.
    pub fn wrong_type(message: impl Into<String>) -> Self {
        DedupError(message.into(), Kind::WrongType)
    }

    /// Its kind.
    pub fn kind(&self) -> Kind {
        self.1
    }
}

impl fmt::Display for DedupError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl From<Error> for DedupError {
    fn from(e: Error) -> Self {
        match e {
            Error::SqliteFailure(_, Some(m)) => DedupError(m, Kind::Run),
            Error::InvalidColumnType(_, name, ty) => DedupError(
                format!("column {name} holds a value of type {ty}, not the type this extension writes there"),
                Kind::WrongType,
            ),
            e @ (Error::FromSqlConversionFailure(..) | Error::IntegralValueOutOfRange(..)) => {
                DedupError(format!("a value of another type than expected: {e}"), Kind::WrongType)
            }
            other => DedupError(other.to_string(), Kind::Run),
        }
    }
}

impl From<DedupError> for Error {
    fn from(e: DedupError) -> Self {
        Error::UserFunctionError(e.0.into())
    }
}

/// `Err(DedupError(message))`.
pub fn fail<T>(message: String) -> std::result::Result<T, DedupError> {
    Err(DedupError::new(message))
}
