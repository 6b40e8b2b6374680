//! A worker's connection to one server: requests are pipelined and matched to replies by id.
//!
//! `send` registers the request's reply channel, then queues the frame for a writer task, which
//! writes the highest priority first ([`Outbox`]); a reader task routes each reply to its
//! channel. When the connection breaks, the server says why it
//! leaves (a `Bye`), or the job reports a lost node, every waiting request fails with an error
//! that names the cause, and so does every later one.

use rustc_hash::FxHashMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use parking_lot::Mutex;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

use crate::error::{PsError, Result};
use crate::protocol::connection::{FrameReader, FrameWriter};
use crate::protocol::frame::{Entry, Frame, Op};
use crate::protocol::transport;

use super::outbox::Outbox;

/// The reply to one request frame.
pub(crate) type ReplyRx = oneshot::Receiver<Result<Frame>>;

#[derive(Default)]
struct Table {
    pending: FxHashMap<u64, oneshot::Sender<Result<Frame>>>,
    /// Why the connection can no longer be used.
    dead: Option<String>,
}

struct State {
    name: String,
    table: Mutex<Table>,
    next_id: AtomicU64,
}

impl State {
    fn table(&self) -> parking_lot::MutexGuard<'_, Table> {
        self.table.lock()
    }

    /// Marks the connection dead and fails everything waiting on it.
    fn fail(&self, why: String) {
        let pending = {
            let mut t = self.table();
            if t.dead.is_none() {
                t.dead = Some(why);
            }
            std::mem::take(&mut t.pending)
        };
        let why = self.table().dead.clone().unwrap_or_default();
        for (_, tx) in pending {
            let _ = tx.send(Err(PsError::NodeLost(why.clone())));
        }
    }
}

/// The connection to one server.
pub(crate) struct ServerConn {
    state: Arc<State>,
    outbox: Arc<Outbox>,
    reader: JoinHandle<()>,
}

impl ServerConn {
    /// Connects to the server `name` at `addr`, authenticates and says hello.
    pub(crate) async fn open(
        addr: SocketAddr,
        name: String,
        secret: Option<&[u8]>,
        max_frame: u64,
        hello: Entry,
    ) -> Result<ServerConn> {
        let stream = transport::connect(addr, secret)
            .await
            .map_err(|e| match e {
                PsError::Io { source, .. } => {
                    PsError::NodeLost(format!("cannot connect to {name}: {source}"))
                }
                other => other,
            })?;
        let (read_half, write_half) = stream.into_split();
        let state = Arc::new(State {
            name,
            table: Mutex::new(Table::default()),
            next_id: AtomicU64::new(1),
        });
        let outbox = Arc::new(Outbox::default());

        let st = state.clone();
        let frames = outbox.clone();
        tokio::spawn(async move {
            let mut w = FrameWriter::new(write_half);
            let r: Result<()> = async {
                while let Some(frame) = frames.next().await {
                    w.write_frame(&frame).await?;
                    while let Some(frame) = frames.try_next() {
                        w.write_frame(&frame).await?;
                    }
                    w.flush().await?;
                }
                Ok(())
            }
            .await;
            if let Err(e) = r {
                st.fail(format!("lost the connection to {}: {e}", st.name));
            }
        });

        let st = state.clone();
        let reader = tokio::spawn(async move {
            let mut r = FrameReader::new(read_half, max_frame);
            let why = loop {
                match r.read_frame().await {
                    Ok(Some(frame)) if frame.op == Op::Bye => break farewell(&st.name, frame),
                    Ok(Some(frame)) if frame.reply => {
                        let tx = st.table().pending.remove(&frame.request_id);
                        if let Some(tx) = tx {
                            let _ = tx.send(Ok(frame));
                        }
                    }
                    Ok(Some(_)) => break format!("{} sent a request frame to a worker", st.name),
                    Ok(None) => break format!("{} closed the connection", st.name),
                    Err(e) => break format!("lost the connection to {}: {e}", st.name),
                }
            };
            st.fail(why);
        });

        let conn = ServerConn {
            state,
            outbox,
            reader,
        };
        let reply = conn.send(Op::Hello, vec![hello], 0).await.map_err(|_| {
            PsError::NodeLost(format!("{} went away during hello", conn.state.name))
        })??;
        for e in reply.entries {
            e.into_result()?;
        }
        Ok(conn)
    }

    /// Sends a request, after the queued ones of higher `priority`; the receiver yields its
    /// reply frame or the connection's failure.
    pub(crate) fn send(&self, op: Op, entries: Vec<Entry>, priority: i32) -> ReplyRx {
        let (tx, rx) = oneshot::channel();
        let id = self.state.next_id.fetch_add(1, Ordering::Relaxed);
        {
            let mut t = self.state.table();
            if let Some(why) = &t.dead {
                let _ = tx.send(Err(PsError::NodeLost(why.clone())));
                return rx;
            }
            t.pending.insert(id, tx);
        }
        if !self.outbox.send(priority, Frame::request(op, id, entries)) {
            self.state
                .fail(format!("lost the connection to {}", self.state.name));
        }
        rx
    }

    /// Fails every waiting and later request with `why` (a lost node elsewhere in the job).
    pub(crate) fn fail(&self, why: &str) {
        self.state.fail(why.to_string());
    }

    /// "server 1 on 127.0.0.1:4000".
    pub(crate) fn name(&self) -> &str {
        &self.state.name
    }
}

/// Why a server that sent `bye` is leaving: "server 0 on HOST:PORT left the job: REASON".
fn farewell(name: &str, bye: Frame) -> String {
    let reason = bye
        .entries
        .into_iter()
        .next()
        .map(|e| String::from_utf8_lossy(&e.payload).into_owned())
        .filter(|r| !r.is_empty())
        .unwrap_or_else(|| "no reason given".into());
    format!("{name} left the job: {reason}")
}

impl Drop for ServerConn {
    fn drop(&mut self) {
        self.outbox.close();
        self.reader.abort();
    }
}
