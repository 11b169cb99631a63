//! The pair scan's look-ahead: the kernel's verdicts on a chunk of anchors'
//! pairs, found by other threads before the election reaches them.
//!
//! The election is sequential: whether a row is an anchor at all, and which
//! rows it meets, depends on what the anchors before it removed. What the
//! bounds and the kernel say of a pair does not. So the scan looks at its
//! anchors a chunk at a time ([`look_ahead`]): on the connection's thread
//! (the only one that may read) it takes the candidates of the chunk's live
//! anchors, reads their profiles, applies the exact bounds and reads the
//! texts of the pairs they let through; [`Workers`] then compare those
//! pairs while the scan looks at the next chunk, and the scan's thread
//! takes the comparisons still left when it has done so ([`Pending::wait`]).
//! The election takes each verdict it needs from its chunk
//! ([`Ahead::outcomes`]) and counts it as the sequential scan does. A
//! verdict is a fact about its pair, so the removals and the counts are the
//! sequential scan's.
//!
//! An anchor that an anchor not yet elected may remove is left to the
//! scan: in a group of near-copies close together in scan order each member
//! would otherwise be compared with all the others, where the scan compares
//! the first with them and removes them. A pair that a removal made moot is
//! still compared for nothing when its rows are farther apart (rare).
//!
//! Cost: the sequential scan's comparisons on two or more threads, beside
//! the reads and the election, plus the few that removals made moot (about
//! as much CPU in all as the sequential scan on two cores, and less time:
//! benches/results/ahead-2026-12-06.md); memory: two chunks' texts, each at
//! most [`TEXT_CACHE_BYTES`] beyond the cache's before it (and one anchor's
//! group).
//!
//! Reference: the sequential pair scan ([`crate::core::pair_scan`]), whose
//! results it gives (tested with chunks of one anchor and more); the window
//! scan's look-ahead ([`crate::core::scan_ahead`]) does the same for
//! windows.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::time::Duration;

use crate::core::candidates::Candidates;
use crate::core::halt::Halt;
use crate::core::measure::Measure;
use crate::core::near_dups::{compare_each, ScanStats, Text};
use crate::core::pair_texts::{bounded_pairs, Held, TextCache, TEXT_CACHE_BYTES};
use crate::core::parallel::polling;
use crate::core::similarity::Compared;
use crate::core::workers::Workers;

/// Anchors in a chunk, at most.
pub(super) const CHUNK_ANCHORS: usize = 512;

/// Where the look-ahead compares, and how many anchors a chunk holds at
/// most.
#[derive(Clone, Copy)]
pub(super) struct LookAhead<'p> {
    pub(super) workers: &'p Workers,
    pub(super) anchors: usize,
}

/// What the look-ahead found for a chunk of anchors.
pub(super) struct Ahead {
    /// The index after the chunk's last anchor.
    pub(super) end: usize,
    /// Each anchor's candidates, sorted and without repeats, as the source
    /// handed them out (for the anchors live when the chunk began).
    later: HashMap<usize, Vec<usize>>,
    /// Each anchor's compared candidates with the kernel's outcome, by
    /// candidate.
    outcomes: HashMap<usize, Vec<(usize, Compared)>>,
}

impl Ahead {
    /// Anchor `i`'s candidates, taken from the chunk (empty when the chunk
    /// did not ask for them: `i` was removed before it began).
    pub(super) fn take_later(&mut self, i: usize) -> Vec<usize> {
        self.later.remove(&i).unwrap_or_default()
    }

    /// The kernel's outcome on each pair `(i, j)` of `candidates` (as the
    /// scan's bounds let them through), when the chunk compared them all.
    pub(super) fn outcomes(
        &self,
        i: usize,
        candidates: &[(usize, usize, usize)],
    ) -> Option<Vec<Compared>> {
        let found = self.outcomes.get(&i)?;
        candidates
            .iter()
            .map(|&(j, _, _)| {
                found
                    .binary_search_by_key(&j, |&(k, _)| k)
                    .ok()
                    .map(|at| found[at].1)
            })
            .collect()
    }
}

/// The scan's state the look-ahead reads and fills: the rows it holds, and
/// for each row the last anchor looked at that may remove it (plus one; 0
/// for none).
pub(super) struct ScanState<'s> {
    pub(super) held: Held<'s>,
    pub(super) threats: &'s mut [usize],
}

