//! Which rows of an incremental window scan need their text read: a row
//! the last run settled needs it only if some row within the window of it
//! may be near it by the exact bounds (lengths and character histograms,
//! kept in the index for settled rows), other than a row the last run
//! already compared it with (such pairs are not compared). A row no such
//! pair reaches is a slot in the window, like a placeholder: it can neither
//! be removed nor remove another, so leaving its text out changes nothing.
//!
//! The last run compared every two rows it kept that were within its
//! window of each other in its order (a row and the next `distance - 1`),
//! and left none of them near: that is why they are settled. The rows that
//! left the order since (deleted, changed, removed now) bring rows on
//! either side of them closer; new rows only push rows apart. So two
//! settled rows need comparing only when rows left between them and they
//! were further apart than the window in the last run's order. A settled
//! row's group is the number of rows that left the order before it, so the
//! rows that left between two settled rows are the difference of their
//! groups, and their distance in the last run's order is that plus the
//! entries of that order between them (settled rows and placeholders).
//! That count is exact where it is used, given what the caller must
//! provide: the input holds at least the [`Windows::distance`] entries of
//! the last run's order on each side of each place a row left
//! (`src/sqlite/pipeline/incremental/near_input.rs` reads the setting's `distance`, one
//! more than the scan's window). Then two settled rows of different groups
//! within `distance` of each other in the input have every entry of the
//! last run's order between them in it. (A group that counts a row not
//! in the order only makes the distance look longer: a pair compared again,
//! never one left out.)
//!
//! Cost: per settled row, the rows within its window, each checked by the
//! two bounds (no text read).
//!
//! Reference: the bounds are those of [`crate::core::near_dups`].

use crate::core::near_dups::{length_bound, text_bounds, Bounds};
use crate::core::similarity::CharHistogram;

/// A row of the scan's input, as the pruning sees it.
#[derive(Debug, Clone)]
pub struct PruneRow {
    /// A placeholder: a slot, never compared.
    pub placeholder: bool,
    /// For a row the last run settled, the number of rows that left its
    /// order before this one (its group: two settled rows of one group
    /// have no row that left between them); `None` for a row not settled
    /// (new or changed), whose text is always read. Never decreases along
    /// the input.
    pub settled: Option<i64>,
    /// Its text's length in code points, when known.
    pub len: Option<usize>,
    /// Its text's character histogram, when known (boxed: most rows of a
    /// long input are slots without one). Without it, only the length
    /// bound applies to the row.
    pub histogram: Option<Box<CharHistogram>>,
}

/// The windows a pruning works with.
#[derive(Debug, Clone, Copy)]
pub struct Windows {
    /// The rows on each side of a row it may be compared with in this run
    /// (a larger one only reads more texts).
    pub distance: usize,
    /// The rows after each that the last run compared it with (the scan's
    /// window: `distance - 1` of the settings): two settled rows at most
    /// this far apart in the last run's order are not compared again.
    pub last: usize,
}

/// Whether the bounds let the pair `a`, `b` through (an unknown length may
/// be near anything; an unknown histogram leaves the length bound).
pub(crate) fn may_be_near(a: &PruneRow, b: &PruneRow, threshold: f64) -> bool {
    let (Some(la), Some(lb)) = (a.len, b.len) else {
        return true;
    };
    match (&a.histogram, &b.histogram) {
        (Some(ha), Some(hb)) => matches!(
            text_bounds((la, ha), (lb, hb), threshold),
            Bounds::Pass { .. }
        ),
        _ => length_bound(la, lb, threshold).is_some(),
    }
}

/// Each row's place in the last run's order, up to a constant, for the
/// settled rows (see the module's documentation): the entries of that
/// order before it in the input (settled rows and placeholders) plus its
/// group. Meaningless for the other rows.
fn last_places(rows: &[PruneRow]) -> Vec<i64> {
    let mut entries = 0i64;
    rows.iter()
        .map(|r| {
            let place = entries + r.settled.unwrap_or(0);
            if r.placeholder || r.settled.is_some() {
                entries += 1;
            }
            place
        })
        .collect()
}

