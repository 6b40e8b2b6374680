//! Data-plane frames: the one place that knows the wire format.
//!
//! ```text
//! frame   := len:u32 op:u8 flags:u8 n_entries:u16 request_id:u64 entry*   (len counts what follows it)
//! entry   := key:u64 round:u64 offset:u64 count:u64
//!            dtype:u8 status:u8 layout:u8 codec:u8 payload_len:u32
//!            dims:u64*ndim payload:u8*payload_len
//! layout  := ndim (bits 0-6) | 0x80 when the key is row-sparse
//! ```
//! All integers little-endian. `offset`/`count` place the entry's elements inside the key's
//! flattened array (sliced big keys); `round` is the sync round a push belongs to or a pull waits
//! for. A request frame may carry many keys bound for one server; its reply carries one entry per
//! request entry, in the same order, with `status` 0 for success or an [`ErrorCode`] whose
//! message is the payload. Tensor payloads are `Bytes` slices of the read buffer: never copied.
//!
//! `codec` says how the payload encodes the entry's `count` elements ([`Codec`]): 0 (plain) is
//! `count` elements of `dtype`; 1 (2-bit, a compressed push, dtype float32) is
//! `threshold:f32` followed by `4 * ceil(count / 16)` bytes of 2-bit codes, element `j` of the
//! entry in byte `j / 4`, bits 7-6 for `j % 4 == 0` down to bits 1-0 for `j % 4 == 3`, `0b11` =
//! `+threshold`, `0b10` = `-threshold`, `0b00` = 0 (`crate::codec` has the details). Only push
//! and pushpull entries may be 2-bit; a float16 or bfloat16 push (plain) into a float32 key is
//! how `fp16`/`bf16` compression travels. Each slice of a sliced key is packed on its own, from
//! its own first element.
//!
//! # Low-precision pulls
//! A pull or pushpull request whose `flags` carry [`FLAG_PULL_F16`] or [`FLAG_PULL_BF16`]
//! (`fp16`/`bf16` compression) takes float16 / bfloat16 replies where the value is a sum of
//! the workers' pushes (a float32 key on servers without an optimizer, after its first
//! round): the reply entry then has that dtype, its payload `count` such elements, converted
//! once per round on the server. Any other value (an initial value, weights an optimizer
//! updates) comes in the key's dtype, unless the frame also carries [`FLAG_PULL_WEIGHTS`]
//! (the user asked for low-precision weights: every value of a float32 key comes in that
//! type, the servers keeping float32); the reply entry's dtype says which.
//!
//! A `Stats` request (one entry, no payload) is answered with one entry whose payload is the
//! server's push counters (`protocol::stats`).
//!
//! # Row-sparse keys
//! A key created by `init_rows` is row-sparse: its entries carry the layout bit (inits and
//! replicas must: it decides how the key is placed), and its pieces hold whole rows. A
//! `PushRows` or `PullRows` entry addresses one such piece (`offset`/`count` as for a dense
//! entry) and carries only some of its rows ([`rows`]):
//!
//! ```text
//! push rows := n:u64 ids:u64*n values:dtype*(n*row_len)    (ids strictly increasing)
//! pull rows := n:u64 ids:u64*n                              (reply: the n rows' values)
//! ```
//! Ids are rows of the whole array (not of the piece); `row_len` is the product of the dims
//! after the first. A push of no rows (`n` = 0) still counts as the worker's push of its round.

use bytes::{Buf, BufMut, Bytes, BytesMut};
use smallvec::SmallVec;

use crate::codec::{Codec, Packing};
use crate::dtype::DType;
use crate::error::{ErrorCode, PsError, Result};

