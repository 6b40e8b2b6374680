//! A lost server in a job with backups: its placement ranges move to the next server of their
//! chains (the scheduler's [`Topology`]), and the requests it had not answered
//! go there again, marked as sent again, so that what it had already applied is answered
//! instead of applied twice. A request whose entries now belong to several servers is split,
//! and its reply put back together in order.

use std::net::SocketAddr;
use std::sync::Arc;

use tokio::sync::oneshot;

use super::{ServerConn, Worker};
use crate::error::{PsError, Result};
use crate::placement::Topology;
use crate::protocol::frame::{Frame, Op};

impl Worker {
    /// The server each placement range goes to now.
    pub(super) fn route(&self) -> Arc<[usize]> {
        self.route.read().clone()
    }

    /// The server each placement range's pulls go to now ([`super::nearby`]).
    pub(super) fn pull_route(&self) -> Arc<[usize]> {
        self.pull_route.read().clone()
    }

    /// Takes the job's topology `t` (a server was failed over, or a replacement joined): each
    /// placement range goes to the first server of its chain from now on, the requests a lost
    /// server had not answered go there, and a replacement server is connected to on its new
    /// address. Without backups this does nothing (the job fails on a lost server).
    pub async fn set_topology(&self, t: &Topology) {
        let n = self.conns.len();
        if self.replicas == 0 || n < 2 || t.chains.len() != n {
            return;
        }
        let addrs = match t.addresses() {
            Ok(addrs) => addrs,
            Err(e) => return tracing::error!("topology {}: {e}", t.epoch),
        };
        let lost = t.lost();
        let moved: Vec<usize> = {
            let mut applied = self.topology.lock();
            if t.epoch <= applied.0 {
                return;
            }
            // A replacement in the job: on a new address, or back in the chains on the same one.
            let known = self.lost.lock().clone();
            let moved = (0..n)
                .filter(|&s| !lost.contains(&(s as u32)))
                .filter(|&s| applied.1[s] != addrs[s].0 || known.contains(&(s as u32)))
                .collect();
            *applied = (t.epoch, addrs.iter().map(|(a, _)| *a).collect());
            moved
        };
        // Route first: what the replaced connections held goes by the new route.
        let current = self.route();
        let route: Arc<[usize]> = t
            .primaries()
            .iter()
            .zip(current.iter())
            .map(|(first, &now)| first.map_or(now, |s| s as usize))
            .collect();
        if self.mode == crate::protocol::frame::Mode::Sync {
            let addrs: Vec<SocketAddr> = addrs.iter().map(|(a, _)| *a).collect();
            *self.pull_route.write() =
                super::nearby::pull_route(&t.chains, &addrs, self.local, &route);
        }
        *self.route.write() = route;
        for &s in &lost {
            if !self.lost.lock().contains(&s) {
                let name = self.conns.get(s as usize).name().to_string();
                tracing::warn!("{name} lost; its keys went to their backups");
            }
        }
        *self.lost.lock() = lost;
        for s in moved {
            self.replace_conn(s, &addrs[s]).await;
        }
        self.sweep_lost();
    }

    /// Connects to the server that replaces the lost server `rank`, at `addr`; the lost one's
    /// connection goes, its requests to the servers that took its keys. A replacement that
    /// cannot be reached fails what is sent to it with an error naming it.
    async fn replace_conn(&self, rank: usize, (addr, name): &(SocketAddr, String)) {
        let conn = ServerConn::open(*addr, name.clone(), &self.reconnect, true).await;
        match conn {
            Ok(conn) => {
                tracing::info!("connected to {name}, which replaces a lost server");
                let old = self.conns.replace(rank, conn);
                for (tx, frame) in old.take_orphans() {
                    self.resend(tx, frame);
                }
            }
            Err(e) => {
                let why = format!("cannot connect to {name}, which replaces a lost server: {e}");
                tracing::error!("{why}");
                let old = self
                    .conns
                    .replace(rank, ServerConn::dead(name.clone(), why));
                for (tx, frame) in old.take_orphans() {
                    self.resend(tx, frame);
                }
            }
        }
    }

