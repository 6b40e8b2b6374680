//! One key (or one slice of a big key) on a server: its value, its sync round, the pushes being
//! summed, the pulls waiting for a round, and its optimizer state.
//!
//! Values are kept in the key's compute type (`f32`, or `f64` for float64 keys; float16 and
//! bfloat16 keys keep a float32 master copy). Pushes are summed as they came (plain elements of
//! any accepted dtype, or 2-bit codes decoded on the way: [`Packing`]). A value is an `Arc<Vec<T>>`, so a pull reply
//! borrows it without a copy and an update copies only while a reply is still being written.
//!
//! `sync`: summing a round's pushes and applying it (dist_sync), or each push (dist_async).
//! `rows`: a row-sparse key's piece: its rows, the row messages' checks, a round's sparse sum.
//! `pull`: answering pulls, parking them until their round, and failing those a finished
//! worker keeps from ever completing.
//! `replica`: a key's state sent whole to its backup server after each change, and stored
//! there; what the key owes its workers waits until the backup has it.

mod pull;
mod replica;
mod rows;
mod sync;

use std::collections::VecDeque;
use std::sync::Arc;

use bytes::Bytes;

use super::reply::ReplySlot;
use crate::codec::{Codec, Packing};
use crate::dtype::{Access, DType, Float, describe_array, shape_str};
use crate::error::{PsError, Result};
use crate::protocol::frame::{Entry, Mode, Shape};
use crate::updater::{ForeignUpdater, Piece, State, Updater};
use pull::PullWaiter;
pub(crate) use replica::Replicate;
use rows::{RowLayout, RowSum};
use sync::{Ahead, Pushed};

/// How far ahead of a key's round a worker may push before it is refused.
pub(crate) const MAX_AHEAD: u64 = 64;

/// What a key operation needs to know about the server.
pub(crate) struct Ctx<'a> {
    pub num_workers: u32,
    pub mode: Mode,
    pub updater: Option<&'a Updater>,
    /// Generation of the updater; state from another generation starts afresh.
    pub epoch: u64,
    /// By rank, the name of each worker that has finished ("worker 0 on 10.0.0.2"): it will
    /// push no more, so a sync round that still needs its push can never complete.
    pub finished: &'a [Option<Arc<str>>],
    /// Where a key's state goes after each change, in a job with backups.
    pub replica: Option<&'a dyn Replicate>,
    /// The request was sent again after the server it first went to was lost: what of it was
    /// applied already is answered, not applied again.
    pub resent: bool,
    /// The low-precision dtype the request takes pushed sums in (`Frame::pull_as`).
    pub pull_as: Option<DType>,
    /// With `pull_as`: weights and initial values travel in it too (`Frame::pull_weights`).
    pub pull_weights: bool,
    /// Where completed rounds are counted.
    pub metrics: &'a crate::metrics::ServerMetrics,
}

impl Ctx<'_> {
    /// Whether pushes and inits are answered only once the key's backup has their effect.
    pub(crate) fn replicated(&self) -> bool {
        self.replica.is_some()
    }
}

/// A key's state in its compute type.
pub(crate) enum KeyState {
    F32(KeyData<f32>),
    F64(KeyData<f64>),
}

macro_rules! each {
    ($self:expr, $k:ident => $body:expr) => {
        match $self {
            KeyState::F32($k) => $body,
            KeyState::F64($k) => $body,
        }
    };
}

impl KeyState {
    /// Checks rank 0's init entry as the one that creates the key.
    pub(crate) fn check_create(e: &Entry) -> Result<()> {
        check_layout(e)?;
        let expected = e.count as usize * e.dtype.size();
        if e.payload.len() != expected {
            return Err(PsError::ShapeMismatch(format!(
                "key {}: init value of {} bytes for {} {}, expected {expected}",
                e.key,
                e.payload.len(),
                e.dtype,
                shape_str(&e.shape)
            )));
        }
        Ok(())
    }

