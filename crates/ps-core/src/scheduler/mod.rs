//! The control plane: one scheduler that introduces the nodes of a job to each other, keeps them
//! in step and watches that they stay alive; and the client every server and worker uses to talk
//! to it.
//!
//! A job forms when all W workers and S servers have registered: the scheduler answers every
//! registration at once with the node's rank and the server address table. From then on each
//! node heart-beats, may enter group barriers, and listens to a stream of events (a node was
//! lost, the job is over). When every worker has finished (or been lost) the scheduler tells the
//! remaining nodes to shut down and [`serve`] returns the job's [`Outcome`].
//!
//! A node counts as lost when it stops heart-beating for `PS_HEARTBEAT_TIMEOUT`, or at once when
//! its event stream disconnects before it finished (a dead process closes its sockets). Every
//! other node hears of it, and barriers that wait on it fail with [`PsError::NodeLost`] naming it,
//! instead of hanging.
//!
//! # Layout
//! - `mod.rs`: the public types ([`NodeInfo`], [`Membership`], [`Group`], [`JobHealth`], ...)
//!   and their wire forms.
//! - `membership`: the job's state as pure logic: registration and ranks, barriers, liveness,
//!   the end of the job. No network; unit-tested on its own.
//! - `service`: the tonic service over that state, the liveness checker and [`serve`].
//! - `closer`: connections the scheduler can cut when a peer will not let go at shutdown.
//! - `client`: [`ControlClient`], the node side: join, barrier, finish, heart-beats, events.
//!
//! [`PsError::NodeLost`]: crate::PsError::NodeLost

mod client;
mod closer;
mod membership;
mod service;

pub use client::ControlClient;
pub use service::serve;

pub use crate::placement::{NodeInfo, Topology, resolve};

use std::fmt;
use std::sync::Arc;

use crate::config::Role;
use crate::error::{PsError, Result};
use crate::protocol::pb;

/// What a node learns when the job forms.
#[derive(Debug, Clone)]
pub struct Membership {
    /// This node, with its rank.
    pub me: NodeInfo,
    /// W, the number of workers.
    pub num_workers: u32,
    /// S, the number of servers.
    pub num_servers: u32,
    /// Every server, ordered by rank: where the data plane connects to.
    pub servers: Vec<NodeInfo>,
    /// True for a restarted worker that took back the place of a lost one in a running job.
    pub rejoined: bool,
}

/// The nodes a barrier waits for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Group {
    /// Every worker.
    Workers,
    /// Every server.
    Servers,
    /// Every worker and every server.
    All,
}

impl Group {
    /// Whether a node with `role` belongs to the group.
    pub(crate) fn contains(self, role: Role) -> bool {
        match self {
            Group::Workers => role == Role::Worker,
            Group::Servers => role == Role::Server,
            Group::All => role != Role::Scheduler,
        }
    }

    fn index(self) -> usize {
        self as usize
    }
}

impl fmt::Display for Group {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Group::Workers => "workers",
            Group::Servers => "servers",
            Group::All => "all-nodes",
        })
    }
}

/// How the job looks from one node; published through a `tokio::sync::watch` channel
/// ([`ControlClient::health`]).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct JobHealth {
    /// One line naming the first node lost and why, e.g.
    /// `worker 1 on 127.0.0.1 (node 4) stopped heart-beating for 10s`. Names the scheduler when
    /// the scheduler itself stopped answering.
    pub lost: Option<String>,
    /// True once the scheduler itself is lost: no shutdown order will come, so servers exit.
    pub scheduler_lost: bool,
    /// Set when the scheduler ordered the job to end; servers exit on it.
    pub shutdown: Option<Shutdown>,
    /// Workers that have finished, in the order the scheduler reported them.
    pub finished: Vec<NodeInfo>,
    /// Which servers hold each placement range, once that changed (a job with backups: a
    /// server was failed over, or a replacement joined).
    pub topology: Option<Arc<Topology>>,
}

/// The scheduler's order to end the job.
#[derive(Debug, Clone, PartialEq)]
pub struct Shutdown {
    /// True when the job ended because a node was lost or the scheduler was stopped.
    pub failed: bool,
    /// One line saying why the job ended.
    pub reason: String,
}

/// How a job ended, as [`serve`] reports it.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// Every worker finished and no node was lost.
    Completed,
    /// A node was lost or the scheduler was stopped; the message says which and why.
    Failed(String),
}

impl From<Role> for pb::Role {
    fn from(role: Role) -> Self {
        match role {
            Role::Scheduler => pb::Role::Scheduler,
            Role::Server => pb::Role::Server,
            Role::Worker => pb::Role::Worker,
        }
    }
}

/// The role a peer sent, if it names one.
fn role_from_pb(raw: i32) -> Option<Role> {
    match pb::Role::try_from(raw).ok()? {
        pb::Role::Unspecified => None,
        pb::Role::Worker => Some(Role::Worker),
        pb::Role::Server => Some(Role::Server),
        pb::Role::Scheduler => Some(Role::Scheduler),
    }
}

