//! Content fingerprints: SHA-1 of the normalized text; and a stable 64-bit
//! hash of a row's values ([`Fingerprint`]) that tells a changed row from an
//! unchanged one between runs.
//!
//! Cost: one pass over the text (normalization, then SHA-1); a fingerprint
//! is one pass over the row's values.
//!
//! Reference: the reference pipeline's `content_hash` (SHA-1 of the parsed
//! text, as hex).

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

/// SHA-1 (40 lowercase hex characters) of [`normalize`](crate::core::text::normalize)`(text)`, or `None`
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

/// A 64-bit hash of a sequence of typed values, the same on every machine
/// and in every version (it is stored between runs): 8 bytes at a time,
/// each step a multiply and an xor-shift, then SplitMix64's finalizer. Not
/// a defence against chosen collisions: it tells a changed row from an
/// unchanged one.
///
/// ```
/// use dedup::core::hash::Fingerprint;
/// let mut a = Fingerprint::new();
/// a.text(b"https://a.org/");
/// a.null();
/// let mut b = Fingerprint::new();
/// b.text(b"https://a.org/");
/// b.text(b"");
/// assert_ne!(a.finish(), b.finish());
/// ```
#[derive(Debug, Clone)]
pub struct Fingerprint(u64);

impl Default for Fingerprint {
    fn default() -> Self {
        Fingerprint::new()
    }
}

const MIX: u64 = 0x9E37_79B9_7F4A_7C15;

impl Fingerprint {
    /// The hash of no values.
    pub fn new() -> Self {
        Fingerprint(0x2545_F491_4F6C_DD1D)
    }

    fn word(&mut self, w: u64) {
        let h = (self.0 ^ w).wrapping_mul(MIX);
        self.0 = h ^ (h >> 29);
    }

    fn tagged(&mut self, tag: u8, bytes: &[u8]) {
        self.word(u64::from(tag) << 56 | bytes.len() as u64);
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            self.word(u64::from_le_bytes(c.try_into().expect("8 bytes")));
        }
        let rest = chunks.remainder();
        if !rest.is_empty() {
            let mut last = [0u8; 8];
            last[..rest.len()].copy_from_slice(rest);
            self.word(u64::from_le_bytes(last));
        }
    }

    /// Adds a NULL.
    pub fn null(&mut self) {
        self.tagged(0, &[]);
    }

    /// Adds an integer.
    pub fn integer(&mut self, v: i64) {
        self.tagged(1, &v.to_le_bytes());
    }

    /// Adds a real (by its bits).
    pub fn real(&mut self, v: f64) {
        self.tagged(2, &v.to_bits().to_le_bytes());
    }

    /// Adds a text's bytes.
    pub fn text(&mut self, t: &[u8]) {
        self.tagged(3, t);
    }

    /// Adds a blob.
    pub fn blob(&mut self, b: &[u8]) {
        self.tagged(4, b);
    }

    /// The hash.
    pub fn finish(&self) -> i64 {
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        (z ^ (z >> 31)) as i64
    }
}

/// A SHA-1 digest of a row's values, each tagged with its type and length,
/// so that no other sequence of values gives the same bytes: what restore
/// finds a survivor's row again by (a collision would need SHA-1's, where
/// [`Fingerprint`]'s 64 bits can be aimed at).
///
/// ```
/// use dedup::core::hash::RowDigest;
/// let mut a = RowDigest::new();
/// a.text(b"https://a.org/");
/// a.integer(7);
/// let mut b = RowDigest::new();
/// b.text(b"https://a.org/7");
/// assert_ne!(a.finish(), b.finish());
/// ```
#[derive(Debug, Clone, Default)]
pub struct RowDigest(Sha1);

impl RowDigest {
    /// The digest of no values.
    pub fn new() -> Self {
        RowDigest(Sha1::new())
    }

    fn tagged(&mut self, tag: u8, bytes: &[u8]) {
        self.0.update([tag]);
        self.0.update((bytes.len() as u64).to_le_bytes());
        self.0.update(bytes);
    }

    /// Adds a NULL.
    pub fn null(&mut self) {
        self.tagged(0, &[]);
    }

    /// Adds an integer.
    pub fn integer(&mut self, v: i64) {
        self.tagged(1, &v.to_le_bytes());
    }

    /// Adds a real (by its bits).
    pub fn real(&mut self, v: f64) {
        self.tagged(2, &v.to_bits().to_le_bytes());
    }

    /// Adds a text's bytes.
    pub fn text(&mut self, t: &[u8]) {
        self.tagged(3, t);
    }

    /// Adds a blob.
    pub fn blob(&mut self, b: &[u8]) {
        self.tagged(4, b);
    }

    /// The 20 bytes of the digest.
    pub fn finish(self) -> [u8; 20] {
        self.0.finalize().into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn row_digests_tell_types_and_boundaries_apart() {
        let of = |values: &[&dyn Fn(&mut RowDigest)]| {
            let mut d = RowDigest::new();
            for v in values {
                v(&mut d);
            }
            d.finish()
        };
        // The bytes hashed for ("abc", 7): tag 3, length 3, "abc", then
        // tag 1, length 8, 7 as 8 little-endian bytes (SHA-1 of them
        // computed independently with Python's hashlib).
        let got: String = of(&[&|d| d.text(b"abc"), &|d| d.integer(7)])
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        assert_eq!(got, "87aa37c2633eb4d229e288b0d853a7494cca2bcf");
        assert_ne!(
            of(&[&|d| d.text(b"ab"), &|d| d.text(b"c")]),
            of(&[&|d| d.text(b"a"), &|d| d.text(b"bc")])
        );
        assert_ne!(of(&[&|d| d.text(b"1")]), of(&[&|d| d.integer(1)]));
        assert_ne!(of(&[&|d| d.null()]), of(&[&|d| d.text(b"")]));
        assert_ne!(of(&[&|d| d.blob(b"x")]), of(&[&|d| d.text(b"x")]));
        assert_ne!(of(&[&|d| d.real(1.0)]), of(&[&|d| d.integer(1)]));
    }

    #[test]
    fn fingerprints_are_stable_and_tell_types_and_boundaries_apart() {
        let of = |values: &[&dyn Fn(&mut Fingerprint)]| {
            let mut f = Fingerprint::new();
            for v in values {
                v(&mut f);
            }
            f.finish()
        };
        // Stored between runs: a change of this value is a new index
        // version (index::VERSION), never a silent one.
        assert_eq!(of(&[]), of(&[]));
        let fixed = of(&[&|f| f.text(b"abc"), &|f| f.integer(7)]);
        assert_eq!(fixed, 0xc87f_c9aa_f726_21c2_u64 as i64, "{fixed:#x}");
        assert_ne!(
            of(&[&|f| f.text(b"ab"), &|f| f.text(b"c")]),
            of(&[&|f| f.text(b"a"), &|f| f.text(b"bc")])
        );
        assert_ne!(of(&[&|f| f.text(b"1")]), of(&[&|f| f.integer(1)]));
        assert_ne!(of(&[&|f| f.null()]), of(&[&|f| f.text(b"")]));
        assert_ne!(of(&[&|f| f.blob(b"x")]), of(&[&|f| f.text(b"x")]));
        assert_ne!(of(&[&|f| f.real(1.0)]), of(&[&|f| f.integer(1)]));
        assert_ne!(
            of(&[&|f| f.text(b"12345678")]),
            of(&[&|f| f.text(b"12345679")])
        );
    }

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