/// A chunk looked at: its anchors' candidates, and its comparisons, which
/// the workers take as they can. Dropped before it is done, it stops
/// them.
pub(super) struct Pending {
    end: usize,
    later: HashMap<usize, Vec<usize>>,
    tasks: usize,
    queue: Arc<Mutex<VecDeque<Task>>>,
    found: mpsc::Receiver<Result<Outcomes, Halt>>,
    stop: Arc<AtomicBool>,
}

/// Jobs run one after the other by one thread.
type Task = Vec<Job>;

/// Anchors with the outcomes of their compared candidates.
type Outcomes = Vec<(usize, Vec<(usize, Compared)>)>;

impl Pending {
    /// The index after the chunk's last anchor.
    pub(super) fn end(&self) -> usize {
        self.end
    }

    /// The chunk's verdicts: the calling thread takes the tasks no thread
    /// of the workers has taken yet, then waits for the others, asking `poll`
    /// every few milliseconds: [`Halt::Stopped`] soon after it says so, or
    /// the first error a comparison met.
    pub(super) fn wait(mut self, poll: &mut dyn FnMut() -> bool) -> Result<Ahead, Halt> {
        // (Asked once before the work: it may take less than the polls'
        // interval.)
        if poll() {
            return Err(Halt::Stopped);
        }
        let stop = polling(poll);
        let mut outcomes = HashMap::new();
        let mut keep = |found: Outcomes| {
            for (anchor, compared) in found {
                outcomes
                    .entry(anchor)
                    .or_insert_with(Vec::new)
                    .extend(compared);
            }
        };
        let mut left = self.tasks;
        while let Some(task) = take(&self.queue) {
            keep(run(task, &stop)?);
            left -= 1;
        }
        while left > 0 {
            match self.found.recv_timeout(POLL_EVERY) {
                Ok(found) => keep(found?),
                Err(mpsc::RecvTimeoutError::Timeout) if stop() => return Err(Halt::Stopped),
                Err(mpsc::RecvTimeoutError::Timeout) => continue,
                Err(mpsc::RecvTimeoutError::Disconnected) => {
                    panic!("a thread comparing the chunk's pairs panicked")
                }
            }
            left -= 1;
        }
        // (An anchor compared in pieces: its outcomes by the other row.)
        for compared in outcomes.values_mut() {
            compared.sort_unstable_by_key(|&(j, _)| j);
        }
        Ok(Ahead {
            end: self.end,
            later: std::mem::take(&mut self.later),
            outcomes,
        })
    }
}

/// The next task of the queue, if any.
fn take(queue: &Mutex<VecDeque<Task>>) -> Option<Task> {
    queue.lock().unwrap_or_else(|e| e.into_inner()).pop_front()
}

/// A task's jobs, one after the other.
fn run(task: Task, stop: &dyn Fn() -> bool) -> Result<Outcomes, Halt> {
    task.into_iter().map(|job| job.compare(stop)).collect()
}

