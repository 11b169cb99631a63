//! Longest common subsequence length with a lower bound: bit-parallel
//! (Hyyrö, "Bit-Parallel LCS-length Computation Revisited"), restricted to
//! the Ukkonen band the bound allows, with an exact early exit.
//!
//! rapidfuzz computes the same band but always runs to the last row. Here,
//! after row `j` of `b`, the LCS can grow by at most the `|b| - j` rows
//! left, and only from what `b[..j]` matched in `a` before its last
//! `|b| - j` symbols; when even that cannot reach the bound, the pair is
//! rejected. On unrelated texts this stops after a fraction of the rows.
//!
//! Cost: O(⌈n/64⌉ · m) word operations for texts of n and m code points,
//! restricted to the band the bound allows, and usually stopped well
//! before.
//!
//! Reference: H. Hyyrö, "Bit-Parallel LCS-length Computation Revisited"
//! (2004); rapidfuzz-rs's `lcs_seq.rs` and `indel.rs`, which compute the
//! same band.

use std::collections::HashMap;

use crate::core::diff::{indel_within, Diff};
use crate::core::halt::{never, try_vec, Halt};

/// How many rows of `b` run between two early-exit checks.
const CHECK_EVERY: usize = 32;

/// Words of work (64 cells each) between two calls of `stop` (their time:
/// benches/results/design-measurements.md, "LCS kernel budgets").
const STOP_EVERY_WORDS: usize = 1 << 16;

/// Distinct symbols of `a` up to which the dense table is used: it holds
/// `distinct * ⌈|a| / 64⌉` words, at most 16 bytes per symbol of `a`.
const DENSE_MAX_DISTINCT: usize = 128;

/// Hyyrö's `PM`: for a symbol and a 64-bit word index, the bits of the
/// positions of that symbol in `a`.
trait Matches {
    type Row: Copy;
    fn row(&self, c: u32) -> Self::Row;
    fn word(&self, row: Self::Row, w: usize) -> u64;
    /// The whole row as a slice, when the table stores it so (the fast
    /// path: no per-word lookup).
    fn slice(&self, row: Self::Row) -> Option<&[u64]>;
}

/// One row of `words` words per distinct symbol; row 0 is all zeros (for
/// symbols of `b` that do not occur in `a`). Fast; used for small alphabets.
struct Dense {
    words: usize,
    rows: Vec<u64>,
    ascii: [u32; 128],
    other: HashMap<u32, u32>,
}

impl Dense {
    /// The table of `a`, or `None` when `a` has more than
    /// [`DENSE_MAX_DISTINCT`] distinct symbols. The rows are numbered in a
    /// first pass and allocated at once (growing them symbol by symbol took
    /// a reallocation each time the size doubled: contention for the
    /// allocator's lock when threads build tables side by side).
    fn new<A: Copy + Into<u32>>(a: &[A]) -> Result<Option<Self>, Halt> {
        let words = a.len().div_ceil(64);
        let mut pm = Dense {
            words,
            rows: Vec::new(),
            ascii: [0; 128],
            other: HashMap::new(),
        };
        let mut next = 1u32;
        for &c in a {
            let c: u32 = c.into();
            if pm.lookup(c) == 0 {
                if next as usize > DENSE_MAX_DISTINCT {
                    return Ok(None);
                }
                if c < 128 {
                    pm.ascii[c as usize] = next;
                } else {
                    pm.other.insert(c, next);
                }
                next += 1;
            }
        }
        pm.rows = try_vec(words.saturating_mul(next as usize), 0)?;
        for (i, &c) in a.iter().enumerate() {
            let row = pm.lookup(c.into());
            pm.rows[row as usize * words + i / 64] |= 1 << (i % 64);
        }
        Ok(Some(pm))
    }

    fn lookup(&self, c: u32) -> u32 {
        if c < 128 {
            self.ascii[c as usize]
        } else {
            self.other.get(&c).copied().unwrap_or(0)
        }
    }
}

impl Matches for Dense {
    type Row = usize;
    fn row(&self, c: u32) -> usize {
        self.lookup(c) as usize * self.words
    }
    #[inline(always)]
    fn word(&self, row: usize, w: usize) -> u64 {
        self.rows[row + w]
    }
    #[inline(always)]
    fn slice(&self, row: usize) -> Option<&[u64]> {
        Some(&self.rows[row..row + self.words])
    }
}

