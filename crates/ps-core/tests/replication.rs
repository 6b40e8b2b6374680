//! Chain replication between in-process servers on 127.0.0.1: the backup holds every answered
//! change and serves it once the primary is gone; what a finished worker keeps from completing
//! is still answered as without backups.

mod common;

use common::*;
use ps_core::DType;
use ps_core::protocol::frame::Mode;
use ps_core::server::Farewell;

/// SGD with momentum 0.9 and learning rate 0.1, run by the servers.
fn sgd_momentum() -> ps_core::updater::OptimizerSpec {
    ps_core::updater::OptimizerSpec {
        name: "sgd".into(),
        params: vec![("learning_rate".into(), 0.1), ("momentum".into(), 0.9)],
        key_mults: Vec::new(),
        payload: Vec::new(),
    }
}

/// Workers 0 and 1 of 2 in dist_sync with backups, keys placed with `bound`.
async fn two_workers(servers: &Servers, bound: u64) -> [ps_core::worker::Worker; 2] {
    let connect = |rank| {
        let mut p = servers.plane(rank, 2, Mode::Sync, bound);
        p.replicas = 1;
        ps_core::worker::Worker::connect(p)
    };
    [
        within(connect(0)).await.unwrap(),
        within(connect(1)).await.unwrap(),
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_backup_serves_every_answered_round_once_the_primary_is_gone() {
    let mut servers = Servers::start_replicated(2, 2, 1, Mode::Sync, 4).await;
    let workers = two_workers(&servers, 4).await;
    // Key 1 (2 elements) lives on one server; key 2 (8 elements, above the bound) on both.
    for w in &workers {
        let items = vec![
            (1, DType::F32, vec![2], f32s(&[0.0; 2])),
            (2, DType::F32, vec![8], f32s(&[0.0; 8])),
        ];
        within(w.init(items).wait()).await.unwrap();
    }
    for round in 1..=3 {
        let tickets: Vec<_> = workers
            .iter()
            .map(|w| {
                w.pushpull(vec![
                    (1, DType::F32, f32s(&[1.0; 2])),
                    (2, DType::F32, f32s(&[0.5; 8])),
                ])
            })
            .collect();
        for t in tickets {
            let v = within(t.wait()).await.unwrap();
            assert_eq!(to_f32(&v[0]), [2.0; 2], "round {round}");
            assert_eq!(to_f32(&v[1]), [1.0; 8], "round {round}");
        }
    }
    // Server 0 leaves; everyone moves its keys to server 1, which has every answered round.
    let bye = Farewell {
        failed: true,
        reason: "stopped by the test".into(),
    };
    servers.stop_one(0, bye).await;
    let lost = servers.topology(1, vec![vec![1], vec![1]]);
    assert!(servers.servers[0].set_topology(&lost).unwrap().is_empty());
    for w in &workers {
        w.set_topology(&lost).await;
    }
    let v = within(workers[0].pull(&[1, 2]).wait()).await.unwrap();
    assert_eq!((to_f32(&v[0]), to_f32(&v[1])), (vec![2.0; 2], vec![1.0; 8]));
    // And the job goes on there.
    let tickets: Vec<_> = workers
        .iter()
        .map(|w| w.pushpull(vec![(1, DType::F32, f32s(&[3.0; 2]))]))
        .collect();
    for t in tickets {
        assert_eq!(to_f32(&within(t.wait()).await.unwrap()[0]), [6.0; 2]);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_push_that_can_never_complete_is_still_answered() {
    let servers = Servers::start_replicated(2, 2, 1, Mode::Sync, 1000).await;
    let w1 = within(ps_core::worker::Worker::connect({
        let mut p = servers.plane(1, 2, Mode::Sync, 1000);
        p.replicas = 1;
        p
    }))
    .await
    .unwrap();
    // Worker 0 talks to server 0 by hand, which holds key 5.
    assert_eq!(
        ps_core::placement::Partitioner::new(2, 1000).server_of(5),
        0
    );
    let mut raw0 = Raw::open(&servers, 0, 2).await;
    let init = raw0.call(
        ps_core::protocol::frame::Op::Init,
        vec![entry(5, &[2], &[0.0; 2], 0)],
    );
    init.await.unwrap().entries[0]
        .clone()
        .into_result()
        .unwrap();
    within(
        w1.init(vec![(5, DType::F32, vec![2], f32s(&[0.0; 2]))])
            .wait(),
    )
    .await
    .unwrap();
    // Worker 0 finishes before worker 1's push of a round it will never join arrives.
    for s in &servers.servers {
        s.worker_finished(0, "worker 0 on 127.0.0.1");
    }
    let push = w1.push(vec![(5, DType::F32, f32s(&[1.0; 2]))]);
    within(push.wait()).await.unwrap();
    let e = within(w1.pull(&[5]).wait()).await.unwrap_err();
    assert!(
        e.to_string().contains("worker 0 on 127.0.0.1 has finished"),
        "{e}"
    );
}

/// Both workers pushpull `g` into keys 1 (2 elements, one server) and 2 (8, cut over both);
/// returns worker 0's values (checked equal to worker 1's).
async fn round(workers: &[ps_core::worker::Worker], g: f32) -> (Vec<f32>, Vec<f32>) {
    let tickets: Vec<_> = workers
        .iter()
        .map(|w| {
            w.pushpull(vec![
                (1, DType::F32, f32s(&[g; 2])),
                (2, DType::F32, f32s(&[g; 8])),
            ])
        })
        .collect();
    let mut out = Vec::new();
    for t in tickets {
        let v = within(t.wait()).await.unwrap();
        out.push((to_f32(&v[0]), to_f32(&v[1])));
    }
    assert_eq!(out[0], out[1]);
    out.swap_remove(0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replacement_server_takes_a_full_copy_and_the_job_survives_losing_the_other() {
    let mut servers = Servers::start_replicated(2, 2, 1, Mode::Sync, 4).await;
    let workers = {
        let mut out = Vec::new();
        for rank in 0..2 {
            let mut p = servers.plane(rank, 2, Mode::Sync, 4);
            p.replicas = 1;
            out.push(within(ps_core::worker::Worker::connect(p)).await.unwrap());
        }
        out
    };
    let sgd = sgd_momentum();
    for w in &workers {
        within(w.set_optimizer(&sgd)).await.unwrap();
        let items = vec![
            (1, DType::F32, vec![2], f32s(&[0.0; 2])),
            (2, DType::F32, vec![8], f32s(&[0.0; 8])),
        ];
        within(w.init(items).wait()).await.unwrap();
    }
    // SGD with momentum on the servers: each round's summed gradient is 2 g.
    let (mut weight, mut mom) = (0.0f32, 0.0f32);
    let mut expect = |g: f32| {
        mom = 0.9 * mom - 0.1 * (2.0 * g);
        weight += mom;
        weight
    };
    let check = |(a, b): (Vec<f32>, Vec<f32>), want: f32, when: &str| {
        for v in a.iter().chain(&b) {
            assert!((v - want).abs() < 1e-5, "{when}: {v} != {want}");
        }
    };
    for step in 0..3 {
        check(
            round(&workers, 1.0).await,
            expect(1.0),
            &format!("step {step}"),
        );
    }
    // Server 0 is lost: server 1 serves both ranges alone.
    let bye = Farewell {
        failed: true,
        reason: "stopped by the test".into(),
    };
    servers.stop_one(0, bye.clone()).await;
    let one = servers.servers[0].clone();
    let t1 = servers.topology(1, vec![vec![1], vec![1]]);
    assert!(one.set_topology(&t1).unwrap().is_empty());
    for w in &workers {
        w.set_topology(&t1).await;
    }
    check(round(&workers, 0.5).await, expect(0.5), "alone");
    // A replacement for server 0 joins as the backup of both ranges and gets a full copy.
    let zero = servers.start_replacement(0, 2, 1, Mode::Sync, 4).await;
    let t2 = servers.topology(2, vec![vec![1, 0], vec![1, 0]]);
    assert!(zero.set_topology(&t2).unwrap().is_empty());
    let copies = one.set_topology(&t2).unwrap();
    assert_eq!(copies.len(), 1);
    assert_eq!(
        (copies[0].backup, copies[0].ranges.clone()),
        (0, vec![0, 1])
    );
    for c in copies {
        within(c.stored).await.unwrap();
    }
    for w in &workers {
        w.set_topology(&t2).await;
    }
    let copied = expect(2.0);
    check(round(&workers, 2.0).await, copied, "copied");
    // The other original server is lost: the replacement has every value and momentum.
    servers.stop_one(0, bye).await;
    let t3 = servers.topology(3, vec![vec![0], vec![0]]);
    assert!(zero.set_topology(&t3).unwrap().is_empty());
    for w in &workers {
        w.set_topology(&t3).await;
    }
    let v = within(workers[0].pull(&[1, 2]).wait()).await.unwrap();
    check(
        (to_f32(&v[0]), to_f32(&v[1])),
        copied,
        "pulled from the replacement",
    );
    for step in 0..3 {
        check(
            round(&workers, -1.0).await,
            expect(-1.0),
            &format!("after, step {step}"),
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pull_waiting_for_its_round_to_be_durable_is_not_answered_with_a_later_one() {
    // A server answers a pull once its round has reached the backup, with the value it then
    // holds: the worker's own later pushes must not complete another round meanwhile.
    let servers = Servers::start_replicated(2, 2, 1, Mode::Sync, 1 << 20).await;
    let workers = two_workers(&servers, 1 << 20).await;
    let n = 1000;
    for w in &workers {
        let init = w.init(vec![(1, DType::F32, vec![n as u64], f32s(&vec![0.0; n]))]);
        within(init.wait()).await.unwrap();
    }
    let push =
        |w: &ps_core::worker::Worker, v: f32| w.push(vec![(1, DType::F32, f32s(&vec![v; n]))]);
    for _ in 0..5 {
        // Worker 1's three rounds first, then worker 0's first, a pull of it, and its next two
        // at once: each completes a round as it arrives.
        let mut tickets: Vec<_> = [1.0, 10.0, 100.0].map(|v| push(&workers[1], v)).into();
        tickets.push(push(&workers[0], 1.0));
        let pulled = workers[0].pull(&[1]);
        tickets.extend([10.0, 100.0].map(|v| push(&workers[0], v)));
        let value = within(pulled.wait()).await.unwrap();
        assert_eq!(to_f32(&value[0]), vec![2.0; n]);
        for t in tickets {
            within(t.wait()).await.unwrap();
        }
    }
}

/// Elements of a key whose two pieces (128 KB each) travel to their backup in frames of their
/// own, which the backup keeps as they came instead of copying them.
const LARGE: usize = 1 << 16;

/// Worker `w`'s push of the large key in round `r`: every element different.
fn large_push(w: usize, r: usize) -> Vec<f32> {
    (0..LARGE)
        .map(|i| (i % 251) as f32 + 0.25 * (w + r) as f32)
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn large_pieces_kept_as_sent_are_served_and_updated_once_the_primary_is_gone() {
    for momentum in [false, true] {
        let mut servers = Servers::start_replicated(2, 2, 1, Mode::Sync, 4).await;
        let workers = two_workers(&servers, 4).await;
        if momentum {
            let sgd = sgd_momentum();
            for w in &workers {
                within(w.set_optimizer(&sgd)).await.unwrap();
            }
        }
        for w in &workers {
            let init = vec![(7, DType::F32, vec![LARGE as u64], f32s(&[0.0; LARGE]))];
            within(w.init(init).wait()).await.unwrap();
        }
        // What the servers hold after each round: the sum, or SGD's weights.
        let (mut weight, mut mom) = (vec![0.0f32; LARGE], vec![0.0f32; LARGE]);
        let mut expect = |r: usize| -> Vec<f32> {
            let (a, b) = (large_push(0, r), large_push(1, r));
            for i in 0..LARGE {
                let sum = a[i] + b[i];
                if momentum {
                    mom[i] = 0.9 * mom[i] - 0.1 * sum;
                    weight[i] += mom[i];
                } else {
                    weight[i] = sum;
                }
            }
            weight.clone()
        };
        let close = |got: &[f32], want: &[f32], when: &str| {
            for (i, (g, w)) in got.iter().zip(want).enumerate() {
                assert!(
                    (g - w).abs() <= 1e-4 * w.abs().max(1.0),
                    "momentum {momentum}, {when}: element {i} is {g}, not {w}"
                );
            }
        };
        let round = |r: usize| {
            let tickets: Vec<_> = workers
                .iter()
                .enumerate()
                .map(|(w, wk)| wk.pushpull(vec![(7, DType::F32, f32s(&large_push(w, r)))]))
                .collect();
            async move {
                let mut out = Vec::new();
                for t in tickets {
                    out.push(to_f32(&within(t.wait()).await.unwrap()[0]));
                }
                out
            }
        };
        let mut want = Vec::new();
        for r in 0..3 {
            want = expect(r);
            for got in round(r).await {
                close(&got, &want, &format!("round {r}"));
            }
        }
        // Server 0 is lost: server 1 serves its range from the bytes server 0 sent it.
        servers.fail_over(0, vec![vec![1], vec![1]], &workers).await;
        let got = within(workers[0].pull(&[7]).wait()).await.unwrap();
        close(&to_f32(&got[0]), &want, "pulled from the backup");
        // A float16 pull converts the kept bytes (weights stay float32 however pulled).
        let fp16 = ps_core::codec::Compression::new("fp16", 0.0).unwrap();
        let got = within(workers[1].pull_request(&[7], 0, Some(fp16)).wait()).await;
        let got = to_f32(&got.unwrap()[0]);
        for (i, (g, w)) in got.iter().zip(&want).enumerate() {
            let w16 = half::f16::from_f32(*w).to_f32();
            let ok = if momentum { g == w } else { *g == w16 };
            assert!(
                ok,
                "momentum {momentum}: float16 pull, element {i}: {g} for {w}"
            );
        }
        // And the next rounds are applied to them.
        for r in 3..5 {
            want = expect(r);
            for got in round(r).await {
                close(&got, &want, &format!("round {r}, after"));
            }
        }
    }
}
