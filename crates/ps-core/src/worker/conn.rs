//! A worker's connection to one server: requests are pipelined and matched to replies by id.
//!
//! `send` registers the request's reply channel, then queues the frame for a writer task, which
//! writes the highest priority first ([`Outbox`]); a reader task routes each reply to its
//! channel. When the connection breaks, the server says why it
//! leaves (a `Bye`), or the job reports a lost node, every waiting request fails with an error
//! that names the cause, and so does every later one.
//!
//! In a job with backups (`keep`), a connection that breaks keeps its requests instead, the
//! later ones too: its server's keys move to their backups, and the worker sends them again
//! there ([`ServerConn::take_orphans`]).
//!
//! A request that waits long for its reply on an open connection is named on stderr (which
//! server, what request, for how long), and again each time its wait doubles
//! ([`Opening::wait_notice`]): a synchronous round waits for the slowest worker, so such a wait
//! is not an error, but a worker never waits silently.

use rustc_hash::FxHashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Weak};
use std::time::Duration;

use parking_lot::{Mutex, RwLock};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;
use tokio::time::Instant;

use crate::error::{PsError, Result};
use crate::protocol::connection::{FrameReader, FrameWriter};
use crate::protocol::frame::{Entry, Frame, Op};
use crate::protocol::transport::{self, Credentials};

use super::outbox::Outbox;

/// The reply to one request frame.
pub(crate) type ReplyRx = oneshot::Receiver<Result<Frame>>;

/// What a worker opens each of its connections with.
#[derive(Debug, Clone)]
pub(crate) struct Opening {
    /// The job's secret and TLS.
    pub(crate) creds: Credentials,
    /// Larger frames are refused.
    pub(crate) max_frame: u64,
    /// The worker's hello.
    pub(crate) hello: Entry,
    /// How long a request waits for its reply before the worker says so (`MXRS_WAIT_NOTICE`);
    /// None: never.
    pub(crate) wait_notice: Option<Duration>,
}

/// A request waiting for its reply.
struct Waiting {
    /// Where the reply goes.
    tx: oneshot::Sender<Result<Frame>>,
    /// The request itself, when the connection keeps requests to send them elsewhere.
    kept: Option<Frame>,
    op: Op,
    since: Instant,
}

#[derive(Default)]
struct Table {
    pending: FxHashMap<u64, Waiting>,
    /// Why the connection can no longer be used.
    dead: Option<String>,
    /// The connection broke in a job with backups: requests wait here for the server that
    /// takes over its keys (until they are taken, or the job fails).
    holding: bool,
    /// Why writing failed, for the reader to report once it has read what the server sent
    /// before the connection ended (its farewell first).
    write_error: Option<String>,
}

struct State {
    name: String,
    table: Mutex<Table>,
    next_id: AtomicU64,
    /// Keep requests when the connection breaks (a job with backups).
    keep: bool,
}

impl State {
    fn table(&self) -> parking_lot::MutexGuard<'_, Table> {
        self.table.lock()
    }

    /// Marks the connection dead and fails everything waiting on it. A connection that broke
    /// in a job with backups and was holding its requests for a failover takes `why` (the
    /// job's failure: a lost scheduler, a failed shutdown) as their cause: that is why no
    /// failover will send them, whichever of the two a worker saw first. A scheduler killed
    /// takes its servers down with it, and their connections can break before the worker
    /// hears of the scheduler.
    fn fail(&self, why: String) {
        let pending = {
            let mut t = self.table();
            if t.dead.is_none() || t.holding {
                t.dead = Some(why);
            }
            t.holding = false;
            std::mem::take(&mut t.pending)
        };
        let why = self.table().dead.clone().unwrap_or_default();
        for (_, w) in pending {
            let _ = w.tx.send(Err(PsError::NodeLost(why.clone())));
        }
    }

    /// The connection broke: fails everything waiting, or keeps it for another server.
    fn broken(&self, why: String) {
        if !self.keep {
            return self.fail(why);
        }
        let mut t = self.table();
        if t.dead.is_none() {
            tracing::warn!("{why}; its requests wait for the server that takes over its keys");
            t.dead = Some(why);
            t.holding = true;
        }
    }
}

