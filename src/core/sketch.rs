//! Sketches for whole-corpus near-duplicate search: MinHash signatures,
//! their LSH band keys, and SimHash fingerprints.
//!
//! Both sketch a set of shingles: word n-grams (tokens as
//! [`crate::core::text::words`] defines them) or character n-grams (over code
//! points, so CJK text without spaces works). A text with fewer than `n`
//! tokens or characters, but at least one, has one shingle made of all of
//! them; a text with none has no sketch.
//!
//! Cost: one hash of each shingle per permutation (MinHash, O(shingles ×
//! num_perm)), one pass over the signature for the band keys, one pass over
//! the shingles for SimHash.
//!
//! Reference: datasketch's `MinHash` and `MinHashLSH` (the permutations and
//! banding), M. Charikar's SimHash (2002) as trafilatura uses it.

use crate::core::halt::{never, Halt};
use crate::core::invalid::Invalid;
use crate::core::shingles::{
    combine, combine_iter, each_byte_shingle, token_hashes_or_halt, Stopwords,
};

/// What a shingle is made of.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ShingleKind {
    /// `n` consecutive word tokens.
    Word,
    /// `n` consecutive code points.
    Char,
}

impl ShingleKind {
    /// The words naming each kind, as settings and SQL arguments take them.
    pub const WORDS: &'static [&'static str] = &["char", "word"];

    /// Its word.
    pub fn as_str(self) -> &'static str {
        match self {
            ShingleKind::Char => "char",
            ShingleKind::Word => "word",
        }
    }

    /// The kind a word names (`w` and `c` too).
    pub fn from_word(word: &str) -> Option<Self> {
        match word {
            "word" | "w" => Some(ShingleKind::Word),
            "char" | "c" => Some(ShingleKind::Char),
            _ => None,
        }
    }
}

/// A shingling: kind and size.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shingling {
    /// Words or characters.
    pub kind: ShingleKind,
    /// Shingle size, 1 to 64.
    pub n: usize,
}

impl Shingling {
    /// Parses `word` / `char` (or `w` / `c`) and a size in 1..=64.
    pub fn new(kind: &str, n: i64) -> Result<Self, Invalid> {
        let Some(kind) = ShingleKind::from_word(kind) else {
            return Err("shingle kind must be 'word' or 'char'".into());
        };
        if !(1..=64).contains(&n) {
            return Err("shingle size must be an integer in [1, 64]".into());
        }
        Ok(Shingling {
            kind,
            n: n as usize,
        })
    }

    /// Hashes of the text's shingles (with repeats), in text order.
    pub fn hashes(&self, text: &str) -> Vec<u64> {
        self.hashes_or_halt(text, &never).expect("out of memory")
    }

    /// [`Shingling::hashes`] that asks `stop` every few milliseconds of work
    /// and allocates its vectors fallibly.
    pub fn hashes_or_halt(&self, text: &str, stop: &dyn Fn() -> bool) -> Result<Vec<u64>, Halt> {
        self.hashes_without(text, &Stopwords::default(), stop)
    }

