//! Large pushes are applied off the runtime's threads while the connections' tasks go on serving
//! (the servers here offload every large push, see `job`), and how the measured cost of large
//! pushes decides whether they are.
//!
//! Each test runs on a runtime of one thread, current-thread (the dispatch goes to the blocking
//! pool) and multi-thread with one worker (the dispatch blocks in place, and the runtime moves on
//! to another thread): a dispatch held on the one runtime thread would stop everything. The hook
//! holds the first offloaded dispatch at a gate the test opens only after other requests have
//! been answered.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::thread::ThreadId;
use std::time::Duration;

use bytes::Bytes;
use parking_lot::Mutex;
use tokio::sync::{mpsc, oneshot};

use super::*;
use crate::dtype::DType;
use crate::protocol::frame::Mode;
use crate::protocol::transport::{self, Credentials, Listeners};
use crate::server::{Farewell, Server};
use crate::worker::{DataPlane, Worker};

/// Hard limit for any step of these tests (and for how long the gate holds a dispatch).
const LIMIT: Duration = Duration::from_secs(20);
/// Elements of the large key: one piece of exactly [`LARGE_BYTES`].
const LARGE: usize = LARGE_BYTES / 4;

async fn within<T>(f: impl Future<Output = T>) -> T {
    tokio::time::timeout(LIMIT, f)
        .await
        .expect("test step timed out")
}

fn f32s(v: &[f32]) -> Bytes {
    Bytes::from(bytemuck::cast_slice::<f32, u8>(v).to_vec())
}

fn to_f32(b: &[u8]) -> Vec<f32> {
    b.chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

/// A server on 127.0.0.1 serving `workers` workers, the workers connected (sync mode, every key
/// on the one server), and the sender that stops it.
async fn job(workers: u32) -> (Arc<Server>, Vec<Worker>, oneshot::Sender<()>) {
    let listener = transport::listen("127.0.0.1".parse().unwrap(), 0)
        .await
        .unwrap();
    let addr = listener.local_addr().unwrap();
    let server = Arc::new(Server::new(workers, 1 << 30));
    // Every large push leaves the runtime's thread, however quick the ones before it were.
    server.shared.large_cost.set_after(Duration::ZERO);
    let (stop, stopped) = oneshot::channel::<()>();
    let serving = server.clone();
    tokio::spawn(async move {
        let farewell = async {
            let _ = stopped.await;
            None::<Farewell>
        };
        serving
            .serve(
                Listeners::new(listener, &Credentials::default()),
                Credentials::default(),
                farewell,
            )
            .await
            .unwrap();
    });
    let mut out = Vec::new();
    for rank in 0..workers {
        let plane = DataPlane {
            servers: vec![(addr, format!("server 0 on {addr}"))],
            rank,
            num_workers: workers,
            mode: Mode::Sync,
            bigarray_bound: u64::MAX,
            max_frame_bytes: 1 << 30,
            creds: Credentials::default(),
            rejoined: false,
            local: None,
            replicas: 0,
            wait_notice: None,
        };
        out.push(within(Worker::connect(plane)).await.unwrap());
    }
    (server, out, stop)
}

/// Initialises key 1 (large) and key 2 (small) on every worker.
async fn init(workers: &[Worker]) {
    let tickets: Vec<_> = workers
        .iter()
        .map(|w| {
            w.init(vec![
                (1, DType::F32, vec![LARGE as u64], f32s(&vec![0.0; LARGE])),
                (2, DType::F32, vec![2], f32s(&[5.0, 6.0])),
            ])
        })
        .collect();
    for t in tickets {
        within(t.wait()).await.unwrap();
    }
}

#[tokio::test]
async fn a_large_push_is_summed_on_the_blocking_pool_while_small_requests_are_answered() {
    large_push_is_summed_while_small_requests_are_answered().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 1)]
async fn a_large_push_is_summed_in_place_while_small_requests_are_answered() {
    large_push_is_summed_while_small_requests_are_answered().await;
}