    /// Sends the requests waiting on lost servers' connections to the servers that took their
    /// keys over. Called after the route changed, and after every request sent, so that one
    /// routed by the old route just before it changed is not left behind.
    pub(super) fn sweep_lost(&self) {
        let (lost, retired) = {
            let (lost, retired) = (self.lost.lock(), self.retired.lock());
            if lost.is_empty() && retired.is_empty() {
                return; // every request goes this way: no copy while no server is lost
            }
            (lost.clone(), retired.clone())
        };
        for s in lost {
            if s as usize >= self.conns.len() {
                continue;
            }
            for (tx, frame) in self.conns.get(s as usize).take_orphans() {
                self.resend(tx, frame);
            }
        }
        for old in retired {
            for (tx, frame) in old.take_orphans() {
                self.resend(tx, frame);
            }
        }
    }

    /// Sends `frame` again to the servers its entries belong to now.
    fn resend(&self, tx: oneshot::Sender<Result<Frame>>, frame: Frame) {
        let keyed = [
            Op::Init,
            Op::Push,
            Op::Pull,
            Op::PushPull,
            Op::PushRows,
            Op::PullRows,
        ];
        if !keyed.contains(&frame.op) {
            // Sent to every server: the lost one's share is the server's that took its keys
            // over, which got its own copy.
            let entries = frame.entries.iter().map(|e| e.ok(0, Default::default()));
            let _ = tx.send(Ok(Frame::reply_to(
                frame.op,
                frame.request_id,
                entries.collect(),
            )));
            return;
        }
        let route = self.route();
        let mut groups: Vec<(usize, Vec<usize>, Vec<crate::protocol::frame::Entry>)> = Vec::new();
        for (i, e) in frame.entries.into_iter().enumerate() {
            let server = route[self.range_of(e.key, e.offset)];
            match groups.iter_mut().find(|(s, ..)| *s == server) {
                Some((_, at, entries)) => {
                    at.push(i);
                    entries.push(e);
                }
                None => groups.push((server, vec![i], vec![e])),
            }
        }
        let op = frame.op;
        let again = |entries| {
            let mut f = Frame::request(op, 0, entries);
            f.resent = true;
            f
        };
        if groups.len() == 1 {
            let (server, _, entries) = groups.pop().expect("one group");
            return self.conns.get(server).send_frame(again(entries), 0, tx);
        }
        let mut parts = Vec::with_capacity(groups.len());
        for (server, at, entries) in groups {
            let (part_tx, part_rx) = oneshot::channel();
            self.conns
                .get(server)
                .send_frame(again(entries), 0, part_tx);
            parts.push((at, part_rx));
        }
        let request_id = frame.request_id;
        tokio::spawn(async move {
            let mut out = Vec::new();
            for (at, rx) in parts {
                let reply = match rx.await {
                    Ok(Ok(reply)) => reply,
                    Ok(Err(e)) => return drop(tx.send(Err(e))),
                    Err(_) => {
                        let lost = PsError::NodeLost("a server was lost".into());
                        return drop(tx.send(Err(lost)));
                    }
                };
                out.extend(at.into_iter().zip(reply.entries));
            }
            out.sort_by_key(|(i, _)| *i);
            let entries = out.into_iter().map(|(_, e)| e).collect();
            let _ = tx.send(Ok(Frame::reply_to(op, request_id, entries)));
        });
    }

    /// The placement range of the piece of `key` at element `offset`.
    fn range_of(&self, key: u64, offset: u64) -> usize {
        let keys = self.keys.lock();
        let part = keys
            .get(&key)
            .and_then(|m| m.parts.iter().find(|p| p.offset == offset).copied());
        part.map_or_else(|| self.partitioner.server_of(key), |p| p.server)
    }
}
