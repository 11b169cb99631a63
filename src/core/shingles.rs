//! Broder's resemblance of word-shingle sets, as Text::DeDuper defines it
//! ([`resemblance`]): texts cut into words (stopwords removed), each run
//! of `width` words hashed into a set, and two sets compared by the share
//! of shingles they have in common. The word hashes and their combination
//! are also what MinHash's word shingles are made of ([`crate::core::sketch`]).
//!
//! Cost: one pass over the words to hash them; two sets compare in
//! O(|a| + |b|).
//!
//! Reference: Text::DeDuper (its Perl source in `../shared/oracles/`, the
//! tests' oracle) and A. Broder, "On the resemblance and containment of
//! documents" (1997).

use std::collections::HashSet;

use crate::core::halt::{never, Halt};

/// A set of word shingles, as sorted 64-bit hashes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Shingles(Vec<u64>);

impl Shingles {
    /// The shingles of a text: tokens are lowercased runs of Unicode
    /// alphanumerics, `stopwords` (lowercase words) are removed, and every
    /// run of `n` consecutive tokens is one shingle. A text with at least one
    /// but fewer than `n` tokens has one shingle made of all its tokens; a
    /// text with no tokens has none.
    pub fn new(text: &str, n: usize, stopwords: &Stopwords) -> Self {
        Shingles::new_or_halt(text, n, stopwords, &never).expect("out of memory")
    }

    /// [`Shingles::new`] that asks `stop` every million tokens and stops
    /// with [`Halt::OutOfMemory`] where memory cannot be had (a scan of
    /// huge texts inside someone else's process).
    pub fn new_or_halt(
        text: &str,
        n: usize,
        stopwords: &Stopwords,
        stop: &dyn Fn() -> bool,
    ) -> Result<Self, Halt> {
        let n = n.max(1);
        let mut tokens = token_hashes_or_halt(text, stop)?;
        if !stopwords.0.is_empty() {
            tokens.retain(|h| !stopwords.0.contains(h));
        }
        let mut set: Vec<u64> = Vec::new();
        if tokens.len() >= n {
            set.try_reserve_exact(tokens.len() - n + 1)
                .map_err(|_| Halt::OutOfMemory)?;
            set.extend(tokens.windows(n).map(combine));
        } else if !tokens.is_empty() {
            set.push(combine(&tokens));
        }
        set.sort_unstable();
        set.dedup();
        Ok(Shingles(set))
    }

    /// Number of distinct shingles.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// True when the text had no tokens.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// Broder's resemblance `|A ∩ B| / |A ∪ B|`; `0.0` when either set is empty
/// (an empty or all-stopword text is never a duplicate of another).
pub fn resemblance(a: &Shingles, b: &Shingles) -> f64 {
    if a.0.is_empty() || b.0.is_empty() {
        return 0.0;
    }
    let (mut i, mut j, mut common) = (0, 0, 0usize);
    while i < a.0.len() && j < b.0.len() {
        match a.0[i].cmp(&b.0[j]) {
            std::cmp::Ordering::Less => i += 1,
            std::cmp::Ordering::Greater => j += 1,
            std::cmp::Ordering::Equal => {
                common += 1;
                i += 1;
                j += 1;
            }
        }
    }
    let union = a.0.len() + b.0.len() - common;
    common as f64 / union as f64
}

/// A set of stopwords, stored as token hashes.
#[derive(Debug, Clone, Default)]
pub struct Stopwords(HashSet<u64>);

impl Stopwords {
    /// Stopwords from a list of words separated by whitespace or commas;
    /// words are tokenized like texts, so case does not matter.
    pub fn parse(list: &str) -> Self {
        Stopwords(token_hashes(list).into_iter().collect())
    }

    /// Whether a token's hash is a stopword's.
    pub(crate) fn contains(&self, token: u64) -> bool {
        self.0.contains(&token)
    }

