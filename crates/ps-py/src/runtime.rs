//! The process-wide tokio runtime.
//!
//! Created on first use. A child made by `fork` (DataLoader workers) inherits the parent's
//! memory but none of its threads, so the runtime would be dead there: a child that needs one
//! gets a fresh runtime of its own, and the parent's connections stay the parent's.

use parking_lot::Mutex;
use tokio::runtime::{Builder, Runtime};

static RUNTIME: Mutex<Option<(u32, &'static Runtime)>> = Mutex::new(None);

/// The runtime of this process.
pub(crate) fn get() -> &'static Runtime {
    let pid = std::process::id();
    let mut slot = RUNTIME.lock();
    match *slot {
        Some((owner, rt)) if owner == pid => rt,
        _ => {
            let threads = std::thread::available_parallelism().map_or(2, |n| n.get().min(2));
            let rt = Builder::new_multi_thread()
                .worker_threads(threads)
                .thread_name("mxrs-ps")
                .enable_all()
                .build()
                .expect("cannot start the tokio runtime");
            // Leaked on purpose: it lives as long as the process (and a forked child must not
            // run the parent's runtime destructor on threads it does not have).
            let rt: &'static Runtime = Box::leak(Box::new(rt));
            *slot = Some((pid, rt));
            rt
        }
    }
}

/// True when called in the process that created the runtime (false in a forked child).
pub(crate) fn is_owner(pid: u32) -> bool {
    pid == std::process::id()
}
