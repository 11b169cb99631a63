//! The window scan on the thread pool, with the sequential scan's results.
//!
//! The election is sequential: whether row `i` is an anchor at all, and
//! which rows it is compared with, depends on what the anchors before it
//! removed. What the bounds and the kernel say of a pair does not, nor do a
//! row's profile and the reading of the rows ahead. So the scan takes the
//! anchors a chunk at a time. In each round the connection's thread (the
//! only one that may read) reads the next rows, and then it and the pool's
//! threads share the round's jobs ([`share_beside`]):
//!
//! 1. the election of the chunk speculated on in the round before;
//! 2. the *speculation* on this round's chunk: each job takes a run of its
//!    anchors and elects them as the sequential scan would if no row had
//!    been removed but those removed when the job starts and by the job's
//!    own anchors, recording the bounds on every pair and the kernel's
//!    verdict on every pair that election compares;
//! 3. the profiles of the rows read in the round before.
//!
//! A few anchors of long pages hold most of the kernel's work on some
//! corpora. A job comparing such an anchor posts its pairs on the round's
//! [`Board`], and a thread left without a job helps with them
//! ([`map_shared`]) instead of waiting at the end of the round (handing
//! them to the crate's pool instead put four threads on two cores:
//! benches/results/design-measurements.md, "Helping with shared pairs").
//!
//! The election proper then uses the verdicts it needs and runs the kernel
//! on the few pairs the speculation did not compare (a job did not know of
//! a removal the election made, or made one the election did not): few, and
//! the speculation compares few more pairs than the election needs (the
//! same page). A verdict is a fact about its pair, so the removals
//! are the sequential scan's whatever the speculation guessed.
//!
//! Comparing pairs ahead without electing (every pair, or only those no
//! earlier anchor of the chunk could make moot, in waves or handed out as
//! verdicts arrive) was measured and lost: see docs/pipeline.md.
//!
//! Cost: the sequential scan's comparisons, spread over the pool's threads,
//! plus the speculated elections that a removal before them undid (done
//! again, rarely).
//!
//! Reference: the sequential scan, [`crate::core::near_dups::scan_sequential`],
//! whose results it gives (tested on every thread count).

use std::ops::Range;
use std::sync::Mutex;

use rayon::ThreadPool;

use crate::core::halt::Halt;
use crate::core::near_dups::{
    bounds, elect, Bounds, Prepared, Removal, ScanRow, ScanStats, PARALLEL_WORK,
};
use crate::core::parallel::{map_polled, map_shared, polling, share_beside, Board};
use crate::core::pools::pool;
use crate::core::similarity::{ratio_from_distance, Compared};

/// Pair verdicts held for one chunk, at most (a chunk is at least one anchor).
const CHUNK_PAIRS: usize = 1 << 20;
/// Anchors in a chunk, at most.
const CHUNK_ANCHORS: usize = 1024;
/// Anchors in one speculation job: the fewer jobs, the fewer pairs compared
/// that an earlier job's anchors made moot; the more, the better the
/// threads share the work.
const SPECULATE_ROWS: usize = 64;
/// Rows to prepare in one job.
const PREPARE_ROWS: usize = 8;
/// An anchor's kernel work (as [`PARALLEL_WORK`] counts it) from which the
/// threads with no job left help with it.
const SHARE_WORK: usize = 1 << 22;
/// Text bytes read ahead in one round, at most (at least one row is read).
const READ_AHEAD_BYTES: usize = 32 << 20;

/// What the bounds and the kernel said of a pair.
#[derive(Clone, Copy)]
enum Verdict {
    /// A row was a placeholder or already removed: not compared.
    Skipped,
    /// Both rows settled in one group: known apart.
    Settled,
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
    /// Too long to decide within the bound on one pair's work: kept apart.
    TooLong,
}

/// Work for the pool in a round.
enum Job {
    /// Elect the pending chunk (first in a round, so that the connection's
    /// thread only reads while the others work).
    Elect,
    /// Speculate on these anchors.
    Speculate(Range<usize>),
    /// Profiles for these rows read in the round before.
    Prepare(Range<usize>),
    /// Drop the rows and verdicts of the election of the round before
    /// (last, to fill the round's end).
    Retire,
}

