//! Similarity measures between page texts.
//!
//! - [`lev_ratio`]: python-Levenshtein's `ratio`, `1 - indel(a, b) / (|a| + |b|)`
//!   over Unicode code points, computed with a bit-parallel LCS kernel
//!   ([`crate::core::lcs`]) and exact early exits.
//!
//! Broder's resemblance of word-shingle sets, as Text::DeDuper defines it,
//! is [`crate::core::shingles`].
//!
//! A *distance* is lower-is-closer; a *ratio* is in `[0, 1]`, higher-is-closer.
//!
//! Cost: [`lev_ratio`] is at most O(⌈n/64⌉ · m) word operations
//! (bit-parallel), far less when the exact bounds or the early exit
//! decide.
//!
//! Reference: python-Levenshtein's `ratio` (the tests' oracle) and
//! rapidfuzz-rs's `indel.rs`.

use std::borrow::Cow;

use crate::core::halt::{never, try_collect, Halt};
use crate::core::lcs::{lcs_at_least_or_halt, Bounded, LcsQuery};

/// The code points of a text, stored as bytes when the text is ASCII (the
/// common case, and much faster for the bit-parallel kernel).
#[derive(Debug, Clone)]
pub enum CodePoints<'a> {
    /// ASCII text: one byte per code point.
    Ascii(&'a [u8]),
    /// Any other text.
    Wide(Cow<'a, [char]>),
}

impl<'a> CodePoints<'a> {
    /// Splits `text` into code points.
    pub fn new(text: &'a str) -> Self {
        if text.is_ascii() {
            CodePoints::Ascii(text.as_bytes())
        } else {
            CodePoints::Wide(text.chars().collect())
        }
    }

    /// [`CodePoints::new`] with a fallible allocation (4 bytes per code
    /// point of a non-ASCII text).
    pub fn try_new(text: &'a str) -> Result<Self, Halt> {
        if text.is_ascii() {
            Ok(CodePoints::Ascii(text.as_bytes()))
        } else {
            let n = text.chars().count();
            Ok(CodePoints::Wide(Cow::Owned(try_collect(n, text.chars())?)))
        }
    }

    /// Number of code points.
    pub fn len(&self) -> usize {
        match self {
            CodePoints::Ascii(b) => b.len(),
            CodePoints::Wide(c) => c.len(),
        }
    }

    /// True when the text is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Indel distance (insertions and deletions only) between two texts, or
/// `None` when it exceeds `max`, from the bit-parallel [`lcs_at_least`](crate::core::lcs::lcs_at_least)
/// (banded by `max`, with an early exit).
pub fn indel_distance(a: &CodePoints<'_>, b: &CodePoints<'_>, max: usize) -> Option<usize> {
    indel_distance_or_halt(a, b, max, &never).expect("out of memory")
}

/// [`indel_distance`] that asks `stop` during long work and allocates
/// fallibly (see [`lcs_at_least_or_halt`]).
pub fn indel_distance_or_halt(
    a: &CodePoints<'_>,
    b: &CodePoints<'_>,
    max: usize,
    stop: &dyn Fn() -> bool,
) -> Result<Option<usize>, Halt> {
    let Some((total, min_lcs)) = lcs_needed(a.len(), b.len(), max) else {
        return Ok(None);
    };
    let lcs = match (a, b) {
        (CodePoints::Ascii(x), CodePoints::Ascii(y)) => lcs_at_least_or_halt(x, y, min_lcs, stop),
        (CodePoints::Wide(x), CodePoints::Wide(y)) => lcs_at_least_or_halt(x, y, min_lcs, stop),
        (CodePoints::Ascii(x), CodePoints::Wide(y)) => lcs_at_least_or_halt(x, y, min_lcs, stop),
        (CodePoints::Wide(x), CodePoints::Ascii(y)) => lcs_at_least_or_halt(x, y, min_lcs, stop),
    }?;
    Ok(lcs.map(|l| total - 2 * l))
}

/// The total length and the LCS an indel distance of at most `max` needs,
/// or `None` when the lengths alone exceed it (every indel changes the
/// length by one).
fn lcs_needed(a: usize, b: usize, max: usize) -> Option<(usize, usize)> {
    if a.abs_diff(b) > max {
        return None;
    }
    // indel = |a| + |b| - 2 lcs <= max  <=>  lcs >= (|a| + |b| - max) / 2.
    let total = a + b;
    Some((total, total.saturating_sub(max).div_ceil(2)))
}

/// A text prepared for indel distances to many others: its LCS table
/// ([`LcsQuery`]) is built once. Gives what [`indel_distance_or_halt`]
/// gives.
///
/// ```
/// use dedup::core::similarity::{indel_distance, CodePoints, IndelQuery};
/// let a = CodePoints::new("kitten");
/// let query = IndelQuery::new(&a).unwrap();
/// for b in ["sitting", "kitchen", "mitten"] {
///     let b = CodePoints::new(b);
///     assert_eq!(query.distance_or_halt(&b, 5, &|| false).unwrap(), indel_distance(&a, &b, 5));
/// }
/// ```
pub struct IndelQuery<'a> {
    len: usize,
    query: Query<'a>,
}

enum Query<'a> {
    Ascii(LcsQuery<'a, u8>),
    Wide(LcsQuery<'a, char>),
}

impl<'a> IndelQuery<'a> {
    /// Builds the table of `a` (fallibly).
    pub fn new(a: &'a CodePoints<'_>) -> Result<Self, Halt> {
        match a {
            CodePoints::Ascii(x) => Self::ascii(x),
            CodePoints::Wide(x) => Self::wide(x),
        }
    }

    /// The table of an ASCII text's bytes, borrowing them (fallibly).
    pub fn ascii(a: &'a [u8]) -> Result<Self, Halt> {
        Ok(IndelQuery {
            len: a.len(),
            query: Query::Ascii(LcsQuery::new(a)?),
        })
    }

    /// The table of a text's code points, borrowing them (fallibly).
    pub fn wide(a: &'a [char]) -> Result<Self, Halt> {
        Ok(IndelQuery {
            len: a.len(),
            query: Query::Wide(LcsQuery::new(a)?),
        })
    }

    /// The indel distance to `b`, or `None` when it exceeds `max` (or the
    /// pair is too long to decide: see [`Self::compare_or_halt`]).
    pub fn distance_or_halt(
        &self,
        b: &CodePoints<'_>,
        max: usize,
        stop: &dyn Fn() -> bool,
    ) -> Result<Option<usize>, Halt> {
        Ok(match self.compare_or_halt(b, max, stop)? {
            Compared::Within(d) => Some(d),
            Compared::Beyond | Compared::TooLong => None,
        })
    }

    /// The indel distance to `b` if at most `max`, with the work bounded
    /// in the size of the texts ([`LcsQuery::bounded`]).
    pub fn compare_or_halt(
        &self,
        b: &CodePoints<'_>,
        max: usize,
        stop: &dyn Fn() -> bool,
    ) -> Result<Compared, Halt> {
        let Some((total, min_lcs)) = lcs_needed(self.len, b.len(), max) else {
            return Ok(Compared::Beyond);
        };
        let lcs = match (&self.query, b) {
            (Query::Ascii(q), CodePoints::Ascii(y)) => q.bounded(y, min_lcs, stop),
            (Query::Wide(q), CodePoints::Wide(y)) => q.bounded(y, min_lcs, stop),
            (Query::Ascii(q), CodePoints::Wide(y)) => q.bounded(y, min_lcs, stop),
            (Query::Wide(q), CodePoints::Ascii(y)) => q.bounded(y, min_lcs, stop),
        }?;
        Ok(match lcs {
            Bounded::Found(l) => Compared::Within(total - 2 * l),
            Bounded::Below => Compared::Beyond,
            Bounded::TooLong => Compared::TooLong,
        })
    }
}

/// What [`IndelQuery::compare_or_halt`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Compared {
    /// The indel distance, at most the `max` asked for.
    Within(usize),
    /// The distance exceeds `max`.
    Beyond,
    /// Too long to decide within the bound on one pair's work.
    TooLong,
}

/// The ratio for an indel distance `dist` between texts of total length
/// `total`, computed exactly as python-Levenshtein does.
pub fn ratio_from_distance(dist: usize, total: usize) -> f64 {
    if total == 0 {
        1.0
    } else {
        1.0 - dist as f64 / total as f64
    }
}

/// The largest indel distance whose ratio satisfies `accept`, for texts of
/// total length `total`; `None` when no distance does. Evaluates the same
/// floating-point expression as [`ratio_from_distance`], so the decision is
/// bit-exact at boundaries such as a ratio of exactly 0.9.
pub fn max_distance_where(total: usize, accept: impl Fn(f64) -> bool) -> Option<usize> {
    // The ratio decreases as the distance grows: binary search.
    if !accept(ratio_from_distance(0, total)) {
        return None;
    }
    let (mut lo, mut hi) = (0usize, total);
    while lo < hi {
        let mid = lo + (hi - lo).div_ceil(2);
        if accept(ratio_from_distance(mid, total)) {
            lo = mid;
        } else {
            hi = mid - 1;
        }
    }
    Some(lo)
}

/// The largest indel distance whose ratio is above `threshold`, for texts
/// of total length `total` (`None` when none is): what
/// `max_distance_where(total, |r| r > threshold)` gives, found from the
/// ratio's closed form and checked against the same floating-point
/// expression, so a few evaluations instead of a binary search.
pub fn max_distance_above(total: usize, threshold: f64) -> Option<usize> {
    let accept = |d: usize| ratio_from_distance(d, total) > threshold;
    // (The ratio falls as the distance grows; the guess is off by rounding
    // only, and the walks below correct it exactly.)
    let mut d = (((1.0 - threshold) * total as f64).floor().max(0.0) as usize).min(total);
    if accept(d) {
        while d < total && accept(d + 1) {
            d += 1;
        }
        Some(d)
    } else {
        while d > 0 {
            d -= 1;
            if accept(d) {
                return Some(d);
            }
        }
        None
    }
}

/// python-Levenshtein's `Levenshtein.ratio(a, b)`.
pub fn lev_ratio(a: &str, b: &str) -> f64 {
    lev_ratio_cutoff(a, b, 0.0)
}

/// `Levenshtein.ratio(a, b, score_cutoff=cutoff)`: the ratio when it is at
/// least `cutoff`, else `0.0`. A higher cutoff lets the computation stop early.
pub fn lev_ratio_cutoff(a: &str, b: &str, cutoff: f64) -> f64 {
    lev_ratio_points(&CodePoints::new(a), &CodePoints::new(b), cutoff)
}

/// [`lev_ratio_cutoff`] on texts already split into code points.
pub fn lev_ratio_points(a: &CodePoints<'_>, b: &CodePoints<'_>, cutoff: f64) -> f64 {
    lev_ratio_points_or_halt(a, b, cutoff, &never).expect("out of memory")
}

/// [`lev_ratio_points`] that asks `stop` during long work and allocates
/// fallibly.
pub fn lev_ratio_points_or_halt(
    a: &CodePoints<'_>,
    b: &CodePoints<'_>,
    cutoff: f64,
    stop: &dyn Fn() -> bool,
) -> Result<f64, Halt> {
    let total = a.len() + b.len();
    let Some(max) = max_distance_where(total, |r| r >= cutoff) else {
        return Ok(0.0);
    };
    Ok(match indel_distance_or_halt(a, b, max, stop)? {
        Some(d) => ratio_from_distance(d, total),
        None => 0.0,
    })
}

/// Number of buckets in a [`CharHistogram`].
const BUCKETS: usize = 128;

/// Character counts of a text in 128 buckets (ASCII code points exactly,
/// others folded in). The L1 distance between two histograms is a lower
/// bound of the indel distance: each insertion or deletion changes one
/// bucket by one. Held in 16 bits a bucket (256 bytes) unless a count
/// reaches 2^16.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CharHistogram {
    counts: Counts,
}

