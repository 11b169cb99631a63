//! Content fingerprints: SHA-1 of the normalized text.

use sha1::{Digest, Sha1};

use crate::core::halt::{never, Halt};
use crate::core::text::normalize_ascii_or_halt;

/// Lowercase hex SHA-1 of `bytes`.
pub fn sha1_hex(bytes: &[u8]) -> String {
    let digest = Sha1::digest(bytes);
    let mut hex = String::with_capacity(40);
    for byte in digest {
        hex.push(char::from(b"0123456789abcdef"[usize::from(byte >> 4)]));
        hex.push(char::from(b"0123456789abcdef"[usize::from(byte & 0x0f)]));
    }
    hex
}

/// SHA-1 (40 lowercase hex characters) of [`normalize`]`(text)`, or `None`
/// when the normalized text is empty: an empty page is not a fingerprint and
/// must never make two pages duplicates.
pub fn content_hash(text: &str) -> Option<String> {
    content_hash_or_halt(text, &never).expect("out of memory")
}

/// [`content_hash`] whose normalization asks `stop` every MiB of work.
pub fn content_hash_or_halt(text: &str, stop: &dyn Fn() -> bool) -> Result<Option<String>, Halt> {
    let normalized = normalize_ascii_or_halt(text, stop)?;
    Ok(if normalized.is_empty() {
        None
    } else {
        Some(sha1_hex(&normalized))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sha1_matches_known_vectors() {
        // FIPS 180 test vectors.
        assert_eq!(sha1_hex(b"abc"), "a9993e364706816aba3e25717850c26c9cd0d89d");
        assert_eq!(sha1_hex(b""), "da39a3ee5e6b4b0d3255bfef95601890afd80709");
    }

    #[test]
    fn hash_is_of_the_normalized_text() {
        assert_eq!(content_hash("  ABC "), Some(sha1_hex(b"abc")));
        assert_eq!(content_hash("abc"), content_hash(" ABC\n"));
    }

    #[test]
    fn empty_text_has_no_hash() {
        assert_eq!(content_hash(""), None);
        assert_eq!(content_hash(" \n\n\t"), None);
    }

    #[test]
    fn different_non_latin_pages_hash_differently() {
        assert_ne!(content_hash("Первый раздел"), content_hash("Второй раздел"));
        assert_ne!(content_hash("第一节"), content_hash("第二节"));
    }
}