/// Names on stderr the request that has waited longest on `state`'s connection once its wait
/// reaches `notice`, and again each time the wait doubles; ends with the connection.
async fn watch_waits(state: Weak<State>, notice: Duration) {
    let mut tick = tokio::time::interval((notice / 4).max(Duration::from_millis(10)));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    // the request last named, and the wait at which to name it again
    let mut next: Option<(u64, Duration)> = None;
    loop {
        tick.tick().await;
        let Some(st) = state.upgrade() else { return };
        let (id, waited, op, waiting, held) = {
            let t = st.table();
            if t.dead.is_some() && !t.holding {
                return;
            }
            let Some((&id, w)) = t.pending.iter().min_by_key(|(id, _)| **id) else {
                next = None;
                continue;
            };
            (id, w.since.elapsed(), w.op, t.pending.len(), t.dead.clone())
        };
        let at = match next {
            Some((named, at)) if named == id => at,
            _ => notice,
        };
        if waited < at {
            continue;
        }
        let state = match held {
            Some(why) => format!("held for the server that takes over its keys ({why})"),
            None => "the connection is open".to_string(),
        };
        tracing::warn!(
            "no reply from {} for {:.1} s to a {op:?} request (id {id}; requests waiting there: \
             {waiting}; {state})",
            st.name,
            waited.as_secs_f64(),
        );
        next = Some((id, at * 2));
    }
}

/// The connection to one server.
pub(crate) struct ServerConn {
    state: Arc<State>,
    outbox: Arc<Outbox>,
    reader: JoinHandle<()>,
    watcher: Option<JoinHandle<()>>,
}

impl ServerConn {
    /// Connects to the server `name` at `addr`, authenticates and says hello; `keep` keeps the
    /// requests of a connection that breaks (a job with backups).
    pub(crate) async fn open(
        addr: SocketAddr,
        name: String,
        opening: &Opening,
        keep: bool,
    ) -> Result<ServerConn> {
        let Opening {
            creds,
            max_frame,
            hello,
            wait_notice,
        } = opening;
        let (max_frame, hello) = (*max_frame, hello.clone());
        let stream = transport::connect(addr, creds).await.map_err(|e| match e {
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
            keep,
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
                // The reader says why the connection ended: a server that leaves writes its
                // farewell and closes, and a write can fail on the close (at once on a Unix
                // socket) before the reader has read the farewell. Ending the write side here
                // makes a live server close its end too, so the reader always ends.
                st.table()
                    .write_error
                    .get_or_insert(format!("lost the connection to {}: {e}", st.name));
                let _ = w.shutdown().await;
            }
        });

        let st = state.clone();
        let reader = tokio::spawn(async move {
            let mut r = FrameReader::new(read_half, max_frame);
            let why = loop {
                match r.read_frame().await {
                    // A server that says goodbye leaves the job: nothing takes its keys over.
                    Ok(Some(frame)) if frame.op == Op::Bye => {
                        st.fail(farewell(&st.name, frame));
                        return;
                    }
                    Ok(Some(frame)) if frame.reply => {
                        let waiting = st.table().pending.remove(&frame.request_id);
                        if let Some(w) = waiting {
                            let _ = w.tx.send(Ok(frame));
                        }
                    }
                    Ok(Some(_)) => break format!("{} sent a request frame to a worker", st.name),
                    Ok(None) => break format!("{} closed the connection", st.name),
                    Err(e) => break format!("lost the connection to {}: {e}", st.name),
                }
            };
            // what went wrong first: a failed write, else how reading ended
            let why = st.table().write_error.take().unwrap_or(why);
            st.broken(why);
        });

