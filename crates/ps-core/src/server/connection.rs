//! One worker's connection to a server: a reader task that parses and dispatches requests, and a
//! writer task that sends replies (some complete later, from other workers' pushes).
//!
//! The reader reads nothing while the connection has too much outstanding (`reply::Flow`), and
//! each large frame waits for its share of the server's in-flight budget before it is read. When
//! the server leaves the job, the writer sends a [`Op::Bye`] saying why before the connection
//! closes; when the peer leaves, what it left waiting on the server is forgotten.

use std::sync::atomic::Ordering;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use bytes::Bytes;
use prometheus_client::metrics::gauge::Gauge;
use tokio::sync::{mpsc, watch};

use super::offload;
use super::peer::Peer;
use super::reply::{Flow, Outbox, Outgoing};
use super::{Farewell, Shared};
use crate::error::{PsError, Result};
use crate::metrics::PeerCounters;
use crate::protocol::auth::HANDSHAKE_TIMEOUT;
use crate::protocol::connection::{FrameReader, FrameWriter};
use crate::protocol::frame::{Entry, Frame, Op};
use crate::protocol::transport::{Link, LinkWrite};

/// How long a leaving server waits for a connection's last replies and its Bye to be written.
const BYE_GRACE: Duration = Duration::from_secs(1);

/// Counts an open connection while it lives.
struct Open(Gauge);

impl Open {
    fn new(gauge: &Gauge) -> Open {
        gauge.inc();
        Open(gauge.clone())
    }
}

impl Drop for Open {
    fn drop(&mut self) {
        self.0.dec();
    }
}

/// Serves one authenticated connection until the peer leaves, sends garbage, or `stop` is set.
pub(crate) async fn run(
    shared: Arc<Shared>,
    stream: Link,
    mut stop: watch::Receiver<Option<Farewell>>,
) {
    let mut peer = Peer {
        conn: shared.next_conn.fetch_add(1, Ordering::Relaxed),
        addr: stream.peer(),
        rank: None,
        server: None,
        arena: None,
    };
    let (read_half, write_half) = stream.into_split();
    let flow = Arc::new(Flow::counting(shared.metrics.reply_bytes.clone()));
    // Unbounded because replies are queued from handlers that cannot wait; the Flow bounds it:
    // past MAX_OUTSTANDING_ENTRIES unanswered entries or MAX_QUEUED_REPLY_BYTES of replies
    // not yet written, the connection is not read from until it is under again.
    let (tx, replies) = mpsc::unbounded_channel::<Outgoing>();
    let outbox = Outbox::new(tx, flow.clone(), peer.conn, shared.push_stats.pulled());
    // The peer's counters, once its Hello said who it is.
    let counters = Arc::new(OnceLock::new());
    let mut writer = tokio::spawn(write(write_half, replies, flow.clone(), counters.clone()));
    let _open = Open::new(&shared.metrics.connections);

    let mut reader =
        FrameReader::with_budget(read_half, shared.limits.max_frame, shared.budget.clone());
    let farewell = loop {
        let frame = tokio::select! {
            f = next_request(&mut reader, &flow, peer.rank.is_none() && peer.server.is_none()) => f,
            _ = stop.changed() => break stop.borrow().clone(),
        };
        match frame {
            Ok(Some(frame)) => {
                flow.read(frame.entries.len());
                let bytes = frame.encoded_len();
                if let Err(e) = offload::dispatch(&shared, &mut peer, frame, &outbox).await {
                    tracing::warn!("closing connection from {}: {e}", peer.addr);
                    break None;
                }
                match counters.get() {
                    Some(c) => c.received(bytes),
                    None => {
                        if let Some(name) = peer.name() {
                            let c = shared.metrics.peer(&name);
                            c.received(bytes);
                            let _ = counters.set(c);
                        }
                    }
                }
            }
            Ok(None) => {
                tracing::debug!("connection from {} closed", peer.addr);
                break None;
            }
            Err(e) => {
                tracing::warn!("closing connection from {}: {e}", peer.addr);
                break None;
            }
        }
    };
    if let Some(rank) = peer.rank {
        let mut connected = shared.connected.lock();
        if connected
            .get(&rank)
            .is_some_and(|(conn, _)| *conn == peer.conn)
        {
            connected.remove(&rank);
        }
    }
    match farewell {
        Some(farewell) => {
            // The server is leaving: the last replies, then why, then the end.
            outbox.queue(bye(&farewell), 0);
            drop(outbox);
            if tokio::time::timeout(BYE_GRACE, &mut writer).await.is_err() {
                writer.abort();
            }
        }
        None => {
            // The peer is gone (or broke the protocol): stop writing, forget what it left.
            writer.abort();
            drop(outbox);
            shared.store.forget_connection(peer.conn);
        }
    }
}

/// The next request, once the connection is under its bounds; the first (the Hello) must come
/// within the handshake timeout.
async fn next_request<R: tokio::io::AsyncRead + Unpin>(
    reader: &mut FrameReader<R>,
    flow: &Flow,
    first: bool,
) -> Result<Option<Frame>> {
    flow.admit().await;
    if !first {
        return reader.read_frame().await;
    }
    tokio::time::timeout(HANDSHAKE_TIMEOUT, reader.read_frame())
        .await
        .unwrap_or_else(|_| {
            Err(PsError::Protocol(format!(
                "no Hello within {HANDSHAKE_TIMEOUT:?}"
            )))
        })
}

/// The writer task: sends queued frames in order, counting each one out of the flow; ends after
/// a Bye, or when the connection breaks.
async fn write(
    write_half: LinkWrite,
    mut replies: mpsc::UnboundedReceiver<Outgoing>,
    flow: Arc<Flow>,
    counters: Arc<OnceLock<PeerCounters>>,
) {
    let mut w = FrameWriter::new(write_half);
    while let Some(out) = replies.recv().await {
        let mut batch = vec![out];
        while let Ok(more) = replies.try_recv() {
            batch.push(more);
        }
        let mut last = false;
        for out in &batch {
            if w.write_frame(&out.frame).await.is_err() {
                return;
            }
            last |= out.frame.op == Op::Bye;
        }
        if w.flush().await.is_err() {
            return;
        }
        batch.iter().for_each(|out| flow.written(out));
        if let Some(c) = counters.get() {
            c.sent(batch.len(), batch.iter().map(|out| out.bytes).sum());
        }
        if last {
            let _ = w.shutdown().await;
            return;
        }
    }
}

/// The frame that tells a worker this server is leaving and why.
fn bye(farewell: &Farewell) -> Frame {
    let err = match farewell.failed {
        true => PsError::NodeLost(farewell.reason.clone()),
        false => PsError::Shutdown,
    };
    let mut e = Entry::new(0, crate::dtype::DType::F32, &[], 0, 0).error(&err);
    e.payload = Bytes::from(farewell.reason.clone());
    Frame::reply_to(Op::Bye, 0, vec![e])
}
