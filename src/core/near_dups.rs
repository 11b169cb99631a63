//! The near-duplicate window scan: the reference's sequential greedy
//! algorithm, made fast with exact filters and parallel comparisons.
//!
//! Rows arrive in scan order (the pipeline sorts them by canonical URL). For
//! each live row `i`, every live row among the next `distance` rows whose
//! Levenshtein ratio with `i` (or the [`Measure`] given: Broder's
//! resemblance, bounded by the shingle counts and compared as sets) is
//! strictly above `threshold` joins a group with `i`; the group's best row (lowest `rank`, then earliest position) survives
//! and the others are removed. Then the scan moves to `i + 1`.
//!
//! The election is sequential, so results never depend on the thread
//! count; on a pool, the comparisons of a chunk of anchors run ahead of it
//! (`scan_ahead`). Before any
//! Levenshtein work a pair must pass two exact lower bounds of the indel
//! distance (length difference, character histograms); the Levenshtein
//! kernel itself stops at the largest distance that can still exceed the
//! threshold. Memory holds the window, not the table.
//!
//! Cost: at most `distance - 1` pairs a row, each through the two bounds
//! first; the LCS kernel runs only on the pairs they let through, and stops
//! at the threshold's distance.
//!
//! Reference: the reference pipeline's window scan (its phase 4), checked
//! on its own outputs (`../shared/corpus/`), with python-Levenshtein's
//! `ratio` as the measure.

use crate::core::invalid::Invalid;
use std::borrow::Cow;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::core::halt::{try_collect, Halt};
use crate::core::measure::Measure;
use crate::core::parallel::map_polled;
use crate::core::pools::pool;
use crate::core::shingles::{resemblance, Shingles};
use crate::core::similarity::{
    max_distance_above, ratio_from_distance, CharHistogram, CodePoints, Compared, IndelQuery,
};

/// The reference's threshold: near duplicates when `lev_ratio > 0.9`.
pub const DEFAULT_THRESHOLD: f64 = 0.9;
/// The reference's `distance`: each row against the next `distance - 1`
/// rows (this scan's `distance` is that window).
pub const DEFAULT_DISTANCE: i64 = 50;

/// One input row of the scan.
#[derive(Debug, Clone, PartialEq)]
pub struct ScanRow {
    /// Caller's identifier (the pipeline passes the source rowid).
    pub id: i64,
    /// Election rank: lower is better. Ties go to the earlier row.
    pub rank: i64,
    /// The text compared (the pipeline passes `parsed`). `None` marks a
    /// placeholder: a row removed earlier that still occupies its position
    /// in the window but is never compared nor elected.
    pub text: Option<String>,
    /// `Some(s)`: a row known to be near no other row of the same `s` within
    /// the window (an incremental run's rows that the last run compared
    /// already); such a pair is not compared. `None`: compared with all.
    pub settled: Option<i64>,
}

/// A row the scan removes.
#[derive(Debug, Clone, PartialEq)]
pub struct Removal {
    /// The removed row.
    pub id: i64,
    /// The row of its group that survives.
    pub survivor: i64,
    /// The row whose window formed the group.
    pub anchor: i64,
    /// Ratio between the removed row and the anchor (for a removed anchor:
    /// between it and the survivor).
    pub ratio: f64,
}

/// Counters of the work done and avoided.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ScanStats {
    /// Rows read.
    pub rows: u64,
    /// Pairs of live rows inside a window.
    pub pairs: u64,
    /// Pairs rejected by the length bound.
    pub rejected_by_length: u64,
    /// Pairs rejected by the character-histogram bound.
    pub rejected_by_histogram: u64,
    /// Pairs that reached the Levenshtein kernel (under resemblance: the
    /// comparison of their shingle sets).
    pub levenshtein: u64,
    /// Pairs found above the threshold.
    pub matches: u64,
    /// Pairs too long to decide within the bound on one pair's work
    /// ([`crate::core::lcs::LARGE_PAIR`]), kept apart.
    pub too_long: u64,
    /// Pairs of settled rows ([`ScanRow::settled`]), known apart.
    pub settled: u64,
}

