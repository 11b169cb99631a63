//! The error of a run: a stable [`Code`] and the message the caller sees,
//! carried through every step and turned into SQLite's error of the call
//! as `<function>[<code>]: <message>` (e.g. `dedup[setting]: lsh_rows must
//! be …`), so a caller maps the code, never the words.
//!
//! SQLite passes a function's error to its host as text only (rusqlite sets
//! the result code, then the message, which resets the code to
//! `SQLITE_ERROR`), so the code travels in the text, at its start, in one
//! form every error of the extension shares; [`code_of`] reads it back.

use std::fmt;

use rusqlite::{ffi, Error};

/// What kind of error, as a word that stays the same from release to
/// release. `docs/errors.md` lists each with what a caller does about it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Code {
    /// A setting's name or value (`dedup_settings`, the JSON of a call).
    Setting,
    /// The table the settings name is not in the database.
    NoTable,
    /// The table, or its columns, is not one the run can read or change.
    Table,
    /// The extension's own tables (`dedup_runs`, `dedup_removed`, the
    /// index, the hosts' answers) hold what it does not write: an edit
    /// outside it.
    Own,
    /// The other database of `against`: unreadable, or this one.
    Against,
    /// The table changed between a plan and its apply.
    Stale,
    /// Nothing to do in this state: no plan to apply, no run to undo.
    State,
    /// A trigger or constraint of the table stopped the change.
    Blocked,
    /// A plan given to `dedup_apply_plan`.
    Plan,
    /// A function's argument.
    Argument,
    /// Another connection holds the lock (`SQLITE_BUSY`, `SQLITE_LOCKED`).
    Busy,
    /// The run was interrupted (`sqlite3_interrupt`, Ctrl-C).
    Interrupted,
    /// The disk or the database is full.
    Full,
    /// Any other error SQLite reported (I/O, read-only, corrupt).
    Sqlite,
    /// A bug of the extension (please report it); nothing was changed.
    Internal,
}

impl Code {
    /// Every code, in the order the docs list them.
    pub const ALL: [Code; 15] = [
        Code::Setting,
        Code::NoTable,
        Code::Table,
        Code::Own,
        Code::Against,
        Code::Stale,
        Code::State,
        Code::Blocked,
        Code::Plan,
        Code::Argument,
        Code::Busy,
        Code::Interrupted,
        Code::Full,
        Code::Sqlite,
        Code::Internal,
    ];

    /// The code's word, as errors carry it.
    pub fn as_str(self) -> &'static str {
        match self {
            Code::Setting => "setting",
            Code::NoTable => "no_table",
            Code::Table => "table",
            Code::Own => "own",
            Code::Against => "against",
            Code::Stale => "stale",
            Code::State => "state",
            Code::Blocked => "blocked",
            Code::Plan => "plan",
            Code::Argument => "argument",
            Code::Busy => "busy",
            Code::Interrupted => "interrupted",
            Code::Full => "full",
            Code::Sqlite => "sqlite",
            Code::Internal => "internal",
        }
    }

    /// What the code means and what a caller does about it, as
    /// `dedup_error_codes()` and `docs/errors.md` say it.
    pub fn meaning(self) -> &'static str {
        match self {
            Code::Setting => "a setting's name or value is wrong: fix it in dedup_settings or the call's JSON",
            Code::NoTable => "the table the settings name is not in the main database: set the table setting",
            Code::Table => "the table, or its columns, is not one a run can read and change",
            Code::Own => "the extension's own tables hold what it does not write (an edit outside it)",
            Code::Against => "the other database of against cannot be read, or is this one",
            Code::Stale => "the table changed between dedup_plan() and its apply: plan again",
            Code::State => "nothing to do in this state (no plan to apply, no run to undo, a statement still running)",
            Code::Blocked => "a trigger or constraint of the table (a foreign key, UNIQUE, NOT NULL) stopped the change",
            Code::Plan => "a plan given to dedup_apply_plan() is not one",
            Code::Argument => "a function's argument is wrong",
            Code::Busy => "another connection holds the lock: retry, or set busy_timeout",
            Code::Interrupted => "the call was interrupted; nothing was changed",
            Code::Full => "the disk or the database is full; nothing was changed",
            Code::Sqlite => "another error SQLite reported (I/O, read-only file, corruption)",
            Code::Internal => "a bug of the extension: please report it; nothing was changed",
        }
    }

    /// The code of a word, `None` for a word no error carries.
    pub fn from_word(word: &str) -> Option<Code> {
        Code::ALL.into_iter().find(|c| c.as_str() == word)
    }

    /// The code of an error as rusqlite gives it: the one its text carries,
    /// else the one of SQLite's result code.
    pub fn of(e: &Error) -> Code {
        match e {
            Error::SqliteFailure(failure, m) => m
                .as_deref()
                .and_then(code_of)
                .unwrap_or(Code::of_sqlite(failure.code)),
            Error::InvalidColumnType(..)
            | Error::FromSqlConversionFailure(..)
            | Error::IntegralValueOutOfRange(..) => Code::Own,
            Error::UserFunctionError(m) => code_of(&m.to_string()).unwrap_or(Code::Sqlite),
            Error::ModuleError(m) => code_of(m).unwrap_or(Code::Sqlite),
            _ => Code::Sqlite,
        }
    }

    /// The code of an error SQLite reported by its result code.
    fn of_sqlite(code: ffi::ErrorCode) -> Code {
        match code {
            ffi::ErrorCode::DatabaseBusy | ffi::ErrorCode::DatabaseLocked => Code::Busy,
            ffi::ErrorCode::OperationInterrupted => Code::Interrupted,
            ffi::ErrorCode::DiskFull => Code::Full,
            ffi::ErrorCode::ConstraintViolation => Code::Blocked,
            _ => Code::Sqlite,
        }
    }
}

