//! One handler per request op. Handlers never fail the connection for a bad entry: the entry's
//! reply carries the error and nothing stored changes. Only a frame that breaks the protocol
//! (a reply where a request belongs, a request before Hello) returns `Err`, which closes it.

use std::sync::Arc;

use bytes::Bytes;

use super::key::Ctx;
use super::reply::{Outbox, ReplySlot};
use super::store::lock;
use super::{Installed, Shared};
use crate::error::{PsError, Result};
use crate::protocol::frame::{Entry, Frame, Mode, Op};
use crate::updater::{OptimizerSpec, Updater};

/// Routes one request frame to its handler.
pub(crate) fn dispatch(
    shared: &Shared,
    worker: &mut Option<u32>,
    frame: Frame,
    outbox: &Outbox,
) -> Result<()> {
    if frame.reply {
        return Err(PsError::Protocol("a worker sent a reply frame".into()));
    }
    let slots = ReplySlot::for_frame(&frame, outbox);
    if frame.op == Op::Hello {
        return hello(shared, worker, frame, slots);
    }
    let Some(rank) = *worker else {
        return Err(PsError::Protocol(format!("{:?} before Hello", frame.op)));
    };
    let entries = frame.entries.iter().zip(slots);
    let installed = current(shared);
    let ctx = Ctx {
        num_workers: shared.num_workers,
        mode: lock(&shared.mode).unwrap_or(Mode::Sync),
        updater: installed.as_ref().map(|i| i.updater.as_ref()),
        epoch: installed.as_ref().map_or(0, |i| i.epoch),
    };
    match frame.op {
        Op::Hello => unreachable!("handled above"),
        Op::Init => {
            entries.for_each(|(e, slot)| shared.store.init(rank, shared.num_workers, e, slot))
        }
        Op::Push => entries.for_each(|(e, slot)| {
            let r = shared.store.get(e).and_then(|key| {
                let mut k = lock(&key);
                k.push(&ctx, rank, e).map(|()| k.round())
            });
            slot.complete(answer(e, r.map(|round| (round, Bytes::new()))));
        }),
        Op::Pull => entries.for_each(|(e, slot)| match shared.store.get(e) {
            Ok(key) => lock(&key).pull(&ctx, e.round, e, slot),
            Err(err) => slot.complete(e.error(&err)),
        }),
        // Push, then the pull of the round it completes, under one lock of the key.
        Op::PushPull => entries.for_each(|(e, slot)| match shared.store.get(e) {
            Ok(key) => {
                let mut k = lock(&key);
                match k.push(&ctx, rank, e) {
                    Ok(()) => k.pull(&ctx, e.round + 1, e, slot),
                    Err(err) => slot.complete(e.error(&err)),
                }
            }
            Err(err) => slot.complete(e.error(&err)),
        }),
        Op::SetOptimizer => entries.for_each(|(e, slot)| {
            slot.complete(answer(
                e,
                set_optimizer(shared, &e.payload).map(|()| (0, Bytes::new())),
            ))
        }),
        Op::SetParams => entries.for_each(|(e, slot)| {
            slot.complete(answer(
                e,
                set_params(shared, &e.payload).map(|()| (0, Bytes::new())),
            ))
        }),
        Op::SaveStates => entries.for_each(|(e, slot)| {
            let epoch = current(shared).map(|i| i.epoch);
            let r = epoch
                .map(|ep| (0, Bytes::from(shared.store.save_states(ep))))
                .ok_or_else(no_optimizer);
            slot.complete(answer(e, r));
        }),
        Op::LoadStates => entries.for_each(|(e, slot)| {
            let r = current(shared)
                .ok_or_else(no_optimizer)
                .and_then(|i| shared.store.load_states(i.epoch, &e.payload));
            slot.complete(answer(e, r.map(|()| (0, Bytes::new()))));
        }),
    }
    Ok(())
}

/// First frame of a connection: `key` = worker rank, `round` = mode, `count` = job size.
fn hello(
    shared: &Shared,
    worker: &mut Option<u32>,
    frame: Frame,
    slots: Vec<ReplySlot>,
) -> Result<()> {
    let (Some(e), 1) = (frame.entries.first(), frame.entries.len()) else {
        return Err(PsError::Protocol(
            "Hello must carry exactly one entry".into(),
        ));
    };
    let slot = slots.into_iter().next().expect("one slot per entry");
    let r = (|| {
        if worker.is_some() {
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
        let mut current = lock(&shared.mode);
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
        Ok(e.key as u32)
    })();
    match r {
        Ok(rank) => {
            *worker = Some(rank);
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

fn current(shared: &Shared) -> Option<Arc<Installed>> {
    shared
        .updater
        .read()
        .unwrap_or_else(|e| e.into_inner())
        .clone()
}

fn no_optimizer() -> PsError {
    PsError::Rejected("no optimizer is set on the servers".into())
}

fn answer(e: &Entry, r: Result<(u64, Bytes)>) -> Entry {
    match r {
        Ok((round, payload)) => e.ok(round, payload),
        Err(err) => e.error(&err),
    }
}

fn set_optimizer(shared: &Shared, payload: &[u8]) -> Result<()> {
    let spec = OptimizerSpec::decode(payload)?;
    let mut slot = shared.updater.write().unwrap_or_else(|e| e.into_inner());
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
    let mut slot = shared.updater.write().unwrap_or_else(|e| e.into_inner());
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