    /// [`Shingling::hashes_or_halt`] with the tokens of `stopwords` left
    /// out of word shingles first (as [`crate::core::shingles::Shingles`]
    /// leaves them out); character shingles keep everything.
    pub fn hashes_without(
        &self,
        text: &str,
        stopwords: &Stopwords,
        stop: &dyn Fn() -> bool,
    ) -> Result<Vec<u64>, Halt> {
        let n = self.n;
        Ok(match self.kind {
            ShingleKind::Word => {
                let mut tokens = token_hashes_or_halt(text, stop)?;
                if !stopwords.is_empty() {
                    tokens.retain(|&t| !stopwords.contains(t));
                }
                if tokens.is_empty() {
                    Vec::new()
                } else if tokens.len() < n {
                    vec![combine(&tokens)]
                } else {
                    stopping_collect(tokens.len() - n + 1, tokens.windows(n).map(combine), stop)?
                }
            }
            ShingleKind::Char if text.is_ascii() => {
                let b = text.as_bytes();
                let mut v = Vec::new();
                v.try_reserve_exact(b.len().saturating_sub(n.min(b.len())) + 1)
                    .map_err(|_| Halt::OutOfMemory)?;
                each_ascii_shingle(b, n, stop, &mut |h| v.push(h))?;
                v
            }
            ShingleKind::Char => {
                let count = text.chars().count();
                let chars =
                    stopping_collect(count, text.chars().map(|c| u64::from(c as u32)), stop)?;
                let n = n.min(chars.len());
                if n == 0 {
                    return Ok(Vec::new());
                }
                stopping_collect(chars.len() - n + 1, chars.windows(n).map(combine), stop)?
            }
        })
    }

    /// Calls `each` with each value [`Shingling::hashes_without`] gives,
    /// in order, without holding them all (character shingles of ASCII text
    /// are hashed as they are passed).
    pub fn each_hash(
        &self,
        text: &str,
        stopwords: &Stopwords,
        stop: &dyn Fn() -> bool,
        each: &mut impl FnMut(u64),
    ) -> Result<(), Halt> {
        if self.kind == ShingleKind::Char && text.is_ascii() {
            return each_ascii_shingle(text.as_bytes(), self.n, stop, each);
        }
        self.hashes_without(text, stopwords, stop)?
            .into_iter()
            .for_each(each);
        Ok(())
    }
}

/// The character shingles of `n` of an ASCII text, hashed into `each`
/// (one made of the whole text when it is shorter, none when empty);
/// asks `stop` every million shingles.
fn each_ascii_shingle(
    b: &[u8],
    n: usize,
    stop: &dyn Fn() -> bool,
    each: &mut impl FnMut(u64),
) -> Result<(), Halt> {
    if b.is_empty() {
        return Ok(());
    }
    let n = n.min(b.len());
    let shingles = b.len() - n + 1;
    for (k, first) in (0..shingles).step_by(STOP_EVERY).enumerate() {
        if k > 0 && stop() {
            return Err(Halt::Stopped);
        }
        let last = (first + STOP_EVERY).min(shingles);
        each_byte_shingle(&b[first..last + n - 1], n, each);
    }
    Ok(())
}

/// Shingles hashed between two questions to `stop`.
const STOP_EVERY: usize = 1 << 20;

/// Collects `len` items into a vector allocated fallibly, asking `stop`
/// every million items.
fn stopping_collect(
    len: usize,
    items: impl Iterator<Item = u64>,
    stop: &dyn Fn() -> bool,
) -> Result<Vec<u64>, Halt> {
    let mut v = Vec::new();
    v.try_reserve_exact(len).map_err(|_| Halt::OutOfMemory)?;
    for (k, x) in items.enumerate() {
        if k % (1 << 20) == (1 << 20) - 1 && stop() {
            return Err(Halt::Stopped);
        }
        v.push(x);
    }
    Ok(v)
}