    /// A key created from rank 0's init entry.
    pub(crate) fn create(e: &Entry, num_workers: u32) -> Result<KeyState> {
        Self::check_create(e)?;
        Ok(if e.dtype.is_f64() {
            KeyState::F64(KeyData::new(e, num_workers))
        } else {
            KeyState::F32(KeyData::new(e, num_workers))
        })
    }

    /// Current sync round (number of completed rounds or applied async pushes).
    pub(crate) fn round(&self) -> u64 {
        each!(self, k => k.round)
    }

    /// The sync round `worker`'s next push of this piece belongs to: the current round, or a
    /// later one when it already pushed to it (what a restarted worker resumes at).
    pub(crate) fn next_round(&self, worker: u32) -> u64 {
        each!(self, k => k.reach(worker as usize))
    }

    /// Worker `worker` was restarted: its pushes of the rounds its predecessor had already
    /// pushed to this piece will be answered without being summed again.
    pub(crate) fn replaced(&mut self, worker: u32) {
        each!(self, k => k.replaced(worker))
    }

    /// Checks that `e` describes this key for `access`.
    pub(crate) fn check(&self, e: &Entry, access: Access) -> Result<()> {
        each!(self, k => k.check(e, access))
    }

    /// Checks a push entry completely (layout, dtype, payload size) without changing anything.
    pub(crate) fn check_push(&self, e: &Entry) -> Result<()> {
        each!(self, k => k.check(e, Access::Push).and_then(|()| k.check_payload(e)))
    }

    /// Checks a push-rows entry completely (a row-sparse key, layout, dtype, sizes, row ids)
    /// without changing anything.
    pub(crate) fn check_push_rows(&self, e: &Entry) -> Result<()> {
        each!(self, k => k.check_push_rows(e))
    }

    /// The key's dtype (what pulls and inits carry).
    /// Bytes held for the piece: its value, its round's sum, its optimizer state.
    pub(crate) fn held_bytes(&self) -> usize {
        each!(self, k => k.held_bytes())
    }

    pub(crate) fn dtype(&self) -> DType {
        each!(self, k => k.dtype)
    }

    /// Fails every parked pull that waits for a round a finished worker will never push.
    pub(crate) fn fail_blocked_pulls(&mut self, finished: &[Option<Arc<str>>]) {
        each!(self, k => k.fail_blocked_pulls(finished))
    }

    /// How many pulls wait for a round.
    pub(crate) fn parked_pulls(&self) -> usize {
        each!(self, k => k.pulls.len())
    }

    /// Forgets the parked pulls of connection `conn` (it closed; nobody will read the reply).
    pub(crate) fn forget_connection(&mut self, conn: u64) {
        each!(self, k => k.pulls.retain(|w| w.slot.conn() != conn))
    }

    /// Adds a push of `worker`.
    pub(crate) fn push(&mut self, ctx: &Ctx, worker: u32, e: &Entry) -> Result<()> {
        each!(self, k => {
            k.check(e, Access::Push)?;
            k.check_payload(e)?;
            k.push_checked(ctx, worker, e.round, Pushed::Dense(e.packing(), e.payload.clone()))
        })
    }

    /// Adds a push of some rows by `worker`.
    pub(crate) fn push_rows(&mut self, ctx: &Ctx, worker: u32, e: &Entry) -> Result<()> {
        each!(self, k => {
            k.check_push_rows(e)?;
            k.push_checked(ctx, worker, e.round, Pushed::Rows(e.dtype, e.payload.clone()))
        })
    }

    /// Answers `e` without a value once round `round` is durable (stored on the backup too).
    pub(crate) fn ack_when(&mut self, ctx: &Ctx, round: u64, e: &Entry, slot: ReplySlot) {
        each!(self, k => k.ack_when(ctx, round, e, slot))
    }

    /// Whether the key's creation is durable (answers to its inits may go).
    pub(crate) fn is_durable(&self) -> bool {
        each!(self, k => k.durable.is_some())
    }

