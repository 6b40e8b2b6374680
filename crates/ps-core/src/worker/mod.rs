//! The worker client: what a training process uses to talk to the servers.
//!
//! Push, pull, pushpull and init return a [`Ticket`] at once and travel in the background; a
//! request over many keys sends one frame per server, and keys above the big-array bound are
//! sliced over the servers and put back together on pull. Every item of a request is checked
//! before any of it is recorded or sent: a refused request changes nothing here.
//!
//! A push may be compressed ([`Compression`]): each piece is encoded on its own, in the caller's
//! thread, before it is sent; 2bit keeps a float32 residual per key here.
//!
//! # Layout
//! - `conn`: one pipelined connection per server.
//! - `ticket`: [`Ticket`], the pending outcome of a request.
//! - `batch`: groups the pieces of a request into frames per server.
//! - `encode`: compressed pushes, piece by piece, with 2bit's residuals.
//! - `check`: an init or push checked against what the key is, before anything is recorded.
//! - `failover`: a lost server's keys routed to its backup, its requests sent again there.
//! - `optimizer`: the servers' optimizer, its states saved and loaded, and their counters.
//! - `rows`: row-sparse keys: `init_rows`, and pushes and pulls of some of their rows.

mod batch;
mod check;
mod conn;
mod encode;
mod failover;
mod nearby;
mod optimizer;
mod order;
mod outbox;
mod rows;
mod ticket;

use rustc_hash::FxHashMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use bytes::Bytes;
use parking_lot::Mutex;

use crate::codec::Compression;
use crate::dtype::DType;
use crate::error::{PsError, Result};
use crate::placement::{Part, Partitioner};
use crate::protocol::frame::{Entry, Mode, Op};
use crate::protocol::transport::Credentials;
use batch::Batch;
use check::{check_init, check_push};
use conn::{Conns, Opening, ServerConn};
use encode::{Encoder, check_compressible};
use order::Access;
pub use ticket::Ticket;

/// What a key was initialised as, and how many rounds of each of its pieces this worker has
/// pushed (a restarted worker starts where its predecessor left each piece: the servers say so
/// when it initialises the key).
struct KeyMeta {
    dtype: DType,
    shape: Vec<u64>,
    /// A row-sparse key's rows and elements per row (`init_rows`); its parts are whole rows.
    rows: Option<(u64, u64)>,
    parts: Vec<Part>,
    pushes: Box<[AtomicU64]>,
    /// 2bit compression's residual (empty until the first 2bit push).
    residual: Mutex<Vec<f32>>,
}

impl KeyMeta {
    fn numel(&self) -> u64 {
        self.shape.iter().product()
    }

    fn entry(&self, key: u64, part: &Part) -> Entry {
        Entry {
            rows: self.rows.is_some(),
            ..Entry::new(key, self.dtype, &self.shape, part.offset, part.count)
        }
    }

    /// Rounds of the key this worker has pushed: the fewest over its pieces.
    fn rounds(&self) -> u64 {
        let rounds = self.pushes.iter().map(|p| p.load(Ordering::Relaxed));
        rounds.min().unwrap_or(0)
    }
}

/// Where a worker's servers are and who the worker is.
#[derive(Debug, Clone)]
pub struct DataPlane {
    /// Server addresses and names ("server 0 on HOST:PORT"), by server rank.
    pub servers: Vec<(SocketAddr, String)>,
    pub rank: u32,
    pub num_workers: u32,
    pub mode: Mode,
    pub bigarray_bound: u64,
    pub max_frame_bytes: u64,
    /// The job's secret and TLS.
    pub creds: Credentials,
    /// Backups per key range (`MXRS_REPLICAS`): when a server is lost, its requests go again
    /// to the servers that take its keys over.
    pub replicas: u32,
    /// True for a restarted worker taking back a lost one's place: the servers then count once
    /// the pushes of rounds the process it replaces had already made ([`Worker::resume_at`]).
    pub rejoined: bool,
    /// This worker's address: in dist_sync with backups, a range whose backup runs there and
    /// whose primary does not is pulled from the backup ([`nearby`]). None: from primaries.
    pub local: Option<IpAddr>,
    /// How long a request waits for its reply before the worker names it on stderr
    /// (`MXRS_WAIT_NOTICE`, [`crate::config::Config::wait_notice`]); None: never.
    pub wait_notice: Option<std::time::Duration>,
}

