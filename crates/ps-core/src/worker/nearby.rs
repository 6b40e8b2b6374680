//! Pulls from a backup beside the worker. Where a worker shares a machine (an address) with the
//! backup of a placement range but not with its primary, it pulls that range from the backup:
//! in dist_sync a backup holds each round before the primary answers it, so the value is the
//! same, and what would cross the network twice (the primary's copy to the backup, then to the
//! worker) crosses it once. Pulls go there, and a pushpull becomes a push to the primary and a
//! pull of the round it completes from the backup; pushes go to the primary, which alone
//! applies them. Without a backup, in dist_async (whose pulls do not wait for a round), or where
//! the primary is beside the worker too, everything goes to the primary.
//!
//! A pull at the backup travels on another connection than the key's pushes to its primary,
//! so nothing orders it with them: were the worker's next push of the key to overtake it, the
//! next round could reach the backup first and the pull be answered with that round. [`Order`]
//! keeps a key's later pushes behind such a pull until its reply is in.

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

use parking_lot::Mutex;
use rustc_hash::FxHashMap;
use tokio::runtime::Handle;
use tokio::sync::{oneshot, watch};

use super::conn::{ReplyRx, ServerConn};
use crate::protocol::frame::Frame;

/// The server each placement range's pulls go to, given its `chains` (primary first), every
/// server's address and the worker's own (`local`); `route` (the primaries) where no backup
/// is nearer.
pub(super) fn pull_route(
    chains: &[Vec<u32>],
    addrs: &[SocketAddr],
    local: Option<IpAddr>,
    route: &[usize],
) -> Arc<[usize]> {
    let beside =
        |s: u32| local.is_some_and(|ip| addrs.get(s as usize).is_some_and(|a| a.ip() == ip));
    route
        .iter()
        .enumerate()
        .map(|(range, &primary)| {
            let backups = chains
                .get(range)
                .map_or(&[][..], |c| c.get(1..).unwrap_or(&[]));
            match backups.iter().find(|&&b| beside(b)) {
                Some(&b) if !beside(primary as u32) => b as usize,
                _ => primary,
            }
        })
        .collect()
}

/// What a key's next push waits for: open once every earlier pull of the key at a backup has
/// its reply and every earlier held push of the key is queued on its connection.
type Barrier = watch::Receiver<bool>;

/// Orders each key's pushes behind its pulls in flight at a backup.
pub(super) struct Order {
    /// Where waiting requests and reply forwarders run (pushes are sent from callers' threads).
    rt: Handle,
    /// Each key's barrier, for keys that had a pull at a backup (the latest one).
    last: Mutex<FxHashMap<u64, Barrier>>,
}

impl Order {
    pub(super) fn new(rt: Handle) -> Order {
        Order {
            rt,
            last: Mutex::new(FxHashMap::default()),
        }
    }

    /// Sends `frame`, a pull from a backup, on `conn`: the keys' later pushes wait
    /// until its reply (or the connection's failure) is in.
    pub(super) fn send_pull(&self, conn: &ServerConn, frame: Frame, priority: i32) -> ReplyRx {
        let (open, barrier) = watch::channel(false);
        let earlier = self.close(&frame, barrier);
        let reply = conn.send_request(frame, priority);
        let (tx, rx) = oneshot::channel();
        self.rt.spawn(async move {
            if let Ok(r) = reply.await {
                let _ = tx.send(r);
            }
            wait(earlier).await;
            let _ = open.send(true);
        });
        rx
    }

    /// Sends `frame`, a push or pushpull to a primary, on `conn`: now, or where one of its keys
    /// has a pull in flight at a backup, once the pulls and held pushes before it are done.
    pub(super) fn send_push(&self, conn: &ServerConn, frame: Frame, priority: i32) -> ReplyRx {
        let earlier = {
            let last = self.last.lock();
            if last.is_empty() {
                Vec::new()
            } else {
                closed(&last, &frame)
            }
        };
        if earlier.is_empty() {
            return conn.send_request(frame, priority);
        }
        let (open, barrier) = watch::channel(false);
        // The barriers are read again under this lock: one opened since is waited for at once.
        let earlier = self.close(&frame, barrier);
        let (tx, rx) = oneshot::channel();
        let unsent = conn.register(frame, priority, tx);
        self.rt.spawn(async move {
            wait(earlier).await;
            if let Some(unsent) = unsent {
                unsent.send();
            }
            let _ = open.send(true);
        });
        rx
    }

    /// Makes `barrier` the one of `frame`'s keys; returns their earlier barriers still closed.
    fn close(&self, frame: &Frame, barrier: Barrier) -> Vec<Barrier> {
        let mut last = self.last.lock();
        let earlier = closed(&last, frame);
        for e in &frame.entries {
            last.insert(e.key, barrier.clone());
        }
        earlier
    }
}

/// The barriers of `frame`'s keys that are still closed, each once.
fn closed(last: &FxHashMap<u64, Barrier>, frame: &Frame) -> Vec<Barrier> {
    let mut out: Vec<Barrier> = Vec::new();
    for e in &frame.entries {
        if let Some(b) = last.get(&e.key)
            && !*b.borrow()
            && b.has_changed().is_ok()
            && !out.iter().any(|o| o.same_channel(b))
        {
            out.push(b.clone());
        }
    }
    out
}

/// Waits until every barrier in `barriers` is open (or its sender gone: its task ended).
async fn wait(barriers: Vec<Barrier>) {
    for mut b in barriers {
        let _ = b.wait_for(|&open| open).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn addrs(ips: &[&str]) -> Vec<SocketAddr> {
        ips.iter()
            .map(|ip| format!("{ip}:9000").parse().unwrap())
            .collect()
    }

    #[test]
    fn a_range_is_pulled_from_its_backup_only_where_the_backup_alone_is_beside() {
        let chains = crate::placement::chains(3, 1, &[]); // [0,1] [1,2] [2,0]
        let a = addrs(&["10.0.0.1", "10.0.0.2", "10.0.0.3"]);
        let here = |ip: &str| Some(ip.parse().unwrap());
        // On 10.0.0.1 (server 0): range 2, backed up on server 0, comes from it.
        assert_eq!(
            &*pull_route(&chains, &a, here("10.0.0.1"), &[0, 1, 2]),
            [0, 1, 0]
        );
        assert_eq!(
            &*pull_route(&chains, &a, here("10.0.0.2"), &[0, 1, 2]),
            [1, 1, 2]
        );
        // Nowhere near, or not known: every range from its primary.
        assert_eq!(
            &*pull_route(&chains, &a, here("10.0.0.9"), &[0, 1, 2]),
            [0, 1, 2]
        );
        assert_eq!(&*pull_route(&chains, &a, None, &[0, 1, 2]), [0, 1, 2]);
        // Everything on one machine (loopback): the primaries.
        let one = addrs(&["127.0.0.1", "127.0.0.1", "127.0.0.1"]);
        assert_eq!(
            &*pull_route(&chains, &one, here("127.0.0.1"), &[0, 1, 2]),
            [0, 1, 2]
        );
        // Server 1 lost: range 1 went to server 2 and has no backup left.
        let lost = crate::placement::chains(3, 1, &[1]); // [0] [2] [2,0]
        assert_eq!(
            &*pull_route(&lost, &a, here("10.0.0.1"), &[0, 2, 2]),
            [0, 2, 0]
        );
        // Without backups: the primaries.
        let none = crate::placement::chains(3, 0, &[]);
        assert_eq!(
            &*pull_route(&none, &a, here("10.0.0.1"), &[0, 1, 2]),
            [0, 1, 2]
        );
    }
}
