//! Seeing `sqlite3_interrupt` from inside one long call. SQLite checks the
//! flag between the steps of a statement, not inside a function or a
//! table-valued scan; `sqlite3_is_interrupted` needs SQLite 3.41 and this
//! extension loads into 3.34.1. So the calling thread steps a trivial
//! statement now and then: a statement started while the connection is
//! interrupted fails with `SQLITE_INTERRUPT`.

use std::cell::RefCell;
use std::ffi::CStr;
use std::time::{Duration, Instant};

use rusqlite::ffi;

use crate::core::halt::Halt;

/// How often the connection is asked at most.
const EVERY: Duration = Duration::from_millis(1);

/// Polls one connection for an interrupt; only on the connection's thread.
pub struct InterruptPoll {
    db: *mut ffi::sqlite3,
    stmt: *mut ffi::sqlite3_stmt,
    last: Instant,
    interrupted: bool,
}

impl InterruptPoll {
    /// A poller for the connection `db`, which must outlive it.
    ///
    /// # Safety
    /// `db` is a valid connection handle, used on this thread.
    pub unsafe fn new(db: *mut ffi::sqlite3) -> Self {
        InterruptPoll {
            db,
            stmt: std::ptr::null_mut(),
            last: Instant::now(),
            interrupted: false,
        }
    }

    /// True once the connection has been interrupted, or the caller's
    /// connection this thread's work is linked to ([`Link`]) has (asked at
    /// most once a millisecond; the statement is prepared on the first ask).
    pub fn interrupted(&mut self) -> bool {
        if self.interrupted {
            return true;
        }
        if Link::interrupted(self.db) {
            self.interrupted = true;
            return true;
        }
        if self.last.elapsed() < EVERY {
            return false;
        }
        self.last = Instant::now();
        // Safety: `db` is valid for the poller's life (see `new`); the
        // statement is this poller's own and finalized on drop.
        unsafe {
            if self.stmt.is_null() {
                let sql: &CStr = c"SELECT 1";
                let rc = ffi::sqlite3_prepare_v2(
                    self.db,
                    sql.as_ptr(),
                    -1,
                    &mut self.stmt,
                    std::ptr::null_mut(),
                );
                if rc != ffi::SQLITE_OK {
                    self.interrupted = rc == ffi::SQLITE_INTERRUPT;
                    return self.interrupted;
                }
            }
            let rc = ffi::sqlite3_step(self.stmt);
            ffi::sqlite3_reset(self.stmt);
            self.interrupted = rc == ffi::SQLITE_INTERRUPT;
        }
        self.interrupted
    }
}

impl Drop for InterruptPoll {
    fn drop(&mut self) {
        if !self.stmt.is_null() {
            // Safety: the statement was prepared by this poller.
            unsafe {
                ffi::sqlite3_finalize(self.stmt);
            }
        }
    }
}

thread_local! {
    /// The caller's connection whose interrupt this thread's work on another
    /// connection also obeys (see [`Link`]).
    static LINKED: RefCell<Option<InterruptPoll>> = const { RefCell::new(None) };
}

/// While it lives, an interrupt of the caller's connection also reaches the
/// work this thread does on another connection the run opened (the
/// database `against` names): every [`InterruptPoll`] of this thread asks
/// the caller's connection too, and a progress handler on the other
/// connection ([`Link::forward_to`]) ends its statements. `sqlite3_interrupt`
/// reaches only the connection it names; a second connection needs this.
pub struct Link {
    previous: Option<InterruptPoll>,
}

impl Link {
    /// Links this thread's work to the caller's connection `db`.
    ///
    /// # Safety
    /// `db` is a valid connection handle, used on this thread, that
    /// outlives the link.
    pub unsafe fn new(db: *mut ffi::sqlite3) -> Self {
        let previous = LINKED.with(|l| l.borrow_mut().replace(InterruptPoll::new(db)));
        Link { previous }
    }

    /// Whether the linked caller's connection (other than `own`) has been
    /// interrupted; false without a link.
    fn interrupted(own: *mut ffi::sqlite3) -> bool {
        LINKED.with(|l| match l.try_borrow_mut() {
            Ok(mut poll) => poll
                .as_mut()
                .is_some_and(|p| p.db != own && p.interrupted()),
            Err(_) => false,
        })
    }

    /// Ends the statements of `other` (a connection of this thread) once the
    /// linked caller's connection is interrupted: a progress handler every
    /// `ops` virtual machine steps.
    pub fn forward_to(other: &rusqlite::Connection, ops: i32) {
        extern "C" fn forward(own: *mut std::ffi::c_void) -> std::ffi::c_int {
            std::ffi::c_int::from(Link::interrupted(own.cast()))
        }
        // Safety: the handle is `other`'s, valid while it lives; the handler
        // goes with the connection.
        unsafe {
            let handle = other.handle();
            ffi::sqlite3_progress_handler(handle, ops, Some(forward), handle.cast());
        }
    }
}

impl Drop for Link {
    fn drop(&mut self) {
        let previous = self.previous.take();
        LINKED.with(|l| *l.borrow_mut() = previous);
    }
}

/// The SQL error of a halted computation: `SQLITE_INTERRUPT` (whose message
/// is SQLite's own "interrupted") or `SQLITE_NOMEM`.
pub fn halt_error(halt: Halt) -> rusqlite::Error {
    let code = match halt {
        Halt::Stopped => ffi::SQLITE_INTERRUPT,
        Halt::OutOfMemory => ffi::SQLITE_NOMEM,
    };
    rusqlite::Error::SqliteFailure(ffi::Error::new(code), None)
}

/// Lets `?` turn a [`Halt`] into an SQL error inside the bindings.
impl From<Halt> for rusqlite::Error {
    fn from(h: Halt) -> Self {
        halt_error(h)
    }
}
