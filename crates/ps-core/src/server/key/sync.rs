//! A key's pushes: summed over the workers of a dist_sync round, then applied once the round is
//! complete (the optimizer, or the sum replaces the value); applied at once in dist_async.
//!
//! A round's sum stays as sparse as its pushes: while every push of the round carried rows
//! (`PushRows`), it is a [`RowSum`] of the rows present, so its memory is bounded by those rows
//! and the round updates only them (`rows`). A dense push into the same round (a plain `push`
//! of a row-sparse key) makes the sum dense.

use std::sync::Arc;
use std::time::Instant;

use bytes::Bytes;

use super::rows::RowSum;
use super::{Ctx, KeyData, MAX_AHEAD};
use crate::codec::Packing;
use crate::dtype::{DType, Float};
use crate::error::{PsError, Result};
use crate::protocol::frame::Mode;
use crate::updater::{Piece, Updater};

/// One worker's push as it came (checked).
#[derive(Clone)]
pub(super) enum Pushed {
    /// The whole piece.
    Dense(Packing, Bytes),
    /// Some rows of it: a push-rows payload of values of the dtype.
    Rows(DType, Bytes),
}

/// A push for a later round than the key's, kept until that round begins.
pub(super) struct Ahead {
    pub(super) worker: u32,
    pub(super) round: u64,
    pub(super) pushed: Pushed,
}

impl<T: Float> KeyData<T> {
    /// Adds `pushed`, `worker`'s push for round `round` (dist_sync) or its `round`-th push
    /// (dist_async), checked already.
    pub(super) fn push_checked(
        &mut self,
        ctx: &Ctx,
        worker: u32,
        round: u64,
        pushed: Pushed,
    ) -> Result<()> {
        match ctx.mode {
            Mode::Async => {
                let Some(updater) = ctx.updater else {
                    return Err(PsError::Rejected(format!(
                        "key {}: dist_async push before any optimizer is set on the servers; \
                         call set_optimizer first",
                        self.key
                    )));
                };
                let w = worker as usize;
                if ctx.resent && round < self.seqs[w] {
                    return Ok(()); // applied before the server it first went to was lost
                }
                let applied = match pushed {
                    Pushed::Dense(packing, payload) => {
                        self.first = Some((packing, payload));
                        self.apply(updater, ctx.epoch)
                    }
                    Pushed::Rows(dtype, payload) => {
                        let sum = RowSum::decode(self.rows_layout(), dtype, &payload);
                        self.apply_rows(updater, ctx.epoch, &sum)
                    }
                };
                self.round += 1;
                ctx.metrics.round_completed(None);
                self.seqs[w] = self.seqs[w].max(round + 1);
                self.wire = None;
                self.publish(ctx);
                self.answer_pulls();
                // The push was taken; the pushing worker learns that its update failed.
                applied.map_err(|err| self.update_failed(self.round, &err))
            }
            Mode::Sync => {
                if self.replay.get(worker as usize).is_some_and(|&r| round < r) {
                    // Its predecessor's push of this round is summed already.
                    return Ok(());
                }
                if ctx.resent && self.has_push(worker, round) {
                    return Ok(()); // summed before the server it first went to was lost
                }
                if round < self.round {
                    return Err(PsError::Rejected(format!(
                        "key {}: push for round {round} but the key is already at round {}",
                        self.key, self.round
                    )));
                }
                if round > self.round {
                    if round - self.round > MAX_AHEAD
                        || self
                            .ahead
                            .iter()
                            .any(|a| a.worker == worker && a.round == round)
                    {
                        return Err(PsError::Rejected(format!(
                            "key {}: worker {worker} pushed round {round} while the key is at \
                             round {}",
                            self.key, self.round
                        )));
                    }
                    self.ahead.push_back(Ahead {
                        worker,
                        round,
                        pushed,
                    });
                    return Ok(());
                }
                if self.pushed[worker as usize] {
                    return Err(PsError::Rejected(format!(
                        "key {}: worker {worker} pushed round {round} twice",
                        self.key
                    )));
                }
                self.merge_one(worker, pushed);
                // The push that completes a round whose update fails is answered with the
                // error; the round's pulls are too (`failures`).
                match self.complete_rounds(ctx) {
                    Some(err) => Err(err),
                    None => Ok(()),
                }
            }
        }
    }

    pub(super) fn replaced(&mut self, worker: u32) {
        let reach = self.reach(worker as usize);
        if reach > 0 {
            self.replay.resize(self.pushed.len(), 0);
            self.replay[worker as usize] = reach;
        }
    }

    /// Whether `worker`'s push of `round` is summed in already (or in a completed round).
    pub(super) fn has_push(&self, worker: u32, round: u64) -> bool {
        round < self.round
            || (round == self.round && self.pushed[worker as usize])
            || self
                .ahead
                .iter()
                .any(|a| a.worker == worker && a.round == round)
    }

    fn merge_one(&mut self, worker: u32, pushed: Pushed) {
        match pushed {
            Pushed::Dense(packing, payload) => {
                if let Some(rows) = self.sparse.take() {
                    // Rows so far, now a whole piece: the sum becomes dense.
                    self.merge.clear();
                    self.merge.resize(self.count as usize, T::zero());
                    let len = self.rows_layout().len;
                    rows.add_into(&mut self.merge, len);
                    packing.add_into(&mut self.merge, &payload);
                } else {
                    self.merge_dense(packing, payload);
                }
            }
            Pushed::Rows(dtype, payload) => {
                let layout = self.rows_layout();
                match (&mut self.sparse, self.n_pushed) {
                    (_, 0) => self.sparse = Some(RowSum::decode(layout, dtype, &payload)),
                    (Some(sum), _) => sum.add(layout, dtype, &payload),
                    (None, _) => {
                        // A dense sum so far: the rows are added into it.
                        self.settle();
                        RowSum::decode(layout, dtype, &payload)
                            .add_into(&mut self.merge, layout.len);
                    }
                }
            }
        }
        if self.n_pushed == 0 {
            self.started = Some(Instant::now());
        }
        self.pushed[worker as usize] = true;
        self.n_pushed += 1;
    }