/// The counts, narrow whenever they fit (so equal counts compare equal).
/// The narrow form is inline on purpose: it is the common one.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq, Eq)]
enum Counts {
    Narrow([u16; BUCKETS]),
    Wide(Box<[u32; BUCKETS]>),
}

impl CharHistogram {
    /// Counts the characters of `text`.
    pub fn new(text: &str) -> Self {
        let mut counts = [0u32; BUCKETS];
        if text.is_ascii() {
            for &b in text.as_bytes() {
                counts[usize::from(b)] += 1;
            }
        } else {
            for c in text.chars() {
                counts[c as usize % BUCKETS] += 1;
            }
        }
        let counts = if counts.iter().all(|&c| c <= u32::from(u16::MAX)) {
            Counts::Narrow(counts.map(|c| c as u16))
        } else {
            Counts::Wide(Box::new(counts))
        };
        CharHistogram { counts }
    }

    fn count(&self, bucket: usize) -> u32 {
        match &self.counts {
            Counts::Narrow(c) => u32::from(c[bucket]),
            Counts::Wide(c) => c[bucket],
        }
    }

    /// The counts as bytes, for keeping: each bucket that is not empty as
    /// its number (one byte) and its count (LEB128).
    ///
    /// ```
    /// use dedup::core::similarity::CharHistogram;
    /// let h = CharHistogram::new("abba");
    /// assert_eq!(h.to_bytes(), vec![b'a', 2, b'b', 2]);
    /// assert_eq!(CharHistogram::from_bytes(&h.to_bytes()), Some(h));
    /// ```
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::new();
        for k in 0..BUCKETS {
            let mut c = self.count(k);
            if c == 0 {
                continue;
            }
            out.push(k as u8);
            loop {
                let byte = (c & 0x7f) as u8;
                c >>= 7;
                if c == 0 {
                    out.push(byte);
                    break;
                }
                out.push(byte | 0x80);
            }
        }
        out
    }

    /// The histogram [`to_bytes`](Self::to_bytes) wrote; `None` for bytes
    /// it cannot have written (a bucket out of range or out of order, a
    /// count cut short or of more than 32 bits, an empty bucket).
    pub fn from_bytes(bytes: &[u8]) -> Option<Self> {
        let mut counts = [0u32; BUCKETS];
        let mut i = 0;
        let mut last: Option<usize> = None;
        while i < bytes.len() {
            let k = usize::from(bytes[i]);
            if k >= BUCKETS || last.is_some_and(|l| k <= l) {
                return None;
            }
            last = Some(k);
            i += 1;
            let (mut c, mut shift) = (0u64, 0);
            loop {
                let byte = *bytes.get(i)?;
                i += 1;
                c |= u64::from(byte & 0x7f) << shift;
                if byte & 0x80 == 0 {
                    break;
                }
                shift += 7;
                if shift > 28 {
                    return None;
                }
            }
            if c == 0 || c > u64::from(u32::MAX) {
                return None;
            }
            counts[k] = c as u32;
        }
        let counts = if counts.iter().all(|&c| c <= u32::from(u16::MAX)) {
            Counts::Narrow(counts.map(|c| c as u16))
        } else {
            Counts::Wide(Box::new(counts))
        };
        Some(CharHistogram { counts })
    }

    /// Lower bound of the indel distance between the two texts.
    pub fn indel_lower_bound(&self, other: &CharHistogram) -> usize {
        match (&self.counts, &other.counts) {
            (Counts::Narrow(a), Counts::Narrow(b)) => {
                // At most 128 * 65,535: fits in 32 bits.
                a.iter()
                    .zip(b.iter())
                    .map(|(&x, &y)| u32::from(x.abs_diff(y)))
                    .sum::<u32>() as usize
            }
            _ => (0..BUCKETS)
                .map(|k| self.count(k).abs_diff(other.count(k)) as usize)
                .sum(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn ratio_matches_hand_computed_values() {
        // indel("kitten", "sitting") = 5 (LCS "ittn" = 4; 6 + 7 - 2*4).
        assert_eq!(lev_ratio("kitten", "sitting"), 1.0 - 5.0 / 13.0);
        assert_eq!(lev_ratio("", ""), 1.0);
        assert_eq!(lev_ratio("abc", ""), 0.0);
        assert_eq!(lev_ratio("abc", "abc"), 1.0);
    }

    #[test]
    fn ratio_counts_code_points_not_bytes() {
        // One substitution = 2 indels over 4 + 4 code points.
        assert_eq!(lev_ratio("мира", "мирб"), 1.0 - 2.0 / 8.0);
        assert_eq!(lev_ratio("北京大学", "北京大字"), 0.75);
        assert_eq!(lev_ratio("caf\u{e9}", "cafe"), 0.75);
    }

    #[test]
    fn exactly_point_nine_is_reached_and_cutoff_is_inclusive() {
        // 20 + 20 code points, indel distance 4: ratio 1 - 4/40 = 0.9 exactly.
        let a = "abcdefghijklmnopqrst";
        let b = "abcdefghijklmnopqrXY";
        assert_eq!(lev_ratio(a, b), 0.9);
        assert_eq!(lev_ratio_cutoff(a, b, 0.9), 0.9);
        assert_eq!(lev_ratio_cutoff(a, b, 0.9000001), 0.0);
    }

    #[test]
    fn max_distance_is_exact_at_boundaries() {
        assert_eq!(max_distance_where(40, |r| r >= 0.9), Some(4));
        assert_eq!(max_distance_where(40, |r| r > 0.9), Some(3));
        assert_eq!(max_distance_where(0, |r| r > 0.9), Some(0));
        assert_eq!(max_distance_where(10, |r| r > 1.0), None);
    }

    #[test]
    fn max_distance_above_is_the_binary_search() {
        // Thresholds at ratios the scan meets exactly (k / total), beside
        // them, and outside [0, 1]; totals small and large.
        let mut thresholds = vec![
            -0.5,
            0.0,
            0.5,
            0.8,
            0.85,
            0.9,
            0.95,
            0.99,
            1.0,
            1.5,
            f64::NAN,
        ];
        for total in [1usize, 3, 7, 40, 41, 100, 1000, 99_991] {
            for k in [0, 1, total / 10, total / 2, total - 1, total] {
                let r = ratio_from_distance(k, total);
                thresholds.extend([
                    r,
                    f64::from_bits(r.to_bits() + 1),
                    f64::from_bits(r.to_bits().max(1) - 1),
                ]);
            }
        }
        for total in (0..300).chain([1000, 4096, 99_991, 1_000_003]) {
            for &t in &thresholds {
                assert_eq!(
                    max_distance_above(total, t),
                    max_distance_where(total, |r| r > t),
                    "total {total}, threshold {t}"
                );
            }
        }
    }

    #[test]
    fn histogram_bound_is_exact_for_anagrams_and_bounds_distance() {
        let (a, b) = ("listen", "silent");
        assert_eq!(
            CharHistogram::new(a).indel_lower_bound(&CharHistogram::new(b)),
            0
        );
        let (a, b) = ("aaaa", "bbbb");
        assert_eq!(
            CharHistogram::new(a).indel_lower_bound(&CharHistogram::new(b)),
            8
        );
    }

    #[test]
    fn histogram_counts_past_16_bits_stay_exact() {
        // 70,000 'a' needs 32-bit counts; its neighbours do not.
        let wide = CharHistogram::new(&"a".repeat(70_000));
        let narrow = CharHistogram::new(&"a".repeat(65_535));
        let other = CharHistogram::new("ab");
        assert_eq!(wide.indel_lower_bound(&narrow), 4_465);
        assert_eq!(narrow.indel_lower_bound(&wide), 4_465);
        assert_eq!(wide.indel_lower_bound(&other), 69_999 + 1);
        assert_eq!(narrow.indel_lower_bound(&other), 65_534 + 1);
        assert_eq!(wide.indel_lower_bound(&wide.clone()), 0);
    }

    proptest! {
        #[test]
        fn ratio_is_symmetric_and_bounded(a in "[a-dé ]{0,40}", b in "[a-dé ]{0,40}") {
            let r = lev_ratio(&a, &b);
            prop_assert!((0.0..=1.0).contains(&r));
            prop_assert_eq!(r, lev_ratio(&b, &a));
        }

        #[test]
        fn cutoff_never_changes_a_ratio_above_it(a in "[a-c]{0,30}", b in "[a-c]{0,30}", c in 0.0f64..1.0) {
            let full = lev_ratio(&a, &b);
            let cut = lev_ratio_cutoff(&a, &b, c);
            if full >= c { prop_assert_eq!(cut, full); } else { prop_assert_eq!(cut, 0.0); }
        }

        #[test]
        fn histogram_bound_never_exceeds_distance(a in "[a-eя]{0,30}", b in "[a-eя]{0,30}") {
            let d = indel_distance(&CodePoints::new(&a), &CodePoints::new(&b), usize::MAX).unwrap();
            prop_assert!(CharHistogram::new(&a).indel_lower_bound(&CharHistogram::new(&b)) <= d);
        }
    }
}
