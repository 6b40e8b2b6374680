//! Chain replication between servers (`MXRS_REPLICAS`): each placement range (the keys one
//! server holds when none is lost) has a chain of servers, its primary first, then its backups.
//! With one replica, range `r`'s chain is `[r, r + 1 mod S]`. The primary sends each changed
//! piece's whole state to the next server of the chain over a connection of its own (a
//! [`Link`]) and answers what waited on the change once that server has stored it.
//!
//! When a server is lost, every node drops it from every chain (the same rule everywhere, so
//! nobody needs to be told the new chains): its ranges are then served by their backups, which
//! hold every durable change, and a primary whose backup is gone answers at once.

use std::net::SocketAddr;
use std::sync::Arc;

use parking_lot::{Mutex, RwLock};
use rustc_hash::FxHashMap;
use tokio::sync::mpsc;

use super::key::Replicate;
use crate::dtype::DType;
use crate::partition::Partitioner;
use crate::protocol::connection::{FrameReader, FrameWriter};
use crate::protocol::frame::{Entry, Frame, Mode, Op};
use crate::protocol::transport;

/// Entries of one Replicate frame at most (the wire field is 16 bits; pieces take two).
const MAX_ENTRIES: usize = u16::MAX as usize - 1;
/// Payload bytes after which queued pieces stop joining a Replicate frame.
const COALESCE_BYTES: usize = 4 << 20;

/// The Hello `offset` of a server that connects to send replicas.
pub(crate) const HELLO_SERVER: u64 = 2;

/// The chains of a job of `num_servers` servers with `replicas` backups per range, without the
/// servers in `lost`.
pub fn chains(num_servers: u32, replicas: u32, lost: &[u32]) -> Vec<Vec<u32>> {
    let copies = replicas.min(num_servers.saturating_sub(1)) + 1;
    (0..num_servers)
        .map(|r| {
            (0..copies)
                .map(|i| (r + i) % num_servers)
                .filter(|s| !lost.contains(s))
                .collect()
        })
        .collect()
}

/// What a server needs to know to replicate.
#[derive(Debug, Clone)]
pub struct ReplicaConfig {
    /// This server's rank.
    pub me: u32,
    /// Every server's data-plane address and name, by rank.
    pub servers: Vec<(SocketAddr, String)>,
    /// Backups per range.
    pub replicas: u32,
    /// `MXNET_KVSTORE_BIGARRAY_BOUND`, to place pieces in ranges as workers do.
    pub bigarray_bound: u64,
    pub secret: Option<Arc<[u8]>>,
    pub max_frame: u64,
    pub num_workers: u32,
    pub mode: Mode,
}

/// A server's part in replication: the chains as it sees them and its links to backups.
pub(crate) struct Replication {
    cfg: ReplicaConfig,
    partitioner: Partitioner,
    lost: RwLock<Vec<u32>>,
    chains: RwLock<Vec<Vec<u32>>>,
    links: Mutex<FxHashMap<u32, Link>>,
    /// Where the links report what their backups stored: (key, offset, round).
    acks: mpsc::UnboundedSender<(u64, u64, u64)>,
}

impl Replication {
    /// Replication as `cfg` says; the backups' answers come out of the returned receiver.
    pub(crate) fn new(
        cfg: ReplicaConfig,
    ) -> (Replication, mpsc::UnboundedReceiver<(u64, u64, u64)>) {
        let (acks, rx) = mpsc::unbounded_channel();
        let n = cfg.servers.len() as u32;
        let r = Replication {
            partitioner: Partitioner::new(n as usize, cfg.bigarray_bound),
            chains: RwLock::new(chains(n, cfg.replicas, &[])),
            lost: RwLock::new(Vec::new()),
            links: Mutex::new(FxHashMap::default()),
            acks,
            cfg,
        };
        (r, rx)
    }

    /// Drops the servers `lost` from every chain; returns the ranges this server is now the
    /// primary of whose next server changed (or that it took over).
    pub(crate) fn servers_lost(&self, lost: &[u32]) -> Vec<u32> {
        let mut known = self.lost.write();
        let fresh: Vec<u32> = lost
            .iter()
            .copied()
            .filter(|s| !known.contains(s))
            .collect();
        if fresh.is_empty() {
            return Vec::new();
        }
        known.extend(fresh.iter().copied());
        let n = self.cfg.servers.len() as u32;
        let ranges = 0..n;
        let before: Vec<_> = ranges
            .clone()
            .map(|r| (self.is_primary(r), self.backup_of(r)))
            .collect();
        *self.chains.write() = chains(n, self.cfg.replicas, &known);
        let mut links = self.links.lock();
        for s in fresh {
            links.remove(&s);
        }
        drop(links);
        ranges
            .filter(|&r| {
                let now = (self.is_primary(r), self.backup_of(r));
                now.0 && now != before[r as usize]
            })
            .collect()
    }

