//! Replies that may complete later than their request was read.
//!
//! A request frame can carry many keys, and some entries cannot be answered at once (a pull
//! waiting for a sync round, an init waiting for rank 0). Each entry gets a [`ReplySlot`]; when
//! the last slot of a frame is filled, the reply frame goes to the requesting connection's writer.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use tokio::sync::mpsc::UnboundedSender;

use crate::error::PsError;
use crate::protocol::frame::{Entry, Frame, Op};

/// Outgoing frames of one connection.
pub(crate) type Outbox = UnboundedSender<Frame>;

struct Pending {
    op: Op,
    request_id: u64,
    entries: Mutex<Vec<Option<Entry>>>,
    remaining: AtomicUsize,
    outbox: Outbox,
}

/// The place of one entry in a reply frame still being assembled.
pub(crate) struct ReplySlot {
    pending: Option<Arc<Pending>>,
    index: usize,
    /// The request entry, kept to build an error reply if the slot is dropped unanswered.
    request: (u64, u64, u64),
}

impl ReplySlot {
    /// One slot per entry of `request`, in order.
    pub(crate) fn for_frame(request: &Frame, outbox: &Outbox) -> Vec<ReplySlot> {
        let n = request.entries.len();
        let pending = Arc::new(Pending {
            op: request.op,
            request_id: request.request_id,
            entries: Mutex::new(vec![None; n]),
            remaining: AtomicUsize::new(n),
            outbox: outbox.clone(),
        });
        request
            .entries
            .iter()
            .enumerate()
            .map(|(index, e)| ReplySlot {
                pending: Some(pending.clone()),
                index,
                request: (e.key, e.offset, e.count),
            })
            .collect()
    }

    /// Fills the slot; sends the frame if it was the last one.
    pub(crate) fn complete(mut self, entry: Entry) {
        if let Some(p) = self.pending.take() {
            fill(p, self.index, entry);
        }
    }
}

impl Drop for ReplySlot {
    fn drop(&mut self) {
        if let Some(p) = self.pending.take() {
            let (key, offset, count) = self.request;
            let mut e = Entry::new(key, crate::dtype::DType::F32, &[], offset, count);
            e = e.error(&PsError::Shutdown);
            fill(p, self.index, e);
        }
    }
}

fn fill(p: Arc<Pending>, index: usize, entry: Entry) {
    {
        let mut entries = p.entries.lock().unwrap_or_else(|e| e.into_inner());
        entries[index] = Some(entry);
    }
    if p.remaining.fetch_sub(1, Ordering::AcqRel) == 1 {
        let entries = std::mem::take(&mut *p.entries.lock().unwrap_or_else(|e| e.into_inner()));
        let entries = entries
            .into_iter()
            .map(|e| e.expect("every slot filled"))
            .collect();
        // A closed outbox means the worker went away; nobody is left to answer.
        let _ = p.outbox.send(Frame::reply_to(p.op, p.request_id, entries));
    }
}
