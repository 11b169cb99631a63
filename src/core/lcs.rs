//! Longest common subsequence length with a lower bound: bit-parallel
//! (Hyyrö, "Bit-Parallel LCS-length Computation Revisited"), restricted to
//! the Ukkonen band the bound allows, with an exact early exit.
//!
//! rapidfuzz computes the same band but always runs to the last row. Here,
//! after row `j` of `b`, the LCS can grow by at most the `|b| - j` rows
//! left; when even that cannot reach the bound, the pair is rejected. On
//! unrelated texts this stops after a fraction of the rows.

use std::collections::HashMap;

/// How many rows of `b` run between two early-exit checks.
const CHECK_EVERY: usize = 32;

/// Bit vectors of the positions of each symbol of `a` (Hyyrö's `PM`), one
/// row of `words` 64-bit words per distinct symbol; row 0 is all zeros (for
/// symbols of `b` that do not occur in `a`).
struct PatternMatch {
    words: usize,
    rows: Vec<u64>,
    ascii: [u32; 128],
    other: HashMap<u32, u32>,
}

impl PatternMatch {
    fn new<A: Copy + Into<u32>>(a: &[A]) -> Self {
        let words = a.len().div_ceil(64);
        let mut pm = PatternMatch {
            words,
            rows: vec![0; words],
            ascii: [0; 128],
            other: HashMap::new(),
        };
        for (i, &c) in a.iter().enumerate() {
            let c: u32 = c.into();
            let row = match pm.row_of(c) {
                0 => {
                    let row = (pm.rows.len() / words) as u32;
                    pm.rows.resize(pm.rows.len() + words, 0);
                    if c < 128 {
                        pm.ascii[c as usize] = row;
                    } else {
                        pm.other.insert(c, row);
                    }
                    row
                }
                row => row,
            };
            pm.rows[row as usize * words + i / 64] |= 1 << (i % 64);
        }
        pm
    }

    fn row_of(&self, c: u32) -> u32 {
        if c < 128 {
            self.ascii[c as usize]
        } else {
            self.other.get(&c).copied().unwrap_or(0)
        }
    }
}

