//! The near-duplicate window scan: the reference's sequential greedy
//! algorithm, made fast with exact filters and parallel comparisons.
//!
//! Rows arrive in scan order (the pipeline sorts them by canonical URL). For
//! each live row `i`, every live row among the next `distance` rows whose
//! Levenshtein ratio with `i` is strictly above `threshold` joins a group with
//! `i`; the group's best row (lowest `rank`, then earliest position) survives
//! and the others are removed. Then the scan moves to `i + 1`.
//!
//! The election is sequential, so results never depend on the thread
//! count; on a pool, the comparisons of a chunk of anchors run ahead of it
//! (`scan_ahead`). Before any
//! Levenshtein work a pair must pass two exact lower bounds of the indel
//! distance (length difference, character histograms); the Levenshtein
//! kernel itself stops at the largest distance that can still exceed the
//! threshold. Memory holds the window, not the table.

use std::borrow::Cow;
use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use crate::core::candidates::Candidates;
use crate::core::halt::{try_collect, Halt};
use crate::core::parallel::{map_polled, pool};
use crate::core::similarity::{
    max_distance_where, ratio_from_distance, CharHistogram, CodePoints, Compared, IndelQuery,
};

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
    /// Pairs that reached the Levenshtein kernel.
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
/// its character histogram.
#[derive(Clone)]
pub(super) struct Profile {
    len: usize,
    histogram: CharHistogram,
    settled: Option<i64>,
}

impl Profile {
    fn new(text: &Text, settled: Option<i64>) -> Self {
        Profile {
            len: text.wide.as_ref().map_or(text.text.len(), Vec::len),
            histogram: CharHistogram::new(&text.text),
            settled,
        }
    }
}

/// A text ready for the kernel.
pub(super) struct Text {
    text: String,
    wide: Option<Vec<char>>,
}

impl Text {
    fn new(text: String) -> Result<Self, Halt> {
        let wide = if text.is_ascii() {
            None
        } else {
            Some(try_collect(text.chars().count(), text.chars())?)
        };
        Ok(Text { text, wide })
    }