/// The verdicts of a run of consecutive anchors, one list per anchor, in
/// one buffer: an allocation per job, not per anchor (freeing thousands of
/// lists on the thread that did not allocate them contended for the
/// allocator's lock).
#[derive(Default)]
struct Verdicts {
    pairs: Vec<Verdict>,
    /// Where each anchor's list ends in `pairs`.
    ends: Vec<usize>,
}

impl Verdicts {
    /// Each anchor's list, in order.
    fn iter(&self) -> impl Iterator<Item = &[Verdict]> {
        self.ends.iter().scan(0, |start, &end| {
            let list = &self.pairs[*start..end];
            *start = end;
            Some(list)
        })
    }
}

/// The round's [`Board`], on which a job posts the pairs of an anchor whose
/// kernel work is at least `from_work`.
#[derive(Clone, Copy)]
struct Share<'b, 'w> {
    board: &'b Board<'w>,
    from_work: usize,
}

/// What a job returns.
enum Done {
    Elected,
    Speculated(Verdicts),
    Prepared(Vec<Prepared>),
    Retired,
}

/// [`scan`](super::window_scan::scan) on `pool`: the same removals, in the
/// same order, and the same counters.
pub fn scan<E: From<Halt>>(
    pool: &ThreadPool,
    rows: impl IntoIterator<Item = Result<ScanRow, E>>,
    threshold: f64,
    distance: usize,
    poll: &mut dyn FnMut() -> bool,
) -> Result<(Vec<Removal>, ScanStats), E> {
    let sizes = (CHUNK_ANCHORS, SPECULATE_ROWS, SHARE_WORK);
    scan_in_chunks(pool, rows, threshold, distance, sizes, poll)
}

