//! Inits of one piece from two workers, in each order a server can take them: before rank 0's,
//! after it, and in between (rank 0's request has made the key and not yet answered, while the
//! other worker's connection, on another thread, finds the key). Every init is answered, at once
//! in a job without backups.

use std::sync::atomic::AtomicU64;

use bytes::Bytes;
use tokio::sync::mpsc::{self, UnboundedReceiver};

use super::*;
use crate::dtype::DType;
use crate::metrics::ServerMetrics;
use crate::protocol::frame::{Frame, Mode, Op};
use crate::server::reply::{Flow, Outbox, Outgoing};

/// What a test runs on the store at a point of an init.
type Hook = Box<dyn FnOnce(&Store) + Send>;

/// A test's view into a store's inits.
#[derive(Default)]
pub(super) struct Hooks {
    /// Runs once, when a key rank 0 made is in its shard and its creator has not answered yet.
    created: Mutex<Option<Hook>>,
}

impl Hooks {
    pub(super) fn created(&self, store: &Store) {
        let hook = self.created.lock().take();
        if let Some(hook) = hook {
            hook(store);
        }
    }
}

const KEY: u64 = 7;
const VALUE: [f32; 4] = [1.0, 2.0, 3.0, 4.0];

/// One worker's connection: where its replies are queued.
struct Conn {
    outbox: Outbox,
    replies: UnboundedReceiver<Outgoing>,
}

fn conn(id: u64) -> Conn {
    let (tx, replies) = mpsc::unbounded_channel();
    let outbox = Outbox::new(
        tx,
        Arc::new(Flow::default()),
        id,
        Arc::new(AtomicU64::new(0)),
    );
    Conn { outbox, replies }
}

/// Worker `rank`'s init of the key (rank 0 sends the value, the others its layout), request id
/// `rank + 1`, as its connection (replying through `outbox`) dispatches it to the store of a
/// 2-worker sync job.
fn init(store: &Store, rank: u32, outbox: &Outbox) {
    let metrics = ServerMetrics::new();
    let finished = [None, None];
    let ctx = Ctx {
        num_workers: 2,
        mode: Mode::Sync,
        updater: None,
        epoch: 0,
        finished: &finished,
        replica: None,
        resent: false,
        pull_as: None,
        pull_weights: false,
        metrics: &metrics,
    };
    let mut e = Entry::new(KEY, DType::F32, &[4], 0, 4);
    if rank == 0 {
        e.payload = Bytes::copy_from_slice(bytemuck::cast_slice(&VALUE));
    }
    let frame = Frame::request(Op::Init, u64::from(rank) + 1, vec![e]);
    let slots = ReplySlot::for_frame(&frame, outbox);
    for (e, slot) in frame.entries.iter().zip(slots) {
        store.init(rank, &ctx, e, slot);
    }
}

/// The reply queued on `conn`, if any: its request id and the round it gives.
fn reply(conn: &mut Conn) -> Option<(u64, u64)> {
    let out = conn.replies.try_recv().ok()?;
    let entry = out.frame.entries.into_iter().next().expect("one entry");
    let entry = entry.into_result().expect("the init succeeds");
    Some((out.frame.request_id, entry.round))
}

/// Both workers' inits were answered, with round 0, and the key holds rank 0's value.
fn both_answered(store: &Store, conns: &mut [Conn; 2]) {
    assert_eq!(reply(&mut conns[0]), Some((1, 0)), "rank 0's init");
    assert_eq!(reply(&mut conns[1]), Some((2, 0)), "rank 1's init");
    let k = store.get(&Entry::new(KEY, DType::F32, &[4], 0, 4)).unwrap();
    assert!(k.lock().is_durable());
    assert_eq!(store.waiting(), (0, 0), "nothing left waiting");
}

#[test]
fn an_init_that_finds_the_key_its_rank_0_has_just_made_is_answered() {
    // A job without backups that hung at start under load: rank 1's init found the key after
    // rank 0's request had put it in its shard and before it was durable, and waited for a
    // round that rank 1 itself would start only once its init was answered.
    let store = Store::new();
    let mut conns = [conn(1), conn(2)];
    let outbox = conns[1].outbox.clone();
    *store.hooks.created.lock() = Some(Box::new(move |s: &Store| init(s, 1, &outbox)));
    init(&store, 0, &conns[0].outbox);
    assert!(
        store.hooks.created.lock().is_none(),
        "rank 1's init came in between"
    );
    both_answered(&store, &mut conns);
}

#[test]
fn inits_before_and_after_rank_0_are_answered() {
    for rank_0_first in [false, true] {
        let store = Store::new();
        let mut conns = [conn(1), conn(2)];
        if rank_0_first {
            init(&store, 0, &conns[0].outbox);
            init(&store, 1, &conns[1].outbox);
        } else {
            init(&store, 1, &conns[1].outbox);
            assert_eq!(store.waiting(), (1, 0), "rank 1 waits for rank 0's value");
            assert_eq!(reply(&mut conns[1]), None);
            init(&store, 0, &conns[0].outbox);
        }
        both_answered(&store, &mut conns);
    }
}
