//! A primary's connection to one backup: Replicate frames out (queued pieces coalesced), the
//! backup's answers back; opened again while it breaks, given up on after the give-up time.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use mxrs_shm::{ARENA_BYTES, Arena};
use parking_lot::Mutex;
use rustc_hash::FxHashMap;
use tokio::sync::{mpsc, oneshot};
use tokio::time::Instant;

use super::{ALONE_BYTES, COALESCE_BYTES, HELLO_SERVER, MAX_ENTRIES, ReplicaConfig};
use crate::dtype::DType;
use crate::metrics::PeerCounters;
use crate::protocol::auth::HANDSHAKE_TIMEOUT;
use crate::protocol::connection::{FrameReader, FrameWriter};
use crate::protocol::frame::{Entry, Frame, Op};
use crate::protocol::transport::{self, Credentials, LinkRead, LinkWrite};
use crate::task::AbortOnDrop;

/// What a link carries to its backup, in order.
pub(super) enum ToBackup {
    /// A piece's state (its two Replicate entries).
    Pieces([Entry; 2]),
    /// The optimizer in use, encoded, for a backup that joined after it was set.
    Optimizer(Vec<u8>),
    /// Answered once everything before it is stored.
    Marker(oneshot::Sender<()>),
    /// Sends again the markers a broken connection left unanswered (after the pieces sent
    /// again since).
    Remark,
}

/// What the links report to their server.
#[derive(Debug)]
pub(crate) enum FromBackup {
    /// The backup stored a piece as of a round: (key, offset, round).
    Stored(u64, u64, u64),
    /// The link to this backup broke and was opened again: what it had not acknowledged may
    /// be lost, so every piece it backs up goes again.
    Reopened(u32),
    /// The backup could not be reached for longer than the give-up time: this server leaves
    /// the job (its keys then move to their backups, which hold every answered change).
    Unreachable(String),
}

/// A connection to a backup that carries Replicate frames, and the task that runs it.
pub(super) struct Link {
    /// Unbounded because pieces are queued under their key's lock, which cannot wait; what
    /// bounds it is that a change is answered only once its backup stored it. In a dist_sync
    /// job a key's next round needs every worker's push, and a worker's push waits for the
    /// answer to the last, so at most one state per piece (plus one resend of each after a
    /// reconnection) is queued; in a dist_async job, at most one per push a worker has not had
    /// answered, which the workers' in-flight budget (`MXRS_WORKER_INFLIGHT_BYTES`) and each
    /// connection's 131,072 unanswered entries bound. The entries share the stored value's
    /// bytes; nothing is copied to queue them.
    pub(super) frames: mpsc::UnboundedSender<ToBackup>,
}

/// Where a link goes and how.
struct Target {
    backup: u32,
    addr: SocketAddr,
    name: String,
    creds: Credentials,
    max_frame: u64,
    hello: Entry,
    give_up: Duration,
    /// The traffic to and from the backup.
    counters: PeerCounters,
}

impl Link {
    pub(super) fn open(
        cfg: &ReplicaConfig,
        backup: u32,
        (addr, name): (SocketAddr, String),
        events: mpsc::UnboundedSender<FromBackup>,
        counters: PeerCounters,
    ) -> Link {
        let (frames, rx) = mpsc::unbounded_channel();
        let hello = Entry {
            key: u64::from(cfg.me),
            round: cfg.mode.code(),
            count: u64::from(cfg.num_workers),
            offset: HELLO_SERVER,
            ..Entry::new(0, DType::F32, &[], 0, 0)
        };
        let target = Target {
            backup,
            addr,
            name,
            creds: cfg.creds.clone(),
            max_frame: cfg.max_frame,
            hello,
            give_up: cfg.give_up,
            counters,
        };
        tokio::spawn(run_link(target, rx, events));
        Link { frames }
    }
}

/// First wait before opening a broken link again; it doubles up to a second.
const RETRY_FIRST: Duration = Duration::from_millis(20);
const RETRY_MAX: Duration = Duration::from_secs(1);

/// Markers waiting for their answer, by request id.
type Markers = Arc<Mutex<FxHashMap<u64, oneshot::Sender<()>>>>;

