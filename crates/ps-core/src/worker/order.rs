//! Each key's requests in the order the worker made them, in a job with backups.
//!
//! A worker's frames for one key reach one server in the order it made them (one connection,
//! and [`super::outbox`] never lets a frame overtake an earlier one of its keys). In a job with
//! backups that is not enough:
//! - a pull may go to another server than the key's pushes (a backup beside the worker,
//!   [`super::nearby`]): a later push could reach the primary first, and the round it
//!   completes reach the backup before the pull;
//! - a server answers a pull of round r once r is durable (its backup has it), with the value
//!   it holds then: had the worker's later pushes of the key completed further rounds
//!   meanwhile, the answer would be a later round's.
//!
//! So there a request that reads a key (a pull, a pushpull) holds the key's later writes
//! (pushes, pushpulls, row pushes) until its answer is in. A held frame takes its reply slot on
//! its connection at once, so a failure or a failover finds it. Writes none of whose keys has a
//! read in flight go at once, as without backups (a training step's pushes follow the pulls it
//! waited for). Without backups a server answers a round's pulls before it takes the next
//! round's pushes, and frames go straight to their connection.

use parking_lot::Mutex;
use rustc_hash::FxHashMap;
use tokio::runtime::Handle;
use tokio::sync::{oneshot, watch};

use super::conn::{Conns, ReplyRx};
use crate::protocol::frame::Frame;

/// What a request does to its keys.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Access {
    /// A pull: answered with a value.
    Read,
    /// A push.
    Write,
    /// A pushpull: a push, answered with the value of the round it completes.
    ReadWrite,
}

/// What the next write of a key's piece waits for: open once every earlier read of the piece
/// has its answer and every earlier held write of it is queued on its connection.
type Barrier = watch::Receiver<bool>;

/// A piece of a key: the key and the piece's first element.
type Piece = (u64, u64);

/// Keeps each piece's writes behind its reads in flight.
pub(super) struct Order {
    /// Where held frames and answer forwarders run (requests are made on callers' threads);
    /// None without backups: every frame goes at once.
    rt: Option<Handle>,
    /// Each piece's latest barrier.
    last: Mutex<FxHashMap<Piece, Barrier>>,
}

/// How one frame of a request goes.
struct Plan {
    /// Barriers of earlier requests it waits for before it is sent (a write's), or only before
    /// its own barrier opens (a read's).
    earlier: Vec<Barrier>,
    /// Barriers of this request's earlier frames on the same pieces: waited for before its own
    /// barrier opens, never before it is sent (a request's frames never wait for each other).
    siblings: Vec<Barrier>,
    /// Its own barrier, where it has one (a read, or a held write).
    open: Option<watch::Sender<bool>>,
}

impl Order {
    /// Orders requests when `backups` (a job with backups), else sends them as they come.
    pub(super) fn new(rt: Handle, backups: bool) -> Order {
        Order {
            rt: backups.then_some(rt),
            last: Mutex::new(FxHashMap::default()),
        }
    }

    /// Sends the `frames` of one request, each `(server, frame, access)`, on `conns` with
    /// `priority`; their replies, in order. A frame that writes a piece with a read of an
    /// earlier request in flight waits for it; the others go at once.
    pub(super) fn send(
        &self,
        conns: &Conns,
        frames: Vec<(usize, Frame, Access)>,
        priority: i32,
    ) -> Vec<ReplyRx> {
        let Some(rt) = &self.rt else {
            let send = |(s, f, _)| conns.get(s).send_request(f, priority);
            return frames.into_iter().map(send).collect();
        };
        let plans = self.plan(&frames);
        frames
            .into_iter()
            .zip(plans)
            .map(|((s, frame, access), plan)| {
                let conn = conns.get(s);
                let Some(open) = plan.open else {
                    return conn.send_request(frame, priority);
                };
                let (tx, rx) = oneshot::channel();
                let held = access != Access::Read && !plan.earlier.is_empty();
                if access == Access::Write {
                    // A held write: queued once the reads before it are answered.
                    let unsent = conn.register(frame, priority, tx);
                    rt.spawn(async move {
                        wait(&plan.earlier).await;
                        if let Some(unsent) = unsent {
                            unsent.send();
                        }
                        wait(&plan.siblings).await;
                        let _ = open.send(true);
                    });
                    return rx;
                }
                // A read: its answer is forwarded, then the pieces' later writes may go.
                let (answer_tx, answer) = oneshot::channel();
                let mut unsent = conn.register(frame, priority, answer_tx);
                if !held && let Some(now) = unsent.take() {
                    now.send();
                }
                rt.spawn(async move {
                    wait(&plan.earlier).await;
                    if let Some(unsent) = unsent {
                        unsent.send();
                    }
                    if let Ok(r) = answer.await {
                        let _ = tx.send(r);
                    }
                    wait(&plan.siblings).await;
                    let _ = open.send(true);
                });
                rx
            })
            .collect()
    }

    /// Each frame's plan: the earlier requests' barriers it meets, read before any of this
    /// request's own barriers is set, then those barriers set.
    fn plan(&self, frames: &[(usize, Frame, Access)]) -> Vec<Plan> {
        let mut last = self.last.lock();
        let earlier: Vec<Vec<Barrier>> = frames.iter().map(|(_, f, _)| closed(&last, f)).collect();
        let mut set: FxHashMap<Piece, Barrier> = FxHashMap::default();
        frames
            .iter()
            .zip(earlier)
            .map(|((_, frame, access), earlier)| {
                if *access == Access::Write && earlier.is_empty() {
                    return Plan {
                        earlier,
                        siblings: Vec::new(),
                        open: None,
                    };
                }
                let siblings = closed(&set, frame);
                let (open, barrier) = watch::channel(false);
                for e in &frame.entries {
                    set.insert((e.key, e.offset), barrier.clone());
                    last.insert((e.key, e.offset), barrier.clone());
                }
                Plan {
                    earlier,
                    siblings,
                    open: Some(open),
                }
            })
            .collect()
    }
}

/// The barriers of `frame`'s pieces in `last` that are still closed, each once.
fn closed(last: &FxHashMap<Piece, Barrier>, frame: &Frame) -> Vec<Barrier> {
    let mut out: Vec<Barrier> = Vec::new();
    for e in &frame.entries {
        if let Some(b) = last.get(&(e.key, e.offset))
            && !*b.borrow()
            && b.has_changed().is_ok()
            && !out.iter().any(|o| o.same_channel(b))
        {
            out.push(b.clone());
        }
    }
    out
}

/// Waits until every barrier in `barriers` is open (or its sender gone: its task ended).
async fn wait(barriers: &[Barrier]) {
    for b in barriers {
        let _ = b.clone().wait_for(|&open| open).await;
    }
}
