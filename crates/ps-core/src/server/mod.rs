//! The server: holds a share of the keys, sums the workers' pushes and applies the optimizer.
//!
//! # Memory
//! What a peer can make a server hold is bounded: handshakes in progress
//! ([`transport::authenticated`]), bytes of request frames being read across all connections
//! ([`Limits::max_inflight`]), and per connection the entries read but not yet answered and the
//! reply bytes not yet written (`reply`): a connection over a bound is simply not read from until
//! it is under again. A connection's parked pulls and inits are forgotten when it closes.
//!
//! # Layout
//! - `store`: sharded map of key pieces; rank-0-wins initialisation.
//! - `key`: one piece's value, sync round, merge buffer (sparse for a round of row pushes),
//!   waiting pulls and optimizer state.
//! - `handlers`: one function per request op, dispatched by `Op`; compressed (2-bit) push
//!   entries are checked there and decoded as they are summed (`crate::codec`).
//! - `offload`: large pushes summed and applied on tokio's blocking pool, the rest inline.
//! - `connection`: a worker's connection: the reader that dispatches and the writer that answers.
//! - `reply`: reply frames assembled from entries that complete at different times, and the
//!   per-connection flow accounting.
//! - `replica`: chain replication to backup servers, and the chains without lost servers.

mod connection;
mod handlers;
mod key;
mod offload;
mod peer;
mod replica;
mod reply;
mod store;

use std::future::Future;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, OnceLock};

use parking_lot::{Mutex, RwLock};
use rustc_hash::FxHashMap;
use tokio::sync::watch;
use tokio::task::JoinSet;
use tokio_stream::StreamExt;

use crate::config::DEFAULT_MAX_INFLIGHT_BYTES;
use crate::error::Result;
use crate::metrics::ServerMetrics;
use crate::placement::Topology;
pub use crate::placement::chains;
use crate::protocol::connection::Budget;
use crate::protocol::frame::Mode;
use crate::protocol::stats::{Counters, PushStats};
use crate::protocol::transport::{self, Credentials, Listeners};
use crate::task::AbortOnDrop;
use crate::updater::{OptimizerSpec, Updater};
pub use replica::ReplicaConfig;

pub use reply::MAX_OUTSTANDING_ENTRIES;
use store::Store;

/// Bounds on what a server reads.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Largest request frame accepted (`MXRS_MAX_FRAME_BYTES`); also the largest reply.
    pub max_frame: u64,
    /// Most bytes of request frames read at once over all connections
    /// (`MXRS_MAX_INFLIGHT_BYTES`); a frame that would go over waits until others are done.
    pub max_inflight: u64,
}

/// State shared by all connections of one server.
pub(crate) struct Shared {
    num_workers: u32,
    limits: Limits,
    budget: Arc<Budget>,
    mode: Mutex<Option<Mode>>,
    store: Store,
    updater: RwLock<Option<Arc<Installed>>>,
    /// By rank, the name of each worker the scheduler reported finished.
    finished: RwLock<Arc<[Option<Arc<str>>]>>,
    /// Workers connected now: rank -> (connection id, peer address).
    connected: Mutex<FxHashMap<u32, (u64, String)>>,
    next_conn: AtomicU64,
    /// What large pushes have cost to apply, which decides where the next ones run.
    large_cost: offload::Cost,
    /// Totals of the push frames received (what a `Stats` request reads).
    push_stats: Counters,
    /// What a scrape of the metrics endpoint reads.
    metrics: Arc<ServerMetrics>,
    /// Chain replication, in a job with backups.
    replication: OnceLock<Arc<replica::Replication>>,
    /// What the links to backups report, until `serve` takes it.
    acks: Mutex<Option<tokio::sync::mpsc::UnboundedReceiver<replica::FromBackup>>>,
    #[cfg(test)]
    hooks: offload::Hooks,
}

/// The optimizer in use and its generation.
#[derive(Clone)]
struct Installed {
    spec: OptimizerSpec,
    updater: Arc<Updater>,
    epoch: u64,
}

/// A primary's copy of some of its ranges to a new backup (see [`Server::set_topology`]).
#[derive(Debug)]
pub struct Copying {
    /// The topology the copy belongs to.
    pub epoch: u64,
    /// The server copied to.
    pub backup: u32,
    /// The placement ranges copied.
    pub ranges: Vec<u32>,
    /// Resolves once the backup has stored every piece of them (never if it goes away first).
    pub stored: tokio::sync::oneshot::Receiver<()>,
}

/// Why a server leaves the job, as its connections tell their workers.
#[derive(Debug, Clone, PartialEq)]
pub struct Farewell {
    /// True when the job ended in failure (a node was lost, the scheduler is gone).
    pub failed: bool,
    /// One line saying why.
    pub reason: String,
}

