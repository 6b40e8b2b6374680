//! Groups the entries of one request into frames, one per server. Small entries share a frame
//! (up to [`FRAME_PAYLOAD`] bytes or the entry limit); an entry that moves [`OWN_FRAME`] bytes
//! or more (its payload, or its reply's for a pull) travels alone, so the server starts on one piece of a large array while the next is still on
//! the wire.

use super::conn::Conns;
use super::ticket::{Plan, Ticket};
use crate::dtype::DType;
use crate::protocol::frame::{Entry, Frame, Op, rows};

/// Payload bytes after which a frame of small entries is closed and another begun.
const FRAME_PAYLOAD: usize = 4 << 20;
/// Entries at least this large get a frame of their own.
const OWN_FRAME: usize = 256 << 10;
/// Entries per frame (the wire field is 16 bits).
const FRAME_ENTRIES: usize = u16::MAX as usize;

struct Open {
    frame: usize,
    entries: Vec<Entry>,
    bytes: usize,
}

/// Frames under construction for one request.
pub(crate) struct Batch {
    op: Op,
    /// The frames' place in each connection's queue ([`super::outbox`]).
    priority: i32,
    open: Vec<Option<Open>>,
    /// Closed frames: (server, frame index, entries).
    closed: Vec<(usize, usize, Vec<Entry>)>,
    frames: usize,
    /// The low-precision dtype the request's pulls take pushed sums in, and whether weights
    /// too.
    pull_as: Option<DType>,
    pull_weights: bool,
}

impl Batch {
    pub(crate) fn new(op: Op, num_servers: usize, priority: i32) -> Batch {
        Batch {
            op,
            priority,
            open: (0..num_servers).map(|_| None).collect(),
            closed: Vec::new(),
            frames: 0,
            pull_as: None,
            pull_weights: false,
        }
    }

    /// Lets the request's pulls take the sums of pushes in float16 or bfloat16
    /// (`Frame::pull_as`), and with `weights` every value of a float32 key.
    pub(crate) fn pull_as(mut self, dtype: Option<DType>, weights: bool) -> Batch {
        self.pull_as = dtype;
        self.pull_weights = weights && dtype.is_some();
        self
    }

    /// Adds `e` for `server`; returns its (frame index, entry index) in the ticket's replies.
    pub(crate) fn add(&mut self, server: usize, e: Entry) -> (usize, usize) {
        // Pulls carry no payload but their replies do: size entries by the piece they move (a
        // push by its payload, which compression may have made smaller than its elements).
        let moved = match self.op {
            Op::Push | Op::PushRows => e.payload.len(),
            Op::PullRows => rows::pulled_elements(&e) as usize * e.dtype.size(),
            _ => e.count as usize * e.dtype.size(),
        };
        let large = moved >= OWN_FRAME;
        let full = self.open[server].as_ref().is_some_and(|o| {
            large
                || o.entries.len() == FRAME_ENTRIES
                || (o.bytes > 0 && o.bytes + e.payload.len() > FRAME_PAYLOAD)
        });
        if full {
            let o = self.open[server].take().expect("checked above");
            self.closed.push((server, o.frame, o.entries));
        }
        let frames = &mut self.frames;
        let o = self.open[server].get_or_insert_with(|| {
            *frames += 1;
            Open {
                frame: *frames - 1,
                entries: Vec::new(),
                bytes: 0,
            }
        });
        o.bytes += e.payload.len();
        o.entries.push(e);
        let at = (o.frame, o.entries.len() - 1);
        if large {
            let o = self.open[server].take().expect("opened above");
            self.closed.push((server, o.frame, o.entries));
        }
        at
    }

    /// Sends every frame and returns the ticket for their replies.
    pub(crate) fn send(self, conns: &Conns, plan: Plan) -> Ticket {
        let priority = self.priority;
        let replies = self
            .into_frames()
            .map(|(server, frame)| conns.get(server).send_request(frame, priority))
            .collect();
        Ticket::new(replies, plan)
    }

    /// How many frames the request has so far.
    pub(crate) fn frames(&self) -> usize {
        self.frames
    }

    /// Every frame with the server it goes to, in frame order (what [`Batch::add`] numbers).
    pub(crate) fn into_frames(mut self) -> impl Iterator<Item = (usize, Frame)> {
        for (server, o) in self.open.iter_mut().enumerate() {
            if let Some(o) = o.take() {
                self.closed.push((server, o.frame, o.entries));
            }
        }
        self.closed.sort_by_key(|(_, frame, _)| *frame);
        let (op, pull_as, pull_weights) = (self.op, self.pull_as, self.pull_weights);
        self.closed.into_iter().map(move |(server, _, entries)| {
            let frame = Frame {
                pull_as,
                pull_weights,
                ..Frame::request(op, 0, entries)
            };
            (server, frame)
        })
    }
}
