//! Keeps the extension's shared library loaded for the rest of the process
//! once SQLite has loaded it.
//!
//! SQLite unloads an extension (`dlclose`) when the last connection that
//! loaded it closes. The library's thread pool outlives connections: its
//! threads run the library's code (while they start, and whenever they
//! wake), so unloading under them ends the host process with a segmentation
//! fault. A command that failed fast and closed its connections as it
//! exited crashed that way while the pool's threads were still starting.
//! Pinning the library (`RTLD_NODELETE`) makes every later `dlclose` keep
//! it mapped; SQLite has no way to unload an extension on purpose, so
//! nothing is lost.

/// Marks the shared library holding this function as never to be unloaded.
/// Returns whether it is pinned now (false where the platform has no such
/// mark, or the library's file could not be found again). Done once per
/// process: the entry point calls it at every load, and each `dlopen`
/// would hold one more reference.
pub fn pin() -> bool {
    static PINNED: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *PINNED.get_or_init(imp::pin)
}

#[cfg(unix)]
mod imp {
    use std::mem::MaybeUninit;

    /// Pins the library found by `dladdr` from one of its functions.
    pub fn pin() -> bool {
        let here = super::pin as *const () as *const libc::c_void;
        let mut info = MaybeUninit::<libc::Dl_info>::zeroed();
        // Safety: `here` is an address in this library; dladdr fills `info`
        // and its strings belong to the loader, valid while the library is
        // loaded (it is: this code runs from it).
        unsafe {
            if libc::dladdr(here, info.as_mut_ptr()) == 0 {
                return false;
            }
            let info = info.assume_init();
            if info.dli_fname.is_null() {
                return false;
            }
            // RTLD_NOLOAD: only the library already loaded (no second copy);
            // RTLD_NODELETE: from now on no dlclose unmaps it. The handle
            // is one more reference, kept on purpose.
            let handle = libc::dlopen(
                info.dli_fname,
                libc::RTLD_LAZY | libc::RTLD_NOLOAD | libc::RTLD_NODELETE,
            );
            !handle.is_null()
        }
    }
}

#[cfg(not(unix))]
mod imp {
    /// No such mark here: the library is left as the loader keeps it.
    pub fn pin() -> bool {
        false
    }
}