impl ScanStats {
    /// The counters as a JSON object.
    pub fn to_json(&self) -> String {
        // `too_long` only when some pair was: most runs have none.
        let mut too_long = if self.too_long > 0 {
            format!(",\"too_long\":{}", self.too_long)
        } else {
            String::new()
        };
        if self.settled > 0 {
            too_long += &format!(",\"settled\":{}", self.settled);
        }
        format!(
            "{{\"rows\":{},\"pairs\":{},\"rejected_by_length\":{},\"rejected_by_histogram\":{},\"levenshtein\":{},\"matches\":{}{too_long}}}",
            self.rows, self.pairs, self.rejected_by_length, self.rejected_by_histogram, self.levenshtein, self.matches
        )
    }
}

/// What the exact filters need of a text: its length in code points and
/// its character histogram (Levenshtein), or its number of shingles
/// (resemblance).
#[derive(Clone)]
pub(super) struct Profile {
    len: usize,
    /// (Apart, so that the pair scan holds its rows' profiles in one
    /// vector: its bounds read the profiles of rows far apart, and the
    /// length bound rejects most pairs without their histograms.)
    histogram: Box<CharHistogram>,
    settled: Option<i64>,
    /// `len` counts shingles: the measure is resemblance.
    sets: bool,
}

impl Profile {
    /// The profile of `text`: its length in code points and its histogram
    /// (its shingles' count, under resemblance); `settled` is the group a
    /// last run settled it in (incremental runs).
    pub(super) fn new(text: &Text, settled: Option<i64>) -> Self {
        match &text.shingles {
            Some(shingles) => Profile {
                len: shingles.len(),
                histogram: Box::new(CharHistogram::new("")),
                settled,
                sets: true,
            },
            None => Profile {
                len: text.wide.as_ref().map_or(text.text.len(), Vec::len),
                histogram: Box::new(CharHistogram::new(&text.text)),
                settled,
                sets: false,
            },
        }
    }
}

/// A text ready for the measure: for the kernel (Levenshtein), or as its
/// shingles (resemblance, which keeps nothing else of it).
pub(super) struct Text {
    text: String,
    wide: Option<Vec<char>>,
    shingles: Option<Shingles>,
}

impl Text {
    /// Holds `text`, with its code points apart when it is not ASCII;
    /// stops with `Halt` when the memory for them cannot be had.
    pub(super) fn new(text: String) -> Result<Self, Halt> {
        let wide = if text.is_ascii() {
            None
        } else {
            Some(try_collect(text.chars().count(), text.chars())?)
        };
        Ok(Text {
            text,
            wide,
            shingles: None,
        })
    }

    /// Holds what `measure` compares of `text`.
    pub(super) fn measured(text: String, measure: &Measure) -> Result<Self, Halt> {
        match measure.shingles(&text)? {
            None => Text::new(text),
            Some(shingles) => Ok(Text {
                text: String::new(),
                wide: None,
                shingles: Some(shingles),
            }),
        }
    }

    /// Memory held, in bytes.
    pub(super) fn bytes(&self) -> usize {
        self.text.len()
            + self.wide.as_ref().map_or(0, |w| w.len() * 4)
            + self.shingles.as_ref().map_or(0, |s| s.len() * 8)
    }

    /// The text as the LCS kernel reads it: bytes when ASCII, else chars.
    pub(super) fn code_points(&self) -> CodePoints<'_> {
        match &self.wide {
            Some(chars) => CodePoints::Wide(Cow::Borrowed(chars)),
            None => CodePoints::Ascii(self.text.as_bytes()),
        }
    }

    /// The text's table for the kernel, borrowing the text (so that it can
    /// be shared with the threads that help compare it).
    pub(super) fn query(&self) -> Result<IndelQuery<'_>, Halt> {
        match &self.wide {
            Some(chars) => IndelQuery::wide(chars),
            None => IndelQuery::ascii(self.text.as_bytes()),
        }
    }
}