/// An error of a run: its code and the message the caller sees.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DedupError {
    code: Code,
    message: String,
    /// A value read of another type than its reader expects (always
    /// [`Code::Own`]): an incremental run says where.
    wrong_type: bool,
}

impl DedupError {
    /// An error of this code. The message begins with the function that
    /// raises it (`dedup: …`, `dedup_restore: …`); one without gets `dedup`.
    pub fn new(code: Code, message: impl Into<String>) -> Self {
        DedupError {
            code,
            message: message.into(),
            wrong_type: false,
        }
    }

    /// An error of a value of another type than its reader expects, in
    /// the extension's own tables ([`Code::Own`]).
    pub fn wrong_type(message: impl Into<String>) -> Self {
        DedupError {
            wrong_type: true,
            ..DedupError::new(Code::Own, message)
        }
    }

    /// Whether it is an error of a value read of another type than its
    /// reader expects.
    pub fn is_wrong_type(&self) -> bool {
        self.wrong_type
    }

    /// Its code.
    pub fn code(&self) -> Code {
        self.code
    }

    /// The message without its function and code (`lsh_rows must be …`).
    pub fn words(&self) -> &str {
        split(&self.message).map_or(&self.message, |(_, _, rest)| rest)
    }
}

/// `<function>: <rest>` or `<function>[<code>]: <rest>` split in three;
/// `None` for a message of another form.
fn split(message: &str) -> Option<(&str, Option<&str>, &str)> {
    let (head, rest) = message.split_once(": ")?;
    let (name, code) = match head.split_once('[') {
        Some((name, code)) => (name, Some(code.strip_suffix(']')?)),
        None => (head, None),
    };
    let word = |s: &str| {
        !s.is_empty()
            && s.bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
    };
    (word(name) && code.is_none_or(word)).then_some((name, code, rest))
}

/// The message with its code: `<function>[<code>]: <rest>`. A message that
/// carries a code already keeps it (an error of a function a run called).
pub fn with_code(code: Code, message: &str) -> String {
    match split(message) {
        Some((_, Some(_), _)) => message.to_string(),
        Some((name, None, rest)) => format!("{name}[{}]: {rest}", code.as_str()),
        None => format!("dedup[{}]: {message}", code.as_str()),
    }
}

/// The code an error's text carries, `None` for a text of another form.
pub fn code_of(message: &str) -> Option<Code> {
    split(message).and_then(|(_, code, _)| Code::from_word(code?))
}

impl fmt::Display for DedupError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&with_code(self.code, &self.message))
    }
}

impl From<Error> for DedupError {
    fn from(e: Error) -> Self {
        let code = Code::of(&e);
        let wrong_type = matches!(
            e,
            Error::InvalidColumnType(..)
                | Error::FromSqlConversionFailure(..)
                | Error::IntegralValueOutOfRange(..)
        );
        let message = match e {
            Error::SqliteFailure(_, Some(m)) | Error::ModuleError(m) => m,
            Error::UserFunctionError(m) => m.to_string(),
            Error::InvalidColumnType(_, name, ty) => format!(
                "column {name} holds a value of type {ty}, not the type this extension writes there"
            ),
            e @ (Error::FromSqlConversionFailure(..) | Error::IntegralValueOutOfRange(..)) => {
                format!("a value of another type than expected: {e}")
            }
            other => other.to_string(),
        };
        DedupError {
            wrong_type,
            ..DedupError::new(code, message)
        }
    }
}

impl From<DedupError> for Error {
    fn from(e: DedupError) -> Self {
        Error::UserFunctionError(e.to_string().into())
    }
}

/// `Err(DedupError::new(code, message))`.
pub fn fail<T>(code: Code, message: String) -> std::result::Result<T, DedupError> {
    Err(DedupError::new(code, message))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_code_goes_after_the_function() {
        let e = DedupError::new(Code::Setting, "dedup: lsh_rows must be >= 1, got 0");
        assert_eq!(
            e.to_string(),
            "dedup[setting]: lsh_rows must be >= 1, got 0"
        );
        assert_eq!(e.words(), "lsh_rows must be >= 1, got 0");
        let e = DedupError::new(Code::State, "dedup_restore: nothing to undo");
        assert_eq!(e.to_string(), "dedup_restore[state]: nothing to undo");
        let e = DedupError::new(Code::Sqlite, "disk I/O error");
        assert_eq!(e.to_string(), "dedup[sqlite]: disk I/O error");
    }

    #[test]
    fn a_carried_code_is_kept_and_read_back() {
        let inner = with_code(Code::Argument, "minhash: k must be >= 1, got 0");
        assert_eq!(inner, "minhash[argument]: k must be >= 1, got 0");
        assert_eq!(code_of(&inner), Some(Code::Argument));
        assert_eq!(with_code(Code::Setting, &inner), inner);
        assert_eq!(code_of("dedup: no code"), None);
        assert_eq!(code_of("dedup[nonsense]: x"), None);
        assert_eq!(code_of("Dedup[setting]: x"), None);
    }

    #[test]
    fn every_word_is_one_code() {
        for c in Code::ALL {
            assert_eq!(Code::from_word(c.as_str()), Some(c));
        }
    }
}
