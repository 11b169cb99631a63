//! [`Invalid`]: the error of a pure algorithm given an input it cannot take
//! (a signature of another size, an unknown URL option, a malformed Arrow
//! batch), as what is wrong in words. The bindings put the words into their
//! own coded error (`minhash[argument]: …`, `dedup[setting]: …`), so a core
//! error is never confused with any other text, and never shown bare.
//!
//! Cost: the message only, built when the input is refused.
//!
//! Reference: the Rust API guidelines' C-GOOD-ERR (an error type of its own,
//! implementing `std::error::Error` and `Display`).

use std::fmt;

/// An input a pure algorithm cannot take, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Invalid(String);

impl Invalid {
    /// The error with these words.
    pub fn new(why: impl Into<String>) -> Self {
        Invalid(why.into())
    }

    /// Its words.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for Invalid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Invalid {}

impl From<String> for Invalid {
    fn from(why: String) -> Self {
        Invalid(why)
    }
}

impl From<&str> for Invalid {
    fn from(why: &str) -> Self {
        Invalid(why.to_string())
    }
}