async fn large_push_is_summed_while_small_requests_are_answered() {
    let (server, workers, stop) = job(2).await;
    init(&workers).await;

    let calls = Arc::new(AtomicUsize::new(0));
    let (entered_tx, mut entered) = mpsc::unbounded_channel::<ThreadId>();
    let (open_gate, gate) = std::sync::mpsc::channel::<()>();
    let gate = Mutex::new(Some(gate));
    let counted = calls.clone();
    *server.shared.hooks.on_offload.lock() = Some(Arc::new(move || {
        counted.fetch_add(1, Ordering::SeqCst);
        let _ = entered_tx.send(std::thread::current().id());
        // Only the first offloaded dispatch waits at the gate.
        if let Some(gate) = gate.lock().take() {
            let _ = gate.recv_timeout(LIMIT);
        }
    }));

    // Worker 0's large push is held on a thread of its own, not on the test's.
    let large = within(async {
        let push = workers[0].push(vec![(1, DType::F32, f32s(&vec![1.0; LARGE]))]);
        (push, entered.recv().await.unwrap())
    })
    .await;
    let (held_push, thread) = large;
    assert_ne!(thread, std::thread::current().id());

    // Meanwhile worker 1's small requests are answered, inline (a pull of round 0 first: after
    // its push, its pull would wait for worker 0's push of the same round).
    let small = within(workers[1].pull(&[2]).wait()).await.unwrap();
    assert_eq!(to_f32(&small[0]), [5.0, 6.0]);
    within(
        workers[1]
            .push(vec![(2, DType::F32, f32s(&[1.0, 1.0]))])
            .wait(),
    )
    .await
    .unwrap();
    assert_eq!(calls.load(Ordering::SeqCst), 1);

    // Once the gate opens, the large push completes and its round sums both pushes.
    open_gate.send(()).unwrap();
    within(held_push.wait()).await.unwrap();
    within(
        workers[1]
            .push(vec![(1, DType::F32, f32s(&vec![2.0; LARGE]))])
            .wait(),
    )
    .await
    .unwrap();
    assert_eq!(calls.load(Ordering::SeqCst), 2);
    for w in &workers {
        let v = within(w.pull(&[1]).wait()).await.unwrap();
        assert!(to_f32(&v[0]).iter().all(|&x| x == 3.0));
    }
    let _ = stop.send(());
}

#[tokio::test]
async fn pieces_below_the_threshold_stay_inline() {
    let (server, workers, stop) = job(1).await;
    init(&workers).await;
    let calls = Arc::new(AtomicUsize::new(0));
    let counted = calls.clone();
    *server.shared.hooks.on_offload.lock() = Some(Arc::new(move || {
        counted.fetch_add(1, Ordering::SeqCst);
    }));
    let w = &workers[0];
    within(w.push(vec![(2, DType::F32, f32s(&[1.0, 2.0]))]).wait())
        .await
        .unwrap();
    // A pull of a large key, and a pushpull of a small one, are inline too.
    within(w.pull(&[1]).wait()).await.unwrap();
    let v = within(w.pushpull(vec![(2, DType::F32, f32s(&[3.0, 4.0]))]).wait())
        .await
        .unwrap();
    assert_eq!(to_f32(&v[0]), [3.0, 4.0]);
    assert_eq!(calls.load(Ordering::SeqCst), 0);
    // A large pushpull is offloaded, and its pull half answered from the blocking pool.
    let v = within(
        w.pushpull(vec![(1, DType::F32, f32s(&vec![7.0; LARGE]))])
            .wait(),
    )
    .await
    .unwrap();
    assert!(to_f32(&v[0]).iter().all(|&x| x == 7.0));
    assert_eq!(calls.load(Ordering::SeqCst), 1);
    let _ = stop.send(());
}

#[test]
fn large_dispatches_leave_the_runtime_once_they_are_slow_and_come_back_once_quick() {
    let cost = Cost::new(Duration::from_millis(1));
    assert!(!cost.heavy(), "nothing measured yet: inline");
    cost.record(Duration::from_micros(100));
    assert!(!cost.heavy());
    cost.record(Duration::from_millis(20)); // 100 us * 3/4 + 20 ms / 4 = 5.075 ms
    assert!(cost.heavy());
    for _ in 0..20 {
        cost.record(Duration::from_micros(100));
    }
    assert!(!cost.heavy(), "quick ones bring the average down again");
    cost.set_after(Duration::ZERO);
    assert!(cost.heavy());
}