/// Bytes of the length prefix.
pub const LEN_BYTES: usize = 4;
/// Bytes of the frame header after the length prefix.
pub const FRAME_HEADER: usize = 12;
/// Bytes of an entry header before its dims.
pub const ENTRY_HEADER: usize = 40;
/// Most dimensions an array may have.
pub const MAX_NDIM: usize = 32;
/// `layout` bit marking an entry of a row-sparse key.
const LAYOUT_ROWS: u8 = 0x80;
/// `flags` bit marking a reply.
const FLAG_REPLY: u8 = 1;
/// `flags` bit marking a request a worker sends again to the server that took over its keys
/// after the one it went to was lost: what of it was applied already is answered, not redone.
const FLAG_RESENT: u8 = 2;
/// `flags` bit of a pull or pushpull that takes float16 replies of pushed sums.
const FLAG_PULL_F16: u8 = 4;
/// `flags` bit of a pull or pushpull that takes bfloat16 replies of pushed sums.
const FLAG_PULL_BF16: u8 = 8;
/// `flags` bit of a low-precision pull that takes weights (any value) in that type too.
const FLAG_PULL_WEIGHTS: u8 = 16;

/// What a frame asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Op {
    /// First frame of a connection: `key` = worker rank, `round` = [`Mode`] code, `count` = the
    /// job's workers; `offset` 1 for a restarted worker, 2 for a server that will send
    /// replicas (`key` = its server rank).
    Hello = 1,
    /// Create keys; rank 0's values win, other ranks wait until the key exists.
    Init = 2,
    /// Add gradients to a key's round.
    Push = 3,
    /// Read a key once it has reached `round`.
    Pull = 4,
    /// Push, then pull the round that push completes: one round trip.
    PushPull = 5,
    /// Replace the updater: payload is an optimizer spec.
    SetOptimizer = 6,
    /// Change hyper-parameters of the current updater (for example the learning rate).
    SetParams = 7,
    /// Read the updater's per-key state.
    SaveStates = 8,
    /// Replace the updater's per-key state.
    LoadStates = 9,
    /// Sent by a server, unasked (request id 0), as it leaves the job: the status and payload
    /// of its one entry say why (the job completed, a node was lost, the scheduler is gone).
    Bye = 10,
    /// Read the server's counters of received pushes.
    Stats = 11,
    /// From a key's primary server to its backup: the key's whole state after a change (its
    /// value, round, per-worker push counts and optimizer state); answered once stored.
    Replicate = 12,
    /// Add some rows of a row-sparse key to its round (payload: [`rows`]).
    PushRows = 13,
    /// Read some rows of a row-sparse key once it has reached `round`.
    PullRows = 14,
    /// From a primary server to its backup on the same host, after Hello: the shared memory
    /// its [`Op::ReplicateShared`] values will be in, `key` = the primary's process id,
    /// `offset` = its descriptor of the memory, `count` = its bytes, the payload the random
    /// bytes the memory starts with.
    Arena = 15,
    /// A [`Op::Replicate`] whose entries' payloads say where they lie in the primary's shared
    /// memory: `start:u64 len:u64`. The answer's first entry carries the
    /// starts (`u64` each) of the regions the backup let go since its last answer (any
    /// Replicate answer does, on a connection that sent an Arena).
    ReplicateShared = 16,
}

impl Op {
    fn from_u8(v: u8) -> Result<Op> {
        Ok(match v {
            1 => Op::Hello,
            2 => Op::Init,
            3 => Op::Push,
            4 => Op::Pull,
            5 => Op::PushPull,
            6 => Op::SetOptimizer,
            7 => Op::SetParams,
            8 => Op::SaveStates,
            9 => Op::LoadStates,
            10 => Op::Bye,
            11 => Op::Stats,
            12 => Op::Replicate,
            13 => Op::PushRows,
            14 => Op::PullRows,
            15 => Op::Arena,
            16 => Op::ReplicateShared,
            _ => return Err(PsError::Protocol(format!("unknown op {v}"))),
        })
    }
}

/// Consistency mode a worker asks the servers for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// dist_sync: pushes of a round are summed over all workers before one update.
    Sync,
    /// dist_async: every push is applied at once.
    Async,
}

