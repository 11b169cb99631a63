//! The window scan on the thread pool, with the sequential scan's results.
//!
//! The election is sequential: whether row `i` is an anchor at all, and
//! which rows it is compared with, depends on what the anchors before it
//! removed. What a pair's bounds say does not, nor do a row's profile and
//! the reading of the rows ahead. So a round takes a chunk of anchors and
//!
//! 1. on the pool, applies the bounds to every pair of their windows whose
//!    rows are alive when the chunk starts, and prepares the profiles of the
//!    rows read in the round before, while the connection's thread (the only
//!    one that may read) reads half the next rows;
//! 2. on the connection's thread, elects the anchors in order, running the
//!    kernel on each anchor's pairs that passed the bounds and whose rows
//!    are still alive (on the pool when they are long), reading a few rows
//!    before each.
//!
//! Comparing pairs ahead of the election as well (every pair, or only those
//! no earlier anchor of the chunk could make moot, in waves or handed out as
//! verdicts arrive) was measured and lost: see docs/pipeline.md.

use std::collections::VecDeque;
use std::ops::Range;
use std::sync::Mutex;

use rayon::ThreadPool;

use crate::core::halt::Halt;
use crate::core::near_dups::{
    bounds, elect, Bounds, Prepared, Removal, ScanRow, ScanStats, PARALLEL_WORK,
};
use crate::core::parallel::map_polled_beside;
use crate::core::similarity::{indel_distance_or_halt, ratio_from_distance};

/// Pair verdicts held for one chunk, at most (a chunk is at least one anchor).
const CHUNK_PAIRS: usize = 1 << 20;
/// Anchors in a chunk, at most.
const CHUNK_ANCHORS: usize = 256;
/// Anchors, or rows to prepare, in one job on the pool.
const JOB_ROWS: usize = 8;
/// Rows read before each anchor's kernels, at most.
const READ_PER_ANCHOR: usize = 16;
/// Text bytes read ahead in one round, at most (at least one row is read).
const READ_AHEAD_BYTES: usize = 32 << 20;

/// What the bounds and the kernel said of a pair.
#[derive(Clone, Copy)]
enum Verdict {
    /// A row was a placeholder or already removed: not compared.
    Skipped,
    /// Rejected by the lengths.
    Length,
    /// Rejected by the character histograms.
    Histogram,
    /// Passed the bounds; the kernel has not run yet.
    Pass { total: usize, max: usize },
    /// Compared by the kernel: at or below the threshold.
    Far,
    /// Compared by the kernel: above the threshold, with this ratio.
    Near(f64),
}

/// Work for the pool in a round's first step.
enum Job {
    /// The bounds on these anchors' windows.
    Bound(Range<usize>),
    /// Profiles for these rows read in the round before.
    Prepare(Range<usize>),
}

/// What a first-step job returns.
enum Done {
    Bounded(Vec<Vec<Verdict>>),
    Prepared(Vec<Prepared>),
}

/// [`scan`](super::near_dups::scan) on `pool`: the same removals, in the
/// same order, and the same counters.
pub fn scan<E: From<Halt>>(
    pool: &ThreadPool,
    rows: impl IntoIterator<Item = Result<ScanRow, E>>,
    threshold: f64,
    distance: usize,
    poll: &mut dyn FnMut() -> bool,
) -> Result<(Vec<Removal>, ScanStats), E> {
    scan_in_chunks(pool, rows, threshold, distance, CHUNK_ANCHORS, poll)
}