/// A training process's handle on the parameter servers.
pub struct Worker {
    rank: u32,
    num_workers: u32,
    mode: Mode,
    partitioner: Partitioner,
    conns: Arc<Conns>,
    keys: Arc<Mutex<FxHashMap<u64, Arc<KeyMeta>>>>,
    /// Backups per range, and the server that serves each placement range now.
    replicas: u32,
    route: parking_lot::RwLock<Arc<[usize]>>,
    /// Servers lost now (their ranges moved to their backups).
    lost: Mutex<Vec<u32>>,
    /// Connections replaced by a replacement server's: what reaches them goes by the route.
    retired: Mutex<Vec<Arc<ServerConn>>>,
    /// The topology applied last, and where each server was then.
    topology: Mutex<(u64, Vec<SocketAddr>)>,
    /// Where each placement range's pulls go ([`nearby`]): its primary, or a backup beside.
    pull_route: parking_lot::RwLock<Arc<[usize]>>,
    /// This worker's address, for [`nearby`].
    local: Option<IpAddr>,
    /// Keeps each key's writes behind its reads in flight, in a job with backups ([`order`]).
    order: order::Order,
    /// How to reach a replacement server: the Hello, the credentials and the frame bound.
    /// What a connection to a server that replaces a lost one opens with (a hello that is no
    /// rejoin).
    reconnect: Opening,
    /// Under `fp16`/`bf16` compression, pull weights in 16 bits too (the user asked).
    pull_weights: AtomicBool,
}

impl std::fmt::Debug for Worker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Worker")
            .field("rank", &self.rank)
            .field("num_workers", &self.num_workers)
            .field("mode", &self.mode)
            .field("servers", &self.conns.len())
            .finish_non_exhaustive()
    }
}

impl Worker {
    /// Connects to every server of `plane` and introduces itself.
    pub async fn connect(plane: DataPlane) -> Result<Worker> {
        let hello = Entry {
            key: plane.rank as u64,
            round: plane.mode.code(),
            count: plane.num_workers as u64,
            offset: u64::from(plane.rejoined),
            ..Entry::new(0, DType::F32, &[], 0, 0)
        };
        let opening = Opening {
            creds: plane.creds.clone(),
            max_frame: plane.max_frame_bytes,
            hello,
            wait_notice: plane.wait_notice,
        };
        let mut conns = Vec::with_capacity(plane.servers.len());
        for (addr, name) in &plane.servers {
            let keep = plane.replicas > 0 && plane.servers.len() > 1;
            let conn = ServerConn::open(*addr, name.clone(), &opening, keep).await?;
            conns.push(conn);
        }
        if conns.is_empty() {
            return Err(PsError::Rejected("a job needs at least one server".into()));
        }
        let conns_len = conns.len();
        let backups = plane.replicas > 0 && conns_len > 1;
        let addrs: Vec<SocketAddr> = plane.servers.iter().map(|(a, _)| *a).collect();
        let route: Arc<[usize]> = (0..conns_len).collect();
        let pull_route = match plane.mode == Mode::Sync && backups {
            true => {
                let chains = crate::placement::chains(conns_len as u32, plane.replicas, &[]);
                nearby::pull_route(&chains, &addrs, plane.local, &route)
            }
            false => route.clone(),
        };
        Ok(Worker {
            rank: plane.rank,
            num_workers: plane.num_workers,
            mode: plane.mode,
            partitioner: Partitioner::new(conns.len(), plane.bigarray_bound),
            conns: Arc::new(Conns::new(conns)),
            keys: Arc::new(Mutex::new(FxHashMap::default())),
            replicas: plane.replicas,
            route: parking_lot::RwLock::new(route),
            pull_route: parking_lot::RwLock::new(pull_route),
            local: plane.local,
            order: order::Order::new(tokio::runtime::Handle::current(), backups),
            lost: Mutex::new(Vec::new()),
            retired: Mutex::new(Vec::new()),
            topology: Mutex::new((0, addrs)),
            reconnect: Opening {
                hello: Entry {
                    offset: 0,
                    ..opening.hello
                },
                ..opening
            },
            pull_weights: AtomicBool::new(false),
        })
    }

    /// Under `fp16`/`bf16` compression, whether pulls take weights (and initial values) in 16
    /// bits too, not only sums of pushes; the servers keep float32. Off until set.
    pub fn set_pull_weights(&self, on: bool) {
        self.pull_weights.store(on, Ordering::Relaxed);
    }

    /// This worker's rank, 0..num_workers.
    pub fn rank(&self) -> u32 {
        self.rank
    }

    /// Number of workers in the job.
    pub fn num_workers(&self) -> u32 {
        self.num_workers
    }