impl Mode {
    /// Wire code, carried in the `round` field of a Hello.
    pub fn code(self) -> u64 {
        match self {
            Mode::Sync => 0,
            Mode::Async => 1,
        }
    }

    /// Decodes the wire code.
    pub fn from_code(v: u64) -> Result<Mode> {
        match v {
            0 => Ok(Mode::Sync),
            1 => Ok(Mode::Async),
            _ => Err(PsError::Protocol(format!("unknown mode {v}"))),
        }
    }
}

/// An array shape; four dimensions or fewer need no allocation.
pub type Shape = SmallVec<[u64; 4]>;

/// One key (or slice of a key) inside a frame.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    pub key: u64,
    pub round: u64,
    pub offset: u64,
    pub count: u64,
    pub dtype: DType,
    /// How the payload encodes the elements.
    pub codec: Codec,
    /// 0 for success, else an [`ErrorCode`].
    pub status: u8,
    /// Shape of the whole array (not of the slice); up to four dimensions stay inline.
    pub shape: Shape,
    /// The key is row-sparse (created by `init_rows`, placed by rows).
    pub rows: bool,
    pub payload: Bytes,
}

impl Entry {
    /// An entry with no payload and status 0.
    pub fn new(key: u64, dtype: DType, shape: &[u64], offset: u64, count: u64) -> Entry {
        Entry {
            key,
            round: 0,
            offset,
            count,
            dtype,
            codec: Codec::Plain,
            status: 0,
            shape: Shape::from_slice(shape),
            rows: false,
            payload: Bytes::new(),
        }
    }

    /// The reply to this entry carrying `payload`.
    pub fn ok(&self, round: u64, payload: Bytes) -> Entry {
        Entry {
            key: self.key,
            round,
            offset: self.offset,
            count: self.count,
            dtype: self.dtype,
            codec: Codec::Plain,
            status: 0,
            shape: Shape::new(),
            rows: false,
            payload,
        }
    }

    /// The error reply to this entry.
    pub fn error(&self, err: &PsError) -> Entry {
        Entry {
            key: self.key,
            round: 0,
            offset: self.offset,
            count: self.count,
            dtype: self.dtype,
            codec: Codec::Plain,
            status: err.code() as u8,
            shape: Shape::new(),
            rows: false,
            payload: Bytes::from(err.to_string()),
        }
    }

    /// `Ok(self)` for a successful reply entry, else the error the server reported.
    pub fn into_result(self) -> Result<Entry> {
        if self.status == 0 {
            Ok(self)
        } else {
            let msg = String::from_utf8_lossy(&self.payload).into_owned();
            Err(PsError::from_code(ErrorCode::from_u8(self.status), msg))
        }
    }

    /// How the payload holds the elements.
    pub fn packing(&self) -> Packing {
        Packing::new(self.dtype, self.codec)
    }

    fn encoded_header_len(&self) -> usize {
        ENTRY_HEADER + 8 * self.shape.len()
    }
}

/// A data-plane message: a request or its reply.
#[derive(Debug, Clone, PartialEq)]
pub struct Frame {
    pub op: Op,
    pub reply: bool,
    /// A request sent again after the server it went to was lost ([`FLAG_RESENT`]).
    pub resent: bool,
    /// The low-precision dtype (float16 or bfloat16) a pull or pushpull takes pushed sums in
    /// ([`FLAG_PULL_F16`], [`FLAG_PULL_BF16`]).
    pub pull_as: Option<DType>,
    /// With `pull_as`: every value of a float32 key travels in that type, weights an optimizer
    /// updates and initial values too ([`FLAG_PULL_WEIGHTS`]).
    pub pull_weights: bool,
    pub request_id: u64,
    pub entries: Vec<Entry>,
}

impl Frame {
    /// A request frame.
    pub fn request(op: Op, request_id: u64, entries: Vec<Entry>) -> Frame {
        Frame {
            op,
            reply: false,
            resent: false,
            pull_as: None,
            pull_weights: false,
            request_id,
            entries,
        }
    }

