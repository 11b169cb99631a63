//! Page segments: the lines and paragraphs a page's text is made of (what
//! trafilatura calls elements), each with a hash that counts it across the
//! pages of a site, and the stripping of the segments found to be chrome
//! (navigation, footers, cookie banners).
//!
//! A segment is a non-empty line (after trimming); its hash is the first 8
//! bytes of the SHA-1 of the line with whitespace collapsed to single spaces
//! and letters lowercased, read as a big-endian signed integer, so the same
//! line in two pages has one hash whatever its indentation or case.
//!
//! ```
//! use dedup::core::segments::{segments, strip};
//! let page = "Skip to main content\n\nThe article.\n  Back to top ";
//! let found: Vec<&str> = segments(page).map(|s| s.text).collect();
//! assert_eq!(found, ["Skip to main content", "The article.", "Back to top"]);
//! let chrome = [segments(page).next().unwrap().hash];
//! assert_eq!(strip(page, |h| chrome.contains(&h)).as_deref(), Some("The article.\nBack to top"));
//! assert_eq!(strip(page, |_| false), None);
//! ```
//!
//! Cost: one pass over the text; one SHA-1 of each line.
//!
//! Reference: trafilatura's element-level deduplication of repeated
//! segments across a site's pages (its `duplicate_test`).

use crate::core::invalid::Invalid;
use sha1::{Digest, Sha1};

/// One segment of a text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Segment<'a> {
    /// 1-based position among the text's segments.
    pub position: usize,
    /// The trimmed line.
    pub text: &'a str,
    /// [`segment_hash`] of the line.
    pub hash: i64,
}

/// The segments of `text`: its non-empty trimmed lines (`\n`, `\r\n` or
/// `\r` end a line), in order.
pub fn segments(text: &str) -> impl Iterator<Item = Segment<'_>> {
    text.split(['\n', '\r'])
        .map(str::trim)
        .filter(|line| !line.is_empty())
        .enumerate()
        .map(|(i, line)| Segment {
            position: i + 1,
            text: line,
            hash: segment_hash(line),
        })
}

/// The hash of one segment: SHA-1 of its words (Unicode whitespace-separated)
/// joined by one space and lowercased; the first 8 bytes, big-endian, signed.
pub fn segment_hash(segment: &str) -> i64 {
    // (The words are written lowercased into one line, hashed at once: the
    // bytes are those of the words joined, so the digest is.)
    let mut line = String::with_capacity(segment.len());
    for (i, word) in segment.split_whitespace().enumerate() {
        if i > 0 {
            line.push(' ');
        }
        if word.is_ascii() {
            line.extend(word.bytes().map(|b| char::from(b.to_ascii_lowercase())));
        } else {
            line.push_str(&word.to_lowercase());
        }
    }
    let digest = Sha1::digest(line.as_bytes());
    let mut first = [0u8; 8];
    first.copy_from_slice(&digest[..8]);
    i64::from_be_bytes(first)
}

/// `text` without the segments whose hash `is_chrome` accepts, the kept
/// segments joined by `\n`; `None` when no segment was removed (the text is
/// then compared as it is).
pub fn strip(text: &str, is_chrome: impl Fn(i64) -> bool) -> Option<String> {
    strip_found(&segments(text).collect::<Vec<_>>(), is_chrome)
}

/// [`strip`] of a text's segments found already (by [`segments`]).
pub fn strip_found(found: &[Segment<'_>], is_chrome: impl Fn(i64) -> bool) -> Option<String> {
    let mut kept = String::with_capacity(found.iter().map(|s| s.text.len() + 1).sum());
    let mut removed = false;
    for segment in found {
        if is_chrome(segment.hash) {
            removed = true;
            continue;
        }
        if !kept.is_empty() {
            kept.push('\n');
        }
        kept.push_str(segment.text);
    }
    removed.then_some(kept)
}

/// A set of segment hashes written as a JSON array of integers
/// (`[1, -2]`, as `json_group_array(hash)` makes it), sorted for lookup.
pub fn parse_hashes(list: &str) -> Result<Vec<i64>, Invalid> {
    let inner = list
        .trim()
        .strip_prefix('[')
        .and_then(|l| l.strip_suffix(']'))
        .ok_or("hashes must be a JSON array of integers")?;
    let mut hashes = inner
        .split(',')
        .map(str::trim)
        .filter(|h| !h.is_empty())
        .map(|h| {
            h.parse::<i64>()
                .map_err(|_| Invalid::new("hashes must be a JSON array of integers"))
        })
        .collect::<Result<Vec<i64>, Invalid>>()?;
    hashes.sort_unstable();
    Ok(hashes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_split_on_every_line_ending() {
        let found: Vec<(usize, &str)> = segments("a\r\nb\rc\n\n \t\nd")
            .map(|s| (s.position, s.text))
            .collect();
        assert_eq!(found, [(1, "a"), (2, "b"), (3, "c"), (4, "d")]);
        assert_eq!(segments("").count(), 0);
        assert_eq!(segments(" \n\t\r\n").count(), 0);
    }

    #[test]
    fn hash_ignores_case_and_spacing_only() {
        assert_eq!(segment_hash("Back  to\ttop"), segment_hash("back to TOP"));
        assert_ne!(segment_hash("Back to top"), segment_hash("Back to the top"));
        assert_eq!(segment_hash("Назад"), segment_hash("НАЗАД"));
        // The definition: SHA-1 of the collapsed, lowercased bytes.
        let expected = {
            let d = Sha1::digest(b"back to top");
            i64::from_be_bytes(d[..8].try_into().unwrap())
        };
        assert_eq!(segment_hash("Back to top"), expected);
    }

    #[test]
    fn hash_lists_parse_as_json_arrays() {
        assert_eq!(parse_hashes("[3, -1,2]").unwrap(), [-1, 2, 3]);
        assert_eq!(parse_hashes(" [] ").unwrap(), Vec::<i64>::new());
        assert!(parse_hashes("1,2").is_err());
        assert!(parse_hashes("[1.5]").is_err());
        assert!(parse_hashes("[\"a\"]").is_err());
    }

    #[test]
    fn strip_keeps_order_and_reports_nothing_removed() {
        let page = "Menu\nOne\nMenu\nTwo";
        let menu = segment_hash("menu");
        assert_eq!(strip(page, |h| h == menu).as_deref(), Some("One\nTwo"));
        assert_eq!(strip(page, |_| true).as_deref(), Some(""));
        assert_eq!(strip(page, |_| false), None);
    }
}