    /// Memory held, in bytes.
    fn bytes(&self) -> usize {
        self.text.len() + self.wide.as_ref().map_or(0, |w| w.len() * 4)
    }

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
        let alive = row.text.is_some();
        let text = Text::new(row.text.unwrap_or_default())?;
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
pub fn validate(threshold: f64, distance: i64) -> Result<(), String> {
    if !(0.0..=1.0).contains(&threshold) {
        return Err(format!("threshold must be in [0.0, 1.0], got {threshold}"));
    }
    if distance < 0 {
        return Err(format!(
            "distance must be a non-negative integer, got {distance}"
        ));
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
                    window.push_back(Prepared::new(row?, stats.rows)?);
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

/// What the pair scan knows of a row.
enum Known {
    Unread,
    Placeholder,
    Live(Box<Profile>),
    /// Behind the scan or removed: never compared again.
    Passed,
}

/// Runs the same election over candidate pairs instead of a window: `rows`
/// (`id`, `rank`) are in scan order and each live row is compared with the
/// live rows after it that `candidates` hands out for it. With every pair
/// within `distance` rows this is [`scan`]; with every pair of the table it
/// is the window scan with an unbounded window. Texts are read on demand
/// through `text` (index -> text, `None` for a placeholder): each row once
/// for its length and histogram, then again only for pairs the exact
/// filters let through (once when they are still cached). Memory holds the
/// candidates, a profile per row read and not yet passed by the scan (nor
/// removed), their texts up to 64 MiB, and one group's texts.
/// Stops as [`scan`] does.
pub fn scan_pairs<E: From<Halt>>(
    rows: &[(i64, i64)],
    candidates: impl Candidates,
    threshold: f64,
    text: impl FnMut(usize) -> Result<Option<String>, E>,
    poll: &mut dyn FnMut() -> bool,
) -> Result<(Vec<Removal>, ScanStats), E> {
    scan_pairs_with(rows, candidates, threshold, Election::Chain, text, poll)
}

/// How a group's winner removes the other rows of its group.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Election {
    /// As the reference's window scan: every row near the anchor goes to
    /// the group's best row, which a later group may remove in turn: a
    /// removed row's final survivor can drift below the threshold.
    Chain,
    /// No drift: a row goes only to a winner it is itself verified near
    /// (the kernel compares it with the winner when the winner is not the
    /// anchor), and a winner is never removed afterwards. So every removed
    /// row's final survivor is its survivor, above the threshold. With the
    /// rows scanned in election order ([`election_order`]) every anchor
    /// still standing wins over each later row verified near it (greedy
    /// stars, best rank first), so no two survivors are a near candidate
    /// pair: a second run over the survivors removes nothing.
    Direct,
}

/// The rows' indices in election order: by rank, then by index (scan
/// order). [`Election::Direct`] scans rows in this order.
///
/// ```
/// use dedup::core::near_dups::election_order;
/// assert_eq!(election_order(&[(10, 3), (11, 1), (12, 3), (13, 2)]), [1, 3, 0, 2]);
/// ```
pub fn election_order(rows: &[(i64, i64)]) -> Vec<usize> {
    let mut order: Vec<usize> = (0..rows.len()).collect();
    order.sort_by_key(|&k| (rows[k].1, k));
    order
}

/// [`scan_pairs`] with the election chosen.
pub fn scan_pairs_with<E: From<Halt>>(
    rows: &[(i64, i64)],
    mut candidates: impl Candidates,
    threshold: f64,
    election: Election,
    mut text: impl FnMut(usize) -> Result<Option<String>, E>,
    poll: &mut dyn FnMut() -> bool,
) -> Result<(Vec<Removal>, ScanStats), E> {
    let mut pinned = vec![
        false;
        if election == Election::Direct {
            rows.len()
        } else {
            0
        }
    ];
    let mut alive = vec![true; rows.len()];
    let mut known: Vec<Known> = (0..rows.len()).map(|_| Known::Unread).collect();
    let mut stats = ScanStats {
        rows: rows.len() as u64,
        ..ScanStats::default()
    };
    let mut removed = Vec::new();
    // Texts read for this group and kept for the next ones, by row index.
    let mut texts = TextCache::default();
    let mut later = Vec::new();
    for i in 0..rows.len() {
        if i > 0 {
            // No later anchor compares an earlier row: its profile and text go.
            known[i - 1] = Known::Passed;
            texts.remove(i - 1);
        }
        if !alive[i] {
            continue;
        }
        later.clear();
        candidates.later(i, &mut later);
        later.sort_unstable();
        later.dedup();
        later.retain(|&j| alive[j]);
        if later.is_empty() {
            continue;
        }
        texts.trim();
        if !read_profile(i, &mut known, &mut texts, &mut text)? {
            alive[i] = false;
            continue;
        }
        let mut candidates = Vec::new();
        for &j in &later {
            if !read_profile(j, &mut known, &mut texts, &mut text)? {
                alive[j] = false;
                continue;
            }
            let (Known::Live(a), Known::Live(b)) = (&known[i], &known[j]) else {
                unreachable!("both rows were just read as live");
            };
            // (A text the bounds reject stays cached: a later anchor may need it.)
            if let Some((total, max)) = within_bounds(a, b, threshold, &mut stats) {
                candidates.push((j, total, max));
            }
        }
        if candidates.is_empty() {
            continue;
        }
        for k in std::iter::once(i).chain(candidates.iter().map(|c| c.0)) {
            if !texts.has(k) {
                // A row read live earlier: its text was let go.
                texts.insert(k, Text::new(text(k)?.unwrap_or_default())?);
            }
        }
        let near = verify(
            texts.get(i),
            &candidates,
            |j| texts.get(j),
            &mut stats,
            poll,
        )?;
        let member = |k: usize| (rows[k].0, rows[k].1, k as u64);
        let gone = match election {
            Election::Chain => elect(i, &near, member, &mut removed),
            Election::Direct => {
                let profile = |k: usize| match &known[k] {
                    Known::Live(p) => Some(p.as_ref()),
                    _ => None,
                };
                let near_best = |m: usize, best: usize, stats: &mut ScanStats| {
                    near_pair(
                        texts.get(m),
                        texts.get(best),
                        (profile(m), profile(best)),
                        threshold,
                        stats,
                        poll,
                    )
                };
                elect_direct(
                    i,
                    &near,
                    member,
                    &mut pinned,
                    near_best,
                    &mut stats,
                    &mut removed,
                )?
            }
        };
        for k in gone {
            alive[k] = false;
            known[k] = Known::Passed;
            texts.remove(k);
        }
    }
    Ok((removed, stats))
}

/// The ratio of two texts if above `threshold` (the exact bounds first,
/// then the kernel), counted in `stats`.
fn near_pair(
    a: &Text,
    b: &Text,
    profiles: (Option<&Profile>, Option<&Profile>),
    threshold: f64,
    stats: &mut ScanStats,
    poll: &mut dyn FnMut() -> bool,
) -> Result<Option<f64>, Halt> {
    let (Some(pa), Some(pb)) = profiles else {
        return Ok(None);
    };
    let Some((total, max)) = within_bounds(pa, pb, threshold, stats) else {
        return Ok(None);
    };
    let near = verify(b, &[(0, total, max)], |_| a, stats, poll)?;
    Ok(near.first().map(|&(_, r)| r))
}

/// [`Election::Direct`]: the best row of the anchor's group (by rank, then
/// position) wins and is pinned; every other row of the group goes to it
/// only when verified near it (rows near the anchor are, when the anchor
/// wins; otherwise `near_best` compares them), and pinned rows stay.
/// Returns the rows removed.
fn elect_direct(
    anchor: usize,
    near: &[(usize, f64)],
    member: impl Fn(usize) -> (i64, i64, u64),
    pinned: &mut [bool],
    mut near_best: impl FnMut(usize, usize, &mut ScanStats) -> Result<Option<f64>, Halt>,
    stats: &mut ScanStats,
    removed: &mut Vec<Removal>,
) -> Result<Vec<usize>, Halt> {
    if near.is_empty() {
        return Ok(Vec::new());
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
    pinned[best] = true;
    let survivor = member(best).0;
    let anchor_id = member(anchor).0;
    let with_anchor = |k: usize| near.iter().find(|(j, _)| *j == k).map(|&(_, r)| r);
    let mut out = Vec::with_capacity(near.len());
    for m in std::iter::once(anchor).chain(near.iter().map(|&(j, _)| j)) {
        if m == best || pinned[m] {
            continue;
        }
        let ratio = if best == anchor {
            with_anchor(m)
        } else if m == anchor {
            with_anchor(best)
        } else {
            near_best(m, best, stats)?
        };
        if let Some(ratio) = ratio {
            removed.push(Removal {
                id: member(m).0,
                survivor,
                anchor: anchor_id,
                ratio,
            });
            out.push(m);
        }
    }
    Ok(out)
}

/// Bytes of text the pair scan keeps between groups.
const TEXT_CACHE_BYTES: usize = 64 << 20;

/// Texts of rows ahead of the pair scan, kept while they fit in
/// [`TEXT_CACHE_BYTES`]: a row read for its profile or compared with one
/// anchor is often compared with later anchors of its group of near-copies
/// (on 100k pages: 46k reads instead of 144k).
#[derive(Default)]
struct TextCache {
    texts: HashMap<usize, Text>,
    bytes: usize,
}

impl TextCache {
    fn has(&self, k: usize) -> bool {
        self.texts.contains_key(&k)
    }

    fn get(&self, k: usize) -> &Text {
        &self.texts[&k]
    }

    fn insert(&mut self, k: usize, text: Text) {
        self.bytes += text.bytes();
        if let Some(old) = self.texts.insert(k, text) {
            self.bytes -= old.bytes();
        }
    }

    fn remove(&mut self, k: usize) {
        if let Some(old) = self.texts.remove(&k) {
            self.bytes -= old.bytes();
        }
    }

    /// Empties the cache when it holds more than its budget (between
    /// groups: one group's texts may exceed it).
    fn trim(&mut self) {
        if self.bytes > TEXT_CACHE_BYTES {
            self.texts.clear();
            self.bytes = 0;
        }
    }
}

/// Reads row `k`'s profile if it is not known yet, keeping its text in
/// `texts` for the group. False for a placeholder.
fn read_profile<E: From<Halt>>(
    k: usize,
    known: &mut [Known],
    texts: &mut TextCache,
    text: &mut impl FnMut(usize) -> Result<Option<String>, E>,
) -> Result<bool, E> {
    if let Known::Unread = known[k] {
        known[k] = match text(k)? {
            Some(t) => {
                let t = Text::new(t)?;
                let profile = Profile::new(&t, None);
                texts.insert(k, t);
                Known::Live(Box::new(profile))
            }
            None => Known::Placeholder,
        };
    }
    Ok(matches!(known[k], Known::Live(_)))
}

/// Counts the pair and applies the exact bounds (length, then histogram):
/// `Some((total length, largest indel distance still above the threshold))`
/// when the pair may be near, `None` when it cannot.
fn within_bounds(
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

/// The exact bounds (length, then histogram) on a pair.
pub(super) fn bounds(a: &Profile, b: &Profile, threshold: f64) -> Bounds {
    if a.settled.is_some() && a.settled == b.settled {
        return Bounds::Settled;
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
    let max = max_distance_where(total, |r| r > threshold)?;
    (a.abs_diff(b) <= max).then_some((total, max))
}

/// Kernel work (total length times the distance band, summed over a
/// window's candidates) from which the window's kernels run on the pool.
pub(super) const PARALLEL_WORK: usize = 1 << 26;

/// Runs the kernel on the candidates `(key, total, max)` that passed the
/// bounds, in parallel when there are several: the keys and ratios of those
/// above the threshold, in candidate order.
fn verify<'t>(
    anchor: &Text,
    candidates: &[(usize, usize, usize)],
    text: impl Fn(usize) -> &'t Text + Sync,
    stats: &mut ScanStats,
    poll: &mut dyn FnMut() -> bool,
) -> Result<Vec<(usize, f64)>, Halt> {
    stats.levenshtein += candidates.len() as u64;
    if candidates.is_empty() {
        return Ok(Vec::new());
    }
    let a = anchor.code_points();
    // The anchor's table is built once for all its candidates.
    let a = IndelQuery::new(&a)?;
    let too_long = AtomicU64::new(0);
    let compare = |&(j, total, max): &(usize, usize, usize), stop: &dyn Fn() -> bool| {
        Ok(
            match a.compare_or_halt(&text(j).code_points(), max, stop)? {
                Compared::Within(d) => Some((j, ratio_from_distance(d, total))),
                Compared::Beyond => None,
                Compared::TooLong => {
                    too_long.fetch_add(1, Ordering::Relaxed);
                    None
                }
            },
        )
    };
    // Waking the pool costs more than a few kernels on page-sized texts
    // (measured: 1.35x slower at 100k pages); it pays for long texts.
    let work: usize = candidates
        .iter()
        .map(|&(_, total, max)| total.saturating_mul(max.max(1)))
        .sum();
    let pool = if work >= PARALLEL_WORK { pool() } else { None };
    let near = map_polled(pool, candidates, compare, poll)?;
    stats.matches += near.len() as u64;
    stats.too_long += too_long.into_inner();
    Ok(near)
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
mod tests {
    use super::*;
    use crate::core::candidates::PairList;
    use crate::core::similarity::lev_ratio;
    use proptest::prelude::*;

    fn rows(texts: &[(&str, i64)]) -> Vec<Result<ScanRow, Halt>> {
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
        let n = texts.len();
        let mut keep = vec![true; n];
        for i in 0..n {
            if !keep[i] {
                continue;
            }
            let near: Vec<usize> = (i + 1..n.min(i + distance + 1))
                .filter(|&j| keep[j] && lev_ratio(texts[i].0, texts[j].0) > threshold)
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
            validate(1.5, 3).unwrap_err(),
            "threshold must be in [0.0, 1.0], got 1.5"
        );
        assert_eq!(
            validate(0.5, -1).unwrap_err(),
            "distance must be a non-negative integer, got -1"
        );
        assert!(validate(1.0, 0).is_ok());
    }

    fn candidates(rows: usize, pairs: &[(usize, usize)]) -> PairList {
        let mut c = PairList::new(rows);
        for &(a, b) in pairs {
            c.add(a, b);
        }
        c
    }

    fn pair_rows(texts: &[(&str, i64)]) -> Vec<(i64, i64)> {
        texts
            .iter()
            .enumerate()
            .map(|(i, (_, rank))| (i as i64 + 1, *rank))
            .collect()
    }

    fn scan_texts_by_pairs(
        texts: &[(&str, i64)],
        pairs: &[(usize, usize)],
        threshold: f64,
    ) -> (Vec<Removal>, ScanStats) {
        scan_pairs(
            &pair_rows(texts),
            candidates(texts.len(), pairs),
            threshold,
            |k| Ok::<_, Halt>(Some(texts[k].0.to_string())),
            &mut || false,
        )
        .unwrap()
    }

    #[test]
    fn pairs_reach_rows_any_distance_apart() {
        let texts = [
            ("syndicated article text", 1),
            ("unrelated words", 0),
            ("another page", 0),
            ("syndicated article text!", 0),
        ];
        assert!(removed_ids(&texts, 0.9, 2).is_empty());
        let (removed, stats) = scan_texts_by_pairs(&texts, &[(3, 0), (0, 3), (1, 2)], 0.9);
        assert_eq!(
            removed,
            vec![Removal {
                id: 1,
                survivor: 4,
                anchor: 1,
                ratio: lev_ratio(texts[0].0, texts[3].0)
            }]
        );
        // The repeated pair is compared once; the unrelated pair is rejected.
        assert_eq!((stats.pairs, stats.matches), (2, 1));
    }

    #[test]
    fn pairs_skip_placeholders_and_removed_rows_and_pass_errors_on() {
        let rows = [(1, 0), (2, 1), (3, 2)];
        let texts = [Some("same text"), None, Some("same text")];
        let mut reads = Vec::new();
        let (removed, stats) = scan_pairs(
            &rows,
            candidates(3, &[(0, 1), (1, 2), (0, 2)]),
            0.9,
            |k| {
                reads.push(k);
                Ok::<_, Halt>(texts[k].map(String::from))
            },
            &mut || false,
        )
        .unwrap();
        assert_eq!(removed.iter().map(|r| r.id).collect::<Vec<_>>(), vec![3]);
        assert_eq!(stats.pairs, 1);
        // Row 2 (index 1) is a placeholder: read once, never compared again.
        assert_eq!(reads, vec![0, 1, 2]);
        let failing = scan_pairs(
            &rows,
            candidates(3, &[(0, 2)]),
            0.9,
            |_| Err::<Option<String>, _>(Halt::Stopped),
            &mut || false,
        );
        assert_eq!(failing.unwrap_err(), Halt::Stopped);
    }

    #[test]
    fn pair_scan_reads_each_text_once_when_the_bounds_decide() {
        let texts = ["aaaa bbbb cccc", "zz", "aaaa bbbb cccd", "q", "zy"];
        let rows: Vec<(i64, i64)> = (0..5).map(|i| (i + 1, 0)).collect();
        let all: Vec<(usize, usize)> = (0..5)
            .flat_map(|i| (i + 1..5).map(move |j| (i, j)))
            .collect();
        let mut reads = vec![0; 5];
        let (removed, stats) = scan_pairs(
            &rows,
            candidates(5, &all),
            0.9,
            |k| {
                reads[k] += 1;
                Ok::<_, Halt>(Some(texts[k].to_string()))
            },
            &mut || false,
        )
        .unwrap();
        assert_eq!(removed.iter().map(|r| r.id).collect::<Vec<_>>(), vec![3]);
        // Rows 0 and 2 reach the kernel while their texts are still held;
        // rows 1 and 4 meet again as anchor and neighbour after their texts
        // were dropped: the profiles decide without reading them.
        assert_eq!(reads, vec![1, 1, 1, 1, 1]);
        // 10 pairs, less the three row 2 would join after its removal.
        assert_eq!((stats.pairs, stats.levenshtein, stats.matches), (7, 1, 1));
    }

    #[test]
    fn a_text_the_bounds_rejected_is_not_read_again_for_a_later_anchor() {
        let texts = ["zzzzzzzz", "abcdefgh", "abcdefgx"];
        let rows: Vec<(i64, i64)> = (0..3).map(|i| (i + 1, 0)).collect();
        let mut reads = vec![0; 3];
        let (removed, stats) = scan_pairs(
            &rows,
            candidates(3, &[(0, 2), (1, 2)]),
            0.8,
            |k| {
                reads[k] += 1;
                Ok::<_, Halt>(Some(texts[k].to_string()))
            },
            &mut || false,
        )
        .unwrap();
        // Row 2 is read with anchor 0 (rejected by the histogram), then
        // compared by the kernel with anchor 1 from the cache.
        assert_eq!((stats.rejected_by_histogram, stats.levenshtein), (1, 1));
        // Equal ranks: the earlier row (id 2) survives.
        assert_eq!(
            removed
                .iter()
                .map(|r| (r.id, r.survivor))
                .collect::<Vec<_>>(),
            vec![(3, 2)]
        );
        assert_eq!(reads, vec![1, 1, 1]);
    }

    proptest! {
        #[test]
        fn pairs_within_the_distance_give_the_window_scan(
            texts in proptest::collection::vec(("[ab]{0,3}[a-c]{0,6}", 0i64..4), 0..14),
            threshold in prop_oneof![Just(0.5), Just(0.6), Just(0.75), Just(0.8), Just(0.9)],
            distance in 0usize..16,
        ) {
            let texts: Vec<(&str, i64)> = texts.iter().map(|(t, r)| (t.as_str(), *r)).collect();
            let n = texts.len();
            // Listed from the far end, both orders: the scan must not depend on it.
            let pairs: Vec<(usize, usize)> = (0..n)
                .flat_map(|i| (i + 1..n.min(i + distance + 1)).map(move |j| (j, i)))
                .rev()
                .chain((0..n).filter(|i| i % 3 == 0).map(|i| (i, n.min(i + distance + 1) - 1)))
                .filter(|(a, b)| a != b)
                .collect();
            let expected = scan_sequential(rows(&texts), threshold, distance, &mut || false).unwrap().0;
            prop_assert_eq!(scan_texts_by_pairs(&texts, &pairs, threshold).0, expected);
        }
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
    }

    proptest! {
        /// The direct election never drifts: every removed row's survivor
        /// stays (so it is the final survivor), and their ratio (by
        /// lev_ratio, itself tested against python-Levenshtein) is above the
        /// threshold and is the ratio reported. (The chain election fails
        /// this: checked by running it with Election::Chain.)
        #[test]
        fn the_direct_election_keeps_every_removed_row_near_its_final_survivor(
            texts in proptest::collection::vec(("[ab]{0,3}[a-c]{0,6}", 0i64..4), 0..14),
            threshold in prop_oneof![Just(0.5), Just(0.6), Just(0.75), Just(0.8), Just(0.9)],
            density in 1usize..4,
        ) {
            let texts: Vec<(&str, i64)> = texts.iter().map(|(t, r)| (t.as_str(), *r)).collect();
            let n = texts.len();
            let pairs: Vec<(usize, usize)> = (0..n)
                .flat_map(|i| (i + 1..n).map(move |j| (i, j)))
                .filter(|(i, j)| (i + j) % density == 0)
                .collect();
            let (removed, _) = scan_pairs_with(
                &pair_rows(&texts),
                candidates(n, &pairs),
                threshold,
                Election::Direct,
                |k| Ok::<_, Halt>(Some(texts[k].0.to_string())),
                &mut || false,
            )
            .unwrap();
            let gone: std::collections::HashSet<i64> = removed.iter().map(|r| r.id).collect();
            for r in &removed {
                prop_assert!(!gone.contains(&r.survivor), "survivor {} was removed too", r.survivor);
                let (a, b) = (texts[r.id as usize - 1].0, texts[r.survivor as usize - 1].0);
                let ratio = crate::core::similarity::lev_ratio(a, b);
                prop_assert!(ratio > threshold && (ratio - r.ratio).abs() < 1e-12, "{:?} {} {}", r, ratio, threshold);
            }
        }
    }
}
