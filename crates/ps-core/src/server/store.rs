//! The keys a server holds, sharded so that requests on different keys never wait on each other.
//!
//! A shard lock is held only to find or insert a key; the key's own mutex is held while it is
//! summed or updated. A key that a non-zero rank initialises before rank 0 has is `Waiting`: the
//! init replies are parked until rank 0's value arrives.

use rustc_hash::FxHashMap;
use std::sync::Arc;

use parking_lot::Mutex;

use super::key::{Ctx, KeyState, LoadedState, check_layout};
use super::reply::ReplySlot;
use crate::dtype::Access;
use crate::error::{PsError, Result};
use crate::protocol::frame::Entry;
use crate::protocol::states::{self, StatePiece};
use crate::updater::{Piece, Updater};

const SHARDS: usize = 64;

/// Identity of a stored piece: the key and the element offset of its slice.
type PieceId = (u64, u64);

enum Slot {
    Waiting(Vec<(Entry, ReplySlot)>),
    Ready(Arc<Mutex<KeyState>>),
}

/// All pieces of all keys on one server.
pub(crate) struct Store {
    shards: Box<[Mutex<FxHashMap<PieceId, Slot>>]>,
    #[cfg(test)]
    hooks: tests::Hooks,
}

impl Store {
    pub(crate) fn new() -> Self {
        Store {
            shards: (0..SHARDS)
                .map(|_| Mutex::new(FxHashMap::default()))
                .collect(),
            #[cfg(test)]
            hooks: Default::default(),
        }
    }

    fn shard(&self, id: PieceId) -> &Mutex<FxHashMap<PieceId, Slot>> {
        let h = id.0.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ id.1.rotate_left(17);
        &self.shards[(h >> 58) as usize % SHARDS]
    }

    /// The piece `e` addresses, or an unknown-key error naming it.
    pub(crate) fn get(&self, e: &Entry) -> Result<Arc<Mutex<KeyState>>> {
        match self.shard((e.key, e.offset)).lock().get(&(e.key, e.offset)) {
            Some(Slot::Ready(k)) => Ok(k.clone()),
            _ => Err(PsError::UnknownKey(format!(
                "key {} has not been initialised on this server (call init first)",
                e.key
            ))),
        }
    }

    /// Checks an init entry of `worker` without changing anything: against the key if it
    /// exists, else as the value that creates it (rank 0) or as a layout to wait for.
    pub(crate) fn check_init(&self, worker: u32, e: &Entry) -> Result<()> {
        let id = (e.key, e.offset);
        let ready = match self.shard(id).lock().get(&id) {
            Some(Slot::Ready(k)) => Some(k.clone()),
            _ => None,
        };
        match ready {
            Some(k) => k.lock().check(e, Access::Init),
            None if worker == 0 => KeyState::check_create(e),
            None => check_layout(e),
        }
    }