/// A row of the window.
pub(super) struct Prepared {
    pub(super) id: i64,
    pub(super) rank: i64,
    pub(super) position: u64,
    pub(super) text: Text,
    pub(super) profile: Profile,
    /// Neither a placeholder nor removed. Only ever goes from true to false;
    /// atomic so that the window scan on the pool may read it ahead of the
    /// election that clears it (a row seen removed is removed).
    alive: AtomicBool,
}

impl Prepared {
    /// The row at `position` of the scan, with its profile.
    pub(super) fn new(row: ScanRow, position: u64) -> Result<Self, Halt> {
        Prepared::measured(row, position, &Measure::Levenshtein)
    }

    /// [`Prepared::new`] for `measure`.
    pub(super) fn measured(row: ScanRow, position: u64, measure: &Measure) -> Result<Self, Halt> {
        let alive = row.text.is_some();
        let text = Text::measured(row.text.unwrap_or_default(), measure)?;
        Ok(Prepared {
            id: row.id,
            rank: row.rank,
            position,
            profile: Profile::new(&text, row.settled),
            text,
            alive: AtomicBool::new(alive),
        })
    }

    /// Neither a placeholder nor removed (yet).
    pub(super) fn alive(&self) -> bool {
        self.alive.load(Ordering::Relaxed)
    }

    /// Marks the row removed.
    pub(super) fn remove(&self) {
        self.alive.store(false, Ordering::Relaxed);
    }
}

/// Checks the scan parameters, with the messages the SQL layer reports.
pub fn validate(threshold: f64, distance: i64) -> Result<(), Invalid> {
    if !(0.0..=1.0).contains(&threshold) {
        return Err(Invalid::from(format!(
            "threshold must be in [0.0, 1.0], got {threshold}"
        )));
    }
    if distance < 0 {
        return Err(Invalid::from(format!(
            "distance must be a non-negative integer, got {distance}"
        )));
    }
    Ok(())
}

/// The window scan on the calling thread, one anchor after the other:
/// [`crate::core::window_scan::scan`]'s results, which runs it on every core.
pub fn scan_sequential<E: From<Halt>>(
    rows: impl IntoIterator<Item = Result<ScanRow, E>>,
    threshold: f64,
    distance: usize,
    poll: &mut dyn FnMut() -> bool,
) -> Result<(Vec<Removal>, ScanStats), E> {
    scan_measured(rows, threshold, &Measure::Levenshtein, distance, poll)
}

/// [`scan_sequential`] by `measure`: a pair is near when its measure is
/// above `threshold`.
pub fn scan_measured<E: From<Halt>>(
    rows: impl IntoIterator<Item = Result<ScanRow, E>>,
    threshold: f64,
    measure: &Measure,
    distance: usize,
    poll: &mut dyn FnMut() -> bool,
) -> Result<(Vec<Removal>, ScanStats), E> {
    let mut rows = rows.into_iter();
    let mut window: VecDeque<Prepared> =
        VecDeque::with_capacity(distance.saturating_add(1).min(1 << 16));
    let mut stats = ScanStats::default();
    let mut removed = Vec::new();
    let mut exhausted = false;
    loop {
        while !exhausted && window.len() <= distance {
            match rows.next() {
                Some(row) => {
                    window.push_back(Prepared::measured(row?, stats.rows, measure)?);
                    stats.rows += 1;
                }
                None => exhausted = true,
            }
        }
        let Some(anchor) = window.front() else { break };
        if anchor.alive() {
            let candidates: Vec<(usize, usize, usize)> = (1..window.len())
                .filter(|&j| window[j].alive())
                .filter_map(|j| {
                    within_bounds(&anchor.profile, &window[j].profile, threshold, &mut stats)
                        .map(|(total, max)| (j, total, max))
                })
                .collect();
            let near = verify(
                &anchor.text,
                &candidates,
                |j| &window[j].text,
                threshold,
                &mut stats,
                poll,
            )?;
            let member = |k: usize| (window[k].id, window[k].rank, window[k].position);
            for k in elect(0, &near, member, &mut removed) {
                window[k].remove();
            }
        }
        window.pop_front();
    }
    Ok((removed, stats))
}