    /// Number of distinct stopwords.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// True when there are no stopwords.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
/// Multiplier of the token and shingle hashes (the 64-bit golden ratio).
const MIX: u64 = 0x9e37_79b9_7f4a_7c15;

/// Hash of the token `text[start..end]`, eight bytes at a time. With
/// `lower`, ASCII letters are lowercased on the way (`| 0x20` is exact on
/// ASCII alphanumerics, and the identity on lowercase ones), so a token
/// hashes the same whether it came lowercased or not.
fn token_hash(text: &[u8], start: usize, end: usize, lower: bool) -> u64 {
    const LOWER: u64 = 0x2020_2020_2020_2020;
    let mut h = FNV_OFFSET ^ (end - start) as u64;
    let mut mix = |w: u64| {
        h = (h ^ w).wrapping_mul(MIX);
        h ^= h >> 29;
    };
    let lower = if lower { LOWER } else { 0 };
    let mut at = start;
    while at < end {
        let len = (end - at).min(8);
        let keep = if len == 8 {
            !0
        } else {
            (1u64 << (8 * len)) - 1
        };
        let w = match text.get(at..at + 8) {
            Some(chunk) => u64::from_le_bytes(chunk.try_into().expect("8 bytes")),
            None => {
                let mut buf = [0u8; 8];
                buf[..len].copy_from_slice(&text[at..at + len]);
                u64::from_le_bytes(buf)
            }
        };
        mix((w | lower) & keep);
        at += len;
    }
    h
}

/// Whether a byte is an ASCII alphanumeric, as a lookup table.
const ALNUM: [u8; 256] = {
    let mut table = [0u8; 256];
    let mut b = 0;
    while b < 256 {
        table[b] = (b as u8).is_ascii_alphanumeric() as u8;
        b += 1;
    }
    table
};

/// Hashes of the lowercased alphanumeric tokens of `text`
/// ([`crate::core::text::words`]). ASCII text is scanned 64 bytes at a time
/// (token boundaries are the bit transitions of an alphanumeric mask) and
/// hashed in place, without building the tokens.
pub(crate) fn token_hashes(text: &str) -> Vec<u64> {
    token_hashes_or_halt(text, &never).expect("out of memory")
}

/// [`token_hashes`] that asks `stop` every million tokens or 64 MiB and
/// reserves its vector fallibly.
pub(crate) fn token_hashes_or_halt(text: &str, stop: &dyn Fn() -> bool) -> Result<Vec<u64>, Halt> {
    let mut hashes = Vec::new();
    hashes
        .try_reserve(text.len() / 5)
        .map_err(|_| Halt::OutOfMemory)?;
    if !text.is_ascii() {
        // The tokens of `text::words`, built in one buffer; `stop` is asked
        // by characters, so one huge token (a CJK page has no spaces) does
        // not hold it.
        let mut word = String::new();
        for (k, c) in text.chars().flat_map(char::to_lowercase).enumerate() {
            if k % (1 << 20) == (1 << 20) - 1 && stop() {
                return Err(Halt::Stopped);
            }
            if crate::core::text::is_character_token(c) {
                if !word.is_empty() {
                    hashes.push(token_hash(word.as_bytes(), 0, word.len(), false));
                    word.clear();
                }
                let mut utf8 = [0u8; 4];
                let one = c.encode_utf8(&mut utf8).as_bytes();
                hashes.push(token_hash(one, 0, one.len(), false));
            } else if crate::core::text::is_word_char(c) {
                word.push(c);
            } else if !word.is_empty() {
                hashes.push(token_hash(word.as_bytes(), 0, word.len(), false));
                word.clear();
            }
        }
        if !word.is_empty() {
            hashes.push(token_hash(word.as_bytes(), 0, word.len(), false));
        }
        return Ok(hashes);
    }
    let bytes = text.as_bytes();
    let (mut start, mut in_token, mut carry) = (0, false, 0u64);
    for (index, block) in bytes.chunks(64).enumerate() {
        if index % (1 << 20) == (1 << 20) - 1 && stop() {
            return Err(Halt::Stopped);
        }
        let mut mask = 0u64;
        for (i, &b) in block.iter().enumerate() {
            mask |= u64::from(ALNUM[usize::from(b)]) << i;
        }
        let mut transitions = mask ^ ((mask << 1) | carry);
        carry = mask >> 63;
        while transitions != 0 {
            let at = index * 64 + transitions.trailing_zeros() as usize;
            transitions &= transitions - 1;
            if in_token {
                hashes.push(token_hash(bytes, start, at, true));
            } else {
                start = at;
            }
            in_token = !in_token;
        }
    }
    if in_token {
        hashes.push(token_hash(bytes, start, bytes.len(), true));
    }
    Ok(hashes)
}

/// Order-sensitive combination of token hashes into one shingle hash.
pub(crate) fn combine(tokens: &[u64]) -> u64 {
    combine_iter(tokens.iter().copied())
}

/// [`combine`] over any sequence of values.
pub(crate) fn combine_iter(tokens: impl Iterator<Item = u64>) -> u64 {
    let mut h = FNV_OFFSET;
    for t in tokens {
        h = combine_step(h, t);
    }
    h
}

/// One value into a [`combine`] hash.
#[inline(always)]
const fn combine_step(h: u64, t: u64) -> u64 {
    let h = (h ^ t).wrapping_mul(MIX);
    h ^ (h >> 29)
}

/// [`combine`]'s state after a byte's value, for every byte.
const FIRST_BYTE: [u64; 256] = {
    let mut table = [0; 256];
    let mut b = 0;
    while b < 256 {
        table[b] = combine_step(FNV_OFFSET, b as u64);
        b += 1;
    }
    table
};

/// Calls `each` with the hash of every run of `n` consecutive bytes of
/// `bytes` (1 <= `n` <= its length), in order: [`combine`] over the bytes'
/// values, as a character shingle of ASCII text hashes. The common sizes
/// are unrolled, and the first byte's step is a table's.
pub(crate) fn each_byte_shingle(bytes: &[u8], n: usize, each: &mut impl FnMut(u64)) {
    debug_assert!((1..=bytes.len()).contains(&n));
    match n {
        1 => byte_shingles::<1>(bytes, each),
        2 => byte_shingles::<2>(bytes, each),
        3 => byte_shingles::<3>(bytes, each),
        4 => byte_shingles::<4>(bytes, each),
        5 => byte_shingles::<5>(bytes, each),
        6 => byte_shingles::<6>(bytes, each),
        7 => byte_shingles::<7>(bytes, each),
        8 => byte_shingles::<8>(bytes, each),
        _ => {
            for w in bytes.windows(n) {
                each(combine_iter(w.iter().map(|&b| u64::from(b))));
            }
        }
    }
}

/// [`each_byte_shingle`] for a size known when compiled.
#[inline(always)]
fn byte_shingles<const N: usize>(bytes: &[u8], each: &mut impl FnMut(u64)) {
    for w in bytes.windows(N) {
        let mut h = FIRST_BYTE[usize::from(w[0])];
        for &b in &w[1..] {
            h = combine_step(h, u64::from(b));
        }
        each(h);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn resemblance_of_shared_shingles() {
        let none = Stopwords::default();
        let a = Shingles::new("a b c d e", 2, &none); // ab bc cd de
        let b = Shingles::new("a b c d f", 2, &none); // ab bc cd df
        assert_eq!(resemblance(&a, &b), 3.0 / 5.0);
    }

    #[test]
    fn short_texts_form_one_shingle() {
        let none = Stopwords::default();
        let a = Shingles::new("Hello world", 5, &none);
        assert_eq!(a.len(), 1);
        assert_eq!(
            resemblance(&a, &Shingles::new("hello, WORLD!", 5, &none)),
            1.0
        );
        assert_eq!(
            resemblance(&a, &Shingles::new("hello there", 5, &none)),
            0.0
        );
    }

    #[test]
    fn empty_and_all_stopword_texts_are_never_duplicates() {
        let stop = Stopwords::parse("the, a AN");
        assert_eq!(stop.len(), 3);
        let e = Shingles::new("The a an", 3, &stop);
        assert!(e.is_empty());
        assert_eq!(resemblance(&e, &e), 0.0);
        let empty = Shingles::new("", 3, &Stopwords::default());
        assert_eq!(resemblance(&empty, &empty), 0.0);
    }

    #[test]
    fn stopwords_are_removed_before_shingling() {
        let stop = Stopwords::parse("the");
        let a = Shingles::new("the cat sat on the mat", 2, &stop);
        let b = Shingles::new("cat sat on mat", 2, &Stopwords::default());
        assert_eq!(resemblance(&a, &b), 1.0);
    }

    #[test]
    fn chinese_sentences_resemble_as_their_length_says() {
        // 30 characters, the 8th and the 23rd changed: of the 26 character
        // 5-grams of each, 10 hold a changed character (5 each, apart), so
        // 16 are shared of 26 + 10 in all.
        let none = Stopwords::default();
        let a = "这篇文章对刚接触命令行的新手以及具有命令行使用经验的人都有用";
        let b = "这篇文章对刚接解命令行的新手以及具有命令行便用经验的人都有用";
        assert_eq!(a.chars().count(), 30);
        let (x, y) = (Shingles::new(a, 5, &none), Shingles::new(b, 5, &none));
        assert_eq!((x.len(), y.len()), (26, 26));
        assert_eq!(resemblance(&x, &y), 16.0 / 36.0);
        // Latin words beside them stay words.
        let c = Shingles::new("Linux 这篇文章", 2, &none);
        assert_eq!(c.len(), 4); // linux+这, 这篇, 篇文, 文章
    }

    proptest! {
        #[test]
        fn ascii_tokens_hash_like_words(s in "[a-zA-Z0-9 ,.\n-]{0,300}") {
            let words: Vec<u64> = crate::core::text::words(&s).map(|w| token_hash(w.as_bytes(), 0, w.len(), false)).collect();
            prop_assert_eq!(token_hashes(&s), words);
        }

        #[test]
        fn any_tokens_hash_like_words(s in "[a-zA-Zé0-9 ,.\n東京数据库けにカ한국어ภาษาไทย²½-]{0,200}") {
            let words: Vec<u64> = crate::core::text::words(&s).map(|w| token_hash(w.as_bytes(), 0, w.len(), false)).collect();
            prop_assert_eq!(token_hashes(&s), words);
        }

        #[test]
        fn resemblance_is_symmetric_and_bounded(a in "[a-c ]{0,40}", b in "[a-c ]{0,40}") {
            let none = Stopwords::default();
            let (x, y) = (Shingles::new(&a, 2, &none), Shingles::new(&b, 2, &none));
            let r = resemblance(&x, &y);
            prop_assert!((0.0..=1.0).contains(&r));
            prop_assert_eq!(r, resemblance(&y, &x));
        }
    }
}