    /// Handles an init entry from `worker`: rank 0's value creates the key; other ranks are
    /// answered once it exists. Every init is checked against the key's dtype and shape. The
    /// reply's round is the sync round `worker`'s next push of the piece belongs to (not 0 for a
    /// restarted worker whose predecessor pushed).
    pub(crate) fn init(&self, worker: u32, ctx: &Ctx, e: &Entry, slot: ReplySlot) {
        let id = (e.key, e.offset);
        let mut shard = self.shard(id).lock();
        match shard.get_mut(&id) {
            Some(Slot::Ready(k)) => {
                let k = k.clone();
                drop(shard);
                let mut k = k.lock();
                match k.check(e, Access::Init) {
                    Ok(()) if k.is_durable() => {
                        slot.complete(e.ok(k.next_round(worker), Default::default()))
                    }
                    Ok(()) => k.ack_when(ctx, 0, e, slot),
                    Err(err) => slot.complete(e.error(&err)),
                }
            }
            Some(Slot::Waiting(waiters)) if worker != 0 => waiters.push((header(e), slot)),
            None if worker != 0 => {
                shard.insert(id, Slot::Waiting(vec![(header(e), slot)]));
            }
            _ => match KeyState::create(e, ctx.num_workers) {
                Err(err) => slot.complete(e.error(&err)),
                Ok(mut state) => {
                    if let Some(r) = ctx.replica {
                        state.set_range(r.range_of(e));
                    }
                    // Published before any other request can find the key: another worker's
                    // init that finds it not yet durable is answered when a round or the
                    // backup's answer makes it so. Without a backup nothing would (the round
                    // needs that worker's pushes, which wait for its init: jobs hung so at
                    // start), so the key is durable before it is in the shard. A backup's
                    // answer (`Store::acked`) takes this shard's lock, so it finds the key.
                    state.publish(ctx);
                    let k = Arc::new(Mutex::new(state));
                    let waiters = match shard.insert(id, Slot::Ready(k.clone())) {
                        Some(Slot::Waiting(w)) => w,
                        _ => Vec::new(),
                    };
                    drop(shard);
                    #[cfg(test)]
                    self.hooks.created(self);
                    let mut k = k.lock();
                    // Answered once the creation is durable (at once without a backup).
                    k.ack_when(ctx, 0, e, slot);
                    for (req, slot) in waiters {
                        match k.check(&req, Access::Init) {
                            Ok(()) => k.ack_when(ctx, 0, &req, slot),
                            Err(err) => slot.complete(req.error(&err)),
                        }
                    }
                }
            },
        }
    }

    /// Forgets what connection `conn` left waiting (its inits for keys rank 0 has not created,
    /// its pulls parked for a round): it closed, so nobody will read those replies.
    pub(crate) fn forget_connection(&self, conn: u64) {
        let mut ready = Vec::new();
        for shard in self.shards.iter() {
            shard.lock().retain(|_, slot| match slot {
                Slot::Waiting(waiters) => {
                    waiters.retain(|(_, s)| s.conn() != conn);
                    !waiters.is_empty()
                }
                Slot::Ready(k) => {
                    ready.push(k.clone());
                    true
                }
            });
        }
        for k in ready {
            k.lock().forget_connection(conn);
        }
    }

    /// Stores a piece of placement range `range` sent by its primary (creating the piece if it
    /// is new here); `alone` as for [`KeyState::restore`].
    pub(crate) fn restore(
        &self,
        pair: &[Entry; 2],
        alone: bool,
        range: u32,
        num_workers: u32,
        epoch: u64,
    ) -> Result<()> {
        let e = &pair[0];
        let id = (e.key, e.offset);
        let mut shard = self.shard(id).lock();
        match shard.get(&id) {
            Some(Slot::Ready(k)) => {
                let k = k.clone();
                drop(shard);
                k.lock().restore(pair, alone, epoch)
            }
            _ => {
                check_layout(e)?;
                let mut k = KeyState::from_replica(pair, alone, num_workers, epoch)?;
                k.set_range(range);
                let waiters = shard.insert(id, Slot::Ready(Arc::new(Mutex::new(k))));
                drop(waiters); // a backup is sent no inits; nothing waits here
                Ok(())
            }
        }
    }

    /// The backup has piece `(key, offset)` as of `round`.
    pub(crate) fn acked(&self, key: u64, offset: u64, round: u64) {
        let id = (key, offset);
        let k = match self.shard(id).lock().get(&id) {
            Some(Slot::Ready(k)) => k.clone(),
            _ => return,
        };
        k.lock().acked(round);
    }

    /// How many init entries wait for rank 0's value, and how many pulls for a round.
    pub(crate) fn waiting(&self) -> (usize, usize) {
        let mut inits = 0;
        let mut ready = Vec::new();
        for shard in self.shards.iter() {
            for slot in shard.lock().values() {
                match slot {
                    Slot::Waiting(waiters) => inits += waiters.len(),
                    Slot::Ready(k) => ready.push(k.clone()),
                }
            }
        }
        let pulls = ready.iter().map(|k| k.lock().parked_pulls()).sum();
        (inits, pulls)
    }

