//! Lost servers in a job with backups (`MXRS_REPLICAS`): the scheduler keeps the job's
//! [`Topology`], which servers hold each placement range, primary first. A lost server whose
//! every range still has a full copy elsewhere is failed over instead of failing the job: it is
//! dropped from every chain, everyone hears of it and gets the new topology, and barriers no
//! longer wait for it. A server whose loss leaves a range without a copy is lost as before (a
//! replacement still copying a range does not count as a copy of it).

use super::{Group, Job, Notice, State};
use crate::config::Role;
use crate::placement::Topology;

impl Job {
    /// Keeps `replicas` backups of each server's keys, so that a lost server is failed over.
    pub fn with_replicas(mut self, replicas: u32) -> Job {
        self.replicas = replicas;
        self
    }

    /// Fails over server `node_id` if its keys live on elsewhere; true when it did.
    pub(super) fn fail_over(&mut self, node_id: u32, message: &str) -> bool {
        let Some(topology) = &self.topology else {
            return false;
        };
        let Ok(m) = self.member(node_id) else {
            return false;
        };
        if m.info.role != Role::Server {
            return false;
        }
        let node = m.info.clone();
        let rank = node.rank;
        let mut chains = topology.chains.clone();
        chains.iter_mut().for_each(|c| c.retain(|&s| s != rank));
        let copy = |range: usize, s: u32| {
            !self
                .syncing
                .iter()
                .any(|(r, pending)| *r == s && pending.contains(&(range as u32)))
        };
        let covered = chains
            .iter()
            .enumerate()
            .all(|(range, c)| c.iter().any(|&s| copy(range, s)));
        if !covered {
            return false;
        }
        self.syncing.retain(|(r, _)| *r != rank);
        let message = format!("{message}; its keys are served by their backups from now on");
        tracing::warn!("{message}");
        self.members[node_id as usize - 1].state = State::Gone(message.clone());
        self.gone.push((node.clone(), message.clone()));
        let _ = self.notices.send(Notice::ServerFailover { node, message });
        self.publish_topology(chains);
        self.release_complete_barriers();
        true
    }

    /// Makes `chains` the job's topology, with a new epoch and the servers' current addresses,
    /// and tells everyone.
    pub(super) fn publish_topology(&mut self, chains: Vec<Vec<u32>>) {
        let Some(old) = &self.topology else {
            return;
        };
        let t = Topology {
            epoch: old.epoch + 1,
            chains,
            servers: self.members[..self.num_servers as usize]
                .iter()
                .map(|m| m.info.clone())
                .collect(),
        };
        tracing::info!("topology {}: {:?}", t.epoch, t.chains);
        self.topology = Some(t.clone());
        let _ = self.notices.send(Notice::Topology(t));
    }

    /// How many members a barrier of `group` waits for (servers gone do not count).
    pub(super) fn barrier_size(&self, group: Group) -> usize {
        self.members
            .iter()
            .filter(|m| group.contains(m.info.role) && !matches!(m.state, State::Gone(_)))
            .count()
    }

    /// Releases the barriers every member still counted has entered.
    fn release_complete_barriers(&mut self) {
        for group in [Group::Workers, Group::Servers, Group::All] {
            let size = self.barrier_size(group);
            let waiting = &mut self.barriers[group.index()];
            waiting.retain(|(_, tx)| !tx.is_closed());
            if !waiting.is_empty() && waiting.len() >= size {
                for (_, tx) in waiting.drain(..) {
                    let _ = tx.send(Ok(()));
                }
            }
        }
    }
}