    /// Answers a pull for `round` now, or parks it until the round completes.
    pub(crate) fn pull(&mut self, ctx: &Ctx, round: u64, e: &Entry, slot: ReplySlot) {
        each!(self, k => k.pull(ctx, round, e, slot))
    }

    /// Answers a pull of some rows for `round` now, or parks it until the round completes.
    pub(crate) fn pull_rows(&mut self, ctx: &Ctx, round: u64, e: &Entry, slot: ReplySlot) {
        each!(self, k => k.pull_rows(ctx, round, e, slot))
    }

    /// Appends this key's optimizer state (if it has one of generation `epoch`).
    pub(crate) fn save_state(&self, epoch: u64, out: &mut Vec<u8>) {
        each!(self, k => k.save_state(epoch, out))
    }

    /// This piece's state under foreign optimizer `hook` (generation `epoch`), if it has one.
    pub(crate) fn foreign_state(
        &self,
        hook: &dyn ForeignUpdater,
        epoch: u64,
    ) -> Result<Option<Vec<u8>>> {
        each!(self, k => k.foreign_state(hook, epoch))
    }

    /// Forgets a foreign optimizer's state its primary sent (the states were loaded anew).
    pub(crate) fn drop_foreign_state(&mut self) {
        each!(self, k => k.foreign_state = None)
    }

    /// Decodes a state for this key from `bytes`; returns a closure-free installer.
    pub(crate) fn decode_state(&self, bytes: &[u8]) -> Result<(LoadedState, usize)> {
        match self {
            KeyState::F32(k) => {
                State::<f32>::decode(bytes, k.count as usize).map(|(s, n)| (LoadedState::F32(s), n))
            }
            KeyState::F64(k) => {
                State::<f64>::decode(bytes, k.count as usize).map(|(s, n)| (LoadedState::F64(s), n))
            }
        }
    }

    /// Installs a decoded state as generation `epoch`.
    pub(crate) fn install_state(&mut self, epoch: u64, state: LoadedState) {
        match (self, state) {
            (KeyState::F32(k), LoadedState::F32(s)) => k.opt = Some((epoch, s)),
            (KeyState::F64(k), LoadedState::F64(s)) => k.opt = Some((epoch, s)),
            _ => unreachable!("decode_state matches the key's type"),
        }
    }

    /// Whether the key computes in float64 (tag in saved states).
    pub(crate) fn is_f64(&self) -> bool {
        matches!(self, KeyState::F64(_))
    }
}

/// An optimizer state read from a saved blob.
pub(crate) enum LoadedState {
    F32(State<f32>),
    F64(State<f64>),
}