    /// Number of servers in the job.
    pub fn num_servers(&self) -> usize {
        self.conns.len()
    }

    /// dist_sync or dist_async.
    pub fn mode(&self) -> Mode {
        self.mode
    }

    /// Fails every waiting and later request with `why` (called when a node is lost).
    pub fn fail(&self, why: &str) {
        self.conns.all().iter().for_each(|c| c.fail(why));
    }

    fn meta(&self, key: u64) -> Result<Arc<KeyMeta>> {
        self.keys.lock().get(&key).cloned().ok_or_else(|| {
            PsError::UnknownKey(format!(
                "key {key} has not been initialised on this worker (call init first)"
            ))
        })
    }

    /// Creates keys: `(key, dtype, shape, value)`. Rank 0's values are stored; every worker's
    /// ticket completes once the key exists on its servers with this dtype and shape.
    pub fn init(&self, items: Vec<(u64, DType, Vec<u64>, Bytes)>) -> Ticket {
        self.init_request(items, false)
    }

    /// [`Worker::init`] of dense keys, or of row-sparse ones (`rows`: placed by rows, see
    /// [`Worker::init_rows`]).
    fn init_request(&self, items: Vec<(u64, DType, Vec<u64>, Bytes)>, rows: bool) -> Ticket {
        let mut keys = self.keys.lock();
        // Each key against what it is: in the table, or as an earlier item of this request.
        let mut seen: FxHashMap<u64, (DType, &[u64], bool)> = FxHashMap::default();
        for (key, dtype, shape, value) in &items {
            let known = keys
                .get(key)
                .map(|m| (m.dtype, m.shape.as_slice(), m.rows.is_some()));
            let known = known.or_else(|| seen.get(key).copied());
            if let Err(e) = check_init(*key, *dtype, shape, value.len(), rows, known) {
                return Ticket::failed(e);
            }
            seen.entry(*key).or_insert((*dtype, shape, rows));
        }
        drop(seen);
        // Everything fits: record the new keys and send.
        let route = self.route();
        let mut batch = Batch::new(Op::Init, self.conns.len(), 0);
        let mut fresh_keys = Vec::new();
        // Where each fresh piece's reply is, and the counter its round sets (dist_sync).
        let mut resume: Vec<(Arc<KeyMeta>, usize, (usize, usize))> = Vec::new();
        for (key, dtype, shape, value) in items {
            let numel: u64 = shape.iter().product();
            let meta = match keys.get(&key) {
                Some(m) => m.clone(),
                None => {
                    let layout = rows.then(|| (shape[0], numel / shape[0]));
                    let parts = match layout {
                        Some((n, len)) => self.partitioner.row_parts(key, n, len, dtype.size()),
                        None => self.partitioner.parts(key, numel, dtype.size()),
                    };
                    let m = Arc::new(KeyMeta {
                        dtype,
                        rows: layout,
                        pushes: parts.iter().map(|_| AtomicU64::new(0)).collect(),
                        parts,
                        shape: shape.clone(),
                        residual: Mutex::new(Vec::new()),
                    });
                    fresh_keys.push((key, m.clone()));
                    keys.insert(key, m.clone());
                    m
                }
            };
            let sz = dtype.size();
            let fresh = fresh_keys.last().is_some_and(|(k, _)| *k == key);
            for (i, part) in meta.parts.iter().enumerate() {
                let mut e = meta.entry(key, part);
                if self.rank == 0 {
                    let at = part.offset as usize * sz;
                    e.payload = value.slice(at..at + part.count as usize * sz);
                }
                let at = batch.add(route[part.server], e);
                if fresh && self.mode == Mode::Sync {
                    resume.push((meta.clone(), i, at));
                }
            }
        }
        drop(keys);
        // A refused init leaves the key unknown here, as it is on the servers.
        let table = self.keys.clone();
        let ticket = batch.send(&self.conns, ticket::Plan::Ack);
        self.sweep_lost();
        ticket
            .on_success(move |frames| {
                for (meta, i, (frame, entry)) in resume {
                    if let Some(e) = frames.get(frame).and_then(|f| f.entries.get(entry)) {
                        meta.pushes[i].fetch_max(e.round, Ordering::Relaxed);
                    }
                }
            })
            .on_error(move || {
                let mut keys = table.lock();
                for (key, meta) in fresh_keys {
                    if keys.get(&key).is_some_and(|m| Arc::ptr_eq(m, &meta)) {
                        keys.remove(&key);
                    }
                }
            })
    }