    /// The reply frame to a request with this op and id.
    pub fn reply_to(op: Op, request_id: u64, entries: Vec<Entry>) -> Frame {
        Frame {
            op,
            reply: true,
            resent: false,
            pull_as: None,
            pull_weights: false,
            request_id,
            entries,
        }
    }

    /// Bytes this frame takes on the wire, length prefix included.
    pub fn encoded_len(&self) -> usize {
        LEN_BYTES
            + FRAME_HEADER
            + self
                .entries
                .iter()
                .map(|e| e.encoded_header_len() + e.payload.len())
                .sum::<usize>()
    }

    /// Cheap look at the start of `buf`: `Ok(Some(n))` when a whole frame of `n` bytes (prefix
    /// included) is there, `Ok(None)` when more bytes are needed, an error when the length
    /// prefix is impossible or above `max_bytes`.
    pub fn check(buf: &[u8], max_bytes: u64) -> Result<Option<usize>> {
        let Some(prefix) = buf.get(..LEN_BYTES) else {
            return Ok(None);
        };
        let len = u32::from_le_bytes(prefix.try_into().expect("4 bytes")) as u64;
        if len < FRAME_HEADER as u64 {
            return Err(PsError::Protocol(format!(
                "frame length {len} is shorter than a frame header"
            )));
        }
        if len > max_bytes {
            return Err(PsError::Protocol(format!(
                "frame of {len} bytes is over the limit of {max_bytes} (MXRS_MAX_FRAME_BYTES)"
            )));
        }
        let total = LEN_BYTES + len as usize;
        Ok((buf.len() >= total).then_some(total))
    }

    /// The frame length announced by a complete prefix, if `buf` holds one.
    pub fn announced_len(buf: &[u8]) -> Option<usize> {
        let prefix = buf.get(..LEN_BYTES)?;
        Some(LEN_BYTES + u32::from_le_bytes(prefix.try_into().expect("4 bytes")) as usize)
    }

    /// Parses one whole frame (as sized by [`Frame::check`]). Payloads are slices of `buf`.
    pub fn parse(mut buf: Bytes) -> Result<Frame> {
        let short = |what: &str| PsError::Protocol(format!("frame truncated inside {what}"));
        if buf.len() < LEN_BYTES + FRAME_HEADER {
            return Err(short("the frame header"));
        }
        let len = buf.get_u32_le() as usize;
        if len != buf.len() {
            return Err(PsError::Protocol(format!(
                "frame length {len} does not match the {} bytes given",
                buf.len()
            )));
        }
        let op = Op::from_u8(buf.get_u8())?;
        let flags = buf.get_u8();
        let known = FLAG_REPLY | FLAG_RESENT | FLAG_PULL_F16 | FLAG_PULL_BF16 | FLAG_PULL_WEIGHTS;
        if flags & !known != 0 {
            return Err(PsError::Protocol(format!("unknown frame flags {flags:#x}")));
        }
        let pull_as = match flags & (FLAG_PULL_F16 | FLAG_PULL_BF16) {
            0 => None,
            FLAG_PULL_F16 => Some(DType::F16),
            FLAG_PULL_BF16 => Some(DType::BF16),
            _ => {
                return Err(PsError::Protocol(
                    "a frame asks for float16 and bfloat16 pulls at once".into(),
                ));
            }
        };
        let n = buf.get_u16_le() as usize;
        let request_id = buf.get_u64_le();
        let mut entries = Vec::with_capacity(n.min(buf.len() / ENTRY_HEADER));
        for i in 0..n {
            if buf.len() < ENTRY_HEADER {
                return Err(short(&format!("the header of entry {i}")));
            }
            let key = buf.get_u64_le();
            let round = buf.get_u64_le();
            let offset = buf.get_u64_le();
            let count = buf.get_u64_le();
            let dtype = DType::from_code(buf.get_u8())?;
            let status = buf.get_u8();
            let layout = buf.get_u8();
            let ndim = (layout & !LAYOUT_ROWS) as usize;
            let codec = Codec::from_code(buf.get_u8())?;
            let payload_len = buf.get_u32_le() as usize;
            if ndim > MAX_NDIM {
                return Err(PsError::Protocol(format!(
                    "entry {i} (key {key}) has {ndim} dimensions, more than {MAX_NDIM}"
                )));
            }
            if buf.len() < 8 * ndim + payload_len {
                return Err(short(&format!("entry {i} (key {key})")));
            }
            let shape = (0..ndim).map(|_| buf.get_u64_le()).collect();
            let payload = buf.split_to(payload_len);
            entries.push(Entry {
                key,
                round,
                offset,
                count,
                dtype,
                codec,
                status,
                shape,
                rows: layout & LAYOUT_ROWS != 0,
                payload,
            });
        }
        if !buf.is_empty() {
            return Err(PsError::Protocol(format!(
                "{} stray bytes after the last entry",
                buf.len()
            )));
        }
        Ok(Frame {
            op,
            reply: flags & FLAG_REPLY != 0,
            resent: flags & FLAG_RESENT != 0,
            pull_as,
            pull_weights: flags & FLAG_PULL_WEIGHTS != 0,
            request_id,
            entries,
        })
    }

