//! One handler per request op. Handlers never fail the connection for a bad entry: the entry's
//! reply carries the error and nothing stored changes. Only a frame that breaks the protocol
//! (a reply where a request belongs, a request before Hello) returns `Err`, which closes it.
//!
//! A request of many entries is checked whole before any of it is applied: if one init or push
//! entry (rows included: their ids too) does not fit its key, every entry is answered with an
//! error and no key, round or value changes.

use std::sync::Arc;

use bytes::Bytes;
use parking_lot::Mutex;

use super::key::{Ctx, KeyState, Replicate};
use super::peer::Peer;
use super::reply::{Outbox, ReplySlot};
use super::{Installed, Shared};
use crate::codec::Codec;
use crate::dtype::DType;
use crate::error::{PsError, Result};
use crate::protocol::frame::{ENTRY_HEADER, Entry, FRAME_HEADER, Frame, LEN_BYTES, Mode, Op};
use crate::updater::{OptimizerSpec, Updater};

mod backup;

/// Routes one request frame to its handler.
pub(crate) fn dispatch(
    shared: &Shared,
    peer: &mut Peer,
    frame: Frame,
    outbox: &Outbox,
) -> Result<()> {
    if frame.reply || frame.op == Op::Bye {
        return Err(PsError::Protocol(format!(
            "a worker sent a {} frame",
            if frame.reply { "reply" } else { "Bye" }
        )));
    }
    let slots = ReplySlot::for_frame(&frame, outbox);
    if frame.op == Op::Hello {
        return hello(shared, peer, frame, slots);
    }
    if let Some(server) = peer.server {
        return backup::replicas(shared, peer, server, frame, slots);
    }
    let Some(rank) = peer.rank else {
        return Err(PsError::Protocol(format!("{:?} before Hello", frame.op)));
    };
    if matches!(frame.op, Op::Push | Op::PushPull | Op::PushRows) {
        shared.push_stats.record(&frame);
    }
    shared.metrics.requested(frame.op, frame.entries.len());
    if let Err(err) = check_reply_size(shared, &frame).and_then(|()| check_codecs(&frame)) {
        refuse_all(&frame.entries, slots, None, &err);
        return Ok(());
    }
    let installed = current(shared);
    let finished = shared.finished.read().clone();
    let ctx = Ctx {
        num_workers: shared.num_workers,
        mode: shared.mode.lock().unwrap_or(Mode::Sync),
        updater: installed.as_ref().map(|i| i.updater.as_ref()),
        epoch: installed.as_ref().map_or(0, |i| i.epoch),
        finished: &finished,
        replica: replica_of(shared),
        resent: frame.resent,
        pull_as: frame.pull_as,
        pull_weights: frame.pull_weights,
        metrics: &shared.metrics,
    };
    match frame.op {
        Op::Hello | Op::Bye => unreachable!("handled above"),
        Op::Replicate | Op::ReplicateShared | Op::Arena => {
            let err = PsError::Protocol("a worker sent replicas".into());
            refuse_all(&frame.entries, slots, None, &err);
        }
        Op::Init => init(shared, rank, &ctx, &frame, slots),
        Op::Push | Op::PushPull | Op::PushRows => push(shared, rank, &ctx, &frame, slots),
        Op::Pull | Op::PullRows => pull(shared, &ctx, &frame, slots),
        Op::SetOptimizer => each(&frame, slots, |e| set_optimizer(shared, &e.payload)),
        Op::SetParams => each(&frame, slots, |e| set_params(shared, &e.payload)),
        Op::SaveStates => save_states(shared, &frame, slots),
        Op::Stats => stats(shared, &frame, slots),
        Op::LoadStates => load_states(shared, &ctx, &frame, slots),
    }
    Ok(())
}

/// Init: every entry checked against its key first, then each key made (or its value kept).
fn init(shared: &Shared, rank: u32, ctx: &Ctx, frame: &Frame, slots: Vec<ReplySlot>) {
    let checked = frame
        .entries
        .iter()
        .map(|e| shared.store.check_init(rank, e));
    if let Some((bad, err)) = first_error(checked) {
        refuse_all(&frame.entries, slots, Some(bad), &err);
        return;
    }
    for (e, slot) in frame.entries.iter().zip(slots) {
        shared.store.init(rank, ctx, e, slot);
    }
}

