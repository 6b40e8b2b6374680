//! Which requests a connection applies off the runtime's threads instead of on its own task.
//!
//! Summing a round's pushes and applying the optimizer are plain CPU work over a whole piece: on
//! a runtime thread, a large one would hold up every other connection served by that thread.
//! A push or pushpull that carries a piece of at least [`OFFLOAD_BYTES`] is therefore dispatched
//! as blocking work; smaller requests (most of them, and every pull, init or control request)
//! stay inline, where they cost less than the hand-over. On a multi-thread runtime (the server
//! binary's) the dispatch blocks in place: the runtime first hands this thread's other tasks to
//! another thread, and the piece's bytes are summed on the thread that has just read them
//! (handing them to a blocking-pool thread instead cost 10-15% of a large push's throughput). On
//! a current-thread runtime, where that is not possible, it goes to the blocking pool.
//!
//! The connection's reader waits for the blocking dispatch before it reads its next request, and
//! the dispatch is the same code either way (`handlers::dispatch`, under the same key locks), so
//! per-key order, sync rounds, replies, errors and the flow accounting are exactly those of an
//! inline dispatch.

use std::sync::Arc;

use tokio::runtime::{Handle, RuntimeFlavor};

use super::Shared;
use super::connection::Peer;
use super::handlers;
use super::reply::Outbox;
use crate::error::Result;
use crate::protocol::frame::{Frame, Op};

/// Pushed pieces of at least this many bytes (a full piece of a large key:
/// [`crate::partition::PIECE_BYTES`]) are summed and applied as blocking work.
pub(crate) const OFFLOAD_BYTES: usize = 1 << 20;

/// Whether `frame` is dispatched on the blocking pool.
fn heavy(frame: &Frame) -> bool {
    matches!(frame.op, Op::Push | Op::PushPull)
        && frame
            .entries
            .iter()
            .any(|e| e.payload.len() >= OFFLOAD_BYTES)
}

/// Dispatches one request frame: inline, or as blocking work when it is [`heavy`]. Returns once
/// the frame has been dispatched either way; a panic in a blocking dispatch resumes here.
pub(crate) async fn dispatch(
    shared: &Arc<Shared>,
    peer: &mut Peer,
    frame: Frame,
    outbox: &Outbox,
) -> Result<()> {
    if !heavy(&frame) {
        return handlers::dispatch(shared, peer, frame, outbox);
    }
    if Handle::current().runtime_flavor() == RuntimeFlavor::MultiThread {
        // On this very thread (the frame's bytes stay where they were just read), once the
        // runtime has moved this worker's other tasks to another thread.
        return tokio::task::block_in_place(|| {
            #[cfg(test)]
            shared.hooks.offloaded();
            handlers::dispatch(shared, peer, frame, outbox)
        });
    }
    let shared = shared.clone();
    let outbox = outbox.clone();
    let mut moved = peer.clone();
    let blocking = tokio::task::spawn_blocking(move || {
        #[cfg(test)]
        shared.hooks.offloaded();
        let r = handlers::dispatch(&shared, &mut moved, frame, &outbox);
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