/// The LCS length of `a` and `b` when it is at least `min_lcs`, else `None`.
pub fn lcs_at_least<A, B>(a: &[A], b: &[B], min_lcs: usize) -> Option<usize>
where
    A: Copy + Into<u32>,
    B: Copy + Into<u32>,
{
    if min_lcs > a.len().min(b.len()) {
        return None;
    }
    // A common prefix and suffix belong to some LCS.
    let same = |x: &A, y: &B| (*x).into() == (*y).into();
    let prefix = a.iter().zip(b).take_while(|(x, y)| same(x, y)).count();
    let (a, b) = (&a[prefix..], &b[prefix..]);
    let suffix = a
        .iter()
        .rev()
        .zip(b.iter().rev())
        .take_while(|(x, y)| same(x, y))
        .count();
    let (a, b) = (&a[..a.len() - suffix], &b[..b.len() - suffix]);
    let affix = prefix + suffix;
    let need = min_lcs.saturating_sub(affix);
    if a.is_empty() || b.is_empty() {
        return (affix >= min_lcs).then_some(affix);
    }
    let (len1, len2) = (a.len(), b.len());
    if need > len1.min(len2) {
        return None;
    }
    let pm = PatternMatch::new(a);
    let words = pm.words;
    let mut s = vec![!0u64; words];
    // Cells further than this left or right of the diagonal cannot be on
    // an alignment with at least `need` matches.
    let (band_left, band_right) = (len1 - need, len2 - need);
    let mut first = 0usize;
    let mut last = words.min((band_left + 1).div_ceil(64));
    for (row, &c) in b.iter().enumerate() {
        let base = pm.row_of(c.into()) as usize * words;
        let matches = &pm.rows[base..base + words];
        let mut carry = 0u64;
        for (sw, &m) in s[first..last].iter_mut().zip(&matches[first..last]) {
            let u = *sw & m;
            // Add with carry (compiles to add/adc).
            let sum = u128::from(*sw) + u128::from(u) + u128::from(carry);
            carry = (sum >> 64) as u64;
            *sw = sum as u64 | (*sw - u);
        }
        if row > band_right {
            first = (row - band_right) / 64;
        }
        // Row `row + 1` reaches column `row + 1 + band_left` (rapidfuzz
        // 0.5 stops one column short of it here).
        last = words.min((row + 2 + band_left).div_ceil(64));
        if (row + 1) % CHECK_EVERY == 0 {
            let so_far: usize = s.iter().map(|w| w.count_zeros() as usize).sum();
            if so_far + (len2 - row - 1) < need {
                return None;
            }
        }
    }
    let lcs: usize = s.iter().map(|w| w.count_zeros() as usize).sum();
    (lcs >= need).then_some(lcs + affix)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The textbook dynamic program.
    fn lcs_dp(a: &[char], b: &[char]) -> usize {
        let mut prev = vec![0usize; b.len() + 1];
        for &x in a {
            let mut cur = vec![0usize; b.len() + 1];
            for (j, &y) in b.iter().enumerate() {
                cur[j + 1] = if x == y {
                    prev[j] + 1
                } else {
                    cur[j].max(prev[j + 1])
                };
            }
            prev = cur;
        }
        prev[b.len()]
    }

    fn chars(s: &str) -> Vec<char> {
        s.chars().collect()
    }

    #[test]
    fn hand_checked_values() {
        let (a, b) = (chars("kitten"), chars("sitting"));
        // LCS "ittn".
        assert_eq!(lcs_at_least(&a, &b, 0), Some(4));
        assert_eq!(lcs_at_least(&a, &b, 4), Some(4));
        assert_eq!(lcs_at_least(&a, &b, 5), None);
        assert_eq!(lcs_at_least(&chars(""), &chars(""), 0), Some(0));
        assert_eq!(lcs_at_least(&chars("абв"), &chars("аб"), 2), Some(2));
    }

    #[test]
    fn long_unrelated_texts_are_rejected_and_related_ones_kept() {
        let a: Vec<u8> = (0..5000u32)
            .map(|i| b"abcdefgh"[(i * 7 % 11 % 8) as usize])
            .collect();
        let b: Vec<u8> = (0..5000u32)
            .map(|i| b"abcdefgh"[(i * 5 % 13 % 8) as usize])
            .collect();
        let mut c = a.clone();
        c[100] = b'z';
        c.remove(2000);
        let ac: Vec<char> = a.iter().map(|&x| char::from(x)).collect();
        let bc: Vec<char> = b.iter().map(|&x| char::from(x)).collect();
        let exact = lcs_dp(&ac, &bc);
        assert_eq!(lcs_at_least(&a, &b, 0), Some(exact));
        assert_eq!(lcs_at_least(&a, &b, exact + 1), None);
        assert_eq!(lcs_at_least(&a, &b, 4500), None);
        assert_eq!(lcs_at_least(&a, &c, 4500), Some(4998));
    }

    /// Long near-copies (more than 8 words of bits, narrow band) against
    /// rapidfuzz's unbanded LCS. rapidfuzz 0.5's own banded cutoff path
    /// rejects about 3% of these pairs when the bound equals the LCS.
    #[test]
    fn long_near_copies_match_the_unbanded_lcs_at_the_exact_bound() {
        let mut seed = 12345u64;
        let mut rnd = move |n: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % n
        };
        for _ in 0..400 {
            let len = 600 + rnd(400) as usize;
            let a: Vec<u8> = (0..len).map(|_| b"ab"[rnd(2) as usize]).collect();
            let mut b = a.clone();
            for _ in 0..3 + rnd(6) {
                let at = rnd(b.len() as u64) as usize;
                if rnd(2) == 0 {
                    b.remove(at);
                } else {
                    b.insert(at, b"ab"[rnd(2) as usize]);
                }
            }
            let exact =
                rapidfuzz::distance::lcs_seq::similarity(a.iter().copied(), b.iter().copied());
            assert_eq!(lcs_at_least(&a, &b, exact), Some(exact));
            assert_eq!(lcs_at_least(&a, &b, exact + 1), None);
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]

        #[test]
        fn equals_the_dynamic_program_at_every_bound(
            a in "[abcя]{0,150}",
            b in "[abcя]{0,150}",
            bound in 0usize..160,
        ) {
            let (a, b) = (chars(&a), chars(&b));
            let exact = lcs_dp(&a, &b);
            let expected = (exact >= bound).then_some(exact);
            prop_assert_eq!(lcs_at_least(&a, &b, bound), expected);
        }

        #[test]
        fn near_copies_of_long_texts_match_the_dynamic_program(
            a in "[a-e ]{200,400}",
            edits in prop::collection::vec((0usize..400, "[a-f]?"), 0..30),
            slack in 0usize..40,
        ) {
            let a = chars(&a);
            let mut b = a.clone();
            for (at, ins) in edits {
                let at = at % (b.len() + 1);
                match ins.chars().next() {
                    Some(c) => b.insert(at, c),
                    None if at < b.len() => { b.remove(at); }
                    None => {}
                }
            }
            let exact = lcs_dp(&a, &b);
            for bound in [exact.saturating_sub(slack), exact, exact + 1] {
                let expected = (exact >= bound).then_some(exact);
                prop_assert_eq!(lcs_at_least(&a, &b, bound), expected);
            }
        }
    }
}