/// Slots of one block's table: a block of 64 positions holds at most 64
/// distinct symbols, so the table is at most half full.
const SLOTS: usize = 128;
const EMPTY: u32 = u32::MAX;

/// Per 64-position block, an open-addressing table of (symbol, bits): 1.5
/// KB per block, 24 bytes per symbol of `a` whatever the alphabet (CJK,
/// random code points), where a dense table would grow with the alphabet.
struct Blocked {
    keys: Vec<u32>,
    bits: Vec<u64>,
}

impl Blocked {
    fn new<A: Copy + Into<u32>>(a: &[A]) -> Result<Self, Halt> {
        let words = a.len().div_ceil(64);
        let mut pm = Blocked {
            keys: try_vec(words * SLOTS, EMPTY)?,
            bits: try_vec(words * SLOTS, 0)?,
        };
        for (i, &c) in a.iter().enumerate() {
            let slot = pm.slot(i / 64, c.into());
            pm.keys[slot] = c.into();
            pm.bits[slot] |= 1 << (i % 64);
        }
        Ok(pm)
    }

    /// The slot of `c` in block `w`: where it is, or the empty slot it goes to.
    #[inline(always)]
    fn slot(&self, w: usize, c: u32) -> usize {
        let base = w * SLOTS;
        let mut h = (c.wrapping_mul(0x9E37_79B1) >> 25) as usize;
        loop {
            let k = self.keys[base + h];
            if k == c || k == EMPTY {
                return base + h;
            }
            h = (h + 1) % SLOTS;
        }
    }
}

impl Matches for Blocked {
    type Row = u32;
    fn row(&self, c: u32) -> u32 {
        c
    }
    #[inline(always)]
    fn word(&self, c: u32, w: usize) -> u64 {
        let slot = self.slot(w, c);
        if self.keys[slot] == c {
            self.bits[slot]
        } else {
            0
        }
    }
    fn slice(&self, _: u32) -> Option<&[u64]> {
        None
    }
}

/// The LCS length of `a` and `b` when it is at least `min_lcs`, else `None`.
pub fn lcs_at_least<A, B>(a: &[A], b: &[B], min_lcs: usize) -> Option<usize>
where
    A: Copy + Into<u32>,
    B: Copy + Into<u32>,
{
    // `never` does not stop; memory is only short when the machine is.
    lcs_at_least_or_halt(a, b, min_lcs, &never).expect("out of memory")
}

/// [`lcs_at_least`] that asks `stop` every few milliseconds of work and
/// allocates fallibly: `Err` when `stop` said so or memory ran out. Extra
/// memory: at most 24 bytes per symbol of `a` (plus 8 per 64).
pub fn lcs_at_least_or_halt<A, B>(
    a: &[A],
    b: &[B],
    min_lcs: usize,
    stop: &dyn Fn() -> bool,
) -> Result<Option<usize>, Halt>
where
    A: Copy + Into<u32>,
    B: Copy + Into<u32>,
{
    match trim(a, b, min_lcs) {
        Trim::Decided(lcs) => Ok(lcs),
        Trim::Run(run) => Table::new(a)?.run(b, run, stop),
    }
}

/// `a` with its table built once, for comparing it with many texts: the
/// same results as [`lcs_at_least_or_halt`] on `a`, without rebuilding
/// the table for each (on page-sized texts, building it costs about as
/// much as a rejected comparison).
///
/// ```
/// use dedup::core::lcs::{lcs_at_least, LcsQuery};
/// let a = b"the cat sat on the mat";
/// let query = LcsQuery::new(&a[..]).unwrap();
/// for b in [&b"the cat sat on a mat"[..], b"a dog sat on the mat", b"kitten"] {
///     let never = || false;
///     assert_eq!(query.at_least(b, 10, &never).unwrap(), lcs_at_least(a, b, 10));
/// }
/// ```
pub struct LcsQuery<'a, A> {
    a: &'a [A],
    table: Table,
}

impl<'a, A: Copy + Into<u32>> LcsQuery<'a, A> {
    /// Builds the table of `a` (fallibly: `Err` when memory ran out).
    pub fn new(a: &'a [A]) -> Result<Self, Halt> {
        Ok(LcsQuery {
            a,
            table: Table::new(a)?,
        })
    }