    /// Pushes `(key, dtype, data)`; `dtype` is the key's, or float16/bfloat16 for a float32
    /// key (summed into its float32 value on the server).
    pub fn push(&self, items: Vec<(u64, DType, Bytes)>) -> Ticket {
        self.push_request(false, items, None, 0)
    }

    /// Pushes, then pulls the value that round produces, in one round trip per server.
    pub fn pushpull(&self, items: Vec<(u64, DType, Bytes)>) -> Ticket {
        self.push_request(true, items, None, 0)
    }

    /// Pushes float32 `(key, dtype, data)` encoded with `compression` (each piece encoded here,
    /// now, before this returns; 2bit updates the keys' residuals).
    pub fn push_compressed(
        &self,
        items: Vec<(u64, DType, Bytes)>,
        compression: Compression,
    ) -> Ticket {
        self.push_request(false, items, Some(compression), 0)
    }

    /// [`Worker::pushpull`] with the push encoded as [`Worker::push_compressed`] does; with
    /// `fp16` or `bf16`, the pulled sum of pushes travels in that type too (widened here).
    pub fn pushpull_compressed(
        &self,
        items: Vec<(u64, DType, Bytes)>,
        compression: Compression,
    ) -> Ticket {
        self.push_request(true, items, Some(compression), 0)
    }

    /// Pushes (and with `pull_back`, pulls the round it completes, as [`Worker::pushpull`]),
    /// with the push encoded by `compression` when given; the request's frames are written
    /// after queued ones of higher `priority` (other keys' only: one key's requests keep their
    /// order).
    pub fn push_request(
        &self,
        pull_back: bool,
        items: Vec<(u64, DType, Bytes)>,
        compression: Option<Compression>,
        priority: i32,
    ) -> Ticket {
        let op = if pull_back { Op::PushPull } else { Op::Push };
        // Check every item before any round is counted or residual changed.
        let checked: Result<Vec<Arc<KeyMeta>>> = items
            .iter()
            .map(|(key, dtype, data)| {
                let meta = self.meta(*key)?;
                check_push(*key, &meta, *dtype, data.len())?;
                if let Some(c) = compression {
                    check_compressible(*key, &meta, *dtype, c)?;
                }
                Ok(meta)
            })
            .collect();
        let metas = match checked {
            Ok(metas) => metas,
            Err(e) => return Ticket::failed(e),
        };
        let route = self.route();
        let pull_as = compression
            .and_then(Compression::pull_dtype)
            .filter(|_| pull_back);
        let weights = self.pull_weights.load(Ordering::Relaxed);
        let n = self.conns.len();
        // Pushpulls of ranges pulled from a backup beside ([`nearby`]): a push to the primary
        // and a pull of the round it completes to the backup, in two more batches.
        let pull_route = self.pull_route();
        let split = op == Op::PushPull && *pull_route != *route;
        let mut batches = [
            Batch::new(op, n, priority).pull_as(pull_as, weights),
            Batch::new(Op::Push, n, priority),
            Batch::new(Op::Pull, n, priority).pull_as(pull_as, weights),
        ];
        let mut gathers = Vec::new();
        let mut pieces_of = Vec::new();
        for ((key, dtype, data), meta) in items.into_iter().zip(metas) {
            let sz = dtype.size();
            let mut encoder = compression.map(|c| Encoder::new(c, &meta));
            let mut pieces = Vec::with_capacity(meta.parts.len());
            for (part, pushes) in meta.parts.iter().zip(meta.pushes.iter()) {
                let mut e = meta.entry(key, part);
                e.dtype = dtype;
                e.round = pushes.fetch_add(1, Ordering::Relaxed);
                let at = part.offset as usize * sz;
                e.payload = data.slice(at..at + part.count as usize * sz);
                if let Some(encoder) = &mut encoder {
                    encoder.encode(&mut e);
                }
                let (primary, puller) = (route[part.server], pull_route[part.server]);
                if split && puller != primary {
                    let mut pull = meta.entry(key, part);
                    pull.round = e.round + 1;
                    batches[1].add(primary, e);
                    pieces.push((2, batches[2].add(puller, pull)));
                } else {
                    pieces.push((0, batches[0].add(primary, e)));
                }
            }
            if op == Op::PushPull {
                pieces_of.push((key, meta.clone(), pieces));
            }
        }
        // One ticket for every frame, in batch order: a piece's frame index counts those of
        // the batches before its own.
        let [fused, pushes, pulls] = batches;
        let offsets = [0, fused.frames(), fused.frames() + pushes.frames()];
        for (key, meta, pieces) in pieces_of {
            let pieces = pieces
                .into_iter()
                .map(|(b, (frame, entry))| (offsets[b] + frame, entry))
                .collect();
            gathers.push(gather(key, &meta, pieces));
        }
        let plan = if op == Op::PushPull {
            ticket::Plan::Values(gathers)
        } else {
            ticket::Plan::Ack
        };
        // A pull this request sends to a backup holds the pieces' later writes, not its own
        // ([`order`]).
        let fused_access = match op {
            Op::PushPull => Access::ReadWrite,
            _ => Access::Write,
        };
        let with = |access| move |(s, f)| (s, f, access);
        let frames = fused
            .into_frames()
            .map(with(fused_access))
            .chain(pushes.into_frames().map(with(Access::Write)))
            .chain(pulls.into_frames().map(with(Access::Read)))
            .collect();
        let replies = self.order.send(&self.conns, frames, priority);
        let ticket = Ticket::new(replies, plan);
        self.sweep_lost();
        ticket
    }

