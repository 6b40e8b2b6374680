//! Chain replication between servers (`MXRS_REPLICAS`): each placement range (the keys one
//! server holds when none is lost) has a chain of servers, its primary first, then its backups.
//! With one replica, range `r`'s chain is `[r, r + 1 mod S]`. The primary sends each changed
//! piece's whole state to the next server of the chain over a connection of its own (a
//! [`Link`]) and answers what waited on the change once that server has stored it.
//!
//! The chains change only by the scheduler's word (a [`crate::placement::Topology`]): a lost
//! server is dropped from every chain, so its ranges are served by their backups, which hold
//! every durable change, and a primary whose backup is gone answers at once; a replacement
//! server is added at the end of the chains short of a copy, and their primaries send it the
//! optimizer and every piece, then tell the scheduler once it has stored them all.
//!
//! A link that breaks while its backup is still in the chains is opened again, and every
//! piece the backup holds goes to it again (what was sent on the broken connection may be
//! lost). A backup that cannot be reached for longer than the scheduler takes to declare a node
//! lost makes its primary leave the job, like a crash: its keys then move to their backups,
//! which hold every answered change, and nothing waits forever.
//!
//! `link`: the connection to one backup, opened again when it breaks.
//! A link to a backup of the same host carries its large pieces' states through shared memory
//! (`mxrs_shm`): the socket carries only where each lies.

mod link;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::{Mutex, RwLock};
use rustc_hash::FxHashMap;
use tokio::sync::{mpsc, oneshot};

use crate::metrics::ServerMetrics;

use super::key::Replicate;
use crate::placement::{Partitioner, chains};
use crate::protocol::frame::{Entry, Mode};
use crate::protocol::transport::Credentials;
pub(crate) use link::FromBackup;
use link::{Link, ToBackup};

/// Entries of one Replicate frame at most (the wire field is 16 bits; pieces take two).
const MAX_ENTRIES: usize = u16::MAX as usize - 1;
/// Payload bytes after which queued pieces stop joining a Replicate frame.
const COALESCE_BYTES: usize = 4 << 20;
/// A piece's payload bytes from which it goes in a Replicate frame of its own, whose buffer
/// the backup keeps as the piece's value instead of copying it out (a header per piece costs
/// nothing beside these bytes).
const ALONE_BYTES: usize = 64 << 10;

/// The Hello `offset` of a server that connects to send replicas.
pub(crate) const HELLO_SERVER: u64 = 2;

/// What a server needs to know to replicate.
#[derive(Debug, Clone)]
pub struct ReplicaConfig {
    /// This server's rank.
    pub me: u32,
    /// Every server's data-plane address and name, by rank, as the job formed (or as this
    /// replacement server joined it).
    pub servers: Vec<(SocketAddr, String)>,
    /// Backups per range.
    pub replicas: u32,
    /// `MXNET_KVSTORE_BIGARRAY_BOUND`, to place pieces in ranges as workers do.
    pub bigarray_bound: u64,
    /// The job's secret and TLS.
    pub creds: Credentials,
    pub max_frame: u64,
    pub num_workers: u32,
    pub mode: Mode,
    /// How long a broken link to a backup is opened again before this server gives up and
    /// leaves the job (longer than the scheduler takes to declare a silent backup lost).
    pub give_up: Duration,
}

/// The chains and server addresses a server replicates by, and their epoch.
struct View {
    epoch: u64,
    chains: Vec<Vec<u32>>,
    servers: Vec<(SocketAddr, String)>,
}

/// What changed for this server with a new topology.
#[derive(Debug, Default)]
pub(crate) struct Change {
    /// Ranges this server is now the primary of whose next server changed (or that it took
    /// over): their pieces go to that server again.
    pub republish: Vec<u32>,
    /// The servers that became the backup of some of this server's ranges, with those ranges.
    pub new_backups: Vec<(u32, Vec<u32>)>,
}