/// A key's state in compute type `T`.
pub(crate) struct KeyData<T> {
    key: u64,
    dtype: DType,
    shape: Shape,
    offset: u64,
    count: u64,
    round: u64,
    /// The value, unless `sent` holds it (then empty: see [`KeyData::adopt_sent`]).
    value: Arc<Vec<T>>,
    /// On a backup: the value as its primary last sent it (the compute type's bytes), kept as
    /// it came instead of copied into `value`; copied in only when this server first changes
    /// or converts it, having taken the piece over.
    sent: Option<Bytes>,
    /// Sum of the round's pushes once two have arrived (scratch space otherwise).
    merge: Vec<T>,
    /// The round's first push, kept as it came until a second one arrives, so a sum of W
    /// pushes costs W - 1 passes and a single push may feed the updater without a copy.
    first: Option<(Packing, Bytes)>,
    /// The rows of a row-sparse key's piece (`None` for a dense key).
    rows: Option<RowLayout>,
    /// The round's sum while every push of it carried rows.
    sparse: Option<RowSum<T>>,
    pushed: Vec<bool>,
    n_pushed: u32,
    /// When the round's first push arrived.
    started: Option<std::time::Instant>,
    ahead: VecDeque<Ahead>,
    pulls: Vec<PullWaiter>,
    /// Rounds whose result is durable: stored on the backup as well (or there is no backup);
    /// `None` until the key's creation is. Pulls are answered up to it.
    durable: Option<u64>,
    /// The placement range of the piece (the server that holds it when none is lost).
    range: u32,
    /// dist_async: by worker, how many of its pushes have been applied (a push sent again
    /// after a server was lost is recognised by its number).
    seqs: Vec<u64>,
    /// By worker, the first round a restarted worker's push is summed for: earlier ones its
    /// predecessor had pushed already (empty until a worker is restarted).
    replay: Vec<u64>,
    opt: Option<(u64, State<T>)>,
    /// A foreign optimizer's state of this piece as its primary sent it (this server being its
    /// backup), with the generation it was stored under: handed to the optimizer's hook
    /// before the piece's next update here (once this server has taken the piece over).
    foreign_state: Option<(u64, Vec<u8>)>,
    /// The sync rounds whose update failed, with the error their pulls are answered with (the
    /// latest [`MAX_AHEAD`] and one; only a foreign optimizer fails).
    failures: VecDeque<(u64, String)>,
    /// The value in a dtype other than the compute type (the key's float16 or bfloat16, or a
    /// low-precision pull's), made once per value and shared by every pull reply in that dtype
    /// until the value changes.
    wire: Option<(DType, Bytes)>,
}

impl<T: Float> KeyData<T> {
    fn new(e: &Entry, num_workers: u32) -> Self {
        let mut value = vec![T::zero(); e.count as usize];
        // A piece made on a backup starts empty; its primary's state is stored next.
        if !e.payload.is_empty() {
            T::read_into(&mut value, &e.payload, e.dtype);
        }
        KeyData {
            key: e.key,
            dtype: e.dtype,
            shape: e.shape.clone(),
            offset: e.offset,
            count: e.count,
            round: 0,
            value: Arc::new(value),
            sent: None,
            merge: Vec::new(),
            first: None,
            rows: RowLayout::of(e).ok().flatten(),
            sparse: None,
            pushed: vec![false; num_workers as usize],
            n_pushed: 0,
            started: None,
            ahead: VecDeque::new(),
            pulls: Vec::new(),
            durable: None,
            range: 0,
            seqs: vec![0; num_workers as usize],
            replay: Vec::new(),
            opt: None,
            foreign_state: None,
            failures: VecDeque::new(),
            wire: None,
        }
    }

    fn held_bytes(&self) -> usize {
        let opt = self.opt.as_ref().map_or(0, |(_, s)| {
            s.buffers.iter().map(Vec::capacity).sum::<usize>()
        });
        let first = self.first.as_ref().map_or(0, |(_, b)| b.len());
        let foreign = self.foreign_state.as_ref().map_or(0, |(_, b)| b.len());
        let sent = self.sent.as_ref().map_or(0, Bytes::len);
        (self.value.len() + self.merge.capacity() + opt) * size_of::<T>() + first + foreign + sent
    }

    /// Copies the bytes a primary sent into `value`, before the value is changed or converted
    /// here.
    fn adopt_sent(&mut self) {
        if let Some(sent) = self.sent.take() {
            let v = Arc::make_mut(&mut self.value);
            v.resize(self.count as usize, T::zero());
            bytemuck::cast_slice_mut::<T, u8>(v).copy_from_slice(&sent);
        }
    }

    /// The value's bytes in its compute type, shared without a copy.
    fn own_bytes(&self) -> Bytes {
        match &self.sent {
            Some(sent) => sent.clone(),
            None => Bytes::from_owner(pull::SharedBytes(self.value.clone())),
        }
    }

    fn describe(&self) -> String {
        describe(self.dtype, &self.shape, self.offset, self.count)
    }