/// For each row, whether the scan needs its text (always for rows not
/// settled; never for placeholders). A row without a histogram counts as
/// needed when the length bound lets a pair through, so a first call with
/// lengths only tells which histograms a second, exact call needs.
pub fn needed(rows: &[PruneRow], threshold: f64, windows: Windows) -> Vec<bool> {
    // (Each pair once: the bounds are symmetric, and a pair of rows both
    // known to need their texts is not looked at. A settled row's partners
    // are only the rows not settled and the settled rows of other groups
    // the last run did not compare it with, so it visits those alone: the
    // unsettled rows within reach by a list of them, the other groups'
    // rows from where the next one begins.)
    let n = rows.len();
    let distance = windows.distance;
    let mut need: Vec<bool> = rows
        .iter()
        .map(|r| !r.placeholder && (r.settled.is_none() || threshold <= 0.0))
        .collect();
    let unsettled: Vec<usize> = (0..n)
        .filter(|&j| !rows[j].placeholder && rows[j].settled.is_none())
        .collect();
    let other_group = first_of_another_group(rows);
    let places = last_places(rows);
    let last = i64::try_from(windows.last).unwrap_or(i64::MAX);
    let look = |i: usize, j: usize, need: &mut [bool]| {
        let (a, b) = (&rows[i], &rows[j]);
        if b.placeholder || (need[i] && need[j]) || (a.settled.is_some() && a.settled == b.settled)
        {
            return;
        }
        if may_be_near(a, b, threshold) {
            need[i] = true;
            need[j] = true;
        }
    };
    for i in 0..n {
        let a = &rows[i];
        if a.placeholder {
            continue;
        }
        let end = n.min(i.saturating_add(distance).saturating_add(1));
        if a.settled.is_none() {
            for j in i + 1..end {
                look(i, j, &mut need);
            }
            continue;
        }
        let from = unsettled.partition_point(|&j| j <= i);
        for &j in unsettled[from..].iter().take_while(|&&j| j < end) {
            look(i, j, &mut need);
        }
        let later = rows.iter().enumerate().take(end).skip(other_group[i]);
        for (j, _) in later
            .filter(|(j, b)| b.settled.is_some() && places[*j].saturating_sub(places[i]) > last)
        {
            look(i, j, &mut need);
        }
    }
    need
}

/// For each settled row, the first position after it that holds a settled
/// row (not a placeholder) of another group; the length of `rows` when
/// none does (and for the other rows).
fn first_of_another_group(rows: &[PruneRow]) -> Vec<usize> {
    let n = rows.len();
    let mut first = vec![n; n];
    // (From the right: the nearest settled row after each, and its own
    // answer when it is of the same group.)
    let mut next_settled: Option<usize> = None;
    for i in (0..n).rev() {
        let r = &rows[i];
        if r.placeholder || r.settled.is_none() {
            continue;
        }
        if let Some(k) = next_settled {
            first[i] = if rows[k].settled != r.settled {
                k
            } else {
                first[k]
            };
        }
        next_settled = Some(i);
    }
    first
}