    /// The LCS length of `a` and `b` when it is at least `min_lcs`, else
    /// `None`; asks `stop` as [`lcs_at_least_or_halt`] does.
    pub fn at_least<B: Copy + Into<u32>>(
        &self,
        b: &[B],
        min_lcs: usize,
        stop: &dyn Fn() -> bool,
    ) -> Result<Option<usize>, Halt> {
        Ok(match self.bounded(b, min_lcs, stop)? {
            Bounded::Found(lcs) => Some(lcs),
            Bounded::Below | Bounded::TooLong => None,
        })
    }

    /// [`Self::at_least`] with the work on one pair bounded: past the common
    /// prefix and suffix, a part longer than [`LARGE_PAIR`] (the product of
    /// its two lengths) is left to the bounded diff of
    /// [`crate::core::diff`], which decides near-copies and gives up on the
    /// rest ([`Bounded::TooLong`]).
    pub fn bounded<B: Copy + Into<u32>>(
        &self,
        b: &[B],
        min_lcs: usize,
        stop: &dyn Fn() -> bool,
    ) -> Result<Bounded, Halt> {
        let run = match trim(self.a, b, min_lcs) {
            Trim::Decided(Some(lcs)) => return Ok(Bounded::Found(lcs)),
            Trim::Decided(None) => return Ok(Bounded::Below),
            Trim::Run(run) => run,
        };
        let (am, bm) = (&self.a[run.prefix..run.a_end], &b[run.prefix..run.b_end]);
        let product = (am.len() as u128) * (bm.len() as u128);
        let kernel = |run| -> Result<Bounded, Halt> {
            Ok(match self.table.run(b, run, stop)? {
                Some(lcs) => Bounded::Found(lcs),
                None => Bounded::Below,
            })
        };
        if product <= DIFF_FIRST {
            return kernel(run);
        }
        // Long texts: near-copies take the diff little work, whatever the
        // size; the kernel takes work in the product of the lengths. The
        // diff first, then (up to LARGE_PAIR) the kernel.
        // The middle needs `run.need - prefix` matches: an indel distance of
        // at most the total less twice that.
        let need = run.need - run.prefix;
        let max = (am.len() + bm.len()).saturating_sub(2 * need);
        let budget = if product <= LARGE_PAIR {
            DIFF_TRIAL
        } else {
            DIFF_BUDGET
        };
        Ok(match indel_within(am, bm, max, budget, stop)? {
            Diff::Within(d) => {
                Bounded::Found(run.prefix + run.suffix + (am.len() + bm.len() - d) / 2)
            }
            Diff::Beyond => Bounded::Below,
            Diff::Undecided if product <= LARGE_PAIR => kernel(run)?,
            Diff::Undecided => Bounded::TooLong,
        })
    }
}

/// Past the common prefix and suffix, the product of the two lengths from
/// which the bounded diff is tried first (below it the kernel is quick).
pub const DIFF_FIRST: u128 = 1 << 30;

/// The diff's budget of steps before the kernel takes over.
pub const DIFF_TRIAL: u64 = 1 << 22;

/// Past the common prefix and suffix, the largest product of two lengths
/// the bit-parallel kernel takes on (its work grows with the product:
/// benches/results/design-measurements.md, "LCS kernel budgets"); longer pairs go to the bounded diff.
pub const LARGE_PAIR: u128 = 1 << 40;

/// The bounded diff's budget of steps for a pair past [`LARGE_PAIR`];
/// undecided then, the pair is [`Bounded::TooLong`].
pub const DIFF_BUDGET: u64 = 1 << 26;

/// What [`LcsQuery::bounded`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Bounded {
    /// The LCS, at least the one asked for.
    Found(usize),
    /// The LCS is shorter than asked.
    Below,
    /// The pair is longer than the kernel takes on and the bounded diff
    /// could not decide it within its budget.
    TooLong,
}

/// What the common prefix and suffix leave of a comparison.
enum Trim {
    /// The answer, without the kernel.
    Decided(Option<usize>),
    /// The kernel's part.
    Run(Run),
}