/// SplitMix64: the seeds of the permutations.
fn splitmix(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// Bytes before the values in a signature BLOB: `MH`, format version,
/// shingle kind (`w`/`c`), shingle size, three zero bytes.
pub const HEADER: usize = 8;

/// MinHash over `num_perm` permutations `x -> a * x + b (mod 2^32)` (odd
/// `a`) of 32-bit shingle hashes; fixed seeds, so signatures computed at
/// different times compare.
#[derive(Debug, Clone)]
pub struct MinHasher {
    a: Vec<u32>,
    b: Vec<u32>,
}

impl MinHasher {
    /// The permutations for a signature of `num_perm` values.
    pub fn new(num_perm: usize) -> Self {
        let mut state = 0x5eed_0000_0000_0001u64;
        let (mut a, mut b) = (Vec::with_capacity(num_perm), Vec::with_capacity(num_perm));
        for _ in 0..num_perm {
            let r = splitmix(&mut state);
            a.push((r as u32) | 1);
            b.push((r >> 32) as u32);
        }
        MinHasher { a, b }
    }

    /// Number of values in a signature.
    pub fn num_perm(&self) -> usize {
        self.a.len()
    }

    /// [`MinHasher::signature`] over chunks of the hashes, asking `stop`
    /// between two chunks (a few milliseconds of work).
    pub fn signature_or_halt(
        &self,
        hashes: &[u64],
        stop: &dyn Fn() -> bool,
    ) -> Result<Option<Vec<u32>>, Halt> {
        let chunk = (1 << 22) / self.a.len().max(1);
        let mut sig: Option<Vec<u32>> = None;
        for part in hashes.chunks(chunk.max(1)) {
            if stop() {
                return Err(Halt::Stopped);
            }
            let s = self.signature(part).expect("a chunk is not empty");
            sig = Some(match sig {
                None => s,
                Some(mut acc) => {
                    acc.iter_mut().zip(s).for_each(|(x, y)| *x = (*x).min(y));
                    acc
                }
            });
        }
        Ok(sig)
    }

    /// The minimum of each permutation over the shingle hashes; `None` when
    /// there are none.
    pub fn signature(&self, hashes: &[u64]) -> Option<Vec<u32>> {
        if hashes.is_empty() {
            return None;
        }
        let mut sig = vec![u32::MAX; self.a.len()];
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: the CPU supports AVX2 (checked just above).
            unsafe { min_hash_avx2(&self.a, &self.b, hashes, &mut sig) };
            return Some(sig);
        }
        min_hash(&self.a, &self.b, hashes, &mut sig);
        Some(sig)
    }

    /// A signature as a BLOB: [`HEADER`] then the values, little-endian.
    pub fn to_blob(shingling: Shingling, sig: &[u32]) -> Vec<u8> {
        signature_blob(CLASSIC, shingling, sig)
    }
}

/// Format byte of a classic signature BLOB ([`MinHasher`]'s).
pub const CLASSIC: u8 = 1;

/// A signature of the given format byte (`CLASSIC` or
/// [`crate::core::oph::FORMAT`]) as a BLOB: [`HEADER`] then the values,
/// little-endian.
pub fn signature_blob(format: u8, shingling: Shingling, sig: &[u32]) -> Vec<u8> {
    let kind = match shingling.kind {
        ShingleKind::Word => b'w',
        ShingleKind::Char => b'c',
    };
    let mut blob = Vec::with_capacity(HEADER + 4 * sig.len());
    blob.extend_from_slice(&[b'M', b'H', format, kind, shingling.n as u8, 0, 0, 0]);
    for v in sig {
        blob.extend_from_slice(&v.to_le_bytes());
    }
    blob
}