    fn check(&self, e: &Entry, access: Access) -> Result<()> {
        let what = access.verb();
        if access == Access::Init && e.rows != self.rows.is_some() {
            let kind = |rows| {
                if rows {
                    "row-sparse (init_rows)"
                } else {
                    "dense (init)"
                }
            };
            return Err(PsError::ShapeMismatch(format!(
                "key {}: init as {} but the key was initialised as {}",
                self.key,
                kind(e.rows),
                kind(self.rows.is_some())
            )));
        }
        if !self.dtype.accepts(e.dtype, access) || e.shape != self.shape {
            return Err(PsError::ShapeMismatch(format!(
                "key {}: {what} {} {} but the key holds {}",
                self.key,
                e.dtype,
                shape_str(&e.shape),
                self.describe()
            )));
        }
        if e.offset != self.offset || e.count != self.count {
            return Err(PsError::ShapeMismatch(format!(
                "key {}: {what} elements {}..{} but this server holds {}",
                self.key,
                e.offset,
                e.offset.saturating_add(e.count),
                self.describe()
            )));
        }
        Ok(())
    }

    fn check_payload(&self, e: &Entry) -> Result<()> {
        if e.codec == Codec::TwoBit && e.dtype != DType::F32 {
            return Err(PsError::Rejected(format!(
                "key {}: a 2-bit push must be marked float32 (what it decodes to), not {}",
                self.key, e.dtype
            )));
        }
        e.packing()
            .check(self.key, &e.payload, self.count, &self.describe())
    }

    /// The piece's state under foreign optimizer `hook` (generation `epoch`): what its
    /// primary sent, if not handed over yet, else what the hook saves (`None` before the
    /// piece's first update).
    fn foreign_state(&self, hook: &dyn ForeignUpdater, epoch: u64) -> Result<Option<Vec<u8>>> {
        match &self.foreign_state {
            Some((e, bytes)) if *e == epoch => Ok(Some(bytes.clone())),
            _ => hook.save_state(self.piece()),
        }
    }

    /// Hands the state its primary sent for this piece (of generation `epoch`) to foreign
    /// optimizer `hook`, before the piece's first update here.
    fn load_foreign_state(&mut self, hook: &dyn ForeignUpdater, epoch: u64) -> Result<()> {
        if let Some((e, bytes)) = self.foreign_state.take()
            && e == epoch
        {
            hook.load_states(&[(self.piece(), &bytes)])?;
        }
        Ok(())
    }

    /// The key and the offset of this piece.
    fn piece(&self) -> Piece {
        Piece {
            key: self.key,
            offset: self.offset,
        }
    }

    fn save_state(&self, epoch: u64, out: &mut Vec<u8>) {
        if let Some((e, state)) = &self.opt
            && *e == epoch
        {
            state.encode(out);
        }
    }
}

/// Validates the layout fields of an entry that creates (or waits for) a key.
pub(crate) fn check_layout(e: &Entry) -> Result<()> {
    let numel = e
        .shape
        .iter()
        .try_fold(1u64, |acc, d| acc.checked_mul(*d))
        .ok_or_else(|| {
            PsError::ShapeMismatch(format!(
                "key {}: shape {} overflows",
                e.key,
                shape_str(&e.shape)
            ))
        })?;
    if e.offset.checked_add(e.count).is_none_or(|end| end > numel) {
        return Err(PsError::ShapeMismatch(format!(
            "key {}: elements {}..{} lie outside {} {}",
            e.key,
            e.offset,
            e.offset.saturating_add(e.count),
            e.dtype,
            shape_str(&e.shape)
        )));
    }
    RowLayout::of(e).map(drop)
}

/// "float32 [3, 4]", with the slice when it is not the whole array.
fn describe(dtype: DType, shape: &[u64], offset: u64, count: u64) -> String {
    let numel: u64 = shape.iter().product();
    if offset == 0 && count == numel {
        describe_array(dtype, shape)
    } else {
        format!(
            "{} (elements {offset}..{} on this server)",
            describe_array(dtype, shape),
            offset + count
        )
    }
}