    /// Every ready piece, for saving optimizer states.
    pub(crate) fn pieces(&self) -> Vec<(PieceId, Arc<Mutex<KeyState>>)> {
        let mut out = Vec::new();
        for shard in self.shards.iter() {
            for (id, slot) in shard.lock().iter() {
                if let Slot::Ready(k) = slot {
                    out.push((*id, k.clone()));
                }
            }
        }
        out.sort_by_key(|(id, _)| *id);
        out
    }

    /// The optimizer states of generation `epoch` of `updater` of every piece `mine` says this
    /// server serves (not those it only backs up), as a blob (`protocol::states`); a foreign
    /// optimizer's are the bytes its hook saves for each piece.
    pub(crate) fn save_states(
        &self,
        epoch: u64,
        updater: &Updater,
        mine: &dyn Fn(u32) -> bool,
    ) -> Result<Vec<u8>> {
        let mut saved: Vec<(u64, u64, bool, Vec<u8>)> = Vec::new();
        for ((key, offset), k) in self.pieces() {
            let k = k.lock();
            if !mine(k.range()) {
                continue;
            }
            let state = match updater.foreign() {
                Some(hook) => k.foreign_state(hook, epoch)?.unwrap_or_default(),
                None => {
                    let mut state = Vec::new();
                    k.save_state(epoch, &mut state);
                    state
                }
            };
            if !state.is_empty() {
                saved.push((key, offset, k.is_f64(), state));
            }
        }
        let pieces: Vec<StatePiece> = saved
            .iter()
            .map(|(key, offset, is_f64, state)| (*key, *offset, *is_f64, state.as_slice()))
            .collect();
        Ok(states::join(&pieces))
    }

    /// Replaces optimizer states of `updater` from a blob written by [`Store::save_states`].
    /// Everything is decoded and checked first; on any error nothing changes.
    pub(crate) fn load_states(&self, epoch: u64, updater: &Updater, blob: &[u8]) -> Result<()> {
        let mut staged: Vec<(Arc<Mutex<KeyState>>, LoadedState)> = Vec::new();
        // A foreign optimizer's states, and the pieces they are for.
        let mut foreign: Vec<(Piece, &[u8])> = Vec::new();
        let mut foreign_keys: Vec<Arc<Mutex<KeyState>>> = Vec::new();
        for piece in states::split(blob)? {
            let (key, offset, is_f64, bytes) = piece;
            let probe = Entry::new(key, crate::dtype::DType::F32, &[], offset, 0);
            let k = self.get(&probe)?;
            let guard = k.lock();
            if guard.is_f64() != is_f64 {
                return Err(PsError::Rejected(format!(
                    "optimizer state for key {key} has another precision than the key"
                )));
            }
            if updater.foreign().is_some() {
                drop(guard);
                foreign.push((Piece { key, offset }, bytes));
                foreign_keys.push(k);
                continue;
            }
            let (state, used) = guard.decode_state(bytes).map_err(|e| {
                PsError::Rejected(format!("optimizer state for key {key} does not fit: {e}"))
            })?;
            if used != bytes.len() {
                return Err(PsError::Rejected(format!(
                    "optimizer state for key {key} does not fit the key's size"
                )));
            }
            drop(guard);
            staged.push((k, state));
        }
        if let Some(hook) = updater.foreign() {
            // The hook checks every state before it installs any.
            hook.load_states(&foreign)?;
            for k in foreign_keys {
                k.lock().drop_foreign_state();
            }
            return Ok(());
        }
        for (k, state) in staged {
            k.lock().install_state(epoch, state);
        }
        Ok(())
    }
}

/// `e` without its payload, kept for a deferred reply.
fn header(e: &Entry) -> Entry {
    let mut h = e.clone();
    h.payload = Default::default();
    h
}

#[cfg(test)]
mod tests;