/// Push, PushPull and PushRows: every entry checked first; each push is answered at the round
/// it completes (dist_sync) or the update it made (dist_async), with a backup once that round
/// is durable; a PushPull pulls that round under the same lock.
fn push(shared: &Shared, rank: u32, ctx: &Ctx, frame: &Frame, slots: Vec<ReplySlot>) {
    let keys = match checked_keys(shared, frame.op, &frame.entries) {
        Ok(keys) => keys,
        Err((bad, err)) => {
            refuse_all(&frame.entries, slots, Some(bad), &err);
            return;
        }
    };
    for ((e, slot), key) in frame.entries.iter().zip(slots).zip(keys) {
        let mut k = key.lock();
        let pushed = match frame.op {
            Op::PushRows => k.push_rows(ctx, rank, e),
            _ => k.push(ctx, rank, e),
        };
        let done = match ctx.mode {
            Mode::Sync => e.round + 1,
            Mode::Async => k.round(),
        };
        if pushed.is_ok() {
            shared.metrics.worker_pushed(rank, done);
        }
        match (frame.op, pushed) {
            // With a backup, once that round is durable.
            (Op::Push | Op::PushRows, Ok(())) if ctx.replicated() => k.ack_when(ctx, done, e, slot),
            (Op::Push | Op::PushRows, r) => {
                let r = r.map(|()| (k.round(), Bytes::new()));
                slot.complete(answer(e, r));
            }
            // The pull of the round this push completes, in the key's dtype (a float16 push
            // into a float32 key pulls float32).
            (_, Ok(())) => {
                let pull = pull_of(e, k.dtype());
                k.pull(ctx, done, &pull, slot);
            }
            (_, Err(err)) => slot.complete(e.error(&err)),
        }
    }
}

/// Pull and PullRows: each entry waits for its round (dist_async pulls take the latest value,
/// whatever round the worker counts).
fn pull(shared: &Shared, ctx: &Ctx, frame: &Frame, slots: Vec<ReplySlot>) {
    for (e, slot) in frame.entries.iter().zip(slots) {
        match shared.store.get(e) {
            Ok(key) => {
                let round = if ctx.mode == Mode::Async { 0 } else { e.round };
                match frame.op {
                    Op::PullRows => key.lock().pull_rows(ctx, round, e, slot),
                    _ => key.lock().pull(ctx, round, e, slot),
                }
            }
            Err(err) => slot.complete(e.error(&err)),
        }
    }
}

/// Answers each entry with `apply`'s outcome (an empty payload when it succeeds).
fn each(frame: &Frame, slots: Vec<ReplySlot>, apply: impl Fn(&Entry) -> Result<()>) {
    for (e, slot) in frame.entries.iter().zip(slots) {
        slot.complete(answer(e, apply(e).map(|()| (0, Bytes::new()))));
    }
}

/// SaveStates: the optimizer's states of every key this server serves.
fn save_states(shared: &Shared, frame: &Frame, slots: Vec<ReplySlot>) {
    for (e, slot) in frame.entries.iter().zip(slots) {
        let r = current(shared).ok_or_else(no_optimizer).and_then(|i| {
            let states = shared
                .store
                .save_states(i.epoch, &i.updater, &|r| serves(shared, r))?;
            Ok((0, Bytes::from(states)))
        });
        slot.complete(answer(e, r));
    }
}

/// Stats: the pushes this server has counted.
fn stats(shared: &Shared, frame: &Frame, slots: Vec<ReplySlot>) {
    for (e, slot) in frame.entries.iter().zip(slots) {
        let stats = shared.push_stats.snapshot().encode();
        slot.complete(e.ok(0, Bytes::from(stats)));
    }
}

/// LoadStates: the optimizer's states from a saved file; with backups, every key this server
/// is primary of is sent to its backup again, so the copies hold them too.
fn load_states(shared: &Shared, ctx: &Ctx, frame: &Frame, slots: Vec<ReplySlot>) {
    for (e, slot) in frame.entries.iter().zip(slots) {
        let r = current(shared)
            .ok_or_else(no_optimizer)
            .and_then(|i| shared.store.load_states(i.epoch, &i.updater, &e.payload));
        if r.is_ok()
            && let Some(replica) = ctx.replica
        {
            for (_, k) in shared.store.pieces() {
                let mut k = k.lock();
                if replica.serves(k.range()) {
                    k.republish(ctx);
                }
            }
        }
        slot.complete(answer(e, r.map(|()| (0, Bytes::new()))));
    }
}

/// Whether this server serves placement range `range` now (always, without backups).
fn serves(shared: &Shared, range: u32) -> bool {
    replica_of(shared).is_none_or(|r| r.serves(range))
}

pub(super) fn replica_of(shared: &Shared) -> Option<&dyn Replicate> {
    let r = shared.replication.get()?;
    Some(r.as_ref())
}