    fn merge_dense(&mut self, packing: Packing, payload: Bytes) {
        match (self.n_pushed, self.first.take()) {
            (0, _) => self.first = Some((packing, payload)),
            (_, Some((p0, b0))) => {
                self.merge.resize(self.count as usize, T::zero());
                Packing::sum_into(&mut self.merge, (p0, &b0), (packing, &payload));
            }
            (_, None) => packing.add_into(&mut self.merge, &payload),
        }
    }

    /// Makes `merge` hold the round's sum (it may still be only the first push's bytes).
    fn settle(&mut self) {
        if let Some((packing, payload)) = self.first.take() {
            self.merge.resize(self.count as usize, T::zero());
            packing.read_into(&mut self.merge, &payload);
        }
    }

    /// Closes every round that has all its pushes, then answers the pulls that waited for them.
    /// Returns the error of the last round closed whose update failed, if any.
    fn complete_rounds(&mut self, ctx: &Ctx) -> Option<PsError> {
        let mut completed = false;
        let mut failed = None;
        while self.n_pushed == ctx.num_workers {
            let applied = match (self.sparse.take(), ctx.updater) {
                (Some(rows), Some(updater)) => self.apply_rows(updater, ctx.epoch, &rows),
                (Some(rows), None) => {
                    self.replace_by_rows(&rows);
                    Ok(())
                }
                (None, Some(updater)) => self.apply(updater, ctx.epoch),
                (None, None) => {
                    self.settle();
                    let sum = std::mem::take(&mut self.merge);
                    self.sent = None;
                    let old = std::mem::replace(&mut self.value, Arc::new(sum));
                    self.merge = Arc::try_unwrap(old).unwrap_or_default();
                    Ok(())
                }
            };
            self.round += 1;
            if let Err(err) = applied {
                failed = Some(self.update_failed(self.round, &err));
            }
            self.wire = None;
            self.pushed.iter_mut().for_each(|p| *p = false);
            self.n_pushed = 0;
            ctx.metrics
                .round_completed(self.started.take().map(|t| t.elapsed()));
            completed = true;
            let round = self.round;
            let mut i = 0;
            while i < self.ahead.len() {
                if self.ahead[i].round == round {
                    let a = self.ahead.remove(i).expect("index in range");
                    self.merge_one(a.worker, a.pushed);
                } else {
                    i += 1;
                }
            }
        }
        if completed {
            self.publish(ctx);
            self.fail_blocked_pulls(ctx.finished);
            self.answer_pulls();
        }
        failed
    }

    /// Records that the update of `round` failed with `err` (a foreign optimizer's error: the
    /// native ones do not fail), so that the round's pulls fail with it; returns the error the
    /// push that made the update is answered with. The round still counts: the key's value is
    /// what the failed update left (a foreign optimizer leaves it unchanged on error).
    pub(super) fn update_failed(&mut self, round: u64, err: &PsError) -> PsError {
        let msg = format!(
            "key {}: the optimizer's update of round {round} failed on this server: {err}",
            self.key
        );
        tracing::warn!("{msg}");
        if self.failures.len() > MAX_AHEAD as usize {
            self.failures.pop_front();
        }
        self.failures.push_back((round, msg.clone()));
        PsError::Optimizer(msg)
    }

    /// The error of `round`'s update, if it failed.
    pub(super) fn failure(&self, round: u64) -> Option<PsError> {
        self.failures
            .iter()
            .rev()
            .find(|(r, _)| *r == round)
            .map(|(_, msg)| PsError::Optimizer(msg.clone()))
    }

    /// The optimizer state of generation `epoch` (fresh when the updater changed).
    pub(super) fn fresh_state(&mut self, updater: &Updater, epoch: u64) {
        if !matches!(&self.opt, Some((e, _)) if *e == epoch) {
            self.opt = Some((epoch, updater.new_state(self.count as usize)));
        }
    }

    /// Readies the piece's optimizer state for an update by `updater` (generation `epoch`):
    /// fresh when the updater changed; a foreign optimizer's as its primary sent it, if any.
    pub(super) fn ready_state(&mut self, updater: &Updater, epoch: u64) -> Result<()> {
        self.fresh_state(updater, epoch);
        match updater.foreign() {
            Some(hook) => self.load_foreign_state(hook, epoch),
            None => Ok(()),
        }
    }

    fn apply(&mut self, updater: &Updater, epoch: u64) -> Result<()> {
        self.ready_state(updater, epoch)?;
        // A single push in the key's own type is used in place when its bytes are aligned.
        let direct = match &self.first {
            Some((Packing::Plain(dtype), payload)) if dtype.size() == size_of::<T>() => {
                bytemuck::try_cast_slice::<u8, T>(payload)
                    .ok()
                    .map(|_| payload.clone())
            }
            _ => None,
        };
        if direct.is_none() {
            self.settle();
        }
        self.first = None;
        self.adopt_sent();
        let (_, state) = self.opt.as_mut().expect("state set above");
        let value = Arc::make_mut(&mut self.value);
        let piece = Piece {
            key: self.key,
            offset: self.offset,
        };
        match &direct {
            Some(bytes) => {
                let grad: &[T] = bytemuck::cast_slice(bytes);
                updater.update(piece, value, grad, state)
            }
            None => updater.update(piece, value, &self.merge, state),
        }
    }
}