/// Counts the pair and applies the exact bounds (length, then histogram):
/// `Some((total length, largest indel distance still above the threshold))`
/// when the pair may be near, `None` when it cannot.
pub(super) fn within_bounds(
    a: &Profile,
    b: &Profile,
    threshold: f64,
    stats: &mut ScanStats,
) -> Option<(usize, usize)> {
    stats.pairs += 1;
    match bounds(a, b, threshold) {
        Bounds::Settled => stats.settled += 1,
        Bounds::Length => stats.rejected_by_length += 1,
        Bounds::Histogram => stats.rejected_by_histogram += 1,
        Bounds::Pass { total, max } => return Some((total, max)),
    }
    None
}

/// What the exact bounds say of a pair.
pub(crate) enum Bounds {
    /// Both rows are settled in one group ([`ScanRow::settled`]).
    Settled,
    /// The lengths alone put the ratio at or below the threshold.
    Length,
    /// The character histograms do.
    Histogram,
    /// The pair may be near: its total length and the largest indel
    /// distance still above the threshold.
    Pass { total: usize, max: usize },
}

/// The exact bounds (length, then histogram) on a pair; under resemblance
/// the bound of the shingle counts (`|A ∩ B| / |A ∪ B| <= min / max`).
pub(super) fn bounds(a: &Profile, b: &Profile, threshold: f64) -> Bounds {
    if a.settled.is_some() && a.settled == b.settled {
        return Bounds::Settled;
    }
    if a.sets || b.sets {
        let (low, high) = (a.len.min(b.len), a.len.max(b.len));
        if low == 0 || low as f64 / high as f64 <= threshold {
            return Bounds::Length;
        }
        return Bounds::Pass { total: 0, max: 0 };
    }
    text_bounds((a.len, &a.histogram), (b.len, &b.histogram), threshold)
}

/// The exact bounds on two texts given as (length in code points,
/// histogram): what [`bounds`] says of two rows not settled alike.
pub(crate) fn text_bounds(
    a: (usize, &CharHistogram),
    b: (usize, &CharHistogram),
    threshold: f64,
) -> Bounds {
    let Some((total, max)) = length_bound(a.0, b.0, threshold) else {
        return Bounds::Length;
    };
    if a.1.indel_lower_bound(b.1) > max {
        return Bounds::Histogram;
    }
    Bounds::Pass { total, max }
}

/// The length bound alone on two texts of `a` and `b` code points: `None`
/// when their lengths put the ratio at or below the threshold, else their
/// total length and the largest indel distance still above it.
pub(crate) fn length_bound(a: usize, b: usize, threshold: f64) -> Option<(usize, usize)> {
    let total = a + b;
    // (Lengths this far apart are rejected by one evaluation: the ratio
    // falls as the distance grows, so the difference passes only when it
    // is at most the largest distance that does.)
    let passes = ratio_from_distance(a.abs_diff(b), total) > threshold;
    if !passes {
        return None;
    }
    Some((total, max_distance_above(total, threshold)?))
}

/// Kernel work (total length times the distance band, summed over a
/// window's candidates) from which the window's kernels run on the pool.
pub(super) const PARALLEL_WORK: usize = 1 << 26;