/// A server's part in replication: the chains as it sees them and its links to backups.
pub(crate) struct Replication {
    cfg: ReplicaConfig,
    partitioner: Partitioner,
    view: RwLock<View>,
    links: Mutex<FxHashMap<u32, Link>>,
    /// Where the links report what their backups stored, and their breaks: at most one report
    /// per piece a link sent (see [`Link`]'s queue) and one per reconnection, read at once by
    /// the server's task, so as bounded as the links' queues.
    events: mpsc::UnboundedSender<FromBackup>,
    /// Where the links count their traffic.
    metrics: Arc<ServerMetrics>,
}

impl Replication {
    /// Replication as `cfg` says; the backups' answers come out of the returned receiver.
    pub(crate) fn new(
        cfg: ReplicaConfig,
        metrics: Arc<ServerMetrics>,
    ) -> (Replication, mpsc::UnboundedReceiver<FromBackup>) {
        let (events, rx) = mpsc::unbounded_channel();
        let n = cfg.servers.len() as u32;
        let r = Replication {
            partitioner: Partitioner::new(n as usize, cfg.bigarray_bound),
            view: RwLock::new(View {
                epoch: 0,
                chains: chains(n, cfg.replicas, &[]),
                servers: cfg.servers.clone(),
            }),
            links: Mutex::new(FxHashMap::default()),
            events,
            metrics,
            cfg,
        };
        (r, rx)
    }

    /// Takes the job's topology `epoch` (older ones are ignored): its `chains`, and where each
    /// server is now. Returns what changed for this server.
    pub(crate) fn set_topology(
        &self,
        epoch: u64,
        chains: Vec<Vec<u32>>,
        servers: Vec<(SocketAddr, String)>,
    ) -> Change {
        let n = self.cfg.servers.len();
        if chains.len() != n || servers.len() != n {
            tracing::error!("topology {epoch} is not one of {n} servers; ignored");
            return Change::default();
        }
        let mut view = self.view.write();
        if epoch <= view.epoch {
            return Change::default();
        }
        let ranges = 0..n as u32;
        let before: Vec<_> = ranges
            .clone()
            .map(|r| (primary(&view, r) == Some(self.cfg.me), self.next(&view, r)))
            .collect();
        let moved: Vec<u32> = (0..n as u32)
            .filter(|&s| view.servers[s as usize].0 != servers[s as usize].0)
            .collect();
        *view = View {
            epoch,
            chains,
            servers,
        };
        let mut change = Change::default();
        for r in ranges {
            let now = (primary(&view, r) == Some(self.cfg.me), self.next(&view, r));
            if !now.0 || (now == before[r as usize] && !now.1.is_some_and(|b| moved.contains(&b))) {
                continue;
            }
            change.republish.push(r);
            if let Some(b) = now.1 {
                match change.new_backups.iter_mut().find(|(s, _)| *s == b) {
                    Some((_, rs)) => rs.push(r),
                    None => change.new_backups.push((b, vec![r])),
                }
            }
        }
        let held: Vec<u32> = view.chains.iter().flatten().copied().collect();
        drop(view); // before the links' lock, which `link` takes first
        // Links to servers that moved or hold nothing now end (a replacement gets a new one).
        let mut links = self.links.lock();
        links.retain(|s, _| !moved.contains(s) && held.contains(s));
        change
    }

    /// Whether this server is the primary of `range` now.
    pub(crate) fn is_primary(&self, range: u32) -> bool {
        primary(&self.view.read(), range) == Some(self.cfg.me)
    }

    /// The server after this one in `range`'s chain, if any.
    fn next(&self, view: &View, range: u32) -> Option<u32> {
        let chain = view.chains.get(range as usize)?;
        let at = chain.iter().position(|&s| s == self.cfg.me)?;
        chain.get(at + 1).copied()
    }

    /// The server after this one in `range`'s chain now, if any.
    pub(crate) fn backup_of(&self, range: u32) -> Option<u32> {
        self.next(&self.view.read(), range)
    }

