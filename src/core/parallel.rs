//! Parallel work that a caller can stop: jobs run on the crate's thread
//! pool (`core::pools`) while the calling thread waits for their results (or, with
//! [`share_beside`], takes jobs too, and a job may share its long work
//! with the threads that have none left: [`map_shared`]) and, every few
//! milliseconds, asks
//! `poll` whether to stop (the SQL layer polls `sqlite3_interrupt`, which
//! only the calling thread may do). When the pool cannot start (a process
//! limit), the work runs on the calling thread with the same results.
//!
//! Cost: one job handed out a chunk of items; the caller polls every few
//! milliseconds while it waits.
//!
//! Reference: rayon's thread pool (`rayon::ThreadPool`), which runs the
//! jobs.

use std::cell::{Cell, RefCell};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rayon::ThreadPool;

use crate::core::halt::Halt;

/// How often the calling thread polls while the pool works.
const POLL_EVERY: Duration = Duration::from_millis(2);

/// `f` on every item, on `pool` (or the calling thread when there is none
/// or only one item): the `Some` results in item order. `f` gets a stop
/// callback to ask during long work. Stops with [`Halt::Stopped`] soon after
/// `poll` returns true, or with the first error `f` returns.
pub fn map_polled<T, R, F>(
    pool: Option<&ThreadPool>,
    items: &[T],
    f: F,
    poll: &mut dyn FnMut() -> bool,
) -> Result<Vec<R>, Halt>
where
    T: Sync,
    R: Send,
    F: Fn(&T, &dyn Fn() -> bool) -> Result<Option<R>, Halt> + Sync,
{
    let pool = match pool {
        Some(p) if items.len() > 1 => p,
        _ => {
            let poll = std::cell::RefCell::new(poll);
            let stop = || (poll.borrow_mut())();
            let mut out = Vec::new();
            for item in items {
                if stop() {
                    return Err(Halt::Stopped);
                }
                if let Some(r) = f(item, &stop)? {
                    out.push(r);
                }
            }
            return Ok(out);
        }
    };
    // (Asked once before the work: the pool may finish it before the
    // first poll's interval has passed.)
    if poll() {
        return Err(Halt::Stopped);
    }
    let stopped = AtomicBool::new(false);
    let stop = || stopped.load(Ordering::Relaxed);
    let (tx, rx) = mpsc::channel();
    let mut results: Vec<(usize, R)> = Vec::new();
    let mut first_error = None;
    pool.in_place_scope(|scope| {
        for (i, item) in items.iter().enumerate() {
            let tx = tx.clone();
            let (f, stop) = (&f, &stop);
            scope.spawn(move |_| {
                let r = if stop() {
                    Err(Halt::Stopped)
                } else {
                    f(item, stop)
                };
                let _ = tx.send((i, r));
            });
        }
        drop(tx);
        loop {
            match rx.recv_timeout(POLL_EVERY) {
                Ok((i, Ok(Some(r)))) => results.push((i, r)),
                Ok((_, Ok(None))) => {}
                Ok((_, Err(e))) => {
                    first_error.get_or_insert(e);
                    stopped.store(true, Ordering::Relaxed);
                }
                Err(mpsc::RecvTimeoutError::Timeout) => {
                    if !stopped.load(Ordering::Relaxed) && poll() {
                        first_error.get_or_insert(Halt::Stopped);
                        stopped.store(true, Ordering::Relaxed);
                    }
                }
                Err(mpsc::RecvTimeoutError::Disconnected) => break,
            }
        }
    });
    if let Some(e) = first_error {
        return Err(e);
    }
    results.sort_unstable_by_key(|(i, _)| *i);
    Ok(results.into_iter().map(|(_, r)| r).collect())
}