/// Runs the kernel on the candidates `(key, total, max)` that passed the
/// bounds, in parallel when there are several: the keys and ratios of those
/// above the threshold, in candidate order. Under resemblance, the sets'
/// resemblance on this thread.
pub(super) fn verify<'t>(
    anchor: &Text,
    candidates: &[(usize, usize, usize)],
    text: impl Fn(usize) -> &'t Text + Sync,
    threshold: f64,
    stats: &mut ScanStats,
    poll: &mut dyn FnMut() -> bool,
) -> Result<Vec<(usize, f64)>, Halt> {
    if candidates.is_empty() {
        return Ok(Vec::new());
    }
    if let Some(a) = &anchor.shingles {
        stats.levenshtein += candidates.len() as u64;
        let near: Vec<(usize, f64)> = candidates
            .iter()
            .filter_map(|&(j, _, _)| {
                let b = text(j).shingles.as_ref()?;
                let r = resemblance(a, b);
                (r > threshold).then_some((j, r))
            })
            .collect();
        stats.matches += near.len() as u64;
        return Ok(near);
    }
    let a = anchor.code_points();
    // The anchor's table is built once for all its candidates.
    let a = IndelQuery::new(&a)?;
    let compare = |&(j, _, max): &(usize, usize, usize), stop: &dyn Fn() -> bool| {
        Ok(Some(a.compare_or_halt(
            &text(j).code_points(),
            max,
            stop,
        )?))
    };
    // Waking the pool costs more than a few kernels on page-sized texts
    // (benches/results/design-measurements.md, "Kernels on the calling thread"); it pays for long texts.
    let work: usize = candidates
        .iter()
        .map(|&(_, total, max)| total.saturating_mul(max.max(1)))
        .sum();
    let pool = if work >= PARALLEL_WORK { pool() } else { None };
    let outcomes = map_polled(pool, candidates, compare, poll)?;
    Ok(verified(candidates, &outcomes, stats))
}

/// The kernel's outcome on each of an anchor's pairs (the other text, and
/// the largest indel distance still above the threshold, as [`verify`]
/// takes them under Levenshtein), in order, on this thread: for a caller
/// that compares many anchors at once and tallies later ([`verified`]).
pub(super) fn compare_each<'t>(
    anchor: &Text,
    pairs: impl Iterator<Item = (&'t Text, usize)>,
    stop: &dyn Fn() -> bool,
) -> Result<Vec<Compared>, Halt> {
    let a = anchor.query()?;
    pairs
        .map(|(b, max)| a.compare_or_halt(&b.code_points(), max, stop))
        .collect()
}

/// What [`verify`] returns and counts, from the outcomes [`compare_each`]
/// found for the same candidates.
pub(super) fn verified(
    candidates: &[(usize, usize, usize)],
    outcomes: &[Compared],
    stats: &mut ScanStats,
) -> Vec<(usize, f64)> {
    stats.levenshtein += candidates.len() as u64;
    let mut near = Vec::new();
    for (&(j, total, _), outcome) in candidates.iter().zip(outcomes) {
        match *outcome {
            Compared::Within(d) => near.push((j, ratio_from_distance(d, total))),
            Compared::Beyond => {}
            Compared::TooLong => stats.too_long += 1,
        }
    }
    stats.matches += near.len() as u64;
    near
}