#[inline(always)]
fn min_hash(a: &[u32], b: &[u32], hashes: &[u64], sig: &mut [u32]) {
    for &h in hashes {
        let x = (h ^ (h >> 32)) as u32;
        for ((s, &a), &b) in sig.iter_mut().zip(a).zip(b) {
            *s = (*s).min(a.wrapping_mul(x).wrapping_add(b));
        }
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn min_hash_avx2(a: &[u32], b: &[u32], hashes: &[u64], sig: &mut [u32]) {
    min_hash(a, b, hashes, sig);
}

/// A parsed signature BLOB.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Signature<'a> {
    /// Header bytes (kind and size of the shingles).
    pub header: &'a [u8],
    /// The values, little-endian `u32`s.
    pub values: &'a [u8],
}

impl<'a> Signature<'a> {
    /// Checks a BLOB made by [`MinHasher::to_blob`].
    pub fn parse(blob: &'a [u8]) -> Result<Self, Invalid> {
        if blob.len() < HEADER + 4
            || &blob[..2] != b"MH"
            || ![CLASSIC, crate::core::oph::FORMAT].contains(&blob[2])
            || !(blob.len() - HEADER).is_multiple_of(4)
        {
            return Err("not a minhash signature".into());
        }
        Ok(Signature {
            header: &blob[..HEADER],
            values: &blob[HEADER..],
        })
    }

    /// Number of values.
    pub fn len(&self) -> usize {
        self.values.len() / 4
    }

    /// Always false: a signature has at least one value.
    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }

    /// `word 5-grams, 128 permutations` (`128 one-permutation bins` for
    /// [`crate::core::oph`]'s).
    pub fn describe(&self) -> String {
        let kind = if self.header[3] == b'w' {
            "word"
        } else {
            "char"
        };
        let values = if self.header[2] == CLASSIC {
            "permutations"
        } else {
            "one-permutation bins"
        };
        format!("{kind} {}-grams, {} {values}", self.header[4], self.len())
    }

    /// Estimated Jaccard similarity: the fraction of equal values. Errors
    /// when the signatures were made with different shingles or sizes.
    pub fn jaccard(&self, other: &Signature<'_>) -> Result<f64, Invalid> {
        if self.header != other.header || self.values.len() != other.values.len() {
            return Err(Invalid::from(format!(
                "signatures differ ({} vs {})",
                self.describe(),
                other.describe()
            )));
        }
        let equal = self
            .values
            .chunks_exact(4)
            .zip(other.values.chunks_exact(4))
            .filter(|(x, y)| x == y)
            .count();
        Ok(equal as f64 / self.len() as f64)
    }

    /// The LSH key of band `band` (`rows` values from `band * rows`).
    pub fn band_key(&self, band: usize, rows: usize) -> i64 {
        let bytes = &self.values[4 * band * rows..4 * (band + 1) * rows];
        combine_iter(
            bytes
                .chunks_exact(4)
                .map(|c| u64::from(u32::from_le_bytes(c.try_into().expect("4 bytes")))),
        ) as i64
    }
}

/// Probability that a pair with Jaccard `s` shares at least one of `bands`
/// bands of `rows` values: `1 - (1 - s^rows)^bands` (the S-curve).
pub fn lsh_probability(s: f64, bands: usize, rows: usize) -> f64 {
    1.0 - (1.0 - s.powi(rows as i32)).powi(bands as i32)
}

/// The bands and rows (`bands * rows <= num_perm`) that minimize the
/// equally weighted false-positive and false-negative areas of the S-curve
/// around `threshold`, as datasketch's `MinHashLSH` chooses them.
pub fn lsh_params(threshold: f64, num_perm: usize) -> (usize, usize) {
    let integrate = |f: &dyn Fn(f64) -> f64, lo: f64, hi: f64| {
        let steps = 200;
        let h = (hi - lo) / steps as f64;
        (0..steps)
            .map(|i| f(lo + (i as f64 + 0.5) * h) * h)
            .sum::<f64>()
    };
    let mut best = (1, 1, f64::INFINITY);
    for bands in 1..=num_perm {
        for rows in 1..=num_perm / bands {
            let fp = integrate(&|s| lsh_probability(s, bands, rows), 0.0, threshold);
            let fn_ = integrate(&|s| 1.0 - lsh_probability(s, bands, rows), threshold, 1.0);
            let error = 0.5 * fp + 0.5 * fn_;
            if error < best.2 {
                best = (bands, rows, error);
            }
        }
    }
    (best.0, best.1)
}

/// SimHash of shingle hashes: bit `i` is set when more shingles have it set
/// than not. `None` when there are no shingles.
pub fn simhash(hashes: &[u64]) -> Option<u64> {
    simhash_or_halt(hashes, &never).expect("never stops")
}