/// A context for work outside a request (a chain that changed): the optimizer `installed`
/// (whose states a piece's backup gets), nothing finished.
pub(crate) fn bare_ctx<'a>(
    shared: &'a Shared,
    replica: &'a dyn Replicate,
    finished: &'a [Option<Arc<str>>],
    installed: Option<&'a Installed>,
) -> Ctx<'a> {
    Ctx {
        num_workers: shared.num_workers,
        mode: shared.mode.lock().unwrap_or(Mode::Sync),
        updater: installed.map(|i| i.updater.as_ref()),
        epoch: installed.map_or(0, |i| i.epoch),
        finished,
        replica: Some(replica),
        resent: false,
        pull_as: None,
        pull_weights: false,
        metrics: &shared.metrics,
    }
}

/// Each push entry's key (of a push, pushpull or push of rows: `op`), every entry checked
/// first; else the index of the first bad entry and why.
#[allow(clippy::type_complexity)]
fn checked_keys(
    shared: &Shared,
    op: Op,
    entries: &[Entry],
) -> std::result::Result<Vec<Arc<Mutex<KeyState>>>, (usize, PsError)> {
    entries
        .iter()
        .enumerate()
        .map(|(i, e)| {
            let key = shared.store.get(e).map_err(|err| (i, err))?;
            let checked = match op {
                Op::PushRows => key.lock().check_push_rows(e),
                _ => key.lock().check_push(e),
            };
            checked.map_err(|err| (i, err))?;
            Ok(key)
        })
        .collect()
}

/// The index and error of the first failed check.
fn first_error(checks: impl Iterator<Item = Result<()>>) -> Option<(usize, PsError)> {
    checks
        .enumerate()
        .find_map(|(i, r)| r.err().map(|err| (i, err)))
}

/// Answers every entry of a request refused whole with `err`: the request's own fault, or
/// entry `bad`'s (the others then say which key kept them from being applied).
fn refuse_all(
    entries: &[Entry],
    slots: impl IntoIterator<Item = ReplySlot>,
    bad: Option<usize>,
    err: &PsError,
) {
    for (i, (e, slot)) in entries.iter().zip(slots).enumerate() {
        match bad {
            Some(bad) if bad != i => {
                let why = PsError::Rejected(format!(
                    "key {}: not applied, because key {} in the same request was refused: {err}",
                    e.key, entries[bad].key
                ));
                slot.complete(e.error(&why));
            }
            _ => slot.complete(e.error(err)),
        }
    }
}

/// The pull half of a pushpull entry: the same piece, in the key's dtype, without the payload.
fn pull_of(e: &Entry, dtype: DType) -> Entry {
    let mut pull = Entry::new(e.key, dtype, &e.shape, e.offset, e.count);
    pull.round = e.round;
    pull
}

/// Refuses compressed entries in a request other than a push (inits and pulls carry plain
/// values).
fn check_codecs(frame: &Frame) -> Result<()> {
    if matches!(frame.op, Op::Push | Op::PushPull) {
        return Ok(());
    }
    match frame.entries.iter().find(|e| e.codec != Codec::Plain) {
        Some(e) if frame.op == Op::PushRows => Err(PsError::Rejected(format!(
            "key {}: row-sparse pushes cannot be compressed",
            e.key
        ))),
        Some(e) => Err(PsError::Rejected(format!(
            "key {}: only pushed values may be compressed, not those of {:?}",
            e.key, frame.op
        ))),
        None => Ok(()),
    }
}

/// Refuses a request whose replies would not fit in one frame (the worker could not read it).
fn check_reply_size(shared: &Shared, frame: &Frame) -> Result<()> {
    if !matches!(frame.op, Op::Pull | Op::PushPull | Op::PullRows) {
        return Ok(());
    }
    let mut bytes = (LEN_BYTES + FRAME_HEADER) as u64;
    for e in &frame.entries {
        // A pushpull of float16 or bfloat16 into a float32 key is answered in float32.
        let size = match (frame.op, e.dtype.size()) {
            (Op::PushPull, 2) => 4,
            (_, size) => size as u64,
        };
        // A pull of rows is answered with the rows it names.
        let count = match frame.op {
            Op::PullRows => crate::protocol::frame::rows::pulled_elements(e),
            _ => e.count,
        };
        let payload = count.saturating_mul(size);
        bytes = bytes.saturating_add(payload + (ENTRY_HEADER + 8 * e.shape.len()) as u64);
    }
    let limit = shared.limits.max_frame;
    if bytes > limit {
        return Err(PsError::Rejected(format!(
            "the reply to this request would take {bytes} bytes, over the limit of {limit} \
             (MXRS_MAX_FRAME_BYTES); pull fewer keys at once"
        )));
    }
    Ok(())
}