/// [`scan`] with chunks of at most `max_anchors` anchors.
fn scan_in_chunks<E: From<Halt>>(
    pool: &ThreadPool,
    rows: impl IntoIterator<Item = Result<ScanRow, E>>,
    threshold: f64,
    distance: usize,
    max_anchors: usize,
    poll: &mut dyn FnMut() -> bool,
) -> Result<(Vec<Removal>, ScanStats), E> {
    let chunk = (CHUNK_PAIRS / distance.max(1)).clamp(1, max_anchors.max(1));
    // Prepared rows a full chunk needs: its anchors and the last one's window.
    let wanted = chunk.saturating_add(distance);
    let mut reader = ReadAhead {
        rows: rows.into_iter(),
        next: Vec::new(),
        wanted: 0,
        bytes: 0,
        exhausted: false,
        error: None,
        position: 0,
    };
    let mut window: VecDeque<Prepared> = VecDeque::new();
    let mut unprepared: Vec<(ScanRow, u64)> = Vec::new();
    let mut stats = ScanStats::default();
    let mut removed = Vec::new();
    loop {
        // The pool polls only while it waits; a round may take less.
        if poll() {
            return Err(Halt::Stopped.into());
        }
        let more = !reader.exhausted || !unprepared.is_empty();
        if window.is_empty() && !more {
            break;
        }
        // Anchors whose whole window is prepared.
        let anchors = if more {
            window.len().saturating_sub(distance)
        } else {
            window.len()
        }
        .min(chunk);
        let slots: Vec<Mutex<Option<(ScanRow, u64)>>> = unprepared
            .drain(..)
            .map(|row| Mutex::new(Some(row)))
            .collect();
        let jobs: Vec<Job> = ranges(anchors)
            .map(Job::Bound)
            .chain(ranges(slots.len()).map(Job::Prepare))
            .collect();
        let after = window.len() - anchors + slots.len();
        reader.wanted = wanted.saturating_sub(after).max(chunk);
        reader.bytes = 0;
        let w: &[Prepared] = window.make_contiguous();
        let first_step = |job: &Job, _: &dyn Fn() -> bool| {
            Ok(Some(match job {
                Job::Bound(anchors) => Done::Bounded(
                    anchors
                        .clone()
                        .map(|a| bound(w, a, distance, threshold))
                        .collect(),
                ),
                Job::Prepare(range) => Done::Prepared(
                    slots[range.clone()]
                        .iter()
                        .map(|slot| {
                            let (row, position) = slot
                                .lock()
                                .unwrap_or_else(|e| e.into_inner())
                                .take()
                                .expect("each row is prepared once");
                            Prepared::new(row, position)
                        })
                        .collect::<Result<_, Halt>>()?,
                ),
            }))
        };
        // Half the rows while the pool bounds and prepares, the rest a few
        // at a time while it runs kernels, then what is left.
        let half = reader.wanted / 2;
        let done = map_polled_beside(Some(pool), &jobs, first_step, poll, &mut || {
            reader.read(half)
        })?;
        let mut verdicts: Vec<Vec<Verdict>> = Vec::with_capacity(anchors);
        let mut prepared = Vec::with_capacity(slots.len());
        for d in done {
            match d {
                Done::Bounded(v) => verdicts.extend(v),
                Done::Prepared(p) => prepared.extend(p),
            }
        }
        elect_chunk(
            pool,
            &mut window,
            &mut verdicts,
            &mut stats,
            &mut removed,
            poll,
            &mut || reader.read(READ_PER_ANCHOR),
        )?;
        window.drain(..anchors);
        window.extend(prepared);
        unprepared = reader.take()?;
    }
    stats.rows = reader.position;
    Ok((removed, stats))
}

/// The rows read from the source ahead of the scan, a few at a time on the
/// calling thread while the pool works.
struct ReadAhead<I, E> {
    rows: I,
    /// Read in this round, in scan order, with their positions.
    next: Vec<(ScanRow, u64)>,
    /// Rows to read in this round.
    wanted: usize,
    /// Text bytes read in this round.
    bytes: usize,
    exhausted: bool,
    error: Option<E>,
    /// Rows read so far.
    position: u64,
}

impl<I: Iterator<Item = Result<ScanRow, E>>, E> ReadAhead<I, E> {
    /// Reads up to `at_most` more rows of the round's (none after an error
    /// or the last row, or past [`READ_AHEAD_BYTES`]).
    fn read(&mut self, at_most: usize) {
        let mut n = 0;
        while n < at_most
            && self.next.len() < self.wanted
            && self.bytes < READ_AHEAD_BYTES
            && !self.exhausted
            && self.error.is_none()
        {
            match self.rows.next() {
                Some(Ok(row)) => {
                    self.bytes += row.text.as_ref().map_or(0, String::len);
                    self.next.push((row, self.position));
                    self.position += 1;
                    n += 1;
                }
                Some(Err(e)) => self.error = Some(e),
                None => self.exhausted = true,
            }
        }
    }

