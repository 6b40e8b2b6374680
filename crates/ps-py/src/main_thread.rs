//! The Python work of a server process, done on the thread that started the server.
//!
//! A server started by `import mxrs` (a process whose `DMLC_ROLE` is `server`) runs while that
//! import is still under way: its thread holds the import lock of `mxrs`, and another thread
//! that imports anything of mxrs (unpickling an optimizer does) would wait for it forever. So
//! the node runs on a thread of its own, and the thread that started it runs the Python jobs
//! its server threads hand over ([`on_main`]), one at a time, until the node ends. The GIL is
//! released while it waits.

use std::panic::AssertUnwindSafe;
use std::sync::Mutex;
use std::sync::mpsc::{self, Receiver, Sender};

use ps_core::PsError;
use pyo3::prelude::*;

/// A piece of Python work.
type Job = Box<dyn FnOnce(Python<'_>) + Send>;

enum Msg {
    Job(Job),
    /// The node ended: nothing more will be handed over.
    Done,
}

/// Where jobs go while a node runs here. The channel needs no bound of its own: every sender
/// ([`on_main`]) waits for its job's answer, so at most one job per server thread is queued.
static JOBS: Mutex<Option<Sender<Msg>>> = Mutex::new(None);

fn jobs() -> std::sync::MutexGuard<'static, Option<Sender<Msg>>> {
    JOBS.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Runs `node` on a thread of its own while this thread runs the jobs handed to [`on_main`];
/// returns what `node` returns once it has ended.
pub(crate) fn run_node<R: Send + 'static>(
    py: Python<'_>,
    node: impl FnOnce() -> R + Send + 'static,
) -> R {
    let (tx, rx) = mpsc::channel();
    *jobs() = Some(tx.clone());
    let thread = std::thread::Builder::new()
        .name("mxrs-node".into())
        .spawn(move || {
            let out = node();
            let _ = tx.send(Msg::Done);
            out
        })
        .expect("spawning the node's thread");
    let mut rx: Receiver<Msg> = rx;
    loop {
        let (msg, back) = py.detach(move || (rx.recv(), rx));
        rx = back;
        match msg {
            Ok(Msg::Job(job)) => {
                // A job that panics answers nobody (its caller sees its answer dropped); this
                // thread goes on serving the others.
                let _ = std::panic::catch_unwind(AssertUnwindSafe(|| job(py)));
            }
            Ok(Msg::Done) | Err(_) => break,
        }
    }
    *jobs() = None;
    drop(rx); // jobs handed over after the end are answered by their dropped channel
    match thread.join() {
        Ok(out) => out,
        Err(panic) => std::panic::resume_unwind(panic),
    }
}

/// Runs `f` with the GIL on the thread that runs the node, and waits for its answer.
///
/// Fails when no node runs here (the process is not a server started from Python, or its
/// node has ended) or when `f` panicked.
pub(crate) fn on_main<R: Send + 'static>(
    f: impl FnOnce(Python<'_>) -> Result<R, PsError> + Send + 'static,
) -> Result<R, PsError> {
    let (tx, rx) = mpsc::sync_channel(1);
    let job: Job = Box::new(move |py| {
        let _ = tx.send(f(py));
    });
    let sent = match jobs().as_ref() {
        Some(sender) => sender.send(Msg::Job(job)).is_ok(),
        None => false,
    };
    if !sent {
        return Err(PsError::Shutdown);
    }
    rx.recv().unwrap_or_else(|_| {
        Err(PsError::Optimizer(
            "the server's Python call ended without an answer (it panicked, or the server \
             is stopping)"
                .into(),
        ))
    })
}
