//! Which requests a connection applies off the runtime's threads instead of on its own task.
//!
//! Summing a round's pushes and applying the optimizer are plain CPU work over a whole piece: on
//! a runtime thread, a long one holds up every other connection served by that thread. A push or
//! pushpull carrying a piece of at least [`LARGE_BYTES`] is therefore dispatched as blocking work
//! when large dispatches of this server have been taking [`OFFLOAD_AFTER`] or more (an
//! exponential average of their measured times, kept in [`Cost`]); smaller requests, and large
//! ones that are quick (summing a 1 MiB piece, or a plain SGD step), stay inline, where they cost
//! less than the hand-over: handing every 1 MiB piece over cost 15-20% of the push rate of 1 MB
//! arrays and 7% of 16 MB ones (2 workers x 2 servers on 2 cores), while an optimizer such as
//! Adam over a large piece is worth moving.
//!
//! On a multi-thread runtime (the server binary's) the dispatch blocks in place: the runtime
//! first hands this thread's other tasks to another thread, and the piece's bytes are summed on
//! the thread that has just read them. On a current-thread runtime, where that is not possible,
//! it goes to the blocking pool.
//!
//! The connection's reader waits for the blocking dispatch before it reads its next request, and
//! the dispatch is the same code either way (`handlers::dispatch`, under the same key locks), so
//! per-key order, sync rounds, replies, errors and the flow accounting are exactly those of an
//! inline dispatch.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use tokio::runtime::{Handle, RuntimeFlavor};

use super::Shared;
use super::handlers;
use super::peer::Peer;
use super::reply::Outbox;
use crate::error::Result;
use crate::protocol::frame::{Frame, Op};

/// Pushed pieces of at least this many bytes (a full piece of a large key:
/// [`crate::placement::PIECE_BYTES`]) make a push large.
pub(crate) const LARGE_BYTES: usize = 1 << 20;

/// Large dispatches expected to take at least this long run as blocking work.
pub(crate) const OFFLOAD_AFTER: Duration = Duration::from_millis(1);

/// Whether `frame` is a large push or pushpull: one of its entries is a piece of at least
/// [`LARGE_BYTES`] once decoded (a compressed piece costs its decoded size to sum), or carries
/// that many bytes of rows.
fn large(frame: &Frame) -> bool {
    match frame.op {
        Op::Push | Op::PushPull => frame
            .entries
            .iter()
            .any(|e| e.count.saturating_mul(e.dtype.size() as u64) >= LARGE_BYTES as u64),
        // Rows cost what they carry to sum (a lazy update touches only them).
        Op::PushRows => frame.entries.iter().any(|e| e.payload.len() >= LARGE_BYTES),
        _ => false,
    }
}

/// The expected time of a large dispatch (an exponential average of the measured ones; zero
/// before the first) against the time from which they run as blocking work.
#[derive(Debug)]
pub(crate) struct Cost {
    expected_ns: AtomicU64,
    after_ns: AtomicU64,
}

impl Cost {
    pub(crate) fn new(after: Duration) -> Cost {
        Cost {
            expected_ns: AtomicU64::new(0),
            after_ns: AtomicU64::new(after.as_nanos() as u64),
        }
    }

    /// Whether the next large dispatch should leave the runtime's thread.
    fn heavy(&self) -> bool {
        self.expected_ns.load(Ordering::Relaxed) >= self.after_ns.load(Ordering::Relaxed)
    }

    /// Folds one measured large dispatch into the expectation (weight 1/4).
    fn record(&self, took: Duration) {
        let took = took.as_nanos().min(u64::MAX as u128) as u64;
        let old = self.expected_ns.load(Ordering::Relaxed);
        let new = if old == 0 {
            took
        } else {
            old - old / 4 + took / 4
        };
        self.expected_ns.store(new, Ordering::Relaxed);
    }

    /// Sets the time from which large dispatches leave the runtime's thread (zero: always).
    #[cfg(test)]
    pub(crate) fn set_after(&self, after: Duration) {
        self.after_ns
            .store(after.as_nanos() as u64, Ordering::Relaxed);
    }
}

/// Runs `handlers::dispatch` for a large frame, timing it into `shared.large_cost`.
fn timed(shared: &Shared, peer: &mut Peer, frame: Frame, outbox: &Outbox) -> Result<()> {
    let start = Instant::now();
    let r = handlers::dispatch(shared, peer, frame, outbox);
    shared.large_cost.record(start.elapsed());
    r
}

/// Dispatches one request frame: inline, or as blocking work when it is large and large ones have
/// been slow (see the module's doc). Returns once the frame has been dispatched either way; a
/// panic in a blocking dispatch resumes here.
pub(crate) async fn dispatch(
    shared: &Arc<Shared>,
    peer: &mut Peer,
    frame: Frame,
    outbox: &Outbox,
) -> Result<()> {
    if !large(&frame) {
        return handlers::dispatch(shared, peer, frame, outbox);
    }
    if !shared.large_cost.heavy() {
        return timed(shared, peer, frame, outbox);
    }
    if Handle::current().runtime_flavor() == RuntimeFlavor::MultiThread {
        // On this very thread (the frame's bytes stay where they were just read), once the
        // runtime has moved this worker's other tasks to another thread.
        return tokio::task::block_in_place(|| {
            #[cfg(test)]
            shared.hooks.offloaded();
            timed(shared, peer, frame, outbox)
        });
    }
    let shared = shared.clone();
    let outbox = outbox.clone();
    let mut moved = peer.clone();
    let blocking = tokio::task::spawn_blocking(move || {
        #[cfg(test)]
        shared.hooks.offloaded();
        let r = timed(&shared, &mut moved, frame, &outbox);
        (moved, r)
    });
    match blocking.await {
        Ok((moved, r)) => {
            *peer = moved;
            r
        }
        Err(e) => std::panic::resume_unwind(e.into_panic()),
    }
}

/// A test's view into the blocking dispatches of a server.
#[cfg(test)]
#[derive(Default)]
pub(crate) struct Hooks {
    /// Called on the blocking-pool thread before each offloaded dispatch.
    pub(crate) on_offload: parking_lot::Mutex<Option<Arc<dyn Fn() + Send + Sync>>>,
}

#[cfg(test)]
impl Hooks {
    fn offloaded(&self) {
        let hook = self.on_offload.lock().clone();
        if let Some(hook) = hook {
            hook();
        }
    }
}

#[cfg(test)]
mod tests;