/// A stop callback for work on the calling thread: true once `poll` said
/// stop, which it asks every few milliseconds at most.
pub fn polling<'p>(poll: &'p mut dyn FnMut() -> bool) -> impl Fn() -> bool + 'p {
    let poll = RefCell::new(poll);
    let last = Cell::new(Instant::now());
    let stopped = Cell::new(false);
    move || {
        if !stopped.get() && last.get().elapsed() >= POLL_EVERY {
            last.set(Instant::now());
            stopped.set((poll.borrow_mut())());
        }
        stopped.get()
    }
}

/// `f` on every item, shared by `pool`'s threads and the calling thread,
/// which first runs `beside` (e.g. reading from a connection only it may
/// use; keep it short: it is not polled) and then takes items too. With
/// [`helpers`](crate::core::pools::helpers) that is one thread per core and none left waiting (on 2
/// cores, a third thread waking and sleeping around every job cost the
/// window scan a quarter of its time). Items are taken in order, one at a
/// time; a thread left without items helps with the work that the items
/// still running post on `board` ([`map_shared`]) until they are done. The
/// calling thread asks `poll` between its items, inside `f` every few
/// milliseconds, and while it waits for the others' last items. The `Some`
/// results in item order; the first error other than [`Halt::Stopped`] if
/// any.
pub fn share_beside<'a, T, R, F>(
    pool: &ThreadPool,
    items: &[T],
    f: F,
    board: &Board<'a>,
    poll: &mut dyn FnMut() -> bool,
    beside: &mut dyn FnMut() -> Result<(), Halt>,
) -> Result<Vec<R>, Halt>
where
    T: Sync,
    R: Send,
    F: Fn(&T, &dyn Fn() -> bool) -> Result<Option<R>, Halt> + Sync,
{
    let helpers = pool.current_num_threads().min(items.len());
    let next = AtomicUsize::new(0);
    let stopped = AtomicBool::new(false);
    let take = |stop: &dyn Fn() -> bool| -> Result<Vec<(usize, R)>, Halt> {
        let mut out = Vec::new();
        loop {
            if stop() {
                return Err(Halt::Stopped);
            }
            // Counted as running before it is taken: a thread that finds
            // no item left also finds this one running.
            board.running.fetch_add(1, Ordering::SeqCst);
            let i = next.fetch_add(1, Ordering::SeqCst);
            let Some(item) = items.get(i) else {
                board.running.fetch_sub(1, Ordering::SeqCst);
                break;
            };
            let r = f(item, stop);
            board.running.fetch_sub(1, Ordering::SeqCst);
            if let Some(r) = r? {
                out.push((i, r));
            }
        }
        let mut waits = 0u32;
        while board.running.load(Ordering::SeqCst) > 0 {
            if stop() {
                return Err(Halt::Stopped);
            }
            if board.help(stop) {
                waits = 0;
            } else {
                wait_a_little(&mut waits);
            }
        }
        Ok(out)
    };
    let (tx, rx) = mpsc::channel();
    let mut results: Vec<(usize, R)> = Vec::new();
    let mut errors: Vec<Halt> = Vec::new();
    pool.in_place_scope(|scope| {
        for _ in 0..helpers {
            let tx = tx.clone();
            let (take, stopped) = (&take, &stopped);
            scope.spawn(move |_| {
                let r = take(&|| stopped.load(Ordering::Relaxed));
                if r.is_err() {
                    stopped.store(true, Ordering::Relaxed);
                }
                let _ = tx.send(r);
            });
        }
        drop(tx);
        let mine = {
            let polled = polling(&mut *poll);
            let stop = || {
                if stopped.load(Ordering::Relaxed) {
                    return true;
                }
                let stop = polled();
                if stop {
                    stopped.store(true, Ordering::Relaxed);
                }
                stop
            };
            match beside() {
                Ok(()) => take(&stop),
                Err(e) => Err(e),
            }
        };
        let mut settle = |r: Result<Vec<(usize, R)>, Halt>| match r {
            Ok(v) => results.extend(v),
            Err(e) => {
                errors.push(e);
                stopped.store(true, Ordering::Relaxed);
            }
        };
        settle(mine);
        loop {
            match rx.recv_timeout(POLL_EVERY) {
                Ok(r) => settle(r),
                Err(mpsc::RecvTimeoutError::Timeout) => {
                    if !stopped.load(Ordering::Relaxed) && poll() {
                        settle(Err(Halt::Stopped));
                    }
                }
                Err(mpsc::RecvTimeoutError::Disconnected) => break,
            }
        }
    });
    if let Some(&e) = errors
        .iter()
        .find(|&&e| e != Halt::Stopped)
        .or(errors.first())
    {
        return Err(e);
    }
    results.sort_unstable_by_key(|(i, _)| *i);
    Ok(results.into_iter().map(|(_, r)| r).collect())
}

