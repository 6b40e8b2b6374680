//! The backup's side of replication: a primary server's connection, which says hello, then
//! sends the pieces it backs up here, the optimizer (to a replacement server), and markers.

use bytes::Bytes;

use super::super::Shared;
use super::super::peer::Peer;
use super::super::reply::ReplySlot;
use super::{answer, current, replica_of, set_optimizer};
use crate::error::{PsError, Result};
use crate::protocol::frame::{Entry, Frame, Op};
use mxrs_shm::ArenaView;

/// Stores the pieces a primary server sends this one, its backup.
pub(super) fn replicas(
    shared: &Shared,
    peer: &mut Peer,
    server: u32,
    mut frame: Frame,
    slots: Vec<ReplySlot>,
) -> Result<()> {
    match frame.op {
        Op::Replicate => {}
        // Values in the primary's shared memory: kept where they lie.
        Op::ReplicateShared => {
            let Some(view) = &peer.arena else {
                return Err(PsError::Protocol(format!(
                    "server {server} sent shared replicas without shared memory"
                )));
            };
            for e in &mut frame.entries {
                let region = view.bytes(&e.payload);
                e.payload = region.map_err(|e| PsError::Protocol(e.to_string()))?;
            }
        }
        // The primary's shared memory, mapped here if this host lets it be.
        Op::Arena => {
            for (e, slot) in frame.entries.iter().zip(slots) {
                let r = match ArenaView::open(e.key, e.offset, e.count, &e.payload) {
                    Ok(view) => {
                        tracing::debug!("server {server} sends values through shared memory");
                        peer.arena = Some(view);
                        Ok((0, Bytes::new()))
                    }
                    Err(why) => Err(PsError::Rejected(why.to_string())),
                };
                slot.complete(answer(e, r));
            }
            return Ok(());
        }
        // The optimizer, for a replacement server that joined after the workers set it (one
        // set already, by a worker, is theirs and stays).
        Op::SetOptimizer => {
            for (e, slot) in frame.entries.iter().zip(slots) {
                let r = match current(shared) {
                    Some(_) => Ok((0, Bytes::new())),
                    None => set_optimizer(shared, &e.payload).map(|()| (0, Bytes::new())),
                };
                slot.complete(answer(e, r));
            }
            return Ok(());
        }
        // A marker: answered once everything sent before it is stored, which it is now.
        Op::Stats => {
            for (e, slot) in frame.entries.iter().zip(slots) {
                slot.complete(e.ok(0, Bytes::new()));
            }
            return Ok(());
        }
        op => {
            return Err(PsError::Protocol(format!(
                "server {server} sent {op:?} on its replication connection"
            )));
        }
    }
    let epoch = current(shared).map_or(0, |i| i.epoch);
    let Some(replica) = replica_of(shared) else {
        return Err(PsError::Protocol(
            "replicas sent to a server that keeps none".into(),
        ));
    };
    if !frame.entries.len().is_multiple_of(2) {
        return Err(PsError::Protocol(format!(
            "server {server} sent a Replicate frame of {} entries (pieces take two)",
            frame.entries.len()
        )));
    }
    let alone = frame.entries.len() == 2;
    let mut slots = slots.into_iter();
    let mut results = Vec::with_capacity(frame.entries.len() / 2);
    for pair in frame.entries.chunks_exact(2) {
        let pair: &[Entry; 2] = pair.try_into().expect("chunks of two");
        let range = replica.range_of(&pair[0]);
        results.push(
            shared
                .store
                .restore(pair, alone, range, shared.num_workers, epoch),
        );
    }
    // What the stores let go of the primary's shared memory goes back with the first answer
    // (when that is no error, whose payload is its message; else with a later one).
    let mut let_go = match (&peer.arena, results.first()) {
        (Some(view), Some(Ok(()))) => Some(view.take_let_go()),
        _ => None,
    };
    for (pair, r) in frame.entries.chunks_exact(2).zip(&results) {
        for e in pair {
            let slot = slots.next().expect("one slot per entry");
            slot.complete(match r {
                Ok(()) => e.ok(e.round, let_go.take().unwrap_or_default()),
                Err(err) => e.error(err),
            });
        }
    }
    Ok(())
}

/// The Hello of a server that will send this one replicas: `key` = its rank.
pub(super) fn server_hello(
    shared: &Shared,
    peer: &mut Peer,
    e: &Entry,
    slot: ReplySlot,
) -> Result<()> {
    if peer.rank.is_some() || peer.server.is_some() {
        return Err(PsError::Protocol("second Hello on one connection".into()));
    }
    if shared.replication.get().is_none() {
        slot.complete(e.error(&PsError::Rejected(
            "this server keeps no replicas (MXRS_REPLICAS is 0)".into(),
        )));
        return Ok(());
    }
    let server = u32::try_from(e.key)
        .map_err(|_| PsError::Protocol(format!("server rank {} out of range", e.key)))?;
    peer.server = Some(server);
    tracing::debug!("server {server} sends replicas from {}", peer.addr);
    slot.complete(e.ok(0, Bytes::new()));
    Ok(())
}