impl From<Group> for pb::Group {
    fn from(group: Group) -> Self {
        match group {
            Group::Workers => pb::Group::Workers,
            Group::Servers => pb::Group::Servers,
            Group::All => pb::Group::All,
        }
    }
}

/// The group a peer sent, if it names one.
fn group_from_pb(raw: i32) -> Option<Group> {
    match pb::Group::try_from(raw).ok()? {
        pb::Group::Unspecified => None,
        pb::Group::Workers => Some(Group::Workers),
        pb::Group::Servers => Some(Group::Servers),
        pb::Group::All => Some(Group::All),
    }
}

impl From<&NodeInfo> for pb::NodeInfo {
    fn from(n: &NodeInfo) -> Self {
        pb::NodeInfo {
            node_id: n.node_id,
            role: pb::Role::from(n.role).into(),
            rank: n.rank,
            host: n.host.clone(),
            port: n.port.into(),
        }
    }
}

impl TryFrom<pb::NodeInfo> for NodeInfo {
    type Error = PsError;

    fn try_from(n: pb::NodeInfo) -> Result<Self> {
        let role = role_from_pb(n.role).ok_or_else(|| {
            PsError::Protocol(format!("node {} has no valid role ({})", n.node_id, n.role))
        })?;
        let port = u16::try_from(n.port).map_err(|_| {
            PsError::Protocol(format!("node {} has port {} > 65535", n.node_id, n.port))
        })?;
        Ok(NodeInfo {
            node_id: n.node_id,
            role,
            rank: n.rank,
            host: n.host,
            port,
        })
    }
}

impl From<&Topology> for pb::Topology {
    fn from(t: &Topology) -> Self {
        pb::Topology {
            epoch: t.epoch,
            chains: t
                .chains
                .iter()
                .map(|c| pb::Chain { servers: c.clone() })
                .collect(),
            servers: t.servers.iter().map(pb::NodeInfo::from).collect(),
        }
    }
}

impl TryFrom<pb::Topology> for Topology {
    type Error = PsError;

    fn try_from(t: pb::Topology) -> Result<Self> {
        let servers = t
            .servers
            .into_iter()
            .map(NodeInfo::try_from)
            .collect::<Result<Vec<_>>>()?;
        let n = servers.len() as u32;
        let ranked = servers
            .iter()
            .enumerate()
            .all(|(r, s)| s.role == Role::Server && s.rank == r as u32);
        let chains: Vec<Vec<u32>> = t.chains.into_iter().map(|c| c.servers).collect();
        if !ranked || chains.len() != servers.len() || chains.iter().flatten().any(|&s| s >= n) {
            return Err(PsError::Protocol(format!(
                "topology {} names servers outside its table of {n}",
                t.epoch
            )));
        }
        Ok(Topology {
            epoch: t.epoch,
            chains,
            servers,
        })
    }
}

impl From<&Shutdown> for pb::Shutdown {
    fn from(s: &Shutdown) -> Self {
        pb::Shutdown {
            failed: s.failed,
            reason: s.reason.clone(),
        }
    }
}

impl From<pb::Shutdown> for Shutdown {
    fn from(s: pb::Shutdown) -> Self {
        Shutdown {
            failed: s.failed,
            reason: s.reason,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(role: Role, rank: u32, host: &str, port: u16) -> NodeInfo {
        NodeInfo {
            node_id: 3,
            role,
            rank,
            host: host.into(),
            port,
        }
    }

    #[test]
    fn display_names_role_rank_and_address() {
        assert_eq!(
            node(Role::Worker, 1, "127.0.0.1", 0).to_string(),
            "worker 1 on 127.0.0.1"
        );
        assert_eq!(
            node(Role::Server, 0, "10.0.0.2", 41234).to_string(),
            "server 0 on 10.0.0.2:41234"
        );
        assert_eq!(
            node(Role::Scheduler, 0, "127.0.0.1", 9000).to_string(),
            "scheduler on 127.0.0.1:9000"
        );
        assert_eq!(
            node(Role::Server, 2, "::1", 80).to_string(),
            "server 2 on [::1]:80"
        );
    }

    #[test]
    fn node_info_round_trips_and_rejects_nonsense() {
        let n = node(Role::Server, 1, "h", 5);
        assert_eq!(NodeInfo::try_from(pb::NodeInfo::from(&n)).unwrap(), n);
        let mut bad = pb::NodeInfo::from(&n);
        bad.port = 70000;
        assert!(matches!(NodeInfo::try_from(bad), Err(PsError::Protocol(_))));
        let mut bad = pb::NodeInfo::from(&n);
        bad.role = 42;
        assert!(matches!(NodeInfo::try_from(bad), Err(PsError::Protocol(_))));
        assert_eq!(role_from_pb(0), None);
        assert_eq!(group_from_pb(3), Some(Group::All));
        assert_eq!(group_from_pb(-1), None);
    }
}
