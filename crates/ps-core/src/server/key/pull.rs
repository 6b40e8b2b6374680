//! Pulls of one key (of all of it, or of some rows of a row-sparse key): answered at once,
//! parked until their sync round completes (and, with a backup, is stored there too), or failed
//! when a finished worker keeps that round from ever completing. The answers a replicated key
//! owes to pushes and inits wait the same way.

use std::sync::Arc;

use bytes::Bytes;

use super::{Ctx, KeyData, MAX_AHEAD};
use crate::dtype::{Access, DType, Float};
use crate::error::PsError;
use crate::protocol::frame::{Entry, Mode};
use crate::server::reply::ReplySlot;

/// What a parked request is answered with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Answer {
    /// The piece's value.
    Value,
    /// Nothing: an acknowledgement (a push, an init).
    Ack,
    /// The rows its payload (kept) asks for.
    Rows,
}

/// A pull waiting for its round.
pub(super) struct PullWaiter {
    pub(super) round: u64,
    pub(super) request: Entry,
    pub(super) slot: ReplySlot,
    pub(super) answer: Answer,
    /// The low-precision dtype it takes values in (see [`LowPull`]).
    pub(super) pull_as: Option<LowPull>,
}

/// A pull's low-precision dtype, and whether it takes any value in it (weights, initial
/// values) or only sums of pushes.
#[derive(Debug, Clone, Copy)]
pub(super) struct LowPull {
    dtype: DType,
    any_value: bool,
}

/// `AsRef<[u8]>` view of a shared value, so replies borrow it without a copy.
pub(super) struct SharedBytes<T>(pub(super) Arc<Vec<T>>);

impl<T: Float> AsRef<[u8]> for SharedBytes<T> {
    fn as_ref(&self) -> &[u8] {
        bytemuck::cast_slice(self.0.as_slice())
    }
}

impl<T: Float> KeyData<T> {
    /// Answers a pull for `round` now, or parks it until the round completes.
    pub(super) fn pull(&mut self, ctx: &Ctx, round: u64, e: &Entry, slot: ReplySlot) {
        match self.check(e, Access::Pull) {
            Ok(()) => self.pull_checked(ctx, round, e, slot, Answer::Value),
            Err(err) => slot.complete(e.error(&err)),
        }
    }

    /// Answers a pull of some rows for `round` now, or parks it until the round completes.
    pub(super) fn pull_rows(&mut self, ctx: &Ctx, round: u64, e: &Entry, slot: ReplySlot) {
        match self.check_pull_rows(e) {
            Ok(()) => self.pull_checked(ctx, round, e, slot, Answer::Rows),
            Err(err) => slot.complete(e.error(&err)),
        }
    }

    fn pull_checked(&mut self, ctx: &Ctx, round: u64, e: &Entry, slot: ReplySlot, a: Answer) {
        // Only a sum of pushes travels in low precision, unless the request takes weights too:
        // weights an optimizer updates stay in the key's dtype.
        let pull_as = ctx
            .pull_as
            .map(|dtype| LowPull {
                dtype,
                any_value: ctx.pull_weights,
            })
            .filter(|low| low.any_value || ctx.updater.is_none());
        if self.durable.is_some_and(|d| round <= d) {
            if let Some(err) = self.failure(round) {
                return slot.complete(e.error(&err));
            }
            return slot.complete(self.reply(a, e, pull_as));
        }
        if ctx.mode == Mode::Async {
            // A pushpull's update on its way to the backup.
            return self.park(round, e, slot, a, pull_as);
        }
        if round > self.round + MAX_AHEAD + 1 {
            let err = PsError::Rejected(format!(
                "key {}: pull waits for round {round} but the key is at round {}",
                self.key, self.round
            ));
            return slot.complete(e.error(&err));
        }
        if let Some(err) = self.blocked(round, ctx.finished) {
            return slot.complete(e.error(&err));
        }
        self.park(round, e, slot, a, pull_as);
    }

    /// The reply to request `e` answered as `a` now: the value (in `pull_as` where it is a
    /// sum of pushes of a float32 key, or any value of one when it takes weights too, else in
    /// the key's dtype), nothing, or the rows asked for.
    fn reply(&mut self, a: Answer, e: &Entry, pull_as: Option<LowPull>) -> Entry {
        match a {
            Answer::Value => {
                let dense32 = self.dtype == DType::F32 && self.rows.is_none();
                let dtype = pull_as
                    .filter(|low| dense32 && (low.any_value || self.round >= 1))
                    .map_or(self.dtype, |low| low.dtype);
                let mut reply = e.ok(self.round, self.value_bytes(dtype));
                reply.dtype = dtype;
                reply
            }
            Answer::Ack => e.ok(self.round, Bytes::new()),
            Answer::Rows => {
                let rows = self.rows_bytes(&e.payload);
                e.ok(self.round, rows)
            }
        }
    }