    /// The round's rows, once every one is read; the source's error if any.
    fn take(&mut self) -> Result<Vec<(ScanRow, u64)>, E> {
        self.read(usize::MAX);
        match self.error.take() {
            Some(e) => Err(e),
            None => Ok(std::mem::take(&mut self.next)),
        }
    }
}

/// `0..n` in ranges of [`JOB_ROWS`].
fn ranges(n: usize) -> impl Iterator<Item = Range<usize>> {
    (0..n)
        .step_by(JOB_ROWS)
        .map(move |s| s..(s + JOB_ROWS).min(n))
}

/// The bounds on anchor `a`'s window (the next `distance` rows of `w`),
/// none when `a` is no longer alive.
fn bound(w: &[Prepared], a: usize, distance: usize, threshold: f64) -> Vec<Verdict> {
    let anchor = &w[a];
    if !anchor.alive {
        return Vec::new();
    }
    let end = a.saturating_add(distance).saturating_add(1).min(w.len());
    w[a + 1..end]
        .iter()
        .map(|other| {
            if !other.alive {
                return Verdict::Skipped;
            }
            match bounds(&anchor.profile, &other.profile, threshold) {
                Bounds::Length => Verdict::Length,
                Bounds::Histogram => Verdict::Histogram,
                Bounds::Pass { total, max } => Verdict::Pass { total, max },
            }
        })
        .collect()
}

/// The kernel's verdict on the pair of `w[a]` and `w[j]`.
fn compare(
    w: &[Prepared],
    a: usize,
    j: usize,
    (total, max): (usize, usize),
    stop: &dyn Fn() -> bool,
) -> Result<Verdict, Halt> {
    let (x, y) = (w[a].text.code_points(), w[j].text.code_points());
    Ok(match indel_distance_or_halt(&x, &y, max, stop)? {
        Some(d) => Verdict::Near(ratio_from_distance(d, total)),
        None => Verdict::Far,
    })
}

/// Elects the chunk's anchors (`verdicts` has one entry per anchor) in
/// order, running the kernel on each anchor's pairs that passed the bounds
/// and whose rows are still alive (on the pool when they are long, as
/// [`verify`](super::near_dups) does).
fn elect_chunk(
    pool: &ThreadPool,
    window: &mut VecDeque<Prepared>,
    verdicts: &mut [Vec<Verdict>],
    stats: &mut ScanStats,
    removed: &mut Vec<Removal>,
    poll: &mut dyn FnMut() -> bool,
    beside: &mut dyn FnMut(),
) -> Result<(), Halt> {
    let w: &[Prepared] = window.make_contiguous();
    let mut alive: Vec<bool> = w.iter().map(|p| p.alive).collect();
    for a in 0..verdicts.len() {
        if !alive[a] {
            continue;
        }
        let pairs: Vec<(usize, usize, usize)> = verdicts[a]
            .iter()
            .enumerate()
            .filter_map(|(k, v)| match *v {
                Verdict::Pass { total, max } if alive[a + 1 + k] => Some((k, total, max)),
                _ => None,
            })
            .collect();
        if !pairs.is_empty() {
            let work: usize = pairs
                .iter()
                .map(|&(_, t, m)| t.saturating_mul(m.max(1)))
                .sum();
            let on = (work >= PARALLEL_WORK).then_some(pool);
            let kernels = |&(k, total, max): &(usize, usize, usize), stop: &dyn Fn() -> bool| {
                Ok(Some((k, compare(w, a, a + 1 + k, (total, max), stop)?)))
            };
            for (k, v) in map_polled_beside(on, &pairs, kernels, poll, beside)? {
                verdicts[a][k] = v;
            }
        }
        elect_anchor(w, &mut alive, a, &verdicts[a], stats, removed);
    }
    for (row, alive) in window.iter_mut().zip(alive) {
        row.alive = alive;
    }
    Ok(())
}