/// Yields to other threads the first few times, then sleeps a tenth of a
/// millisecond: a thread waiting for work that may come soon, or for long.
fn wait_a_little(waits: &mut u32) {
    if *waits < 1000 {
        *waits += 1;
        std::thread::yield_now();
    } else {
        std::thread::sleep(Duration::from_micros(100));
    }
}

/// Work that the items of a [`share_beside`] post for its threads that
/// have no item left ([`map_shared`]).
#[derive(Default)]
pub struct Board<'a> {
    posted: Mutex<Vec<Arc<dyn Help + 'a>>>,
    /// Items taken and not finished.
    running: AtomicUsize,
}

impl<'a> Board<'a> {
    /// Helps with the latest work posted, if any, until none of it is left
    /// to take; false when there was none to take.
    fn help(&self, stop: &dyn Fn() -> bool) -> bool {
        let posted = self
            .posted
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .last()
            .cloned();
        posted.is_some_and(|work| work.help(stop))
    }
}

/// Posted work: pieces that any thread may take.
trait Help: Send + Sync {
    /// Takes and does pieces until none is left to take; false when there
    /// was none.
    fn help(&self, stop: &dyn Fn() -> bool) -> bool;
}

/// The items of a [`map_shared`] and their results.
struct Shared<T, R, F> {
    items: Vec<T>,
    f: F,
    next: AtomicUsize,
    done: AtomicUsize,
    results: Vec<Mutex<Option<Result<R, Halt>>>>,
}

impl<T, R, F> Help for Shared<T, R, F>
where
    T: Send + Sync,
    R: Send,
    F: Fn(&T, &dyn Fn() -> bool) -> Result<R, Halt> + Send + Sync,
{
    fn help(&self, stop: &dyn Fn() -> bool) -> bool {
        let mut took = false;
        loop {
            let i = self.next.fetch_add(1, Ordering::Relaxed);
            let Some(item) = self.items.get(i) else {
                return took;
            };
            took = true;
            let r = if stop() {
                Err(Halt::Stopped)
            } else {
                (self.f)(item, stop)
            };
            *self.results[i].lock().unwrap_or_else(|e| e.into_inner()) = Some(r);
            self.done.fetch_add(1, Ordering::Release);
        }
    }
}

