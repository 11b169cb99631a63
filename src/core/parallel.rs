//! Parallel work that a caller can stop: jobs run on the crate's thread
//! pool while the calling thread waits for their results and, every few
//! milliseconds, asks `poll` whether to stop (the SQL layer polls
//! `sqlite3_interrupt`, which only the calling thread may do). When the pool
//! cannot start (a process limit), the work runs on the calling thread with
//! the same results.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::sync::OnceLock;
use std::time::Duration;

use rayon::{ThreadPool, ThreadPoolBuilder};

use crate::core::halt::Halt;

/// How often the calling thread polls while the pool works.
const POLL_EVERY: Duration = Duration::from_millis(2);

/// The pool, built on first use: `DEDUP_THREADS` threads (default: one
/// per core); `None` when it could not start or `DEDUP_THREADS` is 1.
/// `DEDUP_THREADS=fail` simulates a pool that cannot start (for tests).
pub fn pool() -> Option<&'static ThreadPool> {
    static POOL: OnceLock<Option<ThreadPool>> = OnceLock::new();
    POOL.get_or_init(
        || match std::env::var("DEDUP_THREADS").unwrap_or_default().as_str() {
            "fail" => build(None, true),
            "1" => None,
            n => build(n.parse::<usize>().ok().filter(|&n| n > 1), false),
        },
    )
    .as_ref()
}

/// A pool of `threads` threads (default: one per core), or `None` (never a
/// panic) when it cannot start; `fail` makes every thread fail to start.
pub fn build(threads: Option<usize>, fail: bool) -> Option<ThreadPool> {
    let mut builder = ThreadPoolBuilder::new().spawn_handler(move |thread| {
        if fail {
            return Err(std::io::Error::other("thread creation refused"));
        }
        let mut b = std::thread::Builder::new().name(format!("dedup-{}", thread.index()));
        if let Some(size) = thread.stack_size() {
            b = b.stack_size(size);
        }
        b.spawn(|| thread.run())?;
        Ok(())
    });
    if let Some(n) = threads {
        builder = builder.num_threads(n);
    }
    builder.build().ok()
}

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
    let pool = pool.filter(|_| items.len() > 1);
    map_polled_beside(pool, items, f, poll, &mut || {})
}

/// [`map_polled`] that runs `beside` on the calling thread while the pool
/// works (before it starts polling), e.g. to read the next input from a
/// connection only that thread may use. Without a pool, `beside` runs
/// first. `beside` is not polled: keep it short.
pub fn map_polled_beside<T, R, F>(
    pool: Option<&ThreadPool>,
    items: &[T],
    f: F,
    poll: &mut dyn FnMut() -> bool,
    beside: &mut dyn FnMut(),
) -> Result<Vec<R>, Halt>
where
    T: Sync,
    R: Send,
    F: Fn(&T, &dyn Fn() -> bool) -> Result<Option<R>, Halt> + Sync,
{
    let pool = match pool {
        Some(p) if !items.is_empty() => p,
        _ => {
            beside();
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
        beside();
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

#[cfg(test)]
mod tests {
    use super::*;

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
        let long = |_: &u8, stop: &dyn Fn() -> bool| {
            // Ten seconds of work unless stopped.
            for _ in 0..10_000 {
                if stop() {
                    return Err(Halt::Stopped);
                }
                std::thread::sleep(Duration::from_millis(1));
            }
            Ok(Some(()))
        };
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
}