    /// Whether this server is the primary of `range` now.
    pub(crate) fn is_primary(&self, range: u32) -> bool {
        self.chains
            .read()
            .get(range as usize)
            .and_then(|c| c.first())
            == Some(&self.cfg.me)
    }

    /// The server after this one in `range`'s chain, if any.
    fn backup_of(&self, range: u32) -> Option<u32> {
        let chains = self.chains.read();
        let chain = chains.get(range as usize)?;
        let at = chain.iter().position(|&s| s == self.cfg.me)?;
        chain.get(at + 1).copied()
    }

    fn link(&self, backup: u32) -> mpsc::UnboundedSender<Frame> {
        let mut links = self.links.lock();
        links
            .entry(backup)
            .or_insert_with(|| Link::open(&self.cfg, backup, self.acks.clone()))
            .frames
            .clone()
    }
}

impl Replicate for Replication {
    fn send(&self, range: u32, snapshot: &dyn Fn() -> [Entry; 2]) -> bool {
        let Some(backup) = self.backup_of(range) else {
            return false;
        };
        let frame = Frame::request(Op::Replicate, 0, snapshot().into());
        // A link whose task ended (its backup is gone) drops the frame: the lost backup's
        // removal from the chains then makes the change durable.
        let _ = self.link(backup).send(frame);
        true
    }

    fn serves(&self, range: u32) -> bool {
        self.is_primary(range)
    }

    fn range_of(&self, e: &Entry) -> u32 {
        let numel: u64 = e.shape.iter().product();
        let parts = self.partitioner.parts(e.key, numel, e.dtype.size());
        parts
            .iter()
            .find(|p| p.offset <= e.offset && e.offset < p.offset + p.count.max(1))
            .map_or(0, |p| p.server as u32)
    }
}

/// A connection to a backup that carries Replicate frames, and the task that runs it.
struct Link {
    frames: mpsc::UnboundedSender<Frame>,
}

impl Link {
    fn open(
        cfg: &ReplicaConfig,
        backup: u32,
        acks: mpsc::UnboundedSender<(u64, u64, u64)>,
    ) -> Link {
        let (frames, rx) = mpsc::unbounded_channel();
        let (addr, name) = cfg.servers[backup as usize].clone();
        let hello = Entry {
            key: u64::from(cfg.me),
            round: cfg.mode.code(),
            count: u64::from(cfg.num_workers),
            offset: HELLO_SERVER,
            ..Entry::new(0, DType::F32, &[], 0, 0)
        };
        let (secret, max_frame) = (cfg.secret.clone(), cfg.max_frame);
        tokio::spawn(async move {
            if let Err(e) = run_link(addr, secret, max_frame, hello, rx, acks).await {
                tracing::warn!("replication to {name} stopped: {e}");
            }
        });
        Link { frames }
    }
}

async fn run_link(
    addr: SocketAddr,
    secret: Option<Arc<[u8]>>,
    max_frame: u64,
    hello: Entry,
    mut frames: mpsc::UnboundedReceiver<Frame>,
    acks: mpsc::UnboundedSender<(u64, u64, u64)>,
) -> crate::error::Result<()> {
    let stream = transport::connect(addr, secret.as_deref()).await?;
    let (read_half, write_half) = stream.into_split();
    let mut writer = FrameWriter::new(write_half);
    let mut reader = FrameReader::new(read_half, max_frame);
    writer
        .write_frame(&Frame::request(Op::Hello, 0, vec![hello]))
        .await?;
    writer.flush().await?;
    let reading = tokio::spawn(async move {
        while let Ok(Some(frame)) = reader.read_frame().await {
            // Each piece is answered twice (its two entries); one ack is enough.
            for e in frame.entries.into_iter().step_by(2) {
                if frame.op == Op::Replicate && e.status == 0 {
                    let _ = acks.send((e.key, e.offset, e.round));
                } else if e.status != 0 {
                    let key = e.key;
                    match e.into_result() {
                        Err(crate::error::PsError::Shutdown) => {}
                        Err(why) => tracing::error!("a backup refused key {key}: {why}"),
                        Ok(_) => {}
                    }
                }
            }
        }
    });
    let mut next_id = 1;
    while let Some(first) = frames.recv().await {
        // What queued meanwhile goes as one frame: many small pieces cost one header.
        let mut entries = first.entries;
        let mut bytes: usize = entries.iter().map(|e| e.payload.len()).sum();
        while entries.len() + 2 <= MAX_ENTRIES && bytes < COALESCE_BYTES {
            let Ok(more) = frames.try_recv() else { break };
            bytes += more.entries.iter().map(|e| e.payload.len()).sum::<usize>();
            entries.extend(more.entries);
        }
        let frame = Frame::request(Op::Replicate, next_id, entries);
        next_id += 1;
        writer.write_frame(&frame).await?;
        writer.flush().await?;
    }
    reading.abort();
    Ok(())
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