impl Drop for Pending {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// How often [`Pending::wait`] looks for its tasks' outcomes.
const POLL_EVERY: Duration = Duration::from_millis(2);

/// Tasks a chunk's comparisons are split into, of about equal work, for
/// the workers to share.
const TASKS: usize = 8;

/// The kernel's work (total length times band, summed) of one piece of an
/// anchor's pairs: an anchor with more is compared in pieces.
const PIECE_WORK: usize = 1 << 24;

/// Looks at the chunk of anchors from `start` (of `rows`; the scan has
/// elected the anchors before `elected`): takes the candidates of its live
/// anchors from `candidates` (in order, once each, as the scan would),
/// reads what the bounds need through `text` and the texts of the pairs
/// they let through, and hands those pairs to the workers. An anchor that an
/// anchor not yet elected may remove (the bounds let their pair through)
/// is left to the scan: in a large group of near-copies each member would
/// otherwise be compared with all the others, where the scan compares the
/// first with them and removes them.
pub(super) fn look_ahead<E: From<Halt>>(
    LookAhead { workers, anchors }: LookAhead<'_>,
    (elected, start, rows): (usize, usize, usize),
    candidates: &mut impl Candidates,
    state: ScanState<'_>,
    text: &mut impl FnMut(usize) -> Result<Option<String>, E>,
    (threshold, measure): (f64, &Measure),
) -> Result<Pending, E> {
    let ScanState {
        held: Held {
            alive,
            known,
            texts,
        },
        threats,
    } = state;
    let budget = texts.bytes() + TEXT_CACHE_BYTES;
    let mut later = HashMap::new();
    let mut jobs: Vec<Job> = Vec::new();
    // (The scan counts the bounds again as it meets each pair.)
    let mut uncounted = ScanStats::default();
    let mut end = start;
    while end < rows && end - start < anchors && (end == start || texts.bytes() <= budget) {
        let i = end;
        end += 1;
        if !alive[i] {
            continue;
        }
        let mut them = Vec::new();
        candidates.later(i, &mut them);
        them.sort_unstable();
        them.dedup();
        let live: Vec<usize> = them.iter().copied().filter(|&j| alive[j]).collect();
        later.insert(i, them);
        if live.is_empty() {
            continue;
        }
        let held = Held {
            alive: &mut *alive,
            known: &mut *known,
            texts: &mut *texts,
        };
        let near = (threshold, measure);
        let Some(pairs) = bounded_pairs(i, &live, held, text, near, &mut uncounted)? else {
            continue;
        };
        let threatened = threats[i] > elected;
        for &(j, _, _) in &pairs {
            threats[j] = i + 1;
        }
        if pairs.is_empty() || threatened {
            continue;
        }
        for k in std::iter::once(i).chain(pairs.iter().map(|p| p.0)) {
            if !texts.has(k) {
                texts.insert(k, Text::measured(text(k)?.unwrap_or_default(), measure)?);
            }
        }
        // (An anchor with many long pairs in pieces, each with its table,
        // for the workers to share.)
        let mut piece = Job::new(i, texts);
        for p in pairs {
            if piece.work >= PIECE_WORK {
                let full = std::mem::replace(&mut piece, Job::new(i, texts));
                jobs.push(full);
            }
            piece.add(p, texts);
        }
        jobs.push(piece);
    }
    // (Tasks of about equal work, the jobs in order.)
    let each = jobs
        .iter()
        .map(|j| j.work)
        .sum::<usize>()
        .div_ceil(TASKS)
        .max(1);
    let mut queue = VecDeque::new();
    let mut jobs = jobs.into_iter().peekable();
    while jobs.peek().is_some() {
        let mut task = Vec::new();
        let mut work = 0;
        while let Some(job) = jobs.next_if(|_| work < each) {
            work += job.work;
            task.push(job);
        }
        queue.push_back(task);
    }
    let tasks = queue.len();
    let queue = Arc::new(Mutex::new(queue));
    let stop = Arc::new(AtomicBool::new(false));
    let (send, found) = mpsc::channel();
    for _ in 0..tasks {
        let (queue, send, stop) = (Arc::clone(&queue), send.clone(), Arc::clone(&stop));
        workers.spawn(move || {
            // (The scan's thread may have taken it.)
            if let Some(task) = take(&queue) {
                let halted = || stop.load(Ordering::Relaxed);
                // (The scan may have stopped and gone: nothing to tell then.)
                let _ = send.send(run(task, &halted));
            }
        });
    }
    Ok(Pending {
        end,
        later,
        tasks,
        queue,
        found,
        stop,
    })
}

/// One anchor's pairs to compare (all of them, or a piece), with the
/// texts they need.
struct Job {
    anchor: (usize, Arc<Text>),
    pairs: Vec<(usize, usize, usize)>,
    with: Vec<Arc<Text>>,
    /// The kernel's work at most: each pair's total length times its band.
    work: usize,
}

impl Job {
    fn new(anchor: usize, texts: &TextCache) -> Self {
        Job {
            anchor: (anchor, texts.shared(anchor)),
            pairs: Vec::new(),
            with: Vec::new(),
            work: 0,
        }
    }

    fn add(&mut self, pair: (usize, usize, usize), texts: &TextCache) {
        let (j, total, max) = pair;
        self.work = self.work.saturating_add(total.saturating_mul(max.max(1)));
        self.pairs.push(pair);
        self.with.push(texts.shared(j));
    }

    /// The anchor and the outcome on each pair, by the other row.
    fn compare(self, stop: &dyn Fn() -> bool) -> Result<(usize, Vec<(usize, Compared)>), Halt> {
        let pairs = self
            .with
            .iter()
            .map(|t| &**t)
            .zip(self.pairs.iter().map(|p| p.2));
        let outcomes = compare_each(&self.anchor.1, pairs, stop)?;
        let others = self.pairs.iter().map(|p| p.0);
        Ok((self.anchor.0, others.zip(outcomes).collect()))
    }
}
