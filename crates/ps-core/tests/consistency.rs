//! A request is applied whole or not at all, a finished worker is named instead of waited for,
//! and a ticket says without blocking whether it is done: real servers and workers on
//! 127.0.0.1, no scheduler.

mod common;

use bytes::Bytes;
use common::*;
use half::f16;
use ps_core::protocol::frame::Mode;
use ps_core::server::Farewell;
use ps_core::{DType, PsError};

fn f16s(v: &[f32]) -> Bytes {
    Bytes::from(
        v.iter()
            .flat_map(|x| f16::from_f32(*x).to_le_bytes())
            .collect::<Vec<_>>(),
    )
}

async fn init_all(workers: &[ps_core::worker::Worker], key: u64, n: usize) {
    for wk in workers {
        let item = (key, DType::F32, vec![n as u64], f32s(&vec![0.0; n]));
        within(wk.init(vec![item]).wait()).await.unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_push_counts_no_round_and_a_refused_init_keeps_no_key() {
    let servers = Servers::start(2, 2, None).await;
    let workers = servers.workers(2, Mode::Sync, 1000).await;
    init_all(&workers, 1, 2).await;

    // Key 1 fits, key 2 was never initialised: nothing of the request may count.
    let e = within(
        workers[0]
            .push(vec![
                (1, DType::F32, f32s(&[1.0, 1.0])),
                (2, DType::F32, f32s(&[1.0])),
            ])
            .wait(),
    )
    .await
    .unwrap_err();
    assert!(
        e.to_string().contains("key 2 has not been initialised"),
        "{e}"
    );
    // The same with a wrong size in second place.
    let e = within(
        workers[0]
            .pushpull(vec![
                (1, DType::F32, f32s(&[1.0, 1.0])),
                (1, DType::F32, f32s(&[1.0, 1.0, 1.0])),
            ])
            .wait(),
    )
    .await
    .unwrap_err();
    assert!(matches!(e, PsError::ShapeMismatch(_)), "{e}");

    // Had a round been counted, these pushes would belong to different rounds and the pull
    // would wait forever.
    let t0 = workers[0].push(vec![(1, DType::F32, f32s(&[1.0, 2.0]))]);
    let t1 = workers[1].push(vec![(1, DType::F32, f32s(&[10.0, 20.0]))]);
    within(t0.wait()).await.unwrap();
    within(t1.wait()).await.unwrap();
    let got = within(workers[0].pull(&[1]).wait()).await.unwrap();
    assert_eq!(to_f32(&got[0]), [11.0, 22.0]);

    // An init whose second item is bad keeps no key: the first may be created again, as
    // something else.
    let bad = vec![
        (3, DType::F32, vec![2], f32s(&[0.0, 0.0])),
        (4, DType::F32, vec![2], f32s(&[0.0])),
    ];
    let e = within(workers[0].init(bad).wait()).await.unwrap_err();
    assert!(
        e.to_string().contains("key 4: init value of 4 bytes"),
        "{e}"
    );
    assert_eq!(workers[0].key_layout(3), None);
    for wk in &workers {
        let item = (3, DType::F64, vec![3], f64s(&[5.0; 3]));
        within(wk.init(vec![item]).wait()).await.unwrap();
    }
    let got = within(workers[1].pull(&[3]).wait()).await.unwrap();
    assert_eq!(to_f64(&got[0]), [5.0; 3]);
    servers.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_half_precision_pushpull_into_a_float32_key_works_in_both_halves() {
    let servers = Servers::start(2, 2, None).await;
    // Bound 4: key 1 of 6 elements is sliced over both servers.
    let workers = servers.workers(2, Mode::Sync, 4).await;
    init_all(&workers, 1, 6).await;
    let t0 = workers[0].pushpull(vec![(1, DType::F16, f16s(&[0.5; 6]))]);
    let t1 = workers[1].pushpull(vec![(1, DType::F32, f32s(&[2.0; 6]))]);
    let (a, b) = within(async { tokio::join!(t0.wait(), t1.wait()) }).await;
    // Both answers are the key's float32 value.
    assert_eq!(to_f32(&a.unwrap()[0]), [2.5; 6]);
    assert_eq!(to_f32(&b.unwrap()[0]), [2.5; 6]);
    // A float64 push into a float32 key is refused before anything is sent.
    let e = within(
        workers[0]
            .pushpull(vec![(1, DType::F64, f64s(&[1.0; 6]))])
            .wait(),
    )
    .await
    .unwrap_err();
    assert!(matches!(e, PsError::ShapeMismatch(_)), "{e}");
    servers.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pull_waiting_on_a_finished_worker_fails_naming_it() {
    let servers = Servers::start(2, 2, None).await;
    let workers = servers.workers(2, Mode::Sync, 4).await;
    init_all(&workers, 1, 6).await; // sliced over both servers
    init_all(&workers, 2, 1).await;
    // Worker 0 pushes one round of key 1, worker 1 two; worker 0 pushes key 2 ahead.
    within(
        workers[0]
            .push(vec![(1, DType::F32, f32s(&[1.0; 6]))])
            .wait(),
    )
    .await
    .unwrap();
    for _ in 0..2 {
        let t = workers[1].push(vec![(1, DType::F32, f32s(&[1.0; 6]))]);
        within(t.wait()).await.unwrap();
    }
    for _ in 0..2 {
        within(workers[0].push(vec![(2, DType::F32, f32s(&[1.0]))]).wait())
            .await
            .unwrap();
    }
    let mut waiting = workers[1].pull(&[1]);
    tokio::task::yield_now().await;
    assert!(!waiting.is_ready(), "round 2 cannot have completed");

    for s in &servers.servers {
        s.worker_finished(0, "worker 0 on 127.0.0.1");
    }
    let e = within(waiting.wait()).await.unwrap_err();
    assert_eq!(
        e.to_string(),
        "key 1: the pull waits for round 2, but worker 0 on 127.0.0.1 has finished after \
         pushing 1 rounds of this key, so round 2 can never complete (do all workers run the \
         same number of steps?)"
    );
    // Later pulls fail at once; what the finished worker did push still completes.
    let e = within(workers[1].pull(&[1]).wait()).await.unwrap_err();
    assert!(
        e.to_string().contains("worker 0 on 127.0.0.1 has finished"),
        "{e}"
    );
    within(workers[1].push(vec![(2, DType::F32, f32s(&[1.0]))]).wait())
        .await
        .unwrap();
    let got = within(workers[1].pull(&[2]).wait()).await.unwrap();
    assert_eq!(to_f32(&got[0]), [2.0]);
    servers.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_leaving_server_says_why() {
    let mut servers = Servers::start(1, 1, None).await;
    let workers = servers.workers(1, Mode::Sync, 1000).await;
    init_all(&workers, 1, 1).await;
    let why = "scheduler on 127.0.0.1:9000 disconnected: connection reset";
    let farewell = Farewell {
        failed: true,
        reason: why.into(),
    };
    servers.stop_one(0, farewell).await;
    let e = within(workers[0].pull(&[1]).wait()).await.unwrap_err();
    assert!(matches!(e, PsError::NodeLost(_)), "{e:?}");
    let name = &servers.addrs[0].1;
    assert_eq!(e.to_string(), format!("{name} left the job: {why}"));
    servers.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_ticket_says_whether_it_is_done_without_blocking() {
    let servers = Servers::start(1, 2, None).await;
    let workers = servers.workers(2, Mode::Sync, 1000).await;
    init_all(&workers, 1, 1).await;
    within(workers[0].push(vec![(1, DType::F32, f32s(&[1.0]))]).wait())
        .await
        .unwrap();
    let mut pull = workers[0].pull(&[1]);
    tokio::task::yield_now().await;
    assert!(!pull.is_ready());
    within(workers[1].push(vec![(1, DType::F32, f32s(&[2.0]))]).wait())
        .await
        .unwrap();
    within(async {
        while !pull.is_ready() {
            tokio::task::yield_now().await;
        }
    })
    .await;
    assert_eq!(to_f32(&pull.wait().await.unwrap()[0]), [3.0]);
    let mut refused = workers[0].pull(&[7]);
    assert!(refused.is_ready(), "refused before anything was sent");
    assert!(matches!(refused.wait().await, Err(PsError::UnknownKey(_))));
    servers.stop().await;
}
