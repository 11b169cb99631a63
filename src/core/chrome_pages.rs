//! Which segments of a site are chrome, learned one page at a time: a
//! segment (a line, [`super::segments`]) is chrome once it was seen on
//! [`CHROME_PAGES`] pages with different keys (a page's key is its title, or
//! its content when it has none), so the lines a page shares with its own
//! copies (same title) never count, while a header or a "customers also
//! viewed" box met on pages of different titles does.
//!
//! ```
//! use dedup::core::chrome_pages::{SeenOn, page_key};
//! let mut seen = SeenOn::default();
//! for title in ["Shoe 1", "Shoe 1", "Shoe 2"] {
//!     seen.note(page_key(title, "..."));
//! }
//! assert!(!seen.is_chrome()); // two keys: the copy of Shoe 1 counts once
//! seen.note(page_key("Shoe 3", "..."));
//! assert!(seen.is_chrome());
//! ```
//!
//! Cost: a few keys a segment (it stops counting once a segment is chrome).
//!
//! Reference: trafilatura's repeated-segment detection, which counts a
//! segment across a site's pages; the distinct-title rule is this
//! project's.

use super::segments::{strip, strip_found, Segment};

/// Distinct page keys after which a segment is chrome.
pub const CHROME_PAGES: usize = 3;

/// A page's key for counting: its title, or its text when the title is empty.
pub fn page_key(title: &str, text: &str) -> u32 {
    let basis = if title.trim().is_empty() { text } else { title };
    let digest = super::hash::sha1_hex(basis.trim().as_bytes());
    u32::from_str_radix(&digest[..8], 16).expect("hex digits")
}

/// The distinct keys of the pages a segment was seen on, up to
/// [`CHROME_PAGES`].
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct SeenOn(Vec<u32>);

impl SeenOn {
    /// Counts one more page; returns whether that changed anything.
    pub fn note(&mut self, key: u32) -> bool {
        if self.is_chrome() || self.0.contains(&key) {
            return false;
        }
        self.0.push(key);
        true
    }

    /// Whether the segment is chrome.
    pub fn is_chrome(&self) -> bool {
        self.0.len() >= CHROME_PAGES
    }

    /// As stored: the keys as little-endian `u32`s.
    pub fn to_blob(&self) -> Vec<u8> {
        self.0.iter().flat_map(|k| k.to_le_bytes()).collect()
    }

    /// From its stored form (a trailing partial key is ignored).
    pub fn from_blob(blob: &[u8]) -> SeenOn {
        SeenOn(
            blob.chunks_exact(4)
                .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
                .collect(),
        )
    }
}

/// `text` without its chrome segments (as [`super::segments::strip`] joins
/// them), or `None` when none is chrome or every one is (a page that is all
/// chrome, such as a soft 404, is compared whole).
pub fn without_chrome(text: &str, is_chrome: impl Fn(i64) -> bool) -> Option<String> {
    strip(text, is_chrome).filter(|kept| !kept.is_empty())
}

/// [`without_chrome`] of a text's segments found already.
pub fn without_chrome_found(
    found: &[Segment<'_>],
    is_chrome: impl Fn(i64) -> bool,
) -> Option<String> {
    strip_found(found, is_chrome).filter(|kept| !kept.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::segments::segment_hash;

    #[test]
    fn a_segment_becomes_chrome_on_the_third_distinct_key() {
        let mut seen = SeenOn::default();
        assert!(seen.note(1));
        assert!(!seen.note(1));
        assert!(seen.note(2));
        assert!(!seen.is_chrome());
        assert!(seen.note(3));
        assert!(seen.is_chrome());
        assert!(!seen.note(4));
        assert_eq!(SeenOn::from_blob(&seen.to_blob()), seen);
    }

    #[test]
    fn the_key_is_the_title_else_the_text() {
        assert_eq!(page_key("A", "x"), page_key(" A ", "y"));
        assert_ne!(page_key("", "x"), page_key("", "y"));
        assert_eq!(page_key("", "x"), page_key("  ", "x"));
    }

    #[test]
    fn a_page_of_chrome_only_is_kept_whole() {
        let menu = segment_hash("Menu");
        assert_eq!(
            without_chrome("Menu\nThe shoe.\nMenu", |h| h == menu).as_deref(),
            Some("The shoe.")
        );
        assert_eq!(without_chrome("Menu\n menu ", |h| h == menu), None);
        assert_eq!(without_chrome("The shoe.", |h| h == menu), None);
    }
}
