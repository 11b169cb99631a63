//! What a canonicalization gives, under either rules ([`super::url`], the
//! project's; [`super::url_reference`], the reference's), and the archive
//! wrapper both unwrap.
//!
//! Cost: none of its own (types and one prefix test).
//!
//! Reference: the Wayback Machine's URL form
//! `web.archive.org/web/<timestamp>/<url>`.

use std::fmt;

/// A canonicalized URL with what the pipeline needs beside it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CanonicalUrl {
    /// The canonical URL.
    pub url: String,
    /// Its host (lowercase, no port), the pipeline's `domain`.
    pub domain: String,
    /// The web.archive.org wrapper the URL was unwrapped from, if any.
    pub wayback: Option<String>,
}

/// Why a URL leaves the pipeline.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Discard {
    /// It contains an ignored substring (the pattern is given).
    Ignored(String),
    /// It cannot be parsed as an http(s) URL with a host.
    Unparseable(String),
}

impl fmt::Display for Discard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Discard::Ignored(p) => write!(f, "ignored: {p}"),
            Discard::Unparseable(why) => write!(f, "unparseable: {why}"),
        }
    }
}

/// URLs longer than this are unparseable: no page has one, and parsing a
/// huge one would hold the caller (1 MiB parses in a few milliseconds).
pub const MAX_URL_BYTES: usize = 1 << 20;

/// Returns the archived URL and the wrapper when `url` is a
/// `web.archive.org/web/<digits>[flags]/<http(s) url>` snapshot URL.
pub fn unwrap_wayback(url: &str) -> Option<(&str, &str)> {
    let rest = strip_prefix_ignore_case(url, "https://")
        .or_else(|| strip_prefix_ignore_case(url, "http://"))?;
    let rest = strip_prefix_ignore_case(rest, "web.archive.org/web/")?;
    let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
    if digits == 0 {
        return None;
    }
    let rest = &rest[digits..];
    let flags = rest
        .bytes()
        .take_while(|b| b.is_ascii_lowercase() || *b == b'_')
        .count();
    let inner = rest[flags..].strip_prefix('/')?;
    if strip_prefix_ignore_case(inner, "http://").is_some()
        || strip_prefix_ignore_case(inner, "https://").is_some()
    {
        Some((inner, url))
    } else {
        None
    }
}

fn strip_prefix_ignore_case<'a>(s: &'a str, prefix: &str) -> Option<&'a str> {
    if s.len() >= prefix.len()
        && s.is_char_boundary(prefix.len())
        && s[..prefix.len()].eq_ignore_ascii_case(prefix)
    {
        Some(&s[prefix.len()..])
    } else {
        None
    }
}
