//! The crate's thread pools: built on first use, one set per process.
//!
//! A child made by `fork` has only the thread that forked; a pool it
//! inherited from its parent would take jobs that no thread of the child
//! runs, and the child would wait for ever (a Python program that ran a
//! dedup, then handed other databases to `multiprocessing` workers, hung
//! so). So each pool remembers the process that built it, and a process
//! that finds its parent's builds its own. The parent's, copied into the
//! child, is left alone: its threads are not in the child to be stopped.
//!
//! Cost: one process id read per use; a pool is built once per process.
//!
//! Reference: POSIX `fork`, after which only the forking thread exists in
//! the child.

use std::sync::atomic::{AtomicPtr, Ordering};

use rayon::{ThreadPool, ThreadPoolBuilder};

/// The pool, built on first use in each process: `DEDUP_THREADS` threads
/// (default: one per core); `None` when it could not start or
/// `DEDUP_THREADS` is 1. `DEDUP_THREADS=fail` simulates a pool that cannot
/// start (for tests).
pub fn pool() -> Option<&'static ThreadPool> {
    static POOL: PerProcess = PerProcess::new();
    POOL.get_or_build(
        || match std::env::var("DEDUP_THREADS").unwrap_or_default().as_str() {
            "fail" => build(None, true),
            "1" => None,
            n => build(n.parse::<usize>().ok().filter(|&n| n > 1), false),
        },
    )
}

/// A pool of one thread fewer than [`pool`], for work that the calling
/// thread shares (`parallel::share_beside`); `None` when [`pool`] is `None`
/// or has one thread.
pub fn helpers() -> Option<&'static ThreadPool> {
    static HELPERS: PerProcess = PerProcess::new();
    HELPERS.get_or_build(|| match pool()?.current_num_threads() {
        n if n > 1 => build(Some(n - 1), false),
        _ => None,
    })
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

/// What one process built: its id, and the pool (or `None`: none could or
/// should start).
struct Built {
    process: u32,
    pool: Option<ThreadPool>,
}

/// A pool built once per process, without a lock (a lock held by another
/// thread at the moment of a fork would stay held in the child for ever).
struct PerProcess {
    built: AtomicPtr<Built>,
}

impl PerProcess {
    const fn new() -> Self {
        PerProcess {
            built: AtomicPtr::new(std::ptr::null_mut()),
        }
    }

    /// This process's pool, built by `build` the first time it is asked
    /// for here. Two threads asking at once may both build; one pool is
    /// kept, the other dropped (its threads end) before anyone used it.
    fn get_or_build(
        &'static self,
        build: impl Fn() -> Option<ThreadPool>,
    ) -> Option<&'static ThreadPool> {
        let process = std::process::id();
        loop {
            let seen = self.built.load(Ordering::Acquire);
            // Safety: a non-null pointer here came from Box::into_raw below
            // and is never freed once stored (a process's pool lives as long
            // as the process; another process's is leaked on purpose).
            if let Some(built) = unsafe { seen.as_ref() } {
                if built.process == process {
                    return built.pool.as_ref();
                }
            }
            let mine = Box::into_raw(Box::new(Built {
                process,
                pool: build(),
            }));
            match self
                .built
                .compare_exchange(seen, mine, Ordering::AcqRel, Ordering::Acquire)
            {
                // Safety: stored just now, never freed (see above).
                Ok(_) => return unsafe { (*mine).pool.as_ref() },
                // Another thread stored first: drop this one, never shared
                // (safety: `mine` came from Box::into_raw and was not
                // stored), and take what was stored.
                Err(_) => drop(unsafe { Box::from_raw(mine) }),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pool_is_built_once_per_process_and_again_in_another() {
        static P: PerProcess = PerProcess::new();
        let built = std::sync::atomic::AtomicUsize::new(0);
        let make = || {
            built.fetch_add(1, Ordering::SeqCst);
            build(Some(2), false)
        };
        let first = P.get_or_build(make).unwrap() as *const ThreadPool;
        let again = P.get_or_build(make).unwrap() as *const ThreadPool;
        assert_eq!((first, built.load(Ordering::SeqCst)), (again, 1));
        // What a forked child sees: a pool stored by another process.
        // Safety: the pointer was stored by get_or_build and is never freed.
        unsafe { (*P.built.load(Ordering::Acquire)).process ^= 1 };
        let child = P.get_or_build(make).unwrap() as *const ThreadPool;
        assert_ne!(child, first);
        assert_eq!(built.load(Ordering::SeqCst), 2);
        assert_eq!(P.get_or_build(make).unwrap() as *const ThreadPool, child);
    }

    #[test]
    fn threads_asking_at_once_share_one_pool() {
        static P: PerProcess = PerProcess::new();
        let got: Vec<usize> = std::thread::scope(|s| {
            let asks: Vec<_> = (0..4)
                .map(|_| {
                    s.spawn(|| {
                        P.get_or_build(|| build(Some(1), false)).unwrap() as *const _ as usize
                    })
                })
                .collect();
            asks.into_iter().map(|h| h.join().unwrap()).collect()
        });
        assert!(got.iter().all(|&p| p == got[0]), "{got:?}");
    }
}
