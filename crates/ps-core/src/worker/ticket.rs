//! Tickets: the handle a push, pull or init returns at once; `wait` yields its outcome.
//!
//! A request over many keys becomes one frame per server (more when large). The ticket keeps the
//! frames' reply channels and a plan of where each key's pieces sit in the replies, so a pulled
//! key spread over several servers is put back together, and a whole key from one server is
//! handed over without a copy.

use bytes::Bytes;
use tokio::sync::oneshot::error::TryRecvError;

use super::conn::ReplyRx;
use crate::dtype::{DType, Float};
use crate::error::{PsError, Result};
use crate::protocol::frame::{Entry, Frame};
use crate::protocol::pool;

/// Where one piece of a pulled key is: frame, entry, byte offset inside the key, byte length.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Piece {
    pub frame: usize,
    pub entry: usize,
    pub at: usize,
    pub len: usize,
}

/// How one pulled key is gathered.
#[derive(Debug)]
pub(crate) struct Gather {
    pub key: u64,
    pub bytes: usize,
    pub pieces: Vec<Piece>,
}

/// What the replies mean.
#[derive(Debug)]
pub(crate) enum Plan {
    /// Success or the first error; no values.
    Ack,
    /// One value per key, in request order.
    Values(Vec<Gather>),
    /// The payload of every reply entry, in order (saved optimizer states per server).
    Payloads,
}

/// One reply frame: still on its way, or arrived.
enum Reply {
    Waiting(ReplyRx),
    Got(Result<Frame>),
}

impl Reply {
    /// Takes the reply if it has arrived; true once it has.
    fn poll(&mut self) -> bool {
        if let Reply::Waiting(rx) = self {
            *self = match rx.try_recv() {
                Ok(reply) => Reply::Got(reply),
                Err(TryRecvError::Empty) => return false,
                Err(TryRecvError::Closed) => Reply::Got(Err(dropped())),
            };
        }
        true
    }

    async fn get(self) -> Result<Frame> {
        match self {
            Reply::Waiting(rx) => rx.await.map_err(|_| dropped())?,
            Reply::Got(reply) => reply,
        }
    }
}

fn dropped() -> PsError {
    PsError::NodeLost("the connection to a server was dropped".into())
}

/// The pending outcome of an asynchronous request.
#[must_use = "a ticket does nothing unless waited on"]
pub struct Ticket {
    replies: Vec<Reply>,
    plan: Plan,
    failed: Option<PsError>,
    on_error: Option<Box<dyn FnOnce() + Send>>,
    on_success: Option<OnSuccess>,
}

/// What runs on the reply frames of a request that succeeded.
type OnSuccess = Box<dyn FnOnce(&[Frame]) + Send>;

impl std::fmt::Debug for Ticket {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Ticket")
            .field("replies", &self.replies.len())
            .field("failed", &self.failed)
            .finish_non_exhaustive()
    }
}

impl Ticket {
    pub(crate) fn new(replies: Vec<ReplyRx>, plan: Plan) -> Ticket {
        Ticket {
            replies: replies.into_iter().map(Reply::Waiting).collect(),
            plan,
            failed: None,
            on_error: None,
            on_success: None,
        }
    }

    /// Whether every reply has arrived, so that waiting returns at once. Never blocks.
    pub fn is_ready(&mut self) -> bool {
        self.failed.is_some() || self.replies.iter_mut().all(Reply::poll)
    }

    /// Runs `undo` if the request fails (for example to forget a key whose init was refused).
    pub(crate) fn on_error(mut self, undo: impl FnOnce() + Send + 'static) -> Ticket {
        self.on_error = Some(Box::new(undo));
        self
    }

    /// Runs `done` on the reply frames once every reply has arrived without an error (for
    /// example to take the rounds an init's replies carry).
    pub(crate) fn on_success(mut self, done: impl FnOnce(&[Frame]) + Send + 'static) -> Ticket {
        self.on_success = Some(Box::new(done));
        self
    }

    /// A ticket that fails with `err` (a request refused before anything was sent).
    pub(crate) fn failed(err: PsError) -> Ticket {
        Ticket {
            replies: Vec::new(),
            plan: Plan::Ack,
            failed: Some(err),
            on_error: None,
            on_success: None,
        }
    }

    /// Waits for every reply. Pulls yield one value per key (raw little-endian bytes of the
    /// key's dtype), pushes and inits an empty list; the first error any server reported
    /// fails the whole ticket.
    pub async fn wait(mut self) -> Result<Vec<Bytes>> {
        let undo = self.on_error.take();
        let r = self.outcome().await;
        if let (Err(_), Some(undo)) = (&r, undo) {
            undo();
        }
        r
    }

    /// Waits for a pull (or pushpull) and copies each key's value straight into `outs` (one
    /// buffer per key, in request order, each exactly the key's size): one copy from the
    /// received frames, no intermediate buffer for keys spread over several servers.
    pub async fn wait_into(mut self, outs: &mut [&mut [u8]]) -> Result<()> {
        let undo = self.on_error.take();
        let r = self.copy_into(outs).await;
        if let (Err(_), Some(undo)) = (&r, undo) {
            undo();
        }
        r
    }