/// Runs a link until it is dropped: opens it again whenever it breaks while its backup is in
/// the chains, and gives up (telling the server) after `give_up` without a connection.
async fn run_link(
    to: Target,
    mut frames: mpsc::UnboundedReceiver<ToBackup>,
    events: mpsc::UnboundedSender<FromBackup>,
) {
    let markers: Markers = Arc::default();
    let mut next_id = 1;
    let mut broken: Option<(Instant, String)> = None;
    let mut delay = RETRY_FIRST;
    loop {
        let mut opened = false;
        let r = pump(
            &to,
            &mut frames,
            &events,
            &markers,
            &mut next_id,
            &mut opened,
            broken.is_some(),
        )
        .await;
        let why = match r {
            Ok(()) => return, // the link was dropped
            Err(e) => e.to_string(),
        };
        if frames.is_closed() {
            return; // dropped meanwhile: its backup left the chains
        }
        if opened {
            broken = None;
            delay = RETRY_FIRST;
        }
        let since = broken.get_or_insert_with(|| {
            tracing::warn!("replication to {} broke: {why}; opening it again", to.name);
            (Instant::now(), why.clone())
        });
        if since.0.elapsed() > to.give_up {
            let message = format!(
                "cannot reach {}, the backup of its keys, for {:?} ({why}); this server leaves \
                 the job so that its keys move to their backups",
                to.name, to.give_up
            );
            let _ = events.send(FromBackup::Unreachable(message));
            return;
        }
        tokio::time::sleep(delay).await;
        delay = (delay * 2).min(RETRY_MAX);
    }
}