/// [`scan`] with chunks of at most `max_anchors` anchors, speculated on
/// `speculate_rows` at a time, an anchor's pairs shared from `share_work`.
fn scan_in_chunks<E: From<Halt>>(
    pool: &ThreadPool,
    rows: impl IntoIterator<Item = Result<ScanRow, E>>,
    threshold: f64,
    distance: usize,
    (max_anchors, speculate_rows, share_work): (usize, usize, usize),
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
    // The window starts with the anchors of the chunk speculated on in the
    // round before, whose election is pending (one verdict list each, a
    // `Verdicts` per job). What the last election is done with is dropped
    // by a job of the next round, which leaves its buffer for the next
    // window (no allocation, and no copy of the rows when a ring wraps).
    let mut window: Vec<Prepared> = Vec::new();
    let mut retired: (Vec<Prepared>, Vec<Verdicts>) = Default::default();
    let mut pending: Vec<Verdicts> = Vec::new();
    let mut unprepared: Vec<(ScanRow, u64)> = Vec::new();
    let mut stats = ScanStats::default();
    let mut removed = Vec::new();
    loop {
        if poll() {
            return Err(Halt::Stopped.into());
        }
        let more = !reader.exhausted || !unprepared.is_empty();
        let held: usize = pending.iter().map(|v| v.ends.len()).sum();
        if window.len() == held && !more {
            let w: &[Prepared] = &window;
            let stop = polling(poll);
            elect_pending(w, &pending, &mut stats, &mut removed, None, &stop)?;
            break;
        }
        // Anchors to speculate on whose whole window is prepared.
        let ahead = window.len() - held;
        let anchors = if more {
            ahead.saturating_sub(distance)
        } else {
            ahead
        }
        .min(chunk);
        let slots: Vec<Mutex<Option<(ScanRow, u64)>>> = unprepared
            .drain(..)
            .map(|row| Mutex::new(Some(row)))
            .collect();
        let elect = (held > 0).then_some(Job::Elect);
        let jobs: Vec<Job> = elect
            .into_iter()
            .chain(guided(held..held + anchors, speculate_rows.max(1)).map(Job::Speculate))
            .chain(ranges(0..slots.len(), PREPARE_ROWS).map(Job::Prepare))
            .chain((!retired.0.is_empty()).then_some(Job::Retire))
            .collect();
        let retire = Mutex::new(std::mem::take(&mut retired));
        let after = ahead - anchors + slots.len();
        reader.wanted = wanted.saturating_sub(after).max(chunk);
        reader.bytes = 0;
        let w: &[Prepared] = &window;
        let tally = Mutex::new((std::mem::take(&mut stats), std::mem::take(&mut removed)));
        let board = Board::default();
        let share = Share {
            board: &board,
            from_work: share_work,
        };
        let job = |job: &Job, stop: &dyn Fn() -> bool| {
            Ok(Some(match job {
                Job::Elect => {
                    let mut tally = tally.lock().unwrap_or_else(|e| e.into_inner());
                    let (stats, removed) = &mut *tally;
                    elect_pending(w, &pending, stats, removed, Some(share), stop)?;
                    Done::Elected
                }
                Job::Speculate(anchors) => Done::Speculated(speculate(
                    w,
                    anchors.clone(),
                    (distance, threshold),
                    share,
                    stop,
                )?),
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
                Job::Retire => {
                    let mut retire = retire.lock().unwrap_or_else(|e| e.into_inner());
                    retire.0.clear();
                    retire.1 = Vec::new();
                    Done::Retired
                }
            }))
        };
        // The connection's thread reads the next rows, then takes jobs too.
        let done = share_beside(pool, &jobs, job, &board, poll, &mut || {
            reader.read(usize::MAX);
            Ok(())
        });
        drop(board);
        let done = done?;
        (stats, removed) = tally.into_inner().unwrap_or_else(|e| e.into_inner());
        let mut verdicts = Vec::with_capacity(jobs.len());
        let (mut spare, _) = retire.into_inner().unwrap_or_else(|e| e.into_inner());
        spare.clear();
        spare.extend(window.drain(held..));
        for d in done {
            match d {
                Done::Speculated(v) => verdicts.push(v),
                Done::Prepared(p) => spare.extend(p),
                Done::Elected | Done::Retired => {}
            }
        }
        std::mem::swap(&mut window, &mut spare);
        retired = (spare, std::mem::replace(&mut pending, verdicts));
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

/// `range` in pieces of at most `size`, smaller towards the end (a quarter
/// of what is left, down to [`PREPARE_ROWS`]): the thread that takes the
/// last piece keeps the other waiting for less.
fn guided(range: Range<usize>, size: usize) -> impl Iterator<Item = Range<usize>> {
    let end = range.end;
    let smallest = size.min(PREPARE_ROWS);
    std::iter::successors(Some(range.start..range.start), move |r: &Range<usize>| {
        let step = ((end - r.end) / 4).clamp(smallest, size);
        (r.end < end).then(|| r.end..(r.end + step).min(end))
    })
    .skip(1)
}

/// `range` in pieces of `size`.
fn ranges(range: Range<usize>, size: usize) -> impl Iterator<Item = Range<usize>> {
    let end = range.end;
    range.step_by(size).map(move |s| s..(s + size).min(end))
}

/// Speculation on `anchors` (rows of `w`): the bounds on their windows, and
/// the kernel on the pairs that the election of these anchors alone would
/// compare, from the rows alive when the job starts.
fn speculate<'w>(
    w: &'w [Prepared],
    anchors: Range<usize>,
    (distance, threshold): (usize, f64),
    share: Share<'_, 'w>,
    stop: &dyn Fn() -> bool,
) -> Result<Verdicts, Halt> {
    let start = anchors.start;
    let end = anchors.end.saturating_add(distance).min(w.len());
    // Alive as far as this job knows, from row `start` on.
    let mut alive: Vec<bool> = w[start..end].iter().map(Prepared::alive).collect();
    let mut out = Verdicts {
        pairs: Vec::with_capacity(anchors.len() * distance.min(w.len())),
        ends: Vec::with_capacity(anchors.len()),
    };
    let mut scratch = Vec::new();
    for a in anchors {
        let from = out.pairs.len();
        bound(w, a, distance, threshold, &mut out.pairs);
        if alive[a - start] {
            let verdicts = &mut out.pairs[from..];
            let near = compare(w, a, verdicts, |j| alive[j - start], Some(share), stop)?;
            let member = |k: usize| (w[k].id, w[k].rank, w[k].position);
            for k in elect(a, &near, member, &mut scratch) {
                alive[k - start] = false;
            }
            scratch.clear();
        }
        out.ends.push(out.pairs.len());
    }
    Ok(out)
}

/// Appends the bounds on anchor `a`'s window (the next `distance` rows of
/// `w`) to `out`, none when `a` is no longer alive.
fn bound(w: &[Prepared], a: usize, distance: usize, threshold: f64, out: &mut Vec<Verdict>) {
    let anchor = &w[a];
    if !anchor.alive() {
        return;
    }
    let end = a.saturating_add(distance).saturating_add(1).min(w.len());
    out.extend(w[a + 1..end].iter().map(|other| {
        if !other.alive() {
            return Verdict::Skipped;
        }
        match bounds(&anchor.profile, &other.profile, threshold) {
            Bounds::Settled => Verdict::Settled,
            Bounds::Length => Verdict::Length,
            Bounds::Histogram => Verdict::Histogram,
            Bounds::Pass { total, max } => Verdict::Pass { total, max },
        }
    }));
}

/// Runs the kernel on anchor `a`'s pairs that passed the bounds and whose
/// other row is `alive` (the anchor's table built once for all of them), on
/// this thread; when they are long (a few anchors of long pages hold most
/// of the kernel's work on some corpora), shared with the round's threads
/// that have no job left (on `share`), or else on the crate's pool (as
/// [`verify`](super::near_dups) does). Returns the rows near the anchor
/// among those, with their ratios.
fn compare<'w>(
    w: &'w [Prepared],
    a: usize,
    verdicts: &mut [Verdict],
    alive: impl Fn(usize) -> bool,
    share: Option<Share<'_, 'w>>,
    stop: &dyn Fn() -> bool,
) -> Result<Vec<(usize, f64)>, Halt> {
    let pairs: Vec<(usize, usize, usize)> = verdicts
        .iter()
        .enumerate()
        .filter_map(|(k, v)| match *v {
            Verdict::Pass { total, max } if alive(a + 1 + k) => Some((k, total, max)),
            _ => None,
        })
        .collect();
    if !pairs.is_empty() {
        let query = w[a].text.query()?;
        let kernel = move |&(k, total, max): &(usize, usize, usize), stop: &dyn Fn() -> bool| {
            let other = w[a + 1 + k].text.code_points();
            Ok((
                k,
                match query.compare_or_halt(&other, max, stop)? {
                    Compared::Within(d) => Verdict::Near(ratio_from_distance(d, total)),
                    Compared::Beyond => Verdict::Far,
                    Compared::TooLong => Verdict::TooLong,
                },
            ))
        };
        let work: usize = pairs
            .iter()
            .map(|&(_, total, max)| total.saturating_mul(max.max(1)))
            .sum();
        let found = match share {
            Some(share) if work >= share.from_work && pairs.len() > 1 => {
                map_shared(share.board, pairs, kernel, stop)?
            }
            _ => {
                let on = if work >= PARALLEL_WORK { pool() } else { None };
                let kernel = |pair: &_, stop: &dyn Fn() -> bool| kernel(pair, stop).map(Some);
                map_polled(on, &pairs, kernel, &mut || stop())?
            }
        };
        for (k, v) in found {
            verdicts[k] = v;
        }
    }
    let near = verdicts
        .iter()
        .enumerate()
        .filter_map(|(k, v)| match *v {
            Verdict::Near(ratio) if alive(a + 1 + k) => Some((a + 1 + k, ratio)),
            _ => None,
        })
        .collect();
    Ok(near)
}

