//! Restarts: with a rejoin timeout set (`MXRS_MAX_RESTARTS`), a lost worker is only away. Its
//! place is kept, nobody fails because of it, and a process that registers as the same worker
//! (`DMLC_WORKER_ID`) takes the place back at once. A worker still away when the timeout passes
//! is lost for good, as it would have been at once without restarts.

use tokio::sync::oneshot;
use tokio::time::{Duration, Instant};

use super::{Job, Notice, Registration, State};
use crate::config::Role;
use crate::error::{PsError, Result};
use crate::scheduler::{Membership, NodeInfo};

impl Job {
    /// A registration after the job formed: a restarted worker taking back the place of a lost
    /// one, answered at once; anything else is refused.
    pub(super) fn readmit(
        &mut self,
        reg: Registration,
        now: Instant,
    ) -> Result<(u64, oneshot::Receiver<Result<Membership>>)> {
        let refuse = |msg: String| Err(PsError::Rejected(msg));
        if reg.role == Role::Server {
            return self.readmit_server(reg, now);
        }
        if reg.role != Role::Worker || self.rejoin.is_none() {
            let hint = match reg.role {
                Role::Worker => {
                    " (a restarted worker can take back a lost one's place only in a job \
                     started with restarts: mxrs-launch --max-restarts, MXRS_MAX_RESTARTS)"
                }
                _ => "",
            };
            return refuse(format!(
                "the job ({} workers, {} servers) has already formed; a {} cannot join it \
                 now{hint}",
                self.num_workers, self.num_servers, reg.role
            ));
        }
        let Some(rank) = reg.rank else {
            return refuse(
                "the job has already formed; a restarted worker must say which worker it \
                 replaces (DMLC_WORKER_ID)"
                    .into(),
            );
        };
        let num_workers = self.num_workers;
        let Some(m) = self
            .members
            .iter_mut()
            .find(|m| m.info.role == Role::Worker && m.info.rank == rank)
        else {
            return refuse(format!(
                "DMLC_WORKER_ID is {rank} but the job has {num_workers} workers (ids 0..{})",
                num_workers - 1
            ));
        };
        let node_id = m.info.node_id;
        match &m.state {
            State::Away { .. } => {}
            State::Alive => {
                return refuse(format!(
                    "worker {rank} is still in the job ({}, node {node_id}); only a lost \
                     worker's place can be taken",
                    m.info
                ));
            }
            State::Finished => {
                return refuse(format!("worker {rank} has already finished its work"));
            }
            State::Lost(message) | State::Gone(message) => {
                return refuse(format!("worker {rank} was lost for good: {message}"));
            }
        }
        m.info.host = reg.host;
        m.state = State::Alive;
        m.last_seen = now;
        m.subscription = None;
        let me = m.info.clone();
        tracing::warn!("{me} (node {node_id}) rejoined the job");
        let _ = self.notices.send(Notice::Rejoined(me.clone()));
        Ok(self.readmitted(me))
    }

    /// The answer to a registration that took back a place in the running job, as `me`.
    pub(super) fn readmitted(
        &mut self,
        me: NodeInfo,
    ) -> (u64, oneshot::Receiver<Result<Membership>>) {
        let membership = Membership {
            me,
            num_workers: self.num_workers,
            num_servers: self.num_servers,
            servers: self.members[..self.num_servers as usize]
                .iter()
                .map(|m| m.info.clone())
                .collect(),
            rejoined: true,
        };
        let ticket = self.next_ticket;
        self.next_ticket += 1;
        let (reply, rx) = oneshot::channel();
        let _ = reply.send(Ok(membership));
        (ticket, rx)
    }

    /// Tells everyone that `node` is away and how long its place is kept.
    pub(super) fn away(&mut self, node: NodeInfo, message: &str, timeout: Duration) {
        let message = format!("{message}; waiting up to {timeout:?} for it to be restarted");
        tracing::warn!("{message}");
        let _ = self.notices.send(Notice::Away { node, message });
    }

    /// Declares lost for good every worker away for longer than the rejoin timeout.
    pub(super) fn expire_away(&mut self, now: Instant) {
        let Some(timeout) = self.rejoin else {
            return;
        };
        if self.is_over() {
            return;
        }
        let expired: Vec<(u32, String)> = self
            .members
            .iter()
            .filter_map(|m| match &m.state {
                State::Away { since, message } if now.duration_since(*since) > timeout => Some((
                    m.info.node_id,
                    format!("{message}, and was not restarted within {timeout:?}"),
                )),
                _ => None,
            })
            .collect();
        for (node_id, message) in expired {
            self.mark_lost(node_id, message);
        }
    }
}
