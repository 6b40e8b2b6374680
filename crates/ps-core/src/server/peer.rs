//! Who is at the other end of a server's connection: known by its Hello, it decides which
//! handlers its requests reach. Below the connection, the offload and the handlers, which all
//! read it.

/// Who is at the other end of a connection.
#[derive(Clone)]
pub(crate) struct Peer {
    /// The server's id for the connection.
    pub conn: u64,
    pub addr: String,
    /// The worker rank its Hello claimed, once accepted.
    pub rank: Option<u32>,
    /// The rank of the server at the other end, for a connection that carries replicas.
    pub server: Option<u32>,
    /// That server's shared memory, where it sent one (a primary of this host).
    pub arena: Option<std::sync::Arc<mxrs_shm::ArenaView>>,
}

impl Peer {
    /// What the metrics call the peer, once known: `worker 0`, `server 1`.
    pub(super) fn name(&self) -> Option<String> {
        match (self.rank, self.server) {
            (Some(rank), _) => Some(format!("worker {rank}")),
            (None, Some(server)) => Some(format!("server {server}")),
            (None, None) => None,
        }
    }
}