/// One connection of a link: sends what comes until the link is dropped (`Ok`) or the
/// connection fails (`Err`); `opened` is set once it said hello.
async fn pump(
    to: &Target,
    frames: &mut mpsc::UnboundedReceiver<ToBackup>,
    events: &mpsc::UnboundedSender<FromBackup>,
    markers: &Markers,
    next_id: &mut u64,
    opened: &mut bool,
    reopening: bool,
) -> crate::error::Result<()> {
    let stream = transport::connect(to.addr, &to.creds).await?;
    let local = stream.is_local();
    let (read_half, write_half) = stream.into_split();
    let mut writer = FrameWriter::new(write_half);
    let mut reader = FrameReader::new(read_half, to.max_frame);
    writer
        .write_frame(&Frame::request(Op::Hello, 0, vec![to.hello.clone()]))
        .await?;
    writer.flush().await?;
    *opened = true;
    let arena = match local {
        true => share_memory(to, &mut writer, &mut reader).await?,
        false => None,
    };
    if reopening {
        tracing::info!("replication to {} open again", to.name);
        let _ = events.send(FromBackup::Reopened(to.backup));
    }
    let answered = markers.clone();
    let stored = events.clone();
    let counters = to.counters.clone();
    let to_name = to.name.clone();
    let regions = arena.clone();
    // Ends with why the connection broke, or None when the backup said goodbye (it leaves
    // the job, which is ending: nothing to open again).
    let mut reading = AbortOnDrop(tokio::spawn(async move {
        loop {
            let frame = match reader.read_frame().await {
                Ok(Some(frame)) => frame,
                Ok(None) => return Some("the backup closed the connection".to_string()),
                Err(e) => return Some(e.to_string()),
            };
            counters.received(frame.encoded_len());
            if frame.op == Op::Bye {
                return None;
            }
            if frame.op == Op::Stats {
                if let Some(tx) = answered.lock().remove(&frame.request_id) {
                    let _ = tx.send(());
                }
                continue;
            }
            let replicas = matches!(frame.op, Op::Replicate | Op::ReplicateShared);
            let first = frame.entries.first().filter(|e| e.status == 0);
            if let (true, Some(arena), Some(first)) = (replicas, &regions, first) {
                let mut arena = arena.lock();
                for start in mxrs_shm::released(&first.payload) {
                    if !arena.release(start) {
                        tracing::warn!("{} let go of a region it was not given", to_name);
                    }
                }
            }
            // Each piece is answered twice (its two entries); one ack is enough.
            for e in frame.entries.into_iter().step_by(2) {
                if replicas && e.status == 0 {
                    let _ = stored.send(FromBackup::Stored(e.key, e.offset, e.round));
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
    }));
    let mut held = None;
    loop {
        let first = match held.take() {
            Some(m) => m,
            None => tokio::select! {
                m = frames.recv() => match m {
                    Some(m) => m,
                    None => return Ok(()),
                },
                why = &mut reading.0 => match why {
                    Ok(None) => {
                        tracing::debug!("{} left the job; replication to it ends", to.name);
                        return Ok(());
                    }
                    Ok(Some(why)) => return Err(crate::error::PsError::NodeLost(why)),
                    Err(e) => return Err(crate::error::PsError::NodeLost(e.to_string())),
                },
            },
        };
        let frames_out: Vec<Frame> = match first {
            ToBackup::Pieces(pair) => {
                // What queued meanwhile goes as one frame: many small pieces cost one header.
                // A large piece goes alone (see `ALONE_BYTES`).
                let size = |pair: &[Entry; 2]| pair[0].payload.len();
                let mut bytes = size(&pair);
                let alone = bytes >= ALONE_BYTES;
                let mut pair = pair;
                // A large piece goes through the shared memory, when there is room in it.
                let shared = match (&arena, alone) {
                    (Some(arena), true) => share(&mut arena.lock(), &pair),
                    _ => None,
                };
                let op = match shared {
                    Some(regions) => {
                        pair = regions;
                        Op::ReplicateShared
                    }
                    None => Op::Replicate,
                };
                let mut entries = Vec::from(pair);
                while !alone && entries.len() + 2 <= MAX_ENTRIES && bytes < COALESCE_BYTES {
                    match frames.try_recv() {
                        Ok(ToBackup::Pieces(more)) if size(&more) < ALONE_BYTES => {
                            bytes += size(&more);
                            entries.extend(more);
                        }
                        Ok(other) => {
                            held = Some(other);
                            break;
                        }
                        Err(_) => break,
                    }
                }
                vec![Frame::request(op, 0, entries)]
            }
            ToBackup::Optimizer(spec) => {
                let mut e = Entry::new(0, DType::F32, &[], 0, 0);
                e.payload = spec.into();
                vec![Frame::request(Op::SetOptimizer, 0, vec![e])]
            }
            ToBackup::Marker(tx) => {
                markers.lock().insert(*next_id, tx);
                vec![marker()]
            }
            ToBackup::Remark => {
                let mut m = markers.lock();
                let old: Vec<u64> = m.keys().copied().collect();
                let mut out = Vec::new();
                for id in old {
                    let tx = m.remove(&id).expect("listed");
                    m.insert(*next_id + out.len() as u64, tx);
                    out.push(marker());
                }
                out
            }
        };
        for mut frame in frames_out {
            frame.request_id = *next_id;
            *next_id += 1;
            writer.write_frame(&frame).await?;
            to.counters.sent(1, frame.encoded_len());
        }
        writer.flush().await?;
    }
}

/// `pair` with both payloads (the value and the rest of the piece's state) written into
/// `arena` and replaced by where they lie; `None` when they do not fit.
fn share(arena: &mut Arena, pair: &[Entry; 2]) -> Option<[Entry; 2]> {
    let value = arena.put(&pair[0].payload)?;
    let Some(rest) = arena.put(&pair[1].payload) else {
        arena.release(value);
        return None;
    };
    let mut out = pair.clone();
    out[0].payload = mxrs_shm::region(value, pair[0].payload.len());
    out[1].payload = mxrs_shm::region(rest, pair[1].payload.len());
    Some(out)
}

/// Offers the backup (a process of this host) shared memory for the values of large pieces,
/// right after Hello; `None` when it cannot map it (or this host has none to give): they then
/// travel over the socket.
async fn share_memory(
    to: &Target,
    writer: &mut FrameWriter<LinkWrite>,
    reader: &mut FrameReader<LinkRead>,
) -> crate::error::Result<Option<Arc<Mutex<Arena>>>> {
    let arena = match Arena::create(ARENA_BYTES) {
        Ok(a) => a,
        Err(e) => {
            tracing::debug!("no shared memory for replicas to {}: {e}", to.name);
            return Ok(None);
        }
    };
    let offer = Entry {
        key: u64::from(std::process::id()),
        offset: arena.fd() as u64,
        count: arena.size() as u64,
        payload: arena.token().to_vec().into(),
        ..Entry::new(0, DType::F32, &[], 0, 0)
    };
    writer
        .write_frame(&Frame::request(Op::Arena, 0, vec![offer]))
        .await?;
    writer.flush().await?;
    // The answers to Hello and to the offer, in order. A backup that does not answer within
    // the handshake's time gets its values over the socket (a late answer is ignored).
    let answered = async {
        loop {
            let frame = reader.read_frame().await?.ok_or_else(|| {
                crate::error::PsError::NodeLost("the backup closed the connection".into())
            })?;
            to.counters.received(frame.encoded_len());
            let Some(e) = frame.entries.into_iter().next() else {
                continue;
            };
            match (frame.op, e.into_result()) {
                (Op::Arena, Ok(_)) => return Ok(true),
                (Op::Arena, Err(why)) => {
                    tracing::debug!("{} takes no shared memory: {why}", to.name);
                    return Ok(false);
                }
                (Op::Hello, Err(why)) => return Err(why),
                _ => {}
            }
        }
    };
    match tokio::time::timeout(HANDSHAKE_TIMEOUT, answered).await {
        Ok(Ok(true)) => Ok(Some(Arc::new(Mutex::new(arena)))),
        Ok(Ok(false)) | Err(_) => Ok(None),
        Ok(Err(e)) => Err(e),
    }
}

/// A marker frame: the backup answers it once it has stored everything sent before.
fn marker() -> Frame {
    Frame::request(Op::Stats, 0, vec![Entry::new(0, DType::F32, &[], 0, 0)])
}
