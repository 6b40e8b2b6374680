//! Lost servers in a job with backups (`MXRS_REPLICAS`): a server whose every placement range
//! still has a live server in its chain (`server::chains`) is failed over instead of failing
//! the job. Everyone hears of it; its ranges are served by their backups; barriers no longer
//! wait for it. A server whose loss leaves a range without any copy is lost as before.

use super::{Group, Job, Notice, State};
use crate::config::Role;

impl Job {
    /// Keeps `replicas` backups of each server's keys, so that a lost server is failed over.
    pub fn with_replicas(mut self, replicas: u32) -> Job {
        self.replicas = replicas;
        self
    }

    /// Fails over server `node_id` if its keys live on elsewhere; true when it did.
    pub(super) fn fail_over(&mut self, node_id: u32, message: &str) -> bool {
        if self.replicas == 0 || self.num_servers < 2 {
            return false;
        }
        let Ok(m) = self.member(node_id) else {
            return false;
        };
        if m.info.role != Role::Server {
            return false;
        }
        let node = m.info.clone();
        let mut lost: Vec<u32> = self.gone.iter().map(|(n, _)| n.rank).collect();
        lost.push(node.rank);
        let chains = crate::server::chains(self.num_servers, self.replicas, &lost);
        if chains.iter().any(Vec::is_empty) {
            return false;
        }
        let message = format!("{message}; its keys are served by their backups from now on");
        tracing::warn!("{message}");
        self.members[node_id as usize - 1].state = State::Gone(message.clone());
        self.gone.push((node.clone(), message.clone()));
        let _ = self.notices.send(Notice::ServerFailover { node, message });
        self.release_complete_barriers();
        true
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