/// Elects the group of `anchor` and its `near` rows (key, ratio with the
/// anchor): the best row (lowest rank, then earliest position; `member`
/// gives a key's id, rank and position) survives, the others are recorded
/// as removed. Returns the keys removed.
pub(super) fn elect(
    anchor: usize,
    near: &[(usize, f64)],
    member: impl Fn(usize) -> (i64, i64, u64),
    removed: &mut Vec<Removal>,
) -> Vec<usize> {
    if near.is_empty() {
        return Vec::new();
    }
    let order = |k: usize| {
        let (_, rank, position) = member(k);
        (rank, position)
    };
    let mut best = anchor;
    for &(j, _) in near {
        if order(j) < order(best) {
            best = j;
        }
    }
    let survivor = member(best).0;
    let anchor_id = member(anchor).0;
    let mut out = Vec::with_capacity(near.len());
    if best != anchor {
        let ratio = near
            .iter()
            .find(|(j, _)| *j == best)
            .map_or(0.0, |&(_, r)| r);
        removed.push(Removal {
            id: anchor_id,
            survivor,
            anchor: anchor_id,
            ratio,
        });
        out.push(anchor);
    }
    for &(j, ratio) in near {
        if j != best {
            removed.push(Removal {
                id: member(j).0,
                survivor,
                anchor: anchor_id,
                ratio,
            });
            out.push(j);
        }
    }
    out
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::core::similarity::lev_ratio;
    use proptest::prelude::*;

    /// The rows of `texts` (text, rank), with ids from 1.
    pub(crate) fn rows(texts: &[(&str, i64)]) -> Vec<Result<ScanRow, Halt>> {
        texts
            .iter()
            .enumerate()
            .map(|(i, (t, rank))| {
                Ok(ScanRow {
                    id: i as i64 + 1,
                    rank: *rank,
                    text: Some(t.to_string()),
                    settled: None,
                })
            })
            .collect()
    }

    /// The reference algorithm, written as plainly as the reference writes
    /// it: full ratios, no filters, `range(i + 1, min(n, i + distance + 1))`.
    fn naive(texts: &[(&str, i64)], threshold: f64, distance: usize) -> Vec<i64> {
        naive_by(texts, threshold, distance, lev_ratio)
    }

    /// Broder's resemblance as Text::DeDuper defines it, written plainly:
    /// sets of `n`-word tuples of the whitespace-separated words (these
    /// tests' texts are lowercase ASCII words), a text of fewer words one
    /// tuple of all of them (our rule for short texts), none for no words.
    pub(crate) fn plain_resemblance(a: &str, b: &str, n: usize) -> f64 {
        use std::collections::HashSet;
        let set = |t: &str| -> HashSet<Vec<String>> {
            let words: Vec<String> = t.split_whitespace().map(String::from).collect();
            match words.len() {
                0 => HashSet::new(),
                k if k < n => [words].into_iter().collect(),
                _ => words.windows(n).map(<[String]>::to_vec).collect(),
            }
        };
        let (a, b) = (set(a), set(b));
        if a.is_empty() || b.is_empty() {
            return 0.0;
        }
        a.intersection(&b).count() as f64 / a.union(&b).count() as f64
    }

    /// [`naive`] by any measure.
    fn naive_by(
        texts: &[(&str, i64)],
        threshold: f64,
        distance: usize,
        ratio: impl Fn(&str, &str) -> f64,
    ) -> Vec<i64> {
        let n = texts.len();
        let mut keep = vec![true; n];
        for i in 0..n {
            if !keep[i] {
                continue;
            }
            let near: Vec<usize> = (i + 1..n.min(i + distance + 1))
                .filter(|&j| keep[j] && ratio(texts[i].0, texts[j].0) > threshold)
                .collect();
            if near.is_empty() {
                continue;
            }
            let mut group = vec![i];
            group.extend(near);
            let best = *group.iter().min_by_key(|&&g| (texts[g].1, g)).unwrap();
            for g in group {
                if g != best {
                    keep[g] = false;
                }
            }
        }
        (0..n).filter(|&i| !keep[i]).map(|i| i as i64 + 1).collect()
    }

    fn removed_ids(texts: &[(&str, i64)], threshold: f64, distance: usize) -> Vec<i64> {
        let (removed, _) =
            scan_sequential(rows(texts), threshold, distance, &mut || false).unwrap();
        let mut ids: Vec<i64> = removed.iter().map(|r| r.id).collect();
        ids.sort();
        ids
    }

    #[test]
    fn length_bound_is_the_search_over_every_distance() {
        // The definition: the largest distance above the threshold, by a
        // search over every distance, and the lengths' difference within it.
        for threshold in [0.0, 0.5, 0.8, 0.9, 0.95, 1.0] {
            for a in 0..70 {
                for b in 0..70 {
                    let total = a + b;
                    let max = (0..=total)
                        .rev()
                        .find(|&d| ratio_from_distance(d, total) > threshold);
                    let want = max.filter(|&m| a.abs_diff(b) <= m).map(|m| (total, m));
                    assert_eq!(length_bound(a, b, threshold), want, "{a}, {b}, {threshold}");
                }
            }
        }
    }

    #[test]
    fn best_ranked_row_of_a_group_survives() {
        let texts = [
            ("the quick brown fox", 2),
            ("the quick brown fix", 1),
            ("something else", 0),
        ];
        let (removed, stats) = scan_sequential(rows(&texts), 0.8, 5, &mut || false).unwrap();
        assert_eq!(
            removed,
            vec![Removal {
                id: 1,
                survivor: 2,
                anchor: 1,
                ratio: lev_ratio(texts[0].0, texts[1].0)
            }]
        );
        assert_eq!(stats.rows, 3);
        assert_eq!(stats.matches, 1);
    }

    #[test]
    fn threshold_is_strict() {
        // ratio exactly 0.9 is not above a 0.9 threshold.
        let texts = [("abcdefghijklmnopqrst", 0), ("abcdefghijklmnopqrXY", 1)];
        assert_eq!(lev_ratio(texts[0].0, texts[1].0), 0.9);
        assert!(removed_ids(&texts, 0.9, 5).is_empty());
        assert_eq!(removed_ids(&texts, 0.899_999, 5), vec![2]);
    }

    #[test]
    fn distance_counts_rows_ahead() {
        let texts = [
            ("same text here", 0),
            ("unrelated words", 1),
            ("same text here", 2),
        ];
        assert!(removed_ids(&texts, 0.9, 1).is_empty());
        assert_eq!(removed_ids(&texts, 0.9, 2), vec![3]);
        assert!(removed_ids(&texts, 0.9, 0).is_empty());
    }

    #[test]
    fn removed_rows_are_not_compared_again() {
        // Row 2 is removed by row 1's group; it cannot then pull row 3 in.
        let texts = [("aaaaaaaaab", 0), ("aaaaaaaabb", 1), ("aaaaaaabbb", 2)];
        assert_eq!(removed_ids(&texts, 0.85, 1), vec![2]);
        assert_eq!(naive(&texts, 0.85, 1), vec![2]);
    }

    #[test]
    fn placeholders_occupy_a_window_slot_but_are_never_compared() {
        let row = |id, text: Option<&str>| {
            Ok::<_, Halt>(ScanRow {
                id,
                rank: id,
                text: text.map(String::from),
                settled: None,
            })
        };
        let source = vec![
            row(1, Some("same text")),
            row(2, None),
            row(3, Some("same text")),
        ];
        let (removed, stats) = scan_sequential(source.clone(), 0.9, 1, &mut || false).unwrap();
        assert!(removed.is_empty());
        assert_eq!(stats.pairs, 0);
        let (removed, _) = scan_sequential(source, 0.9, 2, &mut || false).unwrap();
        assert_eq!(removed.iter().map(|r| r.id).collect::<Vec<_>>(), vec![3]);
    }

    #[test]
    fn settled_rows_of_one_group_are_not_compared_with_each_other() {
        let row = |id, settled| {
            Ok::<_, Halt>(ScanRow {
                id,
                rank: id,
                text: Some("same text".into()),
                settled,
            })
        };
        let ids = |source: Vec<Result<ScanRow, Halt>>| {
            let (removed, stats) = scan_sequential(source, 0.9, 3, &mut || false).unwrap();
            (removed.iter().map(|r| r.id).collect::<Vec<_>>(), stats)
        };
        // Two rows settled together: known apart, never compared.
        let (removed, stats) = ids(vec![row(1, Some(0)), row(2, Some(0))]);
        assert!(removed.is_empty());
        assert_eq!((stats.pairs, stats.settled, stats.levenshtein), (1, 1, 0));
        // Settled in different groups, or one not settled: compared.
        assert_eq!(ids(vec![row(1, Some(0)), row(2, Some(1))]).0, vec![2]);
        assert_eq!(ids(vec![row(1, Some(0)), row(2, None)]).0, vec![2]);
        assert_eq!(ids(vec![row(1, None), row(2, None)]).0, vec![2]);
        // Row 1 meets row 2 (not settled), never row 3 (settled with it);
        // row 2, removed, pulls in nothing.
        let (removed, _) = ids(vec![row(1, Some(0)), row(2, None), row(3, Some(0))]);
        assert_eq!(removed, vec![2]);
        // Row 2 first: it meets both, and row 1 (best rank) survives.
        let (removed, _) = ids(vec![row(2, None), row(1, Some(0)), row(3, Some(0))]);
        assert_eq!(removed, vec![2, 3]);
    }

    #[test]
    fn errors_from_the_source_stop_the_scan() {
        let source = vec![
            Ok(ScanRow {
                id: 1,
                rank: 0,
                text: Some("a".into()),
                settled: None,
            }),
            Err(Halt::Stopped),
        ];
        assert_eq!(
            scan_sequential(source, 0.5, 3, &mut || false).unwrap_err(),
            Halt::Stopped
        );
    }

    #[test]
    fn validation_messages() {
        assert_eq!(
            validate(1.5, 3).unwrap_err().as_str(),
            "threshold must be in [0.0, 1.0], got 1.5"
        );
        assert_eq!(
            validate(0.5, -1).unwrap_err().as_str(),
            "distance must be a non-negative integer, got -1"
        );
        assert!(validate(1.0, 0).is_ok());
    }

    proptest! {
        #[test]
        fn scan_equals_the_naive_reference_algorithm(
            texts in proptest::collection::vec(("[ab]{0,3}[a-c]{0,6}", 0i64..4), 0..14),
            threshold in prop_oneof![Just(0.5), Just(0.6), Just(0.75), Just(0.8), Just(0.9)],
            distance in 0usize..6,
        ) {
            let texts: Vec<(&str, i64)> = texts.iter().map(|(t, r)| (t.as_str(), *r)).collect();
            prop_assert_eq!(removed_ids(&texts, threshold, distance), {
                let mut v = naive(&texts, threshold, distance); v.sort(); v
            });
        }

        #[test]
        fn resemblance_scan_equals_the_naive_algorithm(
            texts in proptest::collection::vec(("(a|b|cc|d )( ?(a|b|cc|d)){0,9}", 0i64..4), 0..14),
            threshold in prop_oneof![Just(0.0), Just(0.2), Just(0.4), Just(0.6), Just(0.9)],
            n in 1usize..4,
            distance in 0usize..6,
        ) {
            let texts: Vec<(&str, i64)> = texts.iter().map(|(t, r)| (t.as_str(), *r)).collect();
            let measure = Measure::resemblance(n as i64, "").unwrap();
            let (removed, _) = scan_measured(rows(&texts), threshold, &measure, distance, &mut || false).unwrap();
            for r in &removed {
                let (a, b) = (texts[r.id as usize - 1].0, texts[r.anchor as usize - 1].0);
                let other = if r.id == r.anchor { texts[r.survivor as usize - 1].0 } else { b };
                prop_assert_eq!(r.ratio, plain_resemblance(a, other, n));
            }
            let mut ids: Vec<i64> = removed.iter().map(|r| r.id).collect();
            ids.sort();
            prop_assert_eq!(ids, {
                let mut v = naive_by(&texts, threshold, distance, |a, b| plain_resemblance(a, b, n));
                v.sort();
                v
            });
        }
    }

    #[test]
    fn resemblance_leaves_out_the_stoplist_and_bounds_by_set_sizes() {
        let measure = Measure::resemblance(2, "the").unwrap();
        let texts = [
            ("the cat sat on the mat", 1),
            ("cat sat on mat", 0),
            ("cat sat", 2),
        ];
        let (removed, stats) =
            scan_measured(rows(&texts), 0.2, &measure, 5, &mut || false).unwrap();
        // Rows 1 and 2 are one text without "the" (resemblance 1.0); row 3
        // has 1 shingle of 3 (1/3 at most, above 0.2; exactly 1/3).
        assert_eq!(
            removed
                .iter()
                .map(|r| (r.id, r.survivor, r.ratio))
                .collect::<Vec<_>>(),
            [(1, 2, 1.0), (3, 2, 1.0 / 3.0)]
        );
        // At 0.4 the sizes alone (1 of 3) rule row 3 out before comparing.
        let (_, stats_40) = scan_measured(rows(&texts), 0.4, &measure, 5, &mut || false).unwrap();
        assert_eq!(
            (stats.rejected_by_length, stats_40.rejected_by_length),
            (0, 2)
        );
    }
}