    async fn copy_into(mut self, outs: &mut [&mut [u8]]) -> Result<()> {
        if let Some(err) = self.failed.take() {
            return Err(err);
        }
        let gathers = match &self.plan {
            Plan::Values(g) => g,
            _ => return Err(PsError::Rejected("only pulls have values to copy".into())),
        };
        if gathers.len() != outs.len() {
            return Err(PsError::ShapeMismatch(format!(
                "{} destination buffers for {} keys",
                outs.len(),
                gathers.len()
            )));
        }
        for (g, out) in gathers.iter().zip(outs.iter()) {
            if out.len() != g.bytes {
                return Err(PsError::ShapeMismatch(format!(
                    "key {}: destination of {} bytes for a value of {}",
                    g.key,
                    out.len(),
                    g.bytes
                )));
            }
        }
        let (frames, Plan::Values(gathers)) = self.frames().await? else {
            unreachable!("checked above")
        };
        for (g, out) in gathers.iter().zip(outs.iter_mut()) {
            for p in &g.pieces {
                piece_into(g, p, &frames, &mut out[p.at..p.at + p.len])?;
            }
        }
        Ok(())
    }

    /// Every reply frame, checked for errors, with the plan.
    async fn frames(self) -> Result<(Vec<Frame>, Plan)> {
        if let Some(err) = self.failed {
            return Err(err);
        }
        let mut frames: Vec<Frame> = Vec::with_capacity(self.replies.len());
        for reply in self.replies {
            frames.push(reply.get().await?);
        }
        for f in &frames {
            if let Some(bad) = f.entries.iter().find(|e| e.status != 0) {
                return Err(bad.clone().into_result().expect_err("status is non-zero"));
            }
        }
        if let Some(done) = self.on_success {
            done(&frames);
        }
        Ok((frames, self.plan))
    }

    async fn outcome(self) -> Result<Vec<Bytes>> {
        let (frames, plan) = self.frames().await?;
        match plan {
            Plan::Ack => Ok(Vec::new()),
            Plan::Payloads => Ok(frames
                .into_iter()
                .flat_map(|f| f.entries.into_iter().map(|e| e.payload))
                .collect()),
            Plan::Values(gathers) => gathers.iter().map(|g| gather(g, &frames)).collect(),
        }
    }
}

/// The reply entry of piece `p` of key `g`.
fn entry<'a>(g: &Gather, p: &Piece, frames: &'a [Frame]) -> Result<&'a Entry> {
    frames
        .get(p.frame)
        .and_then(|f| f.entries.get(p.entry))
        .ok_or_else(|| PsError::Protocol(format!("a reply lacks the entry for key {}", g.key)))
}

/// Whether reply entry `e` carries piece `p` as float16 or bfloat16 for a float32 key (a
/// low-precision pull of a sum of pushes), else checks that it carries the piece as it is.
fn low_precision(g: &Gather, p: &Piece, e: &Entry) -> Result<bool> {
    let low = matches!(e.dtype, DType::F16 | DType::BF16)
        && p.len == 4 * e.count as usize
        && e.payload.len() == 2 * e.count as usize;
    if !low && e.payload.len() != p.len {
        return Err(PsError::Protocol(format!(
            "a server sent {} bytes for key {} where {} were expected",
            e.payload.len(),
            g.key,
            p.len
        )));
    }
    Ok(low)
}

/// Writes piece `p` of key `g` into `dst` (its `p.len` bytes), widening a low-precision
/// reply to float32.
fn piece_into(g: &Gather, p: &Piece, frames: &[Frame], dst: &mut [u8]) -> Result<()> {
    let e = entry(g, p, frames)?;
    if low_precision(g, p, e)? {
        widen(e, dst);
    } else {
        dst.copy_from_slice(&e.payload);
    }
    Ok(())
}

/// Writes the float16 or bfloat16 elements of `e` into `dst` as float32: in place where `dst`
/// is aligned for float32 (a pull's destination array is), through a buffer otherwise.
fn widen(e: &Entry, dst: &mut [u8]) {
    match bytemuck::try_cast_slice_mut::<u8, f32>(dst) {
        Ok(wide) => f32::read_into(wide, &e.payload, e.dtype),
        Err(_) => {
            let mut wide = vec![0f32; e.count as usize];
            f32::read_into(&mut wide, &e.payload, e.dtype);
            dst.copy_from_slice(bytemuck::cast_slice(&wide));
        }
    }
}

fn gather(g: &Gather, frames: &[Frame]) -> Result<Bytes> {
    if let [only] = g.pieces.as_slice() {
        let e = entry(g, only, frames)?;
        if !low_precision(g, only, e)? {
            return Ok(e.payload.clone());
        }
    }
    // Pieces are planned in offset order and cover the key exactly: append them.
    let mut out = pool::take(g.bytes);
    for p in &g.pieces {
        debug_assert_eq!(p.at, out.len());
        let e = entry(g, p, frames)?;
        if low_precision(g, p, e)? {
            out.resize(p.at + p.len, 0);
            widen(e, &mut out[p.at..]);
        } else {
            out.extend_from_slice(&e.payload);
        }
    }
    Ok(pool::freeze(out))
}