/// `f` on every item, on this thread and on those of the [`share_beside`]
/// that `board` belongs to which have no item of their own left (without
/// any, all on this thread). For an item of the share whose work is long
/// (an anchor of long pages): the other threads help instead of waiting
/// for it. The results in item order; the first error other than
/// [`Halt::Stopped`] if any.
pub fn map_shared<'a, T, R, F>(
    board: &Board<'a>,
    items: Vec<T>,
    f: F,
    stop: &dyn Fn() -> bool,
) -> Result<Vec<R>, Halt>
where
    T: Send + Sync + 'a,
    R: Send + 'a,
    F: Fn(&T, &dyn Fn() -> bool) -> Result<R, Halt> + Send + Sync + 'a,
{
    let n = items.len();
    let results = (0..n).map(|_| Mutex::new(None)).collect();
    let shared = Arc::new(Shared {
        items,
        f,
        next: AtomicUsize::new(0),
        done: AtomicUsize::new(0),
        results,
    });
    let posted = || board.posted.lock().unwrap_or_else(|e| e.into_inner());
    posted().push(shared.clone());
    shared.help(stop);
    posted().retain(|w| !std::ptr::addr_eq(Arc::as_ptr(w), Arc::as_ptr(&shared)));
    // The pieces the others took: each takes one kernel at most.
    let mut waits = 0;
    while shared.done.load(Ordering::Acquire) < n {
        wait_a_little(&mut waits);
    }
    let mut out = Vec::with_capacity(n);
    let mut stopped = false;
    for slot in &shared.results {
        let r = slot.lock().unwrap_or_else(|e| e.into_inner()).take();
        match r.expect("every piece is done") {
            Ok(r) => out.push(r),
            Err(Halt::Stopped) => stopped = true,
            Err(e) => return Err(e),
        }
    }
    if stopped {
        return Err(Halt::Stopped);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::pools::build;

    /// Ten seconds of work unless stopped.
    fn long(_: &u8, stop: &dyn Fn() -> bool) -> Result<Option<()>, Halt> {
        for _ in 0..10_000 {
            if stop() {
                return Err(Halt::Stopped);
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        Ok(Some(()))
    }

    fn squares_of_evens(pool: Option<&ThreadPool>) -> Vec<u64> {
        let items: Vec<u64> = (0..200).collect();
        map_polled(
            pool,
            &items,
            |&x, _| Ok((x % 2 == 0).then_some(x * x)),
            &mut || false,
        )
        .unwrap()
    }

    #[test]
    fn a_pool_that_cannot_start_falls_back_with_the_same_results() {
        let failing = build(Some(2), true);
        assert!(failing.is_none());
        let working = build(Some(2), false).unwrap();
        let expected: Vec<u64> = (0..200).filter(|x| x % 2 == 0).map(|x| x * x).collect();
        assert_eq!(squares_of_evens(failing.as_ref()), expected);
        assert_eq!(squares_of_evens(Some(&working)), expected);
    }

    #[test]
    fn a_poll_that_says_stop_halts_the_workers() {
        let pool = build(Some(2), false).unwrap();
        let items = [0u8; 4];
        let start = std::time::Instant::now();
        let mut polls = 0;
        let r = map_polled(Some(&pool), &items, long, &mut || {
            polls += 1;
            polls > 5
        });
        assert_eq!(r.unwrap_err(), Halt::Stopped);
        assert!(
            start.elapsed() < Duration::from_secs(2),
            "{:?}",
            start.elapsed()
        );
        let mut polls = 0;
        let r = map_polled(None, &items, long, &mut || {
            polls += 1;
            polls > 50
        });
        assert_eq!(r.unwrap_err(), Halt::Stopped);
    }

    #[test]
    fn the_first_error_of_a_worker_is_returned() {
        let pool = build(Some(2), false).unwrap();
        let items: Vec<u32> = (0..50).collect();
        let r = map_polled(
            Some(&pool),
            &items,
            |&x, _| {
                if x == 7 {
                    Err(Halt::OutOfMemory)
                } else {
                    Ok(Some(x))
                }
            },
            &mut || false,
        );
        assert_eq!(r.unwrap_err(), Halt::OutOfMemory);
    }

    #[test]
    fn shared_work_runs_beside_first_and_every_item_once_in_order() {
        let pool = build(Some(1), false).unwrap();
        let items: Vec<u64> = (0..500).collect();
        let runs = AtomicUsize::new(0);
        let read = AtomicBool::new(false);
        let out = share_beside(
            &pool,
            &items,
            |&x, _| {
                runs.fetch_add(1, Ordering::Relaxed);
                Ok((x % 3 != 0).then_some(x * 2))
            },
            &Board::default(),
            &mut || false,
            &mut || {
                read.store(true, Ordering::Relaxed);
                Ok(())
            },
        )
        .unwrap();
        let expected: Vec<u64> = (0..500).filter(|x| x % 3 != 0).map(|x| x * 2).collect();
        assert_eq!(out, expected);
        assert_eq!(runs.load(Ordering::Relaxed), 500);
        assert!(read.load(Ordering::Relaxed));
    }

    #[test]
    fn shared_work_stops_on_a_poll_and_returns_a_real_error_over_a_stop() {
        let pool = build(Some(1), false).unwrap();
        let items = [0u8; 8];
        let start = Instant::now();
        let mut polls = 0;
        let r = share_beside(
            &pool,
            &items,
            long,
            &Board::default(),
            &mut || {
                polls += 1;
                polls > 5
            },
            &mut || Ok(()),
        );
        assert_eq!(r.unwrap_err(), Halt::Stopped);
        assert!(
            start.elapsed() < Duration::from_secs(2),
            "{:?}",
            start.elapsed()
        );
        // The helper runs out of memory while the calling thread's work
        // stops because of it: the error is the helper's.
        let items: Vec<u32> = (0..64).collect();
        let r = share_beside(
            &pool,
            &items,
            |&x, stop| {
                if std::thread::current().name() == Some("dedup-0") {
                    return Err(Halt::OutOfMemory);
                }
                while x > 0 && !stop() {
                    std::thread::sleep(Duration::from_millis(1));
                }
                Ok(Some(x))
            },
            &Board::default(),
            &mut || false,
            &mut || Ok(()),
        );
        assert_eq!(r.unwrap_err(), Halt::OutOfMemory);
        // An error beside stops the calling thread's share.
        let r = share_beside(
            &pool,
            &items,
            |&x, _| Ok(Some(x)),
            &Board::default(),
            &mut || false,
            &mut || Err(Halt::OutOfMemory),
        );
        assert_eq!(r.unwrap_err(), Halt::OutOfMemory);
    }

    #[test]
    fn a_thread_with_no_item_left_helps_with_the_work_posted() {
        let pool = build(Some(1), false).unwrap();
        let poster = Mutex::new(None);
        let helped = AtomicUsize::new(0);
        let board = Board::default();
        let items = [0u64, 1];
        let out = share_beside(
            &pool,
            &items,
            |&x, stop| {
                if x == 0 {
                    return Ok(Some(vec![0]));
                }
                *poster.lock().unwrap() = Some(std::thread::current().id());
                let pieces: Vec<u64> = (0..64).collect();
                let squares = map_shared(
                    &board,
                    pieces,
                    |&p, _| {
                        if Some(std::thread::current().id()) != *poster.lock().unwrap() {
                            helped.fetch_add(1, Ordering::Relaxed);
                        }
                        // Long enough for the other thread to arrive
                        // even on a loaded machine.
                        std::thread::sleep(Duration::from_millis(3));
                        Ok(p * p)
                    },
                    stop,
                )?;
                Ok(Some(squares))
            },
            &board,
            &mut || false,
            &mut || Ok(()),
        )
        .unwrap();
        assert_eq!(out[0], vec![0]);
        assert_eq!(out[1], (0..64).map(|p| p * p).collect::<Vec<u64>>());
        assert!(helped.load(Ordering::Relaxed) > 0);
    }

    #[test]
    fn shared_work_alone_runs_here_and_returns_a_real_error_over_a_stop() {
        let board = Board::default();
        let out = map_shared(&board, (0..10u32).collect(), |&x, _| Ok(x + 1), &|| false);
        assert_eq!(out.unwrap(), (1..11).collect::<Vec<u32>>());
        let r = map_shared(
            &board,
            (0..10u32).collect(),
            |&x, _| match x {
                3 => Err(Halt::Stopped),
                7 => Err(Halt::OutOfMemory),
                _ => Ok(x),
            },
            &|| false,
        );
        assert_eq!(r.unwrap_err(), Halt::OutOfMemory);
        let r = map_shared(&board, vec![1u8; 4], |&x, _| Ok(x), &|| true);
        assert_eq!(r.unwrap_err(), Halt::Stopped);
    }
}