/// Requests a server holds unanswered (see [`Server::waiting`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Waiting {
    /// Init entries of non-zero ranks for keys rank 0 has not created yet.
    pub inits: usize,
    /// Pulls waiting for a sync round.
    pub pulls: usize,
}

/// A parameter server's data plane.
pub struct Server {
    shared: Arc<Shared>,
}

impl std::fmt::Debug for Server {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Server")
            .field("num_workers", &self.shared.num_workers)
            .field("limits", &self.shared.limits)
            .finish_non_exhaustive()
    }
}

impl Server {
    /// A server for a job of `num_workers` workers that refuses frames over `max_frame` bytes
    /// (and reads at most the default in-flight budget, or `max_frame` if that is more).
    pub fn new(num_workers: u32, max_frame: u64) -> Server {
        Server::with_limits(
            num_workers,
            Limits {
                max_frame,
                max_inflight: max_frame.max(DEFAULT_MAX_INFLIGHT_BYTES),
            },
        )
    }

    /// A server for a job of `num_workers` workers with the given bounds.
    pub fn with_limits(num_workers: u32, limits: Limits) -> Server {
        Server {
            shared: Arc::new(Shared {
                num_workers,
                limits,
                budget: Arc::new(Budget::new(limits.max_inflight)),
                mode: Mutex::new(None),
                store: Store::new(),
                updater: RwLock::new(None),
                finished: RwLock::new(vec![None; num_workers as usize].into()),
                connected: Mutex::new(FxHashMap::default()),
                next_conn: AtomicU64::new(1),
                large_cost: offload::Cost::new(offload::OFFLOAD_AFTER),
                push_stats: Counters::default(),
                metrics: Arc::new(ServerMetrics::new()),
                replication: OnceLock::new(),
                acks: Mutex::new(None),
                #[cfg(test)]
                hooks: Default::default(),
            }),
        }
    }

    /// Replicates this server's keys to its backups and keeps those of other servers it backs
    /// up, as `cfg` says; called before [`Server::serve`], once.
    pub fn replicate(&self, cfg: ReplicaConfig) {
        let (replication, acks) = replica::Replication::new(cfg, self.shared.metrics.clone());
        if self.shared.replication.set(Arc::new(replication)).is_ok() {
            *self.shared.acks.lock() = Some(acks);
        }
    }

    /// Takes the job's topology `t` (a server was failed over, or a replacement joined): the
    /// ranges this server now serves whose backup changed go to that backup whole, the optimizer
    /// first, and what waited on a lost backup is answered. Returns the copies to new backups
    /// under way, to report to the scheduler once stored.
    pub fn set_topology(&self, t: &Topology) -> Result<Vec<Copying>> {
        let Some(r) = self.shared.replication.get() else {
            return Ok(Vec::new());
        };
        let change = r.set_topology(t.epoch, t.chains.clone(), t.addresses()?);
        if change.republish.is_empty() {
            return Ok(Vec::new());
        }
        tracing::warn!(
            "topology {}: ranges {:?} go to their new backups",
            t.epoch,
            change.republish
        );
        let installed = handlers::current(&self.shared);
        if let Some(installed) = &installed {
            for (backup, _) in &change.new_backups {
                r.send_optimizer(*backup, installed.spec.encode());
            }
        }
        let finished = self.shared.finished.read().clone();
        let ctx = handlers::bare_ctx(&self.shared, r.as_ref(), &finished, installed.as_deref());
        for (_, k) in self.shared.store.pieces() {
            let mut k = k.lock();
            if change.republish.contains(&k.range()) {
                // Its state goes to its new backup, or is durable as it is without one.
                k.republish(&ctx);
            }
        }
        Ok(change
            .new_backups
            .into_iter()
            .map(|(backup, ranges)| Copying {
                epoch: t.epoch,
                backup,
                ranges,
                stored: r.stored(backup),
            })
            .collect())
    }

    /// Records that worker `rank` (called `name` in messages) has finished: it will push no
    /// more, so every pull waiting for a round that needs its push fails, now and later, with
    /// an error naming it.
    pub fn worker_finished(&self, rank: u32, name: &str) {
        let finished = {
            let mut slot = self.shared.finished.write();
            let Some(known) = slot.get(rank as usize) else {
                return;
            };
            if known.is_some() {
                return;
            }
            let mut names = slot.to_vec();
            names[rank as usize] = Some(Arc::from(name));
            *slot = names.into();
            slot.clone()
        };
        tracing::debug!("{name} finished");
        if *self.shared.mode.lock() == Some(Mode::Async) {
            // dist_async has no rounds to wait for: what is parked waits for a backup only.
            return;
        }
        for (_, k) in self.shared.store.pieces() {
            k.lock().fail_blocked_pulls(&finished);
        }
    }

