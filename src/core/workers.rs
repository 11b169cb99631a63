//! Threads that wait for jobs without spinning, for one piece of work: the
//! pair scan's look-ahead hands them a chunk's comparisons at a time,
//! between stretches of the calling thread's own reads.
//!
//! rayon's idle threads spin before they sleep; handed a small batch every
//! few milliseconds, on two cores, that spinning took the calling thread's
//! time (benches/results/ahead-2026-12-06.md). These block on a channel
//! instead, and are joined when the work is done.
//!
//! Cost: the threads' start (tens of microseconds each) and a channel send
//! a job.
//!
//! Reference: `std::thread` and `std::sync::mpsc`.

use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

/// A job for a worker.
type Job = Box<dyn FnOnce() + Send + 'static>;

/// Threads taking jobs in the order they are handed out; dropped, they
/// finish the jobs handed out and are joined.
pub struct Workers {
    send: Option<mpsc::Sender<Job>>,
    threads: Vec<JoinHandle<()>>,
}

impl Workers {
    /// Up to `n` threads; `None` when not one could start (a process limit).
    pub fn start(n: usize) -> Option<Self> {
        let (send, jobs) = mpsc::channel::<Job>();
        let jobs = Arc::new(Mutex::new(jobs));
        let mut threads = Vec::new();
        for k in 0..n {
            let jobs = Arc::clone(&jobs);
            let started = std::thread::Builder::new()
                .name(format!("dedup-ahead-{k}"))
                .spawn(move || loop {
                    let job = match jobs.lock() {
                        Ok(jobs) => jobs.recv(),
                        Err(_) => return,
                    };
                    match job {
                        Ok(job) => job(),
                        Err(_) => return,
                    }
                });
            match started {
                Ok(thread) => threads.push(thread),
                Err(_) => break,
            }
        }
        (!threads.is_empty()).then_some(Workers {
            send: Some(send),
            threads,
        })
    }

    /// Hands `job` to the first thread free.
    pub fn spawn(&self, job: impl FnOnce() + Send + 'static) {
        if let Some(send) = &self.send {
            // (The threads end only when this is dropped.)
            let _ = send.send(Box::new(job));
        }
    }
}

impl Drop for Workers {
    fn drop(&mut self) {
        self.send.take();
        for thread in self.threads.drain(..) {
            let _ = thread.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jobs_run_and_the_threads_end_when_dropped() {
        let workers = Workers::start(2).unwrap();
        let (send, got) = mpsc::channel();
        for k in 0..10 {
            let send = send.clone();
            workers.spawn(move || send.send(k * k).unwrap());
        }
        drop(workers);
        drop(send);
        let mut squares: Vec<i32> = got.iter().collect();
        squares.sort_unstable();
        assert_eq!(squares, (0..10).map(|k| k * k).collect::<Vec<_>>());
    }
}