    /// Answers `e` without a value once `round` is durable (now, if it is, or if a finished
    /// worker keeps that dist_sync round from ever completing: the push was taken all the same,
    /// as without a backup).
    pub(super) fn ack_when(&mut self, ctx: &Ctx, round: u64, e: &Entry, slot: ReplySlot) {
        let now = self.durable.is_some_and(|d| round <= d)
            || (ctx.mode == Mode::Sync && self.blocked(round, ctx.finished).is_some());
        match now {
            true => slot.complete(e.ok(self.round, Bytes::new())),
            false => self.park(round, e, slot, Answer::Ack, None),
        }
    }

    fn park(
        &mut self,
        round: u64,
        e: &Entry,
        slot: ReplySlot,
        answer: Answer,
        pull_as: Option<LowPull>,
    ) {
        let mut request = e.clone();
        request.payload = match answer {
            // Its own copy of the ids: a slice would keep the whole request frame alive.
            Answer::Rows => Bytes::copy_from_slice(&e.payload),
            Answer::Value | Answer::Ack => Bytes::new(),
        };
        self.pulls.push(PullWaiter {
            round,
            request,
            slot,
            answer,
            pull_as,
        });
    }

    /// Why `round` can never complete: a finished worker has not pushed every round up to it.
    fn blocked(&self, round: u64, finished: &[Option<Arc<str>>]) -> Option<PsError> {
        for (w, name) in finished.iter().enumerate() {
            let Some(name) = name else { continue };
            let reach = self.reach(w);
            if round > reach {
                return Some(PsError::Rejected(format!(
                    "key {}: the pull waits for round {round}, but {name} has finished after \
                     pushing {reach} rounds of this key, so round {round} can never complete \
                     (do all workers run the same number of steps?)",
                    self.key
                )));
            }
        }
        None
    }

    /// The rounds worker `w`'s pushes complete as far as it is concerned: the current one if
    /// it pushed to it, and each following one it pushed ahead to. Also the round its next
    /// push belongs to.
    pub(super) fn reach(&self, w: usize) -> u64 {
        let mut reach = self.round;
        if self.pushed.get(w).copied().unwrap_or(false) {
            reach += 1;
            while self
                .ahead
                .iter()
                .any(|a| a.worker as usize == w && a.round == reach)
            {
                reach += 1;
            }
        }
        reach
    }

    pub(super) fn fail_blocked_pulls(&mut self, finished: &[Option<Arc<str>>]) {
        if self.pulls.is_empty() || finished.iter().all(Option::is_none) {
            return;
        }
        let mut i = 0;
        while i < self.pulls.len() {
            match self.blocked(self.pulls[i].round, finished) {
                // A push whose round never completes was taken all the same (as without a
                // backup): there is nothing of it to lose.
                Some(_) if self.pulls[i].answer == Answer::Ack => {
                    let w = self.pulls.swap_remove(i);
                    w.slot.complete(w.request.ok(self.round, Bytes::new()));
                }
                Some(err) => {
                    let w = self.pulls.swap_remove(i);
                    w.slot.complete(w.request.error(&err));
                }
                None => i += 1,
            }
        }
    }

    /// The value as `dtype` (the key's, or a low-precision pull's): the value itself where
    /// that is its compute type, else converted once per value and shared.
    fn value_bytes(&mut self, dtype: DType) -> Bytes {
        if dtype == self.dtype && dtype.size() == size_of::<T>() {
            return self.own_bytes();
        }
        match &self.wire {
            Some((d, bytes)) if *d == dtype => bytes.clone(),
            _ => {
                self.adopt_sent();
                let bytes = Bytes::from(T::write_as(&self.value, dtype));
                self.wire = Some((dtype, bytes.clone()));
                bytes
            }
        }
    }

    /// Answers every parked pull (and acknowledgement) whose round has come and is durable.
    pub(super) fn answer_pulls(&mut self) {
        let Some(durable) = self.durable else {
            return;
        };
        let mut i = 0;
        while i < self.pulls.len() {
            if self.pulls[i].round <= durable {
                let w = self.pulls.swap_remove(i);
                // A pull of a round whose update failed learns why.
                let failed = match w.answer {
                    Answer::Ack => None,
                    Answer::Value | Answer::Rows => self.failure(w.round),
                };
                if let Some(err) = failed {
                    w.slot.complete(w.request.error(&err));
                    continue;
                }
                let reply = self.reply(w.answer, &w.request, w.pull_as);
                w.slot.complete(reply);
            } else {
                i += 1;
            }
        }
    }
}
