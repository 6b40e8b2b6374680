//! The exit status of a process that must not end with 0.
//!
//! When a KVStore request failed and nothing ever reported it, `mxrs` prints the error at exit
//! and calls [`exit_with_status`]: once Python has finished shutting down (every `atexit`
//! handler run, output flushed), the C library's `atexit` hook ends the process with that
//! status, so a launcher sees the job fail.

use std::sync::Once;
use std::sync::atomic::{AtomicI32, Ordering};

use pyo3::prelude::*;

static STATUS: AtomicI32 = AtomicI32::new(0);
static HOOK: Once = Once::new();

extern "C" fn end_with_status() {
    let status = STATUS.load(Ordering::SeqCst);
    if status != 0 {
        // SAFETY: both are async-signal-safe C library calls with valid arguments; `_exit` does
        // not run the remaining atexit handlers (calling `exit` again here would be undefined).
        unsafe {
            libc::fflush(std::ptr::null_mut());
            libc::_exit(status);
        }
    }
}

/// Makes this process exit with `status` (1..=255) when it ends normally, whatever status
/// Python would have given; 0 takes that back.
#[pyfunction]
pub(crate) fn exit_with_status(status: i32) -> PyResult<()> {
    if !(0..=255).contains(&status) {
        return Err(pyo3::exceptions::PyValueError::new_err(format!(
            "exit status {status} is outside 0..=255"
        )));
    }
    HOOK.call_once(|| {
        // SAFETY: registers a plain `extern "C"` function that lives as long as the process
        // (extension modules are never unloaded).
        unsafe {
            libc::atexit(end_with_status);
        }
    });
    STATUS.store(status, Ordering::SeqCst);
    Ok(())
}
