//! Replacement servers in a job with backups: a server that registers after the job formed
//! takes the place of a lost server (the rank it asks for, or the first one lost) on its own
//! address. It is added at the end of every chain short of a copy, and everyone gets the new
//! topology; the primaries of those ranges copy their keys to it and say so ([`Job::synced`]).
//! Until every such range is copied it is not counted as a copy of them, so losing the last
//! full copy of a range still fails the job.

use tokio::sync::oneshot;
use tokio::time::Instant;

use super::{Job, Notice, Registration, State};
use crate::config::Role;
use crate::error::{PsError, Result};
use crate::scheduler::Membership;

impl Job {
    /// A server registering after the job formed: the replacement of a lost one, answered at
    /// once; refused without backups, or when no server's place is free.
    pub(super) fn readmit_server(
        &mut self,
        reg: Registration,
        now: Instant,
    ) -> Result<(u64, oneshot::Receiver<Result<Membership>>)> {
        let refuse = |msg: String| Err(PsError::Rejected(msg));
        if self.topology.is_none() {
            return refuse(format!(
                "the job ({} workers, {} servers) has already formed; a server can join it now \
                 only to replace a lost one, in a job whose keys have backups (MXRS_REPLICAS, \
                 mxrs-launch --replicas, with 2 servers or more)",
                self.num_workers, self.num_servers
            ));
        }
        let gone = |m: &super::Member| matches!(m.state, State::Gone(_));
        let servers = &self.members[..self.num_servers as usize];
        let rank = match reg.rank {
            Some(rank) if rank >= self.num_servers => {
                return refuse(format!(
                    "DMLC_SERVER_ID is {rank} but the job has {} servers (ids 0..{})",
                    self.num_servers,
                    self.num_servers - 1
                ));
            }
            Some(rank) => rank,
            None => match servers.iter().find(|m| gone(m)) {
                Some(m) => m.info.rank,
                None => {
                    return refuse(
                        "the job has already formed and none of its servers is lost; a \
                         replacement server takes the place of a lost one"
                            .into(),
                    );
                }
            },
        };
        let node_id = rank + 1;
        let state = self.member(node_id)?.state.clone();
        match state {
            State::Gone(_) => {}
            // The launcher restarts a server as soon as its process ends, which may be before
            // its event stream was seen closing here: the new process's word is enough.
            State::Alive => {
                let why = format!("was replaced by a new server registering as server {rank}");
                self.declare_lost(node_id, &why, now);
                if let State::Lost(message) = &self.member(node_id)?.state {
                    return Err(PsError::NodeLost(message.clone()));
                }
            }
            State::Lost(message) => {
                return refuse(format!("server {rank} was lost for good: {message}"));
            }
            State::Away { .. } | State::Finished => {
                return refuse(format!("server {rank} cannot be replaced now"));
            }
        }
        let m = &mut self.members[node_id as usize - 1];
        debug_assert_eq!(m.info.role, Role::Server);
        m.info.host = reg.host;
        m.info.port = reg.port as u16;
        m.state = State::Alive;
        m.last_seen = now;
        m.subscription = None;
        let me = m.info.clone();
        self.gone.retain(|(n, _)| n.rank != rank);
        let copies = (self.replicas.min(self.num_servers - 1) + 1) as usize;
        let mut chains = self
            .topology
            .as_ref()
            .map(|t| t.chains.clone())
            .unwrap_or_default();
        let mut ranges = Vec::new();
        for (range, chain) in chains.iter_mut().enumerate() {
            if chain.len() < copies && !chain.contains(&rank) {
                chain.push(rank);
                ranges.push(range as u32);
            }
        }
        tracing::warn!(
            "{me} (node {node_id}) replaces the lost server {rank}; copying ranges {ranges:?} to it"
        );
        if !ranges.is_empty() {
            self.syncing.push((rank, ranges));
        }
        let _ = self.notices.send(Notice::Rejoined(me.clone()));
        self.publish_topology(chains);
        Ok(self.readmitted(me))
    }

    /// Server `node_id`, the primary of `ranges` under topology `epoch`, has copied their keys
    /// to server `backup`; once every range being copied to `backup` is, it counts as a copy.
    /// A report about an older topology is ignored (the newer one brings its own).
    pub fn synced(
        &mut self,
        node_id: u32,
        epoch: u64,
        backup: u32,
        ranges: &[u32],
        now: Instant,
    ) -> Result<()> {
        let me = self.seen(node_id, now)?.info.clone();
        if me.role != Role::Server {
            return Err(PsError::Rejected(format!(
                "only servers copy keys; node {node_id} is {me}"
            )));
        }
        let Some(t) = &self.topology else {
            return Err(PsError::Rejected("this job keeps no backups".into()));
        };
        if epoch != t.epoch {
            return Ok(());
        }
        let primary_of = |r: &u32| t.chains.get(*r as usize).and_then(|c| c.first());
        let Some(at) = self.syncing.iter().position(|(s, _)| *s == backup) else {
            return Ok(());
        };
        let pending = &mut self.syncing[at].1;
        pending.retain(|r| !(ranges.contains(r) && primary_of(r) == Some(&me.rank)));
        if pending.is_empty() {
            self.syncing.remove(at);
            let node = &self.members[backup as usize].info;
            tracing::warn!(
                "{node} (node {}) holds a full copy of its keys again",
                node.node_id
            );
        }
        Ok(())
    }
}