/// Elects the anchors of `verdicts` (rows `0..` of `w`) in order, as the
/// sequential scan does: only pairs whose rows are both still alive count,
/// and the kernel runs (on this thread) on those the speculation left
/// undecided.
fn elect_pending<'w>(
    w: &'w [Prepared],
    verdicts: &[Verdicts],
    stats: &mut ScanStats,
    removed: &mut Vec<Removal>,
    share: Option<Share<'_, 'w>>,
    stop: &dyn Fn() -> bool,
) -> Result<(), Halt> {
    let mut filled = Vec::new();
    for (a, verdicts) in verdicts.iter().flat_map(Verdicts::iter).enumerate() {
        if !w[a].alive() {
            continue;
        }
        let undecided =
            |(k, v): (usize, &Verdict)| matches!(v, Verdict::Pass { .. }) && w[a + 1 + k].alive();
        let verdicts = if verdicts.iter().enumerate().any(undecided) {
            filled.clear();
            filled.extend_from_slice(verdicts);
            compare(w, a, &mut filled, |j| w[j].alive(), share, stop)?;
            &filled[..]
        } else {
            verdicts
        };
        elect_anchor(w, a, verdicts, stats, removed);
    }
    Ok(())
}

/// The election of live anchor `a` from verdicts on all its pairs of live
/// rows.
fn elect_anchor(
    w: &[Prepared],
    a: usize,
    verdicts: &[Verdict],
    stats: &mut ScanStats,
    removed: &mut Vec<Removal>,
) {
    let mut near = Vec::new();
    for (k, verdict) in verdicts.iter().enumerate() {
        let j = a + 1 + k;
        if !w[j].alive() {
            continue;
        }
        stats.pairs += 1;
        match *verdict {
            Verdict::Skipped | Verdict::Pass { .. } => {
                unreachable!("a pair of live rows was bounded, and compared if it passed")
            }
            Verdict::Settled => stats.settled += 1,
            Verdict::Length => stats.rejected_by_length += 1,
            Verdict::Histogram => stats.rejected_by_histogram += 1,
            Verdict::Far => stats.levenshtein += 1,
            Verdict::TooLong => {
                stats.levenshtein += 1;
                stats.too_long += 1;
            }
            Verdict::Near(ratio) => {
                stats.levenshtein += 1;
                stats.matches += 1;
                near.push((j, ratio));
            }
        }
    }
    let member = |k: usize| (w[k].id, w[k].rank, w[k].position);
    for k in elect(a, &near, member, removed) {
        w[k].remove();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::pools::build;
    use crate::core::window_scan::scan_on;
    use proptest::prelude::*;

    /// The rows of `texts`; with `settle`, every row but each third one
    /// settled, in groups of four.
    fn rows(texts: &[(Option<String>, i64)], settle: bool) -> Vec<Result<ScanRow, Halt>> {
        texts
            .iter()
            .enumerate()
            .map(|(i, (text, rank))| {
                Ok(ScanRow {
                    id: i as i64 + 1,
                    rank: *rank,
                    text: text.clone(),
                    settled: (settle && i % 3 != 0).then_some(i as i64 / 4),
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
            speculate_rows in 1usize..6,
            share_work in prop_oneof![Just(0), Just(usize::MAX)],
            threads in 1usize..3,
            settle in any::<bool>(),
        ) {
            // Small chunks and speculation jobs: the jobs guess wrong often
            // (an earlier job's or the pending chunk's removals unknown);
            // every anchor's pairs shared, or none.
            let pool = build(Some(threads), false).unwrap();
            let expected = scan_on(None, rows(&texts, settle), threshold, distance, &mut || false).unwrap();
            let sizes = (max_anchors, speculate_rows, share_work);
            let got = scan_in_chunks(&pool, rows(&texts, settle), threshold, distance, sizes, &mut || false)
                .unwrap();
            prop_assert_eq!(&got.0, &expected.0);
            prop_assert_eq!(got.1, expected.1);
        }
    }

    #[test]
    fn a_row_removed_earlier_in_the_chunk_is_not_elected_again() {
        // At 0.4: the third text is near both others (ratio 0.5 each), which
        // are not near each other. The first anchor removes it; the second,
        // whose speculation job (one anchor each) compared it with the
        // third before that, must not see it.
        let texts: Vec<(Option<String>, i64)> = ["aaaaaaaaaa", "bbbbbbbbbb", "aaaaabbbbb"]
            .iter()
            .enumerate()
            .map(|(i, t)| (Some(t.to_string()), i as i64))
            .collect();
        let pool = build(Some(2), false).unwrap();
        let (removed, stats) =
            scan_in_chunks(&pool, rows(&texts, false), 0.4, 4, (8, 1, 0), &mut || false).unwrap();
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
        let mut source: Vec<Result<ScanRow, Halt>> =
            rows(&vec![(Some("abc".to_string()), 0); 600], false);
        source.push(Err(Halt::OutOfMemory));
        let r = scan(&pool, source, 0.5, 3, &mut || false);
        assert_eq!(r.unwrap_err(), Halt::OutOfMemory);
        let r = scan(
            &pool,
            rows(&vec![(Some("abc".repeat(4000)), 0); 600], false),
            0.99,
            50,
            &mut || true,
        );
        assert_eq!(r.unwrap_err(), Halt::Stopped);
    }
}