/// The kernel's part of a comparison: `b[prefix..b_end]` against
/// `a[prefix..a_end]`, needing `need` matches there (prefix included)
/// and adding `suffix` to what it finds.
#[derive(Clone, Copy)]
struct Run {
    prefix: usize,
    a_end: usize,
    b_end: usize,
    need: usize,
    suffix: usize,
}

/// Strips the common prefix and suffix (they belong to some LCS) and
/// decides what the lengths alone decide.
fn trim<A, B>(a: &[A], b: &[B], min_lcs: usize) -> Trim
where
    A: Copy + Into<u32>,
    B: Copy + Into<u32>,
{
    if min_lcs > a.len().min(b.len()) {
        return Trim::Decided(None);
    }
    let same = |x: &A, y: &B| (*x).into() == (*y).into();
    let prefix = a.iter().zip(b).take_while(|(x, y)| same(x, y)).count();
    let (ra, rb) = (&a[prefix..], &b[prefix..]);
    let suffix = ra
        .iter()
        .rev()
        .zip(rb.iter().rev())
        .take_while(|(x, y)| same(x, y))
        .count();
    let (a_end, b_end) = (a.len() - suffix, b.len() - suffix);
    let affix = prefix + suffix;
    if a_end == prefix || b_end == prefix {
        return Trim::Decided((affix >= min_lcs).then_some(affix));
    }
    let need = min_lcs.saturating_sub(affix);
    if need > (a_end - prefix).min(b_end - prefix) {
        return Trim::Decided(None);
    }
    Trim::Run(Run {
        prefix,
        a_end,
        b_end,
        need: need + prefix,
        suffix,
    })
}

/// The table of `a`: dense for small alphabets, blocked otherwise.
enum Table {
    Dense(Box<Dense>),
    Blocked(Blocked),
}

impl Table {
    fn new<A: Copy + Into<u32>>(a: &[A]) -> Result<Self, Halt> {
        Ok(match Dense::new(a)? {
            Some(dense) => Table::Dense(Box::new(dense)),
            None => Table::Blocked(Blocked::new(a)?),
        })
    }

    fn run<B: Copy + Into<u32>>(
        &self,
        b: &[B],
        run: Run,
        stop: &dyn Fn() -> bool,
    ) -> Result<Option<usize>, Halt> {
        let b = &b[..run.b_end];
        let lcs = match self {
            Table::Dense(pm) => banded(&**pm, run.a_end, b, run.prefix, run.need, stop)?,
            Table::Blocked(pm) => banded(pm, run.a_end, b, run.prefix, run.need, stop)?,
        };
        Ok(lcs.map(|l| l + run.suffix))
    }
}

/// How many distinct symbols `a` has, counting no further than `cap`.
#[cfg(test)]
fn distinct_up_to<A: Copy + Into<u32>>(a: &[A], cap: usize) -> usize {
    let mut ascii = [false; 128];
    let mut other = std::collections::HashSet::new();
    let mut n = 0;
    for &c in a {
        let c: u32 = c.into();
        let new = if c < 128 {
            !std::mem::replace(&mut ascii[c as usize], true)
        } else {
            other.insert(c)
        };
        if new {
            n += 1;
            if n >= cap {
                break;
            }
        }
    }
    n
}

/// The most the LCS can reach when `rest` rows of `b` are left, given the
/// state `s` after the rows before them: an alignment leaving row `j` at
/// column `i` adds at most `min(len1 - i, rest)` matches to the `H(i)` it
/// has, and `H` (the zeros of `s` below `i`) grows by 0 or 1 per column, so
/// the best split is at `i = len1 - rest`. Tighter than `H(len1) + rest`
/// by the matches `b`'s rows so far found in `a`'s last `rest` columns.
fn at_most(s: &[u64], len1: usize, rest: usize) -> usize {
    let split = len1.saturating_sub(rest);
    let (full, bits) = (split / 64, split % 64);
    let mut h: usize = s[..full].iter().map(|w| w.count_zeros() as usize).sum();
    if bits > 0 {
        h += (!s[full] & ((1u64 << bits) - 1)).count_ones() as usize;
    }
    h + rest.min(len1)
}

