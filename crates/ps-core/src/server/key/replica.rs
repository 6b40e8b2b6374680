//! A key's backup: after each change the primary sends the piece's whole state (value, round,
//! per-worker push counts, optimizer state) to the next server of its chain, which stores it.
//! Until the backup has answered, the rounds the change completed are not durable, and the
//! pulls, pushes and inits waiting on them stay unanswered: an answered request is never lost.
//!
//! A piece travels as two Replicate entries, both with the piece's key, dtype, shape, offset,
//! count, round and layout (a row-sparse key's pieces are row-sparse on the backup too, and are
//! placed by rows): the first's payload is its `count` values in the compute type (sent from
//! the value itself, without a copy), the second's one u64 per worker (its applied async
//! pushes), then the optimizer state (absent when there is none): a native optimizer's
//! `updater::State` encoding, or [`FOREIGN_STATE`] and the bytes a foreign optimizer's hook
//! saved for the piece, which the backup keeps as they are and hands to its own hook if it
//! takes the piece over.

use bytes::Bytes;

use super::{Ctx, KeyData, KeyState};
use crate::dtype::Float;
use crate::error::{PsError, Result};
use crate::protocol::frame::Entry;
use crate::updater::State;

/// First byte of a foreign optimizer's state in a replica (a native state starts with its
/// element size, 4 or 8).
const FOREIGN_STATE: u8 = 0xF0;

/// Where a primary sends the state of a changed piece.
pub(crate) trait Replicate: Send + Sync {
    /// Sends the state `snapshot` makes of a piece of placement range `range` (its two
    /// entries) to the range's backup; false when the range has no backup now (the change is
    /// durable as it is).
    fn send(&self, range: u32, snapshot: &dyn Fn() -> [Entry; 2]) -> bool;

    /// The placement range a piece created by init entry `e` belongs to.
    fn range_of(&self, e: &Entry) -> u32;

    /// Whether this server is the primary of placement range `range` now.
    fn serves(&self, range: u32) -> bool;
}

impl KeyState {
    /// A piece created on a backup from its primary's two Replicate entries (`alone`: as for
    /// [`KeyState::restore`]).
    pub(crate) fn from_replica(
        e: &[Entry; 2],
        alone: bool,
        num_workers: u32,
        epoch: u64,
    ) -> Result<KeyState> {
        let mut created = e[0].clone();
        created.payload = Bytes::new();
        let mut k = if created.dtype.is_f64() {
            KeyState::F64(KeyData::new(&created, num_workers))
        } else {
            KeyState::F32(KeyData::new(&created, num_workers))
        };
        k.restore(e, alone, epoch)?;
        Ok(k)
    }

    /// Replaces the piece's state with its primary's (generation `epoch` for the optimizer
    /// state); on a bad entry nothing changes. `alone`: the entries came in a frame of their
    /// own, so a dense piece keeps its value's bytes as they came (holding that frame's buffer
    /// and no other piece's) instead of copying them.
    pub(crate) fn restore(&mut self, e: &[Entry; 2], alone: bool, epoch: u64) -> Result<()> {
        match self {
            KeyState::F32(k) => k.restore(e, alone, epoch),
            KeyState::F64(k) => k.restore(e, alone, epoch),
        }
    }

    /// Sends the piece's state to its backup, or makes its rounds durable when it has none.
    pub(crate) fn publish(&mut self, ctx: &Ctx) {
        match self {
            KeyState::F32(k) => k.publish(ctx),
            KeyState::F64(k) => k.publish(ctx),
        }
    }

    /// The backup stored the piece's state as of `round`: answers what waited for it.
    pub(crate) fn acked(&mut self, round: u64) {
        match self {
            KeyState::F32(k) => k.acked(round),
            KeyState::F64(k) => k.acked(round),
        }
    }

    /// The piece's chain changed and this server is its primary: its state goes to the next
    /// server (now the first it has), or, without one, every round done so far is durable and
    /// what waited is answered.
    pub(crate) fn republish(&mut self, ctx: &Ctx) {
        match self {
            KeyState::F32(k) => {
                k.publish(ctx);
                k.answer_pulls()
            }
            KeyState::F64(k) => {
                k.publish(ctx);
                k.answer_pulls()
            }
        }
    }

    /// Sets the placement range of the piece.
    pub(crate) fn set_range(&mut self, range: u32) {
        match self {
            KeyState::F32(k) => k.range = range,
            KeyState::F64(k) => k.range = range,
        }
    }

