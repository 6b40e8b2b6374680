//! The data plane in one process: real servers and workers on 127.0.0.1, no scheduler.

mod common;

use bytes::Bytes;
use common::*;
use half::f16;
use ps_core::protocol::frame::Mode;
use ps_core::updater::OptimizerSpec;
use ps_core::{DType, PsError};

fn sgd(lr: f64) -> OptimizerSpec {
    OptimizerSpec {
        name: "sgd".into(),
        params: vec![("learning_rate".into(), lr)],
        key_mults: vec![],
        payload: Vec::new(),
    }
}

/// Values worker `w` pushes in round `r` for a key of `n` elements.
fn grad(w: u32, r: u32, n: usize) -> Vec<f32> {
    (0..n)
        .map(|i| (w + 1) as f32 * 0.5 + r as f32 + i as f32 * 0.25)
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sync_pull_is_the_round_sum_for_small_and_sliced_keys() {
    for (s, w) in [(1usize, 2u32), (2, 2), (1, 3), (2, 3)] {
        let servers = Servers::start(s, w, None).await;
        // Bound 10: key 2 with 25 elements is sliced over the servers.
        let workers = servers.workers(w, Mode::Sync, 10).await;
        let sizes = [(1u64, 4usize), (2, 25)];
        for wk in &workers {
            let items = sizes
                .iter()
                .map(|&(k, n)| (k, DType::F32, vec![n as u64], f32s(&vec![7.0; n])))
                .collect();
            within(wk.init(items).wait()).await.unwrap();
        }
        for round in 0..3 {
            let mut tickets = Vec::new();
            for (rank, wk) in workers.iter().enumerate() {
                let items = sizes
                    .iter()
                    .map(|&(k, n)| (k, DType::F32, f32s(&grad(rank as u32, round, n))))
                    .collect();
                tickets.push(wk.push(items));
            }
            for t in tickets {
                within(t.wait()).await.unwrap();
            }
            for wk in &workers {
                let values = within(wk.pull(&[1, 2]).wait()).await.unwrap();
                for (&(_, n), got) in sizes.iter().zip(&values) {
                    let expected: Vec<f32> = (0..n)
                        .map(|i| (0..w).map(|r| grad(r, round, n)[i]).sum())
                        .collect();
                    assert_eq!(to_f32(got), expected, "S={s} W={w} round {round}");
                }
            }
        }
        servers.stop().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pull_waits_for_every_workers_push() {
    let servers = Servers::start(2, 2, None).await;
    let workers = servers.workers(2, Mode::Sync, 1000).await;
    for wk in &workers {
        within(
            wk.init(vec![(5, DType::F32, vec![3], f32s(&[0.0; 3]))])
                .wait(),
        )
        .await
        .unwrap();
    }
    within(
        workers[0]
            .push(vec![(5, DType::F32, f32s(&[1.0, 2.0, 3.0]))])
            .wait(),
    )
    .await
    .unwrap();
    let pending = tokio::spawn(workers[0].pull(&[5]).wait());
    // Worker 1 has not pushed: the pull must still be waiting.
    tokio::task::yield_now().await;
    assert!(!pending.is_finished());
    within(
        workers[1]
            .push(vec![(5, DType::F32, f32s(&[10.0, 20.0, 30.0]))])
            .wait(),
    )
    .await
    .unwrap();
    let got = within(pending).await.unwrap().unwrap();
    assert_eq!(to_f32(&got[0]), [11.0, 22.0, 33.0]);
    // pushpull: one round trip gives the next round's sum.
    let t0 = workers[0].pushpull(vec![(5, DType::F32, f32s(&[1.0, 1.0, 1.0]))]);
    let t1 = workers[1].pushpull(vec![(5, DType::F32, f32s(&[2.0, 2.0, 2.0]))]);
    let (a, b) = within(async { tokio::join!(t0.wait(), t1.wait()) }).await;
    assert_eq!(to_f32(&a.unwrap()[0]), [3.0; 3]);
    assert_eq!(to_f32(&b.unwrap()[0]), [3.0; 3]);
    servers.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sync_with_an_optimizer_applies_it_once_per_round() {
    let servers = Servers::start(2, 2, None).await;
    let workers = servers.workers(2, Mode::Sync, 4).await;
    for wk in &workers {
        within(
            wk.init(vec![(9, DType::F64, vec![2, 3], f64s(&[1.0; 6]))])
                .wait(),
        )
        .await
        .unwrap();
        within(wk.set_optimizer(&sgd(0.1))).await.unwrap();
    }
    let g0 = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0];
    let g1 = [0.5; 6];
    let t0 = workers[0].push(vec![(9, DType::F64, f64s(&g0))]);
    let t1 = workers[1].push(vec![(9, DType::F64, f64s(&g1))]);
    within(t0.wait()).await.unwrap();
    within(t1.wait()).await.unwrap();
    let got = to_f64(&within(workers[1].pull(&[9]).wait()).await.unwrap()[0]);
    let expected: Vec<f64> = g0
        .iter()
        .zip(g1)
        .map(|(a, b)| 1.0 - 0.1 * (a + b))
        .collect();
    assert_eq!(got, expected);
    // A new learning rate reaches every server (the key is sliced over both).
    within(workers[0].set_params(&OptimizerSpec {
        params: vec![("learning_rate".into(), 1.0)],
        ..Default::default()
    }))
    .await
    .unwrap();
    let t0 = workers[0].push(vec![(9, DType::F64, f64s(&[1.0; 6]))]);
    let t1 = workers[1].push(vec![(9, DType::F64, f64s(&[1.0; 6]))]);
    within(t0.wait()).await.unwrap();
    within(t1.wait()).await.unwrap();
    let after = to_f64(&within(workers[0].pull(&[9]).wait()).await.unwrap()[0]);
    let expected: Vec<f64> = expected.iter().map(|v| v - 2.0).collect();
    assert_eq!(after, expected);
    servers.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn async_applies_every_push_and_refuses_pushes_before_an_optimizer() {
    let servers = Servers::start(2, 2, None).await;
    let workers = servers.workers(2, Mode::Async, 1000).await;
    for wk in &workers {
        within(
            wk.init(vec![(3, DType::F32, vec![2], f32s(&[10.0, 10.0]))])
                .wait(),
        )
        .await
        .unwrap();
    }
    let err = within(
        workers[0]
            .push(vec![(3, DType::F32, f32s(&[1.0, 1.0]))])
            .wait(),
    )
    .await
    .unwrap_err();
    assert!(
        matches!(&err, PsError::Rejected(m) if m.contains("set_optimizer")),
        "{err}"
    );
    within(workers[0].set_optimizer(&sgd(1.0))).await.unwrap();
    let mut tickets = Vec::new();
    for _ in 0..5 {
        for wk in &workers {
            tickets.push(wk.push(vec![(3, DType::F32, f32s(&[1.0, 0.5]))]));
        }
    }
    for t in tickets {
        within(t.wait()).await.unwrap();
    }
    for wk in &workers {
        let got = to_f32(&within(wk.pull(&[3]).wait()).await.unwrap()[0]);
        assert_eq!(got, [0.0, 5.0]);
    }
    servers.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn half_precision_pushes_are_summed_in_f32() {
    let servers = Servers::start(1, 3, None).await;
    let workers = servers.workers(3, Mode::Sync, 1000).await;
    let h = |v: &[f32]| {
        Bytes::from(
            v.iter()
                .flat_map(|x| f16::from_f32(*x).to_le_bytes())
                .collect::<Vec<_>>(),
        )
    };
    for wk in &workers {
        within(wk.init(vec![(1, DType::F16, vec![1], h(&[0.0]))]).wait())
            .await
            .unwrap();
        within(wk.init(vec![(2, DType::F32, vec![1], f32s(&[0.0]))]).wait())
            .await
            .unwrap();
    }
    // In float16, 2048 + 1 + 1 stays 2048; summed in float32 it is 2050 (exact in float16).
    let pushes = [2048.0f32, 1.0, 1.0];
    for (wk, v) in workers.iter().zip(pushes) {
        let t = wk.push(vec![(1, DType::F16, h(&[v])), (2, DType::F16, h(&[v]))]);
        tokio::spawn(t.wait());
    }
    let got = within(workers[0].pull(&[1, 2]).wait()).await.unwrap();
    assert_eq!(got[0].len(), 2);
    assert_eq!(f16::from_le_bytes([got[0][0], got[0][1]]).to_f32(), 2050.0);
    assert_eq!(to_f32(&got[1]), [2050.0]);
    servers.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_small_keys_in_one_request() {
    let servers = Servers::start(2, 2, None).await;
    let workers = servers.workers(2, Mode::Sync, 1_000_000).await;
    let keys: Vec<u64> = (0..1000).collect();
    for wk in &workers {
        let items = keys
            .iter()
            .map(|&k| (k, DType::F32, vec![1024], f32s(&vec![0.0; 1024])))
            .collect();
        within(wk.init(items).wait()).await.unwrap();
    }
    let mut tickets = Vec::new();
    for wk in &workers {
        let items = keys
            .iter()
            .map(|&k| (k, DType::F32, f32s(&vec![k as f32; 1024])))
            .collect();
        tickets.push(wk.pushpull(items));
    }
    for t in tickets {
        let values = within(t.wait()).await.unwrap();
        for (k, v) in keys.iter().zip(values) {
            assert_eq!(to_f32(&v), vec![2.0 * *k as f32; 1024]);
        }
    }
    servers.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_with_another_mode_is_refused() {
    let servers = Servers::start(1, 2, None).await;
    let _sync = within(ps_core::worker::Worker::connect(servers.plane(
        0,
        2,
        Mode::Sync,
        10,
    )))
    .await
    .unwrap();
    let err = within(ps_core::worker::Worker::connect(servers.plane(
        1,
        2,
        Mode::Async,
        10,
    )))
    .await
    .err()
    .unwrap();
    assert!(
        err.to_string().contains("dist_async") && err.to_string().contains("dist_sync"),
        "{err}"
    );
    let err = within(ps_core::worker::Worker::connect(servers.plane(
        2,
        2,
        Mode::Sync,
        10,
    )))
    .await
    .err()
    .unwrap();
    assert!(err.to_string().contains("rank 2"), "{err}");
    servers.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pulls_copy_straight_into_caller_buffers() {
    let servers = Servers::start(2, 1, None).await;
    let w = servers.workers(1, Mode::Sync, 4).await.remove(0);
    // Key 1 is sliced (10 elements over bound 4), key 2 is whole.
    let a: Vec<f32> = (0..10).map(|i| i as f32).collect();
    let items = vec![
        (1, DType::F32, vec![10], f32s(&a)),
        (2, DType::F32, vec![2], f32s(&[5.0, 6.0])),
    ];
    within(w.init(items).wait()).await.unwrap();
    let mut x = vec![0u8; 40];
    let mut y = vec![0u8; 8];
    within(w.pull(&[1, 2]).wait_into(&mut [&mut x, &mut y]))
        .await
        .unwrap();
    assert_eq!(to_f32(&x), a);
    assert_eq!(to_f32(&y), [5.0, 6.0]);
    let mut short = vec![0u8; 4];
    let err = within(w.pull(&[1, 2]).wait_into(&mut [&mut x, &mut short]))
        .await
        .unwrap_err();
    assert!(
        err.to_string().contains("key 2") && err.to_string().contains("4 bytes"),
        "{err}"
    );
    let err = within(w.pull(&[9]).wait_into(&mut [&mut y]))
        .await
        .unwrap_err();
    assert!(matches!(err, PsError::UnknownKey(_)), "{err}");
    servers.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn large_keys_travel_in_pieces_and_come_back_whole() {
    // 600,000 float32 (2.4 MB) over two servers: two slices of 1.2 MB, each in two pieces.
    let n = 600_000usize;
    let servers = Servers::start(2, 2, None).await;
    let workers = servers.workers(2, Mode::Sync, 100_000).await;
    let init: Vec<f32> = (0..n).map(|i| i as f32).collect();
    for wk in &workers {
        let items = vec![(1, DType::F32, vec![n as u64], f32s(&init))];
        within(wk.init(items).wait()).await.unwrap();
    }
    for round in 0..2u32 {
        let t: Vec<_> = workers
            .iter()
            .enumerate()
            .map(|(r, wk)| {
                let g: Vec<f32> = (0..n)
                    .map(|i| (i % 1000) as f32 + r as f32 + round as f32)
                    .collect();
                wk.pushpull(vec![(1, DType::F32, f32s(&g))])
            })
            .collect();
        for t in t {
            let v = to_f32(&within(t.wait()).await.unwrap()[0]);
            assert_eq!(v.len(), n);
            for i in [0, 1, 262_143, 262_144, 299_999, 300_000, 562_144, n - 1] {
                assert_eq!(
                    v[i],
                    2.0 * (i % 1000) as f32 + 1.0 + 2.0 * round as f32,
                    "element {i}"
                );
            }
        }
    }
    servers.stop().await;
}