/// [`simhash`] that asks `stop` every million hashes.
pub fn simhash_or_halt(hashes: &[u64], stop: &dyn Fn() -> bool) -> Result<Option<u64>, Halt> {
    if hashes.is_empty() {
        return Ok(None);
    }
    let mut counts = [0i64; 64];
    for (k, &h) in hashes.iter().enumerate() {
        if k % (1 << 20) == (1 << 20) - 1 && stop() {
            return Err(Halt::Stopped);
        }
        let h = h.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ (h >> 29);
        for (bit, count) in counts.iter_mut().enumerate() {
            *count += (((h >> bit) & 1) as i64) * 2 - 1;
        }
    }
    Ok(Some(
        counts
            .iter()
            .enumerate()
            .filter(|(_, &c)| c > 0)
            .fold(0u64, |acc, (bit, _)| acc | 1 << bit),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn word(n: usize) -> Shingling {
        Shingling {
            kind: ShingleKind::Word,
            n,
        }
    }

    fn char_(n: usize) -> Shingling {
        Shingling {
            kind: ShingleKind::Char,
            n,
        }
    }

    fn sig(text: &str, s: Shingling, p: usize) -> Vec<u8> {
        let h = MinHasher::new(p);
        MinHasher::to_blob(s, &h.signature(&s.hashes(text)).unwrap())
    }

    #[test]
    fn shingle_counts() {
        assert_eq!(word(2).hashes("a b c d").len(), 3);
        assert_eq!(word(5).hashes("a b").len(), 1);
        assert!(word(5).hashes(" ,. ").is_empty());
        assert_eq!(char_(3).hashes("abcd").len(), 2);
        assert_eq!(char_(3).hashes("ab").len(), 1);
        assert_eq!(char_(2).hashes("北京大学").len(), 3);
        assert!(char_(3).hashes("").is_empty());
        // The same characters hash the same whether the text is ASCII or not.
        let ascii = char_(3).hashes("abcd");
        let wide = char_(3).hashes("abcdé");
        assert_eq!(ascii[..], wide[..2]);
    }

    #[test]
    fn identical_texts_have_equal_signatures() {
        let a = sig("the quick brown fox jumps", char_(3), 64);
        let parsed = Signature::parse(&a).unwrap();
        assert_eq!(parsed.len(), 64);
        assert_eq!(parsed.jaccard(&parsed), Ok(1.0));
    }

    #[test]
    fn estimates_track_the_true_jaccard() {
        // Sets of 1,000 shingles sharing 600: Jaccard = 600 / 1400.
        let hasher = MinHasher::new(256);
        let mut state = 7u64;
        let mut total = 0.0;
        let trials = 40;
        for _ in 0..trials {
            let shared: Vec<u64> = (0..600).map(|_| splitmix(&mut state)).collect();
            let mut a = shared.clone();
            let mut b = shared;
            a.extend((0..400).map(|_| splitmix(&mut state)));
            b.extend((0..400).map(|_| splitmix(&mut state)));
            let (sa, sb) = (hasher.signature(&a).unwrap(), hasher.signature(&b).unwrap());
            let equal = sa.iter().zip(&sb).filter(|(x, y)| x == y).count();
            total += equal as f64 / 256.0;
        }
        let mean = total / trials as f64;
        let truth = 600.0 / 1400.0;
        // Standard error of the mean: sqrt(J(1-J)/256/40) = 0.005.
        assert!(
            (mean - truth).abs() < 0.02,
            "mean estimate {mean}, true {truth}"
        );
    }

    #[test]
    fn different_shingling_or_size_is_an_error() {
        let a = sig("some text here", char_(3), 64);
        let b = sig("some text here", word(3), 64);
        let c = sig("some text here", char_(3), 32);
        let (a, b, c) = (
            Signature::parse(&a).unwrap(),
            Signature::parse(&b).unwrap(),
            Signature::parse(&c).unwrap(),
        );
        assert_eq!(
            a.jaccard(&b),
            Err("signatures differ (char 3-grams, 64 permutations vs word 3-grams, 64 permutations)".into())
        );
        assert!(a.jaccard(&c).is_err());
        assert!(Signature::parse(b"nope").is_err());
    }

    #[test]
    fn avx2_and_portable_kernels_agree() {
        let h = MinHasher::new(128);
        let hashes = char_(5).hashes("the quick brown fox jumps over the lazy dog");
        let mut portable = vec![u32::MAX; 128];
        min_hash(&h.a, &h.b, &hashes, &mut portable);
        assert_eq!(h.signature(&hashes).unwrap(), portable);
    }

    #[test]
    fn s_curve_and_parameters() {
        assert_eq!(lsh_probability(1.0, 16, 8), 1.0);
        assert_eq!(lsh_probability(0.0, 16, 8), 0.0);
        assert!((lsh_probability(0.5, 2, 1) - 0.75).abs() < 1e-12);
        let (b, r) = lsh_params(0.5, 128);
        assert!(b * r <= 128);
        // The curve's steepest point sits near the threshold.
        let middle = (1.0 / b as f64).powf(1.0 / r as f64);
        assert!((middle - 0.5).abs() < 0.1, "b={b} r={r} middle={middle}");
    }

    #[test]
    fn simhash_is_close_for_close_texts() {
        let a = "the quick brown fox jumps over the lazy dog ".repeat(20);
        let b = a.replace("lazy dog ", "lazy cat ");
        let s = word(1);
        let (ha, hb) = (
            simhash(&s.hashes(&a)).unwrap(),
            simhash(&s.hashes(&a)).unwrap(),
        );
        assert_eq!(ha, hb);
        let hc = simhash(&s.hashes(&b)).unwrap();
        let hd = simhash(&s.hashes("completely different words in another order")).unwrap();
        assert!((ha ^ hc).count_ones() < (ha ^ hd).count_ones());
        assert_eq!(simhash(&[]), None);
    }

    /// A character shingle's hash by definition: [`combine`] over its code
    /// points (the whole text when shorter than `n`).
    fn by_code_points(text: &str, n: usize) -> Vec<u64> {
        let points: Vec<u64> = text.chars().map(|c| u64::from(c as u32)).collect();
        if points.is_empty() {
            return Vec::new();
        }
        points.windows(n.min(points.len())).map(combine).collect()
    }

    proptest::proptest! {
        #[test]
        fn character_shingles_hash_their_code_points(
            text in "[a-e .]{0,40}|[a-eé東 ]{0,30}", n in 1usize..12
        ) {
            let got = char_(n).hashes(&text);
            proptest::prop_assert_eq!(&got, &by_code_points(&text, n));
            let mut passed = Vec::new();
            char_(n).each_hash(&text, &Stopwords::default(), &|| false, &mut |h| passed.push(h)).unwrap();
            proptest::prop_assert_eq!(passed, got);
        }

        #[test]
        fn each_hash_passes_the_hashes_of_words(text in "[a-c .é]{0,60}", n in 1usize..4) {
            let stop = Stopwords::parse("a");
            let want = word(n).hashes_without(&text, &stop, &never).unwrap();
            let mut passed = Vec::new();
            word(n).each_hash(&text, &stop, &never, &mut |h| passed.push(h)).unwrap();
            proptest::prop_assert_eq!(passed, want);
        }
    }

    #[test]
    fn a_long_ascii_text_is_stopped() {
        let text = "abcdefghij".repeat(STOP_EVERY / 5);
        let got = char_(5).each_hash(&text, &Stopwords::default(), &|| true, &mut |_| {});
        assert_eq!(got, Err(Halt::Stopped));
        let mut count = 0;
        char_(5)
            .each_hash(&text, &Stopwords::default(), &never, &mut |_| count += 1)
            .unwrap();
        assert_eq!(count, text.len() - 4);
    }
}