        let watcher = wait_notice.map(|n| tokio::spawn(watch_waits(Arc::downgrade(&state), n)));
        let conn = ServerConn {
            state,
            outbox,
            reader,
            watcher,
        };
        let reply = conn.send(Op::Hello, vec![hello], 0).await.map_err(|_| {
            PsError::NodeLost(format!("{} went away during hello", conn.state.name))
        })??;
        for e in reply.entries {
            e.into_result()?;
        }
        Ok(conn)
    }

    /// A connection that never opened: every request fails with `why`.
    pub(crate) fn dead(name: String, why: String) -> ServerConn {
        let table = Table {
            dead: Some(why),
            ..Table::default()
        };
        let outbox = Arc::new(Outbox::default());
        outbox.close();
        ServerConn {
            state: Arc::new(State {
                name,
                table: Mutex::new(table),
                next_id: AtomicU64::new(1),
                keep: false,
            }),
            outbox,
            reader: tokio::spawn(async {}),
            watcher: None,
        }
    }

    /// Sends a request, after the queued ones of higher `priority`; the receiver yields its
    /// reply frame or the connection's failure.
    pub(crate) fn send(&self, op: Op, entries: Vec<Entry>, priority: i32) -> ReplyRx {
        self.send_request(Frame::request(op, 0, entries), priority)
    }

    /// [`ServerConn::send`] of a request frame made by the caller (its id is set here).
    pub(crate) fn send_request(&self, frame: Frame, priority: i32) -> ReplyRx {
        let (tx, rx) = oneshot::channel();
        self.send_frame(frame, priority, tx);
        rx
    }

    /// Sends `frame` (its request id is set here), after the queued ones of higher `priority`;
    /// its reply, or the connection's failure, goes to `tx`.
    pub(crate) fn send_frame(
        &self,
        frame: Frame,
        priority: i32,
        tx: oneshot::Sender<Result<Frame>>,
    ) {
        if let Some(unsent) = self.register(frame, priority, tx) {
            unsent.send();
        }
    }

    /// Takes a reply slot for `frame` (its request id is set here) now, so that the
    /// connection's failure, or a failover, finds the request; the frame is written once the
    /// returned [`Unsent`] is sent. None where the request is already settled (the connection
    /// failed) or kept for the server that takes over (it broke in a job with backups).
    pub(crate) fn register(
        &self,
        mut frame: Frame,
        priority: i32,
        tx: oneshot::Sender<Result<Frame>>,
    ) -> Option<Unsent> {
        let id = self.state.next_id.fetch_add(1, Ordering::Relaxed);
        frame.request_id = id;
        let mut t = self.state.table();
        let waiting = Waiting {
            kept: self.state.keep.then(|| frame.clone()),
            op: frame.op,
            since: Instant::now(),
            tx,
        };
        match &t.dead {
            Some(_) if t.holding => {
                t.pending.insert(id, waiting);
                None
            }
            Some(why) => {
                let _ = waiting.tx.send(Err(PsError::NodeLost(why.clone())));
                None
            }
            None => {
                t.pending.insert(id, waiting);
                Some(Unsent {
                    frame,
                    priority,
                    outbox: self.outbox.clone(),
                    state: self.state.clone(),
                })
            }
        }
    }

    /// Takes every request waiting on this connection, with where its reply goes (its server
    /// was lost; they go to the servers that took its keys over). Later requests wait here too,
    /// to be taken by the next call (a request routed just before the keys moved).
    pub(crate) fn take_orphans(&self) -> Vec<(oneshot::Sender<Result<Frame>>, Frame)> {
        let mut t = self.state.table();
        if t.dead.is_none() {
            t.dead = Some(format!("{} was lost", self.state.name));
        }
        t.holding = true;
        let pending = std::mem::take(&mut t.pending);
        let mut ids: Vec<u64> = pending.keys().copied().collect();
        ids.sort_unstable();
        let mut pending = pending;
        ids.into_iter()
            .filter_map(|id| {
                let w = pending.remove(&id)?;
                Some((w.tx, w.kept?))
            })
            .collect()
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

/// A request whose reply slot is taken ([`ServerConn::register`]) and whose frame is not
/// written yet.
pub(crate) struct Unsent {
    frame: Frame,
    priority: i32,
    outbox: Arc<Outbox>,
    state: Arc<State>,
}

impl Unsent {
    /// Queues the frame for writing (after the queued ones of higher priority).
    pub(crate) fn send(self) {
        if !self.outbox.send(self.priority, self.frame) {
            self.state
                .broken(format!("lost the connection to {}", self.state.name));
        }
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

/// The connections to every server, by rank: a replacement server's takes the lost one's slot.
pub(crate) struct Conns(Vec<RwLock<Arc<ServerConn>>>);

impl Conns {
    pub(crate) fn new(conns: Vec<ServerConn>) -> Conns {
        Conns(
            conns
                .into_iter()
                .map(|c| RwLock::new(Arc::new(c)))
                .collect(),
        )
    }

    pub(crate) fn len(&self) -> usize {
        self.0.len()
    }

    /// The connection to server `rank` now.
    pub(crate) fn get(&self, rank: usize) -> Arc<ServerConn> {
        self.0[rank].read().clone()
    }

    /// Every connection now, by rank.
    pub(crate) fn all(&self) -> Vec<Arc<ServerConn>> {
        self.0.iter().map(|c| c.read().clone()).collect()
    }

    /// Puts `conn` in server `rank`'s slot; returns the connection it replaces.
    pub(crate) fn replace(&self, rank: usize, conn: ServerConn) -> Arc<ServerConn> {
        std::mem::replace(&mut *self.0[rank].write(), Arc::new(conn))
    }
}

impl Drop for ServerConn {
    fn drop(&mut self) {
        self.outbox.close();
        self.reader.abort();
        if let Some(w) = &self.watcher {
            w.abort();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state(keep: bool) -> State {
        State {
            name: "server 1 on 127.0.0.1:4000".into(),
            table: Mutex::new(Table::default()),
            next_id: AtomicU64::new(1),
            keep,
        }
    }

    fn waiting(st: &State, id: u64) -> oneshot::Receiver<Result<Frame>> {
        let (tx, rx) = oneshot::channel();
        let w = Waiting {
            tx,
            kept: None,
            op: Op::Pull,
            since: Instant::now(),
        };
        st.table().pending.insert(id, w);
        rx
    }

    /// What `tracing` writes while `f` runs on this thread (and the tasks it spawns on a
    /// current-thread runtime).
    #[derive(Clone, Default)]
    struct Log(Arc<Mutex<Vec<u8>>>);

    impl std::io::Write for Log {
        fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
            self.0.lock().extend_from_slice(b);
            Ok(b.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    impl Log {
        fn text(&self) -> String {
            String::from_utf8_lossy(&self.0.lock()).into_owned()
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_long_wait_is_named_and_named_again_as_it_doubles() {
        let log = Log::default();
        let writer = log.clone();
        let subscriber = tracing_subscriber::fmt()
            .with_writer(move || writer.clone())
            .with_ansi(false)
            .finish();
        let _guard = tracing::subscriber::set_default(subscriber);
        let st = Arc::new(state(false));
        let _rx = waiting(&st, 7);
        let watch = tokio::spawn(watch_waits(Arc::downgrade(&st), Duration::from_secs(60)));
        tokio::time::sleep(Duration::from_secs(59)).await;
        assert_eq!(log.text(), "", "named before the notice");
        tokio::time::sleep(Duration::from_secs(70)).await; // 129 s: named at 60 and 120
        let text = log.text();
        assert_eq!(text.matches("no reply from").count(), 2, "{text}");
        assert!(
            text.contains("no reply from server 1 on 127.0.0.1:4000 for 60.0 s to a Pull request (id 7; requests waiting there: 1; the connection is open)"),
            "{text}"
        );
        assert!(
            text.contains("for 120.0 s to a Pull request (id 7"),
            "{text}"
        );
        // the reply comes: nothing more is said, and the watch ends with the connection
        st.table().pending.remove(&7);
        tokio::time::sleep(Duration::from_secs(600)).await;
        assert_eq!(log.text().matches("no reply from").count(), 2);
        drop(st);
        tokio::time::timeout(Duration::from_secs(60), watch)
            .await
            .expect("the watch ends once the connection is gone")
            .unwrap();
    }

    #[test]
    fn requests_held_for_a_failover_fail_with_the_jobs_cause() {
        let st = state(true);
        let mut rx = waiting(&st, 1);
        st.broken("lost the connection to server 1 on 127.0.0.1:4000: Broken pipe".into());
        assert!(rx.try_recv().is_err(), "a held request failed at the break");
        st.fail("scheduler on 127.0.0.1:9000 disconnected".into());
        let e = rx.try_recv().unwrap().unwrap_err().to_string();
        assert!(
            e.contains("scheduler on 127.0.0.1:9000 disconnected"),
            "{e}"
        );
        // and so does every later request
        assert_eq!(
            st.table().dead.as_deref(),
            Some("scheduler on 127.0.0.1:9000 disconnected")
        );
    }

    #[test]
    fn a_connection_failed_by_its_break_keeps_that_cause() {
        let st = state(false);
        let mut rx = waiting(&st, 1);
        st.broken("server 1 on 127.0.0.1:4000 closed the connection".into());
        let e = rx.try_recv().unwrap().unwrap_err().to_string();
        assert!(e.contains("closed the connection"), "{e}");
        st.fail("scheduler on 127.0.0.1:9000 disconnected".into());
        assert_eq!(
            st.table().dead.as_deref(),
            Some("server 1 on 127.0.0.1:4000 closed the connection")
        );
    }
}