/// The election of anchor `a` from its verdicts, as the sequential scan
/// holds it: only pairs whose rows are both still alive count (the kernel
/// has run on every such pair that passed the bounds).
fn elect_anchor(
    w: &[Prepared],
    alive: &mut [bool],
    a: usize,
    verdicts: &[Verdict],
    stats: &mut ScanStats,
    removed: &mut Vec<Removal>,
) {
    if !alive[a] {
        return;
    }
    let mut near = Vec::new();
    for (k, verdict) in verdicts.iter().enumerate() {
        let j = a + 1 + k;
        if !alive[j] {
            continue;
        }
        stats.pairs += 1;
        match *verdict {
            Verdict::Skipped | Verdict::Pass { .. } => {
                unreachable!("a pair of live rows was bounded, and compared if it passed")
            }
            Verdict::Length => stats.rejected_by_length += 1,
            Verdict::Histogram => stats.rejected_by_histogram += 1,
            Verdict::Far => stats.levenshtein += 1,
            Verdict::Near(ratio) => {
                stats.levenshtein += 1;
                stats.matches += 1;
                near.push((j, ratio));
            }
        }
    }
    let member = |k: usize| (w[k].id, w[k].rank, w[k].position);
    for k in elect(a, &near, member, removed) {
        alive[k] = false;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::near_dups::scan_on;
    use crate::core::parallel::build;
    use proptest::prelude::*;

    fn rows(texts: &[(Option<String>, i64)]) -> Vec<Result<ScanRow, Halt>> {
        texts
            .iter()
            .enumerate()
            .map(|(i, (text, rank))| {
                Ok(ScanRow {
                    id: i as i64 + 1,
                    rank: *rank,
                    text: text.clone(),
                })
            })
            .collect()
    }

    fn text() -> impl Strategy<Value = Option<String>> {
        prop_oneof![
            1 => Just(None),
            8 => "[ab]{0,3}[a-c]{0,6}".prop_map(Some),
            1 => "[aé]{0,4}[ab]{0,4}".prop_map(Some),
        ]
    }

    proptest! {
        #[test]
        fn chunks_ahead_give_the_sequential_removals_in_order_and_counters(
            texts in proptest::collection::vec((text(), 0i64..4), 0..40),
            threshold in prop_oneof![Just(0.5), Just(0.6), Just(0.75), Just(0.9)],
            distance in 1usize..12,
            max_anchors in 1usize..9,
        ) {
            let pool = build(Some(2), false).unwrap();
            let expected = scan_on(None, rows(&texts), threshold, distance, &mut || false).unwrap();
            let got = scan_in_chunks(&pool, rows(&texts), threshold, distance, max_anchors, &mut || false)
                .unwrap();
            prop_assert_eq!(&got.0, &expected.0);
            prop_assert_eq!(got.1, expected.1);
        }
    }

    #[test]
    fn a_row_removed_earlier_in_the_chunk_is_not_elected_again() {
        // At 0.4: the third text is near both others (ratio 0.5 each), which
        // are not near each other. The first anchor removes it; the second,
        // compared with it by the pool before that, must not see it.
        let texts: Vec<(Option<String>, i64)> = ["aaaaaaaaaa", "bbbbbbbbbb", "aaaaabbbbb"]
            .iter()
            .enumerate()
            .map(|(i, t)| (Some(t.to_string()), i as i64))
            .collect();
        let pool = build(Some(2), false).unwrap();
        let (removed, stats) =
            scan_in_chunks(&pool, rows(&texts), 0.4, 4, 8, &mut || false).unwrap();
        assert_eq!(
            removed,
            vec![Removal {
                id: 3,
                survivor: 1,
                anchor: 1,
                ratio: 0.5
            }]
        );
        // Pairs (1,2) (1,3) (2,3 is moot): two counted, one near.
        assert_eq!((stats.pairs, stats.matches), (2, 1));
    }

    #[test]
    fn an_error_from_the_source_or_a_poll_stops_the_scan() {
        let pool = build(Some(2), false).unwrap();
        let mut source: Vec<Result<ScanRow, Halt>> = rows(&vec![(Some("abc".to_string()), 0); 600]);
        source.push(Err(Halt::OutOfMemory));
        let r = scan(&pool, source, 0.5, 3, &mut || false);
        assert_eq!(r.unwrap_err(), Halt::OutOfMemory);
        let r = scan(
            &pool,
            rows(&vec![(Some("abc".repeat(4000)), 0); 600]),
            0.99,
            50,
            &mut || true,
        );
        assert_eq!(r.unwrap_err(), Halt::Stopped);
    }
}