    /// What the server holds for requests it has not answered yet: init entries waiting for
    /// rank 0's value, and pulls waiting for a round (diagnostics; every connection's share of
    /// them is bounded and dropped when it closes).
    pub fn waiting(&self) -> Waiting {
        let (inits, pulls) = self.shared.store.waiting();
        Waiting { inits, pulls }
    }

    /// Totals of the push and pushpull frames received so far (what a `Stats` request reads).
    pub fn push_stats(&self) -> PushStats {
        self.shared.push_stats.snapshot()
    }

    /// The metrics in the OpenMetrics text format, as a scrape of the endpoint reads them.
    pub fn metrics_text(&self) -> String {
        let m = &self.shared.metrics;
        let pieces = self.shared.store.pieces();
        let held: usize = pieces.iter().map(|(_, k)| k.lock().held_bytes()).sum();
        m.keys.set(pieces.len() as i64);
        m.value_bytes.set(held as i64);
        m.request_bytes.set(self.shared.budget.in_use() as i64);
        m.render()
    }

    /// Bytes of data-plane frames read from and written to peers so far: `(received, sent)`.
    pub fn traffic(&self) -> (u64, u64) {
        self.shared.metrics.traffic()
    }

    /// Serves workers that connect to `listeners` and prove themselves with `creds`, until
    /// `shutdown` resolves; then tells every connected worker why (the farewell `shutdown`
    /// yields, if any), closes every connection and returns once their tasks have ended.
    pub async fn serve(
        &self,
        listeners: Listeners,
        creds: Credentials,
        shutdown: impl Future<Output = Option<Farewell>>,
    ) -> Result<()> {
        let (stop_tx, stop_rx) = watch::channel(None);
        let (fatal_tx, mut fatal) = tokio::sync::mpsc::channel::<String>(1);
        let acks = self.shared.acks.lock().take();
        let _acks = acks.map(|events| {
            AbortOnDrop(tokio::spawn(follow_backups(
                self.shared.clone(),
                events,
                fatal_tx,
            )))
        });
        let refused = self.shared.metrics.refused.clone();
        let Listeners { tcp, local } = listeners;
        let mut incoming = transport::authenticated_with_local(tcp, local, creds, refused);
        let mut conns = JoinSet::new();
        tokio::pin!(shutdown);
        let farewell = loop {
            tokio::select! {
                conn = incoming.next() => match conn {
                    Some(Ok(stream)) => {
                        let shared = self.shared.clone();
                        let stop = stop_rx.clone();
                        conns.spawn(connection::run(shared, stream, stop));
                    }
                    Some(Err(e)) => tracing::warn!("accept: {e}"),
                    None => break None,
                },
                farewell = &mut shutdown => break farewell,
                Some(why) = fatal.recv() => {
                    // Like a crash: no farewell, so that the workers keep what they sent for
                    // the servers that take this one's keys over.
                    tracing::error!("{why}");
                    drop(incoming);
                    let _ = stop_tx.send(None);
                    while conns.join_next().await.is_some() {}
                    return Err(crate::error::PsError::NodeLost(why));
                }
                Some(_) = conns.join_next(), if !conns.is_empty() => {}
            }
        };
        drop(incoming);
        let _ = stop_tx.send(Some(farewell.unwrap_or(Farewell {
            failed: false,
            reason: "the server stopped".into(),
        })));
        while conns.join_next().await.is_some() {}
        Ok(())
    }
}

/// Applies what the links to backups report: stored pieces become durable, a link opened
/// again gets every piece its backup holds, an unreachable backup ends the server (`fatal`).
async fn follow_backups(
    shared: Arc<Shared>,
    mut events: tokio::sync::mpsc::UnboundedReceiver<replica::FromBackup>,
    fatal: tokio::sync::mpsc::Sender<String>,
) {
    while let Some(event) = events.recv().await {
        match event {
            replica::FromBackup::Stored(key, offset, round) => {
                shared.store.acked(key, offset, round)
            }
            replica::FromBackup::Reopened(backup) => {
                let Some(r) = shared.replication.get() else {
                    continue;
                };
                let finished = shared.finished.read().clone();
                let installed = handlers::current(&shared);
                let ctx = handlers::bare_ctx(&shared, r.as_ref(), &finished, installed.as_deref());
                for (_, k) in shared.store.pieces() {
                    let mut k = k.lock();
                    let range = k.range();
                    if r.is_primary(range) && r.backup_of(range) == Some(backup) {
                        k.republish(&ctx);
                    }
                }
                r.remark(backup);
            }
            replica::FromBackup::Unreachable(why) => {
                let _ = fatal.send(why).await;
                return;
            }
        }
    }
}