/// The bit-parallel LCS of `a[..len1]` (given by a table `pm` of `a` or
/// longer: bits at or past `len1` are ignored) and `b`, restricted to the
/// band that can still reach `need`, when `a` and `b` share their first
/// `start` symbols (those rows are not run: after them the state is known).
fn banded<M: Matches, B: Copy + Into<u32>>(
    pm: &M,
    len1: usize,
    b: &[B],
    start: usize,
    need: usize,
    stop: &dyn Fn() -> bool,
) -> Result<Option<usize>, Halt> {
    let len2 = b.len();
    let words = len1.div_ceil(64);
    // After `start` shared rows, H(i) = min(i, start): zeros below `start`.
    let mut s = try_vec(words, !0u64)?;
    s[..start / 64].fill(0);
    if !start.is_multiple_of(64) {
        s[start / 64] &= !0u64 << (start % 64);
    }
    let zeros_below_len1 = |s: &[u64]| {
        let mut n: usize = s.iter().map(|w| w.count_zeros() as usize).sum();
        if !len1.is_multiple_of(64) {
            n -= (s[words - 1] >> (len1 % 64)).count_zeros() as usize - len1 % 64;
        }
        n
    };
    // Cells further than this left or right of the diagonal cannot be on
    // an alignment with at least `need` matches.
    let (band_left, band_right) = (len1 - need, len2 - need);
    if need == 0 {
        // No bound: every word of every row, no band and no early exit.
        let rows_per_stop = (STOP_EVERY_WORDS / words.max(1)).max(1);
        for (row, &c) in b.iter().enumerate().skip(start) {
            let m = pm.row(c.into());
            let mut carry = 0u64;
            match pm.slice(m) {
                Some(matches) => {
                    for (sw, &x) in s.iter_mut().zip(matches) {
                        let u = *sw & x;
                        let sum = u128::from(*sw) + u128::from(u) + u128::from(carry);
                        carry = (sum >> 64) as u64;
                        *sw = sum as u64 | (*sw - u);
                    }
                }
                None => {
                    for (w, sw) in s.iter_mut().enumerate() {
                        let u = *sw & pm.word(m, w);
                        let sum = u128::from(*sw) + u128::from(u) + u128::from(carry);
                        carry = (sum >> 64) as u64;
                        *sw = sum as u64 | (*sw - u);
                    }
                }
            }
            if row % rows_per_stop == rows_per_stop - 1 && stop() {
                return Err(Halt::Stopped);
            }
        }
        return Ok(Some(zeros_below_len1(&s)));
    }
    let mut first = start.saturating_sub(band_right + 1) / 64;
    let mut last = words.min((start + band_left + 1).div_ceil(64));
    let mut work = 0usize;
    for (row, &c) in b.iter().enumerate().skip(start) {
        let m = pm.row(c.into());
        // One step of Hyyrö's recurrence on a word (add with carry compiles
        // to add/adc).
        let step = |sw: &mut u64, x: u64, carry: &mut u64| {
            let u = *sw & x;
            let sum = u128::from(*sw) + u128::from(u) + u128::from(*carry);
            *carry = (sum >> 64) as u64;
            *sw = sum as u64 | (*sw - u);
        };
        let mut carry = 0u64;
        match pm.slice(m) {
            Some(row) => {
                for (sw, &x) in s[first..last].iter_mut().zip(&row[first..last]) {
                    step(sw, x, &mut carry);
                }
            }
            None => {
                for (w, sw) in s[first..last].iter_mut().enumerate() {
                    step(sw, pm.word(m, first + w), &mut carry);
                }
            }
        }
        work += last - first;
        if row > band_right {
            first = (row - band_right) / 64;
        }
        // Row `row + 1` reaches column `row + 1 + band_left` (rapidfuzz
        // 0.5 stops one column short of it here).
        last = words.min((row + 2 + band_left).div_ceil(64));
        if (row + 1) % CHECK_EVERY == 0 && at_most(&s, len1, len2 - row - 1) < need {
            return Ok(None);
        }
        if work >= STOP_EVERY_WORDS {
            work = 0;
            if stop() {
                return Err(Halt::Stopped);
            }
        }
    }
    let lcs = zeros_below_len1(&s);
    Ok((lcs >= need).then_some(lcs))
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
    fn the_early_exit_bound_counts_matches_before_the_split_only() {
        // `a` has 8 symbols; the rows so far matched only its last 3
        // (zeros at bits 5, 6, 7): with 3 rows left an alignment can add 3
        // matches to what it had before column 5, which is none.
        let s = [!(0b111u64 << 5)];
        assert_eq!(at_most(&s, 8, 3), 3);
        // With 5 rows left the split is column 3: still none before it.
        assert_eq!(at_most(&s, 8, 5), 5);
        // With 1 row left the split is column 7: bits 5 and 6 count.
        assert_eq!(at_most(&s, 8, 1), 3);
        // More rows left than columns: at most all of `a`.
        assert_eq!(at_most(&s, 8, 20), 8);
        // A split on a word boundary and inside the second word.
        let s = [0u64, !1u64];
        assert_eq!(at_most(&s, 100, 36), 64 + 36);
        assert_eq!(at_most(&s, 100, 35), 65 + 35);
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

    #[test]
    fn many_distinct_symbols_use_the_blocked_table_and_agree() {
        // 3,000 distinct code points (CJK), then a near copy.
        let a: Vec<char> = (0..3000u32)
            .map(|i| char::from_u32(0x4E00 + (i * 7919) % 3000).unwrap())
            .collect();
        let mut b = a.clone();
        b.remove(10);
        b.insert(2000, 'x');
        assert!(distinct_up_to(&a, DENSE_MAX_DISTINCT + 1) > DENSE_MAX_DISTINCT);
        let exact = lcs_dp(&a, &b);
        assert_eq!(exact, 2999);
        assert_eq!(lcs_at_least(&a, &b, 0), Some(exact));
        assert_eq!(lcs_at_least(&a, &b, exact), Some(exact));
        assert_eq!(lcs_at_least(&a, &b, exact + 1), None);
    }

    #[test]
    fn a_stop_request_halts_a_long_comparison() {
        let a: Vec<u8> = (0..200_000u32)
            .map(|i| b"ab"[(i.wrapping_mul(2654435761) >> 31) as usize])
            .collect();
        let calls = std::cell::Cell::new(0);
        let stop = || {
            calls.set(calls.get() + 1);
            calls.get() > 3
        };
        let b: Vec<u8> = a.iter().rev().copied().collect();
        assert_eq!(lcs_at_least_or_halt(&a, &b, 0, &stop), Err(Halt::Stopped));
        assert_eq!(calls.get(), 4);
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]

        #[test]
        fn dense_and_blocked_tables_give_the_same_lcs(
            a in "[a-d\u{4e00}-\u{4e03}]{1,300}",
            b in "[a-d\u{4e00}-\u{4e03}]{1,300}",
            bound in 0usize..300,
        ) {
            let (a, b) = (chars(&a), chars(&b));
            prop_assume!(distinct_up_to(&a, 1000) <= DENSE_MAX_DISTINCT);
            let dense = banded(&Dense::new(&a).unwrap().unwrap(), a.len(), &b, 0, bound.min(a.len().min(b.len())), &never);
            let blocked = banded(&Blocked::new(&a).unwrap(), a.len(), &b, 0, bound.min(a.len().min(b.len())), &never);
            prop_assert_eq!(dense, blocked);
        }

        #[test]
        fn one_query_equals_the_dynamic_program_on_texts_sharing_its_ends(
            (prefix, middle, suffix) in ("[ab]{0,140}", "[abc]{0,90}", "[ab]{0,140}"),
            others in prop::collection::vec(
                (0usize..=140, "[abc]{0,90}", 0usize..=140), 1..4),
            bound in 0usize..400,
        ) {
            // `b` keeps some of `a`'s first and last symbols, so the kernel
            // starts after a shared prefix and stops before a shared
            // suffix, at every offset within a 64-bit word.
            let a = chars(&format!("{prefix}{middle}{suffix}"));
            let query = LcsQuery::new(&a[..]).unwrap();
            for (keep_first, other, keep_last) in others {
                let (p, s) = (chars(&prefix), chars(&suffix));
                let mut b = p[..keep_first.min(p.len())].to_vec();
                b.extend(chars(&other));
                b.extend(&s[s.len() - keep_last.min(s.len())..]);
                let exact = lcs_dp(&a, &b);
                let expected = (exact >= bound).then_some(exact);
                prop_assert_eq!(query.at_least(&b[..], bound, &never).unwrap(), expected);
                prop_assert_eq!(lcs_at_least(&a, &b, bound), expected);
            }
        }

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