    fn link(&self, backup: u32) -> mpsc::UnboundedSender<ToBackup> {
        let mut links = self.links.lock();
        links
            .entry(backup)
            .or_insert_with(|| {
                let to = self.view.read().servers[backup as usize].clone();
                let counters = self.metrics.peer(&format!("server {backup}"));
                Link::open(&self.cfg, backup, to, self.events.clone(), counters)
            })
            .frames
            .clone()
    }

    /// Sends the optimizer (`spec`, encoded) to `backup`, ahead of the pieces sent after it.
    pub(crate) fn send_optimizer(&self, backup: u32, spec: Vec<u8>) {
        let _ = self.link(backup).send(ToBackup::Optimizer(spec));
    }

    /// Sends `backup` again the markers its broken connection left unanswered.
    pub(crate) fn remark(&self, backup: u32) {
        let _ = self.link(backup).send(ToBackup::Remark);
    }

    /// Resolves once `backup` has stored everything sent to it before this call (or never,
    /// when the backup goes away first).
    pub(crate) fn stored(&self, backup: u32) -> oneshot::Receiver<()> {
        let (tx, rx) = oneshot::channel();
        let _ = self.link(backup).send(ToBackup::Marker(tx));
        rx
    }
}

fn primary(view: &View, range: u32) -> Option<u32> {
    view.chains
        .get(range as usize)
        .and_then(|c| c.first())
        .copied()
}

impl Replicate for Replication {
    fn send(&self, range: u32, snapshot: &dyn Fn() -> [Entry; 2]) -> bool {
        let Some(backup) = self.backup_of(range) else {
            return false;
        };
        // A link whose task ended (its backup is gone) drops the pieces: the lost backup's
        // removal from the chains then makes the change durable.
        let _ = self.link(backup).send(ToBackup::Pieces(snapshot()));
        true
    }

    fn serves(&self, range: u32) -> bool {
        self.is_primary(range)
    }

    fn range_of(&self, e: &Entry) -> u32 {
        let numel: u64 = e.shape.iter().product();
        let parts = match e.shape.split_first() {
            // A row-sparse key is placed by rows, as its workers place it.
            Some((&rows, rest)) if e.rows => {
                let row_len = rest.iter().product();
                self.partitioner
                    .row_parts(e.key, rows, row_len, e.dtype.size())
            }
            _ => self.partitioner.parts(e.key, numel, e.dtype.size()),
        };
        parts
            .iter()
            .find(|p| p.offset <= e.offset && e.offset < p.offset + p.count.max(1))
            .map_or(0, |p| p.server as u32)
    }
}

#[cfg(test)]
mod tests {
    use super::chains;

    #[test]
    fn each_range_is_backed_up_on_the_servers_after_it() {
        assert_eq!(chains(3, 1, &[]), [vec![0, 1], vec![1, 2], vec![2, 0]]);
        assert_eq!(
            chains(3, 2, &[]),
            [vec![0, 1, 2], vec![1, 2, 0], vec![2, 0, 1]]
        );
        // More replicas than other servers count as S - 1; none leaves each range alone.
        assert_eq!(chains(2, 5, &[]), [vec![0, 1], vec![1, 0]]);
        assert_eq!(chains(2, 0, &[]), [vec![0], vec![1]]);
        assert_eq!(chains(1, 1, &[]), [vec![0]]);
    }

    #[test]
    fn a_lost_server_leaves_its_ranges_to_their_backups() {
        assert_eq!(chains(3, 1, &[1]), [vec![0], vec![2], vec![2, 0]]);
        // Losing both copies of range 1 leaves it with none (the job then fails).
        assert_eq!(chains(3, 1, &[1, 2]), [vec![0], vec![], vec![0]]);
        assert_eq!(chains(2, 1, &[0]), [vec![1], vec![1]]);
    }
}