/// The rows whose histograms [`needed`] must be given to be exact, when
/// `rows` come with lengths but without the settled rows' histograms: the
/// settled rows the length bound alone leaves needed. (A pair the lengths
/// keep apart stays apart whatever the histograms say, and both rows of a
/// pair they let through are among these or have a histogram already.)
pub fn histograms_wanted(rows: &[PruneRow], threshold: f64, windows: Windows) -> Vec<usize> {
    needed(rows, threshold, windows)
        .into_iter()
        .enumerate()
        .filter(|&(i, need)| need && rows[i].settled.is_some() && rows[i].histogram.is_none())
        .map(|(i, _)| i)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(settled: Option<i64>, text: Option<&str>) -> PruneRow {
        PruneRow {
            placeholder: false,
            settled,
            len: text.map(|t| t.chars().count()),
            histogram: text.map(|t| Box::new(CharHistogram::new(t))),
        }
    }

    const SLOT: PruneRow = PruneRow {
        placeholder: true,
        settled: None,
        len: None,
        histogram: None,
    };

    fn windows(distance: usize, last: usize) -> Windows {
        Windows { distance, last }
    }

    /// The definition, row by row: a settled row needs its text when some
    /// row within `distance` of it, not a placeholder, nor settled in the
    /// same group, nor settled at most `last` apart from it in the last
    /// run's order (the entries of that order between them, settled rows
    /// and placeholders, and the rows that left between them, counted one
    /// by one), may be near it by the bounds.
    fn needed_by_definition(rows: &[PruneRow], threshold: f64, w: Windows) -> Vec<bool> {
        let compared_before = |i: usize, j: usize| -> bool {
            let (lo, hi) = (i.min(j), i.max(j));
            let (Some(g_lo), Some(g_hi)) = (rows[lo].settled, rows[hi].settled) else {
                return false;
            };
            let entries = rows[lo + 1..hi]
                .iter()
                .filter(|r| r.placeholder || r.settled.is_some())
                .count();
            let left = (g_hi - g_lo) as usize;
            g_lo == g_hi || entries + left < w.last
        };
        let may_meet = |i: usize, j: usize| -> bool {
            let (a, b) = (&rows[i], &rows[j]);
            if b.placeholder || compared_before(i, j) {
                return false;
            }
            match (
                a.len.zip(a.histogram.as_ref()),
                b.len.zip(b.histogram.as_ref()),
            ) {
                (Some((la, ha)), Some((lb, hb))) => matches!(
                    text_bounds((la, ha), (lb, hb), threshold),
                    Bounds::Pass { .. }
                ),
                _ => match (a.len, b.len) {
                    // (The length bound: the ratio at the least distance the
                    // lengths allow.)
                    (Some(la), Some(lb)) => {
                        crate::core::similarity::ratio_from_distance(la.abs_diff(lb), la + lb)
                            > threshold
                    }
                    _ => true,
                },
            }
        };
        (0..rows.len())
            .map(|i| {
                let row = &rows[i];
                if row.placeholder {
                    return false;
                }
                if row.settled.is_none() || threshold <= 0.0 {
                    return true;
                }
                let lo = i.saturating_sub(w.distance);
                let hi = (i + w.distance).min(rows.len() - 1);
                (lo..=hi).any(|j| j != i && may_meet(i, j))
            })
            .collect()
    }

    #[test]
    fn each_pair_looked_at_once_gives_the_definition() {
        let words = ["harbour", "tram", "line", "storm", "mayor", "zz", "qqqq"];
        let mut seed = 7u64;
        let mut next = move |n: u64| {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (seed >> 33) % n
        };
        for _ in 0..2000 {
            // (Groups as the runner makes them: the rows that left before
            // each settled row, so they never decrease.)
            let mut left = 0i64;
            let rows: Vec<PruneRow> = (0..next(40) + 1)
                .map(|_| {
                    left += [0, 0, 0, 1, 2][next(5) as usize];
                    match next(10) {
                        0 => SLOT,
                        k => {
                            let text: Vec<&str> = (0..next(6) + 1)
                                .map(|_| words[next(words.len() as u64) as usize])
                                .collect();
                            let settled = if k < 3 { None } else { Some(left) };
                            row(settled, (k != 9).then(|| text.join(" ")).as_deref())
                        }
                    }
                })
                .collect();
            let threshold = [0.0, 0.5, 0.8, 0.9, 1.0][next(5) as usize];
            let distance = next(6) as usize;
            let w = windows(distance, next(distance as u64 + 2) as usize);
            let exact = needed(&rows, threshold, w);
            assert_eq!(exact, needed_by_definition(&rows, threshold, w));
            // Lengths first, then only the histograms that asks for: the same.
            let mut partial = rows.clone();
            for r in partial.iter_mut().filter(|r| r.settled.is_some()) {
                r.histogram = None;
            }
            assert_eq!(
                needed(&partial, threshold, w),
                needed_by_definition(&partial, threshold, w)
            );
            for i in histograms_wanted(&partial, threshold, w) {
                partial[i].histogram = rows[i].histogram.clone();
            }
            assert_eq!(needed(&partial, threshold, w), exact);
        }
    }

    #[test]
    fn a_settled_row_needs_its_text_only_for_a_partner_the_bounds_let_through() {
        let a = "the harbour reopened after the storm, said the mayor";
        let near = "the harbour reopened after the storm, said the mayor.";
        let other = "zzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzz";
        let w = windows(5, 4);
        // A new row near a settled one: both read.
        let rows = [row(Some(0), Some(a)), row(None, Some(near))];
        assert_eq!(needed(&rows, 0.9, w), [true, true]);
        // Same lengths, other characters: the histogram bound keeps the settled row out.
        let rows = [row(Some(0), Some(a)), row(None, Some(other))];
        assert_eq!(needed(&rows, 0.9, w), [false, true]);
        // Out of the window: not read.
        let rows = [row(Some(0), Some(a)), SLOT, row(None, Some(near))];
        assert_eq!(needed(&rows, 0.9, windows(1, 0)), [false, false, true]);
        // Two settled rows of one group are never compared.
        let rows = [row(Some(0), Some(a)), row(Some(0), Some(near))];
        assert_eq!(needed(&rows, 0.9, w), [false, false]);
        // A partner of unknown profile may be near anything.
        let rows = [row(Some(0), Some(a)), row(None, None)];
        assert_eq!(needed(&rows, 0.9, w), [true, true]);
    }

    #[test]
    fn settled_rows_of_two_groups_are_compared_only_if_they_came_into_each_others_window() {
        let a = "the harbour reopened after the storm, said the mayor";
        let near = "the harbour reopened after the storm, said the mayor.";
        // One row left between them: 2 apart in the last run's order, 1 now.
        let rows = [row(Some(0), Some(a)), row(Some(1), Some(near))];
        // A last window of 1 did not hold them both: compared now.
        assert_eq!(needed(&rows, 0.9, windows(5, 1)), [true, true]);
        // One of 2 did, and found them apart: not compared again.
        assert_eq!(needed(&rows, 0.9, windows(5, 2)), [false, false]);
        // A slot and three rows that left between them: 5 apart before.
        let rows = [row(Some(0), Some(a)), SLOT, row(Some(3), Some(near))];
        assert_eq!(needed(&rows, 0.9, windows(5, 4)), [true, false, true]);
        assert_eq!(needed(&rows, 0.9, windows(5, 5)), [false, false, false]);
        // A new row between them pushes nothing closer: not counted.
        let rows = [
            row(Some(0), Some(a)),
            row(
                None,
                Some("zzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzz"),
            ),
            row(Some(1), Some(near)),
        ];
        assert_eq!(needed(&rows, 0.9, windows(5, 2)), [false, true, false]);
        assert_eq!(needed(&rows, 0.9, windows(5, 1)), [true, true, true]);
    }
}
