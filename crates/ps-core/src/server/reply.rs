//! Replies that may complete later than their request was read, and the accounting that bounds
//! how many a connection may have outstanding.
//!
//! A request frame can carry many keys, and some entries cannot be answered at once (a pull
//! waiting for a sync round, an init waiting for rank 0). Each entry gets a [`ReplySlot`]; when
//! the last slot of a frame is filled, the reply frame goes to the requesting connection's
//! [`Outbox`]. The outbox counts the connection's unanswered entries and unwritten reply bytes
//! ([`Flow`]); its reader stops reading requests while either is over its bound, so a peer that
//! does not read its replies is slowed down instead of filling the server's memory.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use parking_lot::Mutex;
use prometheus_client::metrics::gauge::Gauge;
use tokio::sync::Notify;
use tokio::sync::mpsc::UnboundedSender;

use crate::error::PsError;
use crate::protocol::frame::{Entry, Frame, Op};

/// Request entries a connection may have read and not yet seen answered on the wire before its
/// reader pauses (parked pulls and inits included).
pub const MAX_OUTSTANDING_ENTRIES: usize = 1 << 17;
/// Reply bytes a connection may have queued and not yet written before its reader pauses.
pub(crate) const MAX_QUEUED_REPLY_BYTES: usize = 64 << 20;

/// What one connection has outstanding.
#[derive(Default)]
pub(crate) struct Flow {
    entries: AtomicUsize,
    bytes: AtomicUsize,
    written: Notify,
    /// The server's total of reply bytes queued, which this connection's share is part of.
    queued: Gauge,
}

impl Flow {
    /// A flow whose queued reply bytes also count in `queued`.
    pub(crate) fn counting(queued: Gauge) -> Flow {
        Flow {
            queued,
            ..Flow::default()
        }
    }

    /// Counts the entries of a request about to be dispatched.
    pub(crate) fn read(&self, entries: usize) {
        self.entries.fetch_add(entries, Ordering::AcqRel);
    }

    /// A queued frame went out on the wire (or will never go).
    pub(crate) fn written(&self, out: &Outgoing) {
        self.entries.fetch_sub(out.answers, Ordering::AcqRel);
        self.bytes.fetch_sub(out.bytes, Ordering::AcqRel);
        self.queued.dec_by(out.bytes as i64);
        self.written.notify_one();
    }

    fn over(&self) -> bool {
        self.entries.load(Ordering::Acquire) > MAX_OUTSTANDING_ENTRIES
            || self.bytes.load(Ordering::Acquire) > MAX_QUEUED_REPLY_BYTES
    }

    /// Returns once the connection is under both bounds again.
    pub(crate) async fn admit(&self) {
        loop {
            let written = self.written.notified();
            tokio::pin!(written);
            written.as_mut().enable();
            if !self.over() {
                return;
            }
            written.await;
        }
    }
}

/// A frame queued for a connection's writer.
pub(crate) struct Outgoing {
    pub frame: Frame,
    /// Its size on the wire.
    pub bytes: usize,
    /// The request entries it answers.
    pub answers: usize,
}

/// Outgoing frames of one connection, and its flow accounting.
#[derive(Clone)]
pub(crate) struct Outbox {
    tx: UnboundedSender<Outgoing>,
    flow: Arc<Flow>,
    conn: u64,
    /// The server's count of the value bytes its pull and pushpull replies carry.
    pulled: Arc<AtomicU64>,
}

impl Outbox {
    /// The outbox of connection `conn`, feeding its writer through `tx`; the values its pull
    /// replies carry count in `pulled`.
    pub(crate) fn new(
        tx: UnboundedSender<Outgoing>,
        flow: Arc<Flow>,
        conn: u64,
        pulled: Arc<AtomicU64>,
    ) -> Outbox {
        Outbox {
            tx,
            flow,
            conn,
            pulled,
        }
    }

    /// Queues the reply frame `frame`.
    pub(crate) fn send(&self, frame: Frame) {
        if matches!(frame.op, Op::Pull | Op::PushPull | Op::PullRows) {
            let bytes: usize = frame.entries.iter().map(|e| e.payload.len()).sum();
            self.pulled.fetch_add(bytes as u64, Ordering::Relaxed);
        }
        let answers = frame.entries.len();
        self.queue(frame, answers);
    }

    /// Queues `frame`, which answers `answers` request entries.
    pub(crate) fn queue(&self, frame: Frame, answers: usize) {
        let bytes = frame.encoded_len();
        self.flow.bytes.fetch_add(bytes, Ordering::AcqRel);
        self.flow.queued.inc_by(bytes as i64);
        let out = Outgoing {
            frame,
            bytes,
            answers,
        };
        // A closed writer means the worker went away; nobody is left to answer.
        if let Err(e) = self.tx.send(out) {
            self.flow.written(&e.0);
        }
    }
}

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

    /// The connection the reply goes to.
    pub(crate) fn conn(&self) -> u64 {
        self.pending.as_ref().map_or(0, |p| p.outbox.conn)
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
        let mut entries = p.entries.lock();
        entries[index] = Some(entry);
    }
    if p.remaining.fetch_sub(1, Ordering::AcqRel) == 1 {
        let entries = std::mem::take(&mut *p.entries.lock());
        let entries = entries
            .into_iter()
            .map(|e| e.expect("every slot filled"))
            .collect();
        p.outbox.send(Frame::reply_to(p.op, p.request_id, entries));
    }
}