    /// The placement range of the piece.
    pub(crate) fn range(&self) -> u32 {
        match self {
            KeyState::F32(k) => k.range,
            KeyState::F64(k) => k.range,
        }
    }
}

impl<T: Float> KeyData<T> {
    pub(super) fn publish(&mut self, ctx: &Ctx) {
        let sent = match ctx.replica {
            Some(r) => r.send(self.range, &|| self.snapshot(ctx)),
            None => false,
        };
        if !sent {
            self.durable = Some(self.round);
        }
    }

    pub(super) fn acked(&mut self, round: u64) {
        if round <= self.round && self.durable.is_none_or(|d| round > d) {
            self.durable = Some(round);
        }
        self.answer_pulls();
    }

    /// A foreign optimizer's state of the piece, for its backup (`None`: there is none, or
    /// the hook could not save it, which is logged: the backup then has no state for it).
    fn foreign_snapshot(&self, ctx: &Ctx) -> Option<Vec<u8>> {
        let hook = ctx.updater?.foreign()?;
        match self.foreign_state(hook, ctx.epoch) {
            Ok(state) => state,
            Err(e) => {
                tracing::warn!(
                    "key {}: the optimizer's state cannot be copied to the backup: {e}",
                    self.key
                );
                None
            }
        }
    }

    fn snapshot(&self, ctx: &Ctx) -> [Entry; 2] {
        let mut value = Entry::new(self.key, self.dtype, &self.shape, self.offset, self.count);
        value.round = self.round;
        value.rows = self.rows.is_some();
        let mut meta = value.clone();
        value.payload = self.own_bytes();
        let mut out = Vec::with_capacity(8 * self.seqs.len() + 64);
        for s in &self.seqs {
            out.extend_from_slice(&s.to_le_bytes());
        }
        if let Some(state) = self.foreign_snapshot(ctx) {
            out.push(FOREIGN_STATE);
            out.extend_from_slice(&state);
        } else if let Some((_, state)) = &self.opt
            && ctx.updater.is_none_or(|u| u.foreign().is_none())
        {
            state.encode(&mut out);
        }
        meta.payload = Bytes::from(out);
        [value, meta]
    }

    fn restore(&mut self, pair: &[Entry; 2], alone: bool, epoch: u64) -> Result<()> {
        let bad = |why: String| PsError::Protocol(format!("key {}: replica {why}", self.key));
        let [e, meta] = pair;
        if e.dtype != self.dtype
            || e.offset != self.offset
            || e.count != self.count
            || e.rows != self.rows.is_some()
        {
            return Err(bad(format!("of {} does not match the piece", e.dtype)));
        }
        let value = &e.payload[..];
        if value.len() != self.count as usize * size_of::<T>() {
            return Err(bad(format!("of {} bytes has the wrong size", value.len())));
        }
        let Some((counts, state)) = meta.payload.split_at_checked(8 * self.seqs.len()) else {
            return Err(bad("lacks the per-worker push counts".into()));
        };
        let (state, foreign) = match state.split_first() {
            None => (None, None),
            Some((&FOREIGN_STATE, bytes)) => (None, Some((epoch, bytes.to_vec()))),
            Some(_) => {
                let (s, used) = State::<T>::decode(state, self.count as usize)?;
                if used != state.len() {
                    return Err(bad("has bytes after its optimizer state".into()));
                }
                (Some((epoch, s)), None)
            }
        };
        if alone && self.rows.is_none() {
            // Kept as it came: the piece's own buffer is let go (a pull reply may still hold it).
            self.sent = Some(e.payload.clone());
            self.value = Default::default();
        } else {
            // The buffer is reused unless a reply to a pull still holds it (then it is copied).
            self.sent = None;
            let v = std::sync::Arc::make_mut(&mut self.value);
            v.resize(self.count as usize, T::zero());
            bytemuck::cast_slice_mut::<T, u8>(v).copy_from_slice(value);
        }
        for (s, b) in self.seqs.iter_mut().zip(counts.chunks_exact(8)) {
            *s = u64::from_le_bytes(b.try_into().expect("8 bytes"));
        }
        self.opt = state;
        self.foreign_state = foreign;
        self.round = e.round;
        self.durable = Some(e.round);
        self.wire = None;
        // A worker beside this backup pulls the round from it (sync mode): now it has it.
        self.answer_pulls();
        Ok(())
    }
}