    /// Pulls keys. In dist_sync the value includes every push this worker made before (and
    /// every other worker's push of the same rounds).
    pub fn pull(&self, keys: &[u64]) -> Ticket {
        self.pull_request(keys, 0, None)
    }

    /// [`Worker::pull`], written after queued requests of higher `priority` (as
    /// [`Worker::push_request`]). With `compression` `fp16` or `bf16`, a value that is a sum
    /// of pushes (no optimizer on the servers) travels in that type and is widened here.
    pub fn pull_request(
        &self,
        keys: &[u64],
        priority: i32,
        compression: Option<Compression>,
    ) -> Ticket {
        // A range whose backup is beside the worker is pulled from it ([`nearby`]).
        let route = self.pull_route();
        let pull_as = compression.and_then(Compression::pull_dtype);
        let weights = self.pull_weights.load(Ordering::Relaxed);
        let mut batch = Batch::new(Op::Pull, self.conns.len(), priority).pull_as(pull_as, weights);
        let mut gathers = Vec::with_capacity(keys.len());
        for &key in keys {
            let meta = match self.meta(key) {
                Ok(m) => m,
                Err(e) => return Ticket::failed(e),
            };
            let mut pieces = Vec::with_capacity(meta.parts.len());
            for (part, pushes) in meta.parts.iter().zip(meta.pushes.iter()) {
                let mut e = meta.entry(key, part);
                e.round = pushes.load(Ordering::Relaxed);
                pieces.push(batch.add(route[part.server], e));
            }
            gathers.push(gather(key, &meta, pieces));
        }
        let frames = batch.into_frames().map(|(s, f)| (s, f, Access::Read));
        let replies = self.order.send(&self.conns, frames.collect(), priority);
        let ticket = Ticket::new(replies, ticket::Plan::Values(gathers));
        self.sweep_lost();
        ticket
    }

    /// How many sync rounds of `key` this worker has pushed, the fewest over the key's pieces.
    /// A restarted worker counts those of the process it replaces (the servers tell it when it
    /// initialises the key), so this is the step it resumes at.
    pub fn rounds(&self, key: u64) -> Result<u64> {
        Ok(self.meta(key)?.rounds())
    }

    /// Makes this worker's next push of every initialised key belong to sync round `round`, or
    /// an earlier one where it has pushed fewer: a restarted worker resuming at a step. Pushes
    /// of rounds the process it replaces had already made are counted once by the servers (they
    /// answer them, and their pulls, without summing them again).
    pub fn resume_at(&self, round: u64) {
        for meta in self.keys.lock().values() {
            for pushes in meta.pushes.iter() {
                pushes.fetch_min(round, Ordering::Relaxed);
            }
        }
    }

    /// The dtype and shape `key` was initialised with on this worker.
    pub fn key_layout(&self, key: u64) -> Option<(DType, Vec<u64>)> {
        self.meta(key).ok().map(|m| (m.dtype, m.shape.clone()))
    }

    /// Names of the servers, by rank.
    pub fn server_names(&self) -> Vec<String> {
        self.conns
            .all()
            .iter()
            .map(|c| c.name().to_string())
            .collect()
    }
}

fn gather(key: u64, meta: &KeyMeta, pieces: Vec<(usize, usize)>) -> ticket::Gather {
    let sz = meta.dtype.size();
    ticket::Gather {
        key,
        bytes: meta.numel() as usize * sz,
        pieces: meta
            .parts
            .iter()
            .zip(pieces)
            .map(|(part, (frame, entry))| ticket::Piece {
                frame,
                entry,
                at: part.offset as usize * sz,
                len: part.count as usize * sz,
            })
            .collect(),
    }
}
