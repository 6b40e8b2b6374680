//! A lost server in a job with backups: its placement ranges move to the next server of their
//! chains (the rule every node applies, `server::chains`), and the requests it had not answered
//! go there again, marked as sent again, so that what it had already applied is answered
//! instead of applied twice. A request whose entries now belong to several servers is split,
//! and its reply put back together in order.

use std::sync::Arc;

use tokio::sync::oneshot;

use super::Worker;
use crate::error::{PsError, Result};
use crate::protocol::frame::{Frame, Op};

impl Worker {
    /// The server each placement range goes to now.
    pub(super) fn route(&self) -> Arc<[usize]> {
        self.route.read().clone()
    }

    /// Servers `lost` (ranks) are gone from the job: their keys are served by their backups
    /// from now on, and their unanswered requests are sent there. Without backups this does
    /// nothing (the job fails on a lost server).
    pub fn servers_lost(&self, lost: &[u32]) {
        if self.replicas == 0 || self.conns.len() < 2 {
            return;
        }
        let fresh: Vec<u32> = {
            let mut known = self.lost.lock();
            let fresh: Vec<u32> = lost
                .iter()
                .copied()
                .filter(|s| !known.contains(s))
                .collect();
            known.extend_from_slice(&fresh);
            fresh
        };
        if fresh.is_empty() {
            return;
        }
        let known = self.lost.lock().clone();
        let chains = crate::server::chains(self.conns.len() as u32, self.replicas, &known);
        let current = self.route();
        let route: Arc<[usize]> = chains
            .iter()
            .zip(current.iter())
            .map(|(chain, &now)| chain.first().map_or(now, |&s| s as usize))
            .collect();
        *self.route.write() = route;
        for s in fresh {
            if let Some(conn) = self.conns.get(s as usize) {
                tracing::warn!("{} lost; its keys went to their backups", conn.name());
            }
        }
        self.sweep_lost();
    }

    /// Sends the requests waiting on lost servers' connections to the servers that took their
    /// keys over. Called after the route changed, and after every request sent, so that one
    /// routed by the old route just before it changed is not left behind.
    pub(super) fn sweep_lost(&self) {
        let lost = {
            let lost = self.lost.lock();
            if lost.is_empty() {
                return; // every request goes this way: no copy while no server is lost
            }
            lost.clone()
        };
        for s in lost {
            let Some(conn) = self.conns.get(s as usize) else {
                continue;
            };
            for (tx, frame) in conn.take_orphans() {
                self.resend(tx, frame);
            }
        }
    }

    /// Sends `frame` again to the servers its entries belong to now.
    fn resend(&self, tx: oneshot::Sender<Result<Frame>>, frame: Frame) {
        if !matches!(frame.op, Op::Init | Op::Push | Op::Pull | Op::PushPull) {
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
            return self.conns[server].send_frame(again(entries), 0, tx);
        }
        let mut parts = Vec::with_capacity(groups.len());
        for (server, at, entries) in groups {
            let (part_tx, part_rx) = oneshot::channel();
            self.conns[server].send_frame(again(entries), 0, part_tx);
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