    /// Writes the frame as a list of chunks: headers are gathered into `scratch`, payloads at
    /// or above `inline_limit` bytes are passed through as they are (no copy), smaller ones are
    /// copied next to their header.
    pub fn encode(&self, scratch: &mut BytesMut, inline_limit: usize, out: &mut Vec<Bytes>) {
        let body = self.encoded_len() - LEN_BYTES;
        let len = u32::try_from(body).expect("frame over 4 GiB; callers split frames");
        let n = u16::try_from(self.entries.len()).expect("over 65535 entries; callers split");
        scratch.reserve(LEN_BYTES + FRAME_HEADER + ENTRY_HEADER);
        scratch.put_u32_le(len);
        scratch.put_u8(self.op as u8);
        let reply = if self.reply { FLAG_REPLY } else { 0 };
        let pull_as = match self.pull_as {
            Some(DType::F16) => FLAG_PULL_F16,
            Some(DType::BF16) => FLAG_PULL_BF16,
            _ => 0,
        };
        let weights = if self.pull_weights {
            FLAG_PULL_WEIGHTS
        } else {
            0
        };
        scratch.put_u8(reply | if self.resent { FLAG_RESENT } else { 0 } | pull_as | weights);
        scratch.put_u16_le(n);
        scratch.put_u64_le(self.request_id);
        for e in &self.entries {
            scratch.reserve(e.encoded_header_len());
            scratch.put_u64_le(e.key);
            scratch.put_u64_le(e.round);
            scratch.put_u64_le(e.offset);
            scratch.put_u64_le(e.count);
            scratch.put_u8(e.dtype as u8);
            scratch.put_u8(e.status);
            let rows = if e.rows { LAYOUT_ROWS } else { 0 };
            scratch.put_u8(e.shape.len() as u8 | rows);
            scratch.put_u8(e.codec as u8);
            scratch.put_u32_le(u32::try_from(e.payload.len()).expect("payload over 4 GiB"));
            for d in &e.shape {
                scratch.put_u64_le(*d);
            }
            if e.payload.len() < inline_limit {
                scratch.extend_from_slice(&e.payload);
            } else {
                out.push(scratch.split().freeze());
                out.push(e.payload.clone());
            }
        }
        if !scratch.is_empty() {
            out.push(scratch.split().freeze());
        }
    }

    /// The frame as one contiguous buffer (tests, small control frames).
    pub fn to_bytes(&self) -> Bytes {
        let mut scratch = BytesMut::new();
        let mut out = Vec::new();
        self.encode(&mut scratch, usize::MAX, &mut out);
        out.into_iter().next().unwrap_or_default()
    }
}

pub mod rows;

#[cfg(test)]
mod tests;
