//! The job's nodes and which servers hold each placement range: the scheduler decides a
//! [`Topology`], the servers replicate by it and the workers fail over by it.

use std::fmt;
use std::net::{SocketAddr, ToSocketAddrs};

use crate::config::Role;
use crate::error::{PsError, Result};
#[cfg(doc)]
use crate::placement::chains;

/// One node of the job as the scheduler sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeInfo {
    /// The scheduler's id for the node, unique within the job (the scheduler itself is 0).
    pub node_id: u32,
    /// What the node does.
    pub role: Role,
    /// Rank within its role: 0..W-1 for workers, 0..S-1 for servers.
    pub rank: u32,
    /// Address other nodes reach it at.
    pub host: String,
    /// Data-plane port of a server, gRPC port of the scheduler, 0 for workers.
    pub port: u16,
}

impl fmt::Display for NodeInfo {
    /// `worker 1 on 127.0.0.1`, `server 0 on 10.0.0.2:41234`, `scheduler on 127.0.0.1:9000`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.role {
            Role::Scheduler => write!(f, "scheduler on ")?,
            role => write!(f, "{role} {} on ", self.rank)?,
        }
        let bracket = self.host.contains(':') && self.port != 0;
        match (bracket, self.port) {
            (_, 0) => write!(f, "{}", self.host),
            (true, port) => write!(f, "[{}]:{port}", self.host),
            (false, port) => write!(f, "{}:{port}", self.host),
        }
    }
}

/// Which servers hold each placement range of a job with backups (`MXRS_REPLICAS`), as the
/// scheduler decides it: the rule [`chains`] when the job forms, then a lost
/// server dropped from its chains, a replacement added at the end of those short of a copy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Topology {
    /// Grows with every change; nodes apply only a newer one.
    pub epoch: u64,
    /// Per placement range, the servers holding it, primary first.
    pub chains: Vec<Vec<u32>>,
    /// Every server by rank, on its current address (a replacement on its own).
    pub servers: Vec<NodeInfo>,
}

impl Topology {
    /// The server each placement range goes to: the first of its chain (`None` for a range
    /// left without any).
    pub fn primaries(&self) -> Vec<Option<u32>> {
        self.chains.iter().map(|c| c.first().copied()).collect()
    }

    /// Every server's data-plane address and name, by rank.
    pub fn addresses(&self) -> Result<Vec<(SocketAddr, String)>> {
        resolve(&self.servers)
    }

    /// Servers in no chain: lost, their keys elsewhere.
    pub fn lost(&self) -> Vec<u32> {
        (0..self.servers.len() as u32)
            .filter(|s| !self.chains.iter().any(|c| c.contains(s)))
            .collect()
    }
}

/// The data-plane address and name ("server 0 on HOST:PORT") of each of `servers`.
pub fn resolve(servers: &[NodeInfo]) -> Result<Vec<(SocketAddr, String)>> {
    servers
        .iter()
        .map(|s| {
            let addr = (s.host.as_str(), s.port)
                .to_socket_addrs()
                .ok()
                .and_then(|mut a| a.next())
                .ok_or_else(|| PsError::Rpc(format!("cannot resolve the address of {s}")))?;
            Ok((addr, s.to_string()))
        })
        .collect()
}