/// First frame of a connection: `key` = worker rank, `round` = mode, `count` = job size,
/// `offset` = 1 for a restarted worker taking back a lost one's place.
fn hello(shared: &Shared, peer: &mut Peer, frame: Frame, slots: Vec<ReplySlot>) -> Result<()> {
    let (Some(e), 1) = (frame.entries.first(), frame.entries.len()) else {
        return Err(PsError::Protocol(
            "Hello must carry exactly one entry".into(),
        ));
    };
    let slot = slots.into_iter().next().expect("one slot per entry");
    if e.offset == super::replica::HELLO_SERVER {
        return backup::server_hello(shared, peer, e, slot);
    }
    let r = (|| {
        if peer.rank.is_some() || peer.server.is_some() {
            return Err(PsError::Protocol("second Hello on one connection".into()));
        }
        if e.count != shared.num_workers as u64 {
            return Err(PsError::Rejected(format!(
                "the worker expects {} workers but the server serves {}",
                e.count, shared.num_workers
            )));
        }
        if e.key >= shared.num_workers as u64 {
            return Err(PsError::Rejected(format!(
                "worker rank {} is outside 0..{}",
                e.key, shared.num_workers
            )));
        }
        let mode = Mode::from_code(e.round)?;
        let mut current = shared.mode.lock();
        match *current {
            Some(m) if m != mode => {
                return Err(PsError::Rejected(format!(
                    "worker {} asks for {} but the job runs {}",
                    e.key,
                    mode_name(mode),
                    mode_name(m)
                )));
            }
            _ => *current = Some(mode),
        }
        let rank = e.key as u32;
        let mut connected = shared.connected.lock();
        let rejoined = e.offset == 1;
        match connected.get(&rank) {
            // The scheduler let the restart in once it had lost the process it replaces, whose
            // connection may not have been seen closing here yet.
            Some((_, addr)) if rejoined => {
                tracing::warn!("worker {rank} rejoined; it replaces the connection from {addr}")
            }
            Some((_, addr)) => {
                return Err(PsError::Rejected(format!(
                    "worker rank {rank} is already connected (from {addr}); a second connection \
                 claiming it is refused"
                )));
            }
            None => {}
        }
        connected.insert(rank, (peer.conn, peer.addr.clone()));
        drop(connected);
        if rejoined && mode == Mode::Sync {
            // Its first pushes may repeat rounds its predecessor had pushed: count them once.
            for (_, k) in shared.store.pieces() {
                k.lock().replaced(rank);
            }
            tracing::info!("worker {rank} rejoined");
        }
        Ok(rank)
    })();
    match r {
        Ok(rank) => {
            peer.rank = Some(rank);
            slot.complete(e.ok(0, Bytes::new()));
        }
        Err(err) => slot.complete(e.error(&err)),
    }
    Ok(())
}

fn mode_name(m: Mode) -> &'static str {
    match m {
        Mode::Sync => "dist_sync",
        Mode::Async => "dist_async",
    }
}

pub(crate) fn current(shared: &Shared) -> Option<Arc<Installed>> {
    shared.updater.read().clone()
}

fn no_optimizer() -> PsError {
    PsError::Rejected("no optimizer is set on the servers".into())
}

pub(super) fn answer(e: &Entry, r: Result<(u64, Bytes)>) -> Entry {
    match r {
        Ok((round, payload)) => e.ok(round, payload),
        Err(err) => e.error(&err),
    }
}

pub(super) fn set_optimizer(shared: &Shared, payload: &[u8]) -> Result<()> {
    let spec = OptimizerSpec::decode(payload)?;
    let mut slot = shared.updater.write();
    if slot.as_ref().is_some_and(|i| i.spec == spec) {
        // Every worker sends the optimizer; the same one again keeps the states.
        return Ok(());
    }
    let updater = Updater::new(&spec)?;
    let epoch = slot.as_ref().map_or(1, |i| i.epoch + 1);
    tracing::info!("optimizer {} installed", updater.name());
    *slot = Some(Arc::new(Installed {
        spec,
        updater: Arc::new(updater),
        epoch,
    }));
    Ok(())
}

fn set_params(shared: &Shared, payload: &[u8]) -> Result<()> {
    let change = OptimizerSpec::decode(payload)?;
    let mut slot = shared.updater.write();
    let Some(current) = slot.as_mut() else {
        return Err(no_optimizer());
    };
    let installed = Arc::make_mut(current);
    let mut updater = (*installed.updater).clone();
    updater.set_params(&change.params, &change.key_mults)?;
    installed.updater = Arc::new(updater);
    for (name, value) in &change.params {
        match installed.spec.params.iter_mut().find(|(n, _)| n == name) {
            Some(p) => p.1 = *value,
            None => installed.spec.params.push((name.clone(), *value)),
        }
    }
    installed
        .spec
        .key_mults
        .extend_from_slice(&change.key_mults);
    Ok(())
}
