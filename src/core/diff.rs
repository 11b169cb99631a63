//! Myers' greedy diff for the pairs too long for the bit-parallel LCS
//! kernel: it finds the indel distance `D` of two texts of total length `N`
//! in `O(N + D²)` steps on texts that differ in few places (near-copies),
//! and stops, undecided, once a budget of steps is spent (texts that differ
//! a lot). The scans use it past [`crate::core::lcs::LARGE_PAIR`], so that
//! the work on one pair stays bounded whatever the size of the pages.
//!
//! Cost: O(N + D²) steps and O(D) memory for texts of total length N at
//! indel distance D, and never more than the budget.
//!
//! Reference: E. W. Myers, "An O(ND) Difference Algorithm and Its
//! Variations", Algorithmica 1 (1986); its greedy forward search.

use super::halt::{try_vec, Halt};

/// What the bounded diff found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Diff {
    /// The indel distance, at most the `max` asked for.
    Within(usize),
    /// The distance exceeds `max`.
    Beyond,
    /// The budget ran out first: undecided.
    Undecided,
}

/// How often (in steps) `stop` is asked.
const STOP_EVERY: u64 = 1 << 16;

/// The indel distance of `a` and `b` if at most `max`, in at most about
/// `budget` steps (a step: one diagonal extended, or one match followed).
///
/// ```
/// use dedup::core::diff::{indel_within, Diff};
/// let never = || false;
/// assert_eq!(indel_within(b"kitten", b"sitting", 5, 1000, &never).unwrap(), Diff::Within(5));
/// assert_eq!(indel_within(b"kitten", b"sitting", 4, 1000, &never).unwrap(), Diff::Beyond);
/// assert_eq!(indel_within(b"abcdefgh", b"hgfedcba", 16, 5, &never).unwrap(), Diff::Undecided);
/// ```
pub fn indel_within<A, B>(
    a: &[A],
    b: &[B],
    max: usize,
    budget: u64,
    stop: &dyn Fn() -> bool,
) -> Result<Diff, Halt>
where
    A: Copy + Into<u32>,
    B: Copy + Into<u32>,
{
    let (n, m) = (a.len(), b.len());
    if n.abs_diff(m) > max {
        return Ok(Diff::Beyond);
    }
    // Every distance d costs at least d + 1 steps, so the budget bounds the
    // distances reachable: the diagonal array needs no more room than that.
    let reachable = ((2.0 * budget as f64).sqrt() as usize).saturating_add(2);
    let limit = max.min(n + m).min(reachable);
    let offset = limit as isize + 1;
    // v[offset + k]: the furthest x reached on diagonal k = x - y, or -1.
    let mut v: Vec<isize> = try_vec(2 * limit + 3, -1isize)?;
    let (n, m) = (n as isize, m as isize);
    let mut steps: u64 = 0;
    let mut next_ask = STOP_EVERY;
    for d in 0..=limit as isize {
        // Diagonals inside the grid: -m <= k <= n.
        let mut k = -d;
        while k <= d {
            if k < -m || k > n {
                k += 2;
                continue;
            }
            let i = (offset + k) as usize;
            let x = if d == 0 {
                0
            } else {
                // Down from k + 1 (one more of b) or right from k - 1 (one
                // more of a), whichever reaches further inside the grid.
                let down = (k < d - 1)
                    .then(|| v[i + 1])
                    .filter(|&x| x >= 0 && x - k <= m);
                let right = (k > -(d - 1))
                    .then(|| v[i - 1])
                    .filter(|&x| x >= 0 && x < n)
                    .map(|x| x + 1);
                match (down, right) {
                    (Some(p), Some(q)) => p.max(q),
                    (Some(p), None) | (None, Some(p)) => p,
                    (None, None) => {
                        v[i] = -1;
                        k += 2;
                        continue;
                    }
                }
            };
            let (mut x, mut y) = (x, x - k);
            let start = x;
            while x < n && y < m && a[x as usize].into() == b[y as usize].into() {
                x += 1;
                y += 1;
            }
            steps += 1 + (x - start) as u64;
            v[i] = x;
            if x == n && y == m {
                return Ok(Diff::Within(d as usize));
            }
            k += 2;
        }
        if steps >= next_ask {
            next_ask = steps + STOP_EVERY;
            if stop() {
                return Err(Halt::Stopped);
            }
        }
        if steps > budget && (d as usize) < max {
            return Ok(Diff::Undecided);
        }
    }
    Ok(if limit < max {
        Diff::Undecided
    } else {
        Diff::Beyond
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn lcs(a: &[u8], b: &[u8]) -> usize {
        let mut row = vec![0usize; b.len() + 1];
        for &x in a {
            let mut diag = 0;
            for (j, &y) in b.iter().enumerate() {
                let up = row[j + 1];
                row[j + 1] = if x == y { diag + 1 } else { up.max(row[j]) };
                diag = up;
            }
        }
        row[b.len()]
    }

    proptest! {
        #[test]
        fn agrees_with_the_dynamic_program(
            a in proptest::collection::vec(0u8..4, 0..60),
            b in proptest::collection::vec(0u8..4, 0..60),
            max in 0usize..130,
            budget in 0u64..5000,
        ) {
            let d = a.len() + b.len() - 2 * lcs(&a, &b);
            match indel_within(&a, &b, max, budget, &|| false).unwrap() {
                Diff::Within(got) => prop_assert!(got == d && d <= max),
                Diff::Beyond => prop_assert!(d > max),
                Diff::Undecided => prop_assert!(budget < 5000),
            }
            // With budget enough for any pair, it always decides.
            let sure = indel_within(&a, &b, max, u64::MAX / 2, &|| false).unwrap();
            prop_assert_eq!(sure, if d <= max { Diff::Within(d) } else { Diff::Beyond });
        }
    }

    #[test]
    fn near_copies_of_long_texts_take_steps_in_proportion_to_length() {
        let a: Vec<u8> = (0..2_000_000u32)
            .map(|i| (i.wrapping_mul(2654435761) >> 27) as u8)
            .collect();
        let mut b = a.clone();
        for p in [10, 500_000, 1_200_000, 1_999_000] {
            b[p] ^= 0x40;
        }
        b.insert(700_000, b'x');
        // 4 substitutions (2 indels each) and an insertion.
        assert_eq!(
            indel_within(&a, &b, 100, 3 * 4_000_000, &|| false).unwrap(),
            Diff::Within(9)
        );
    }

    #[test]
    fn a_stop_is_seen() {
        let a = vec![1u8; 1 << 20];
        let b = vec![2u8; 1 << 20];
        assert_eq!(
            indel_within(&a, &b, 1 << 21, u64::MAX, &|| true),
            Err(Halt::Stopped)
        );
    }
}
