//! Pulls from a backup beside the worker: servers on two loopback addresses stand for two
//! machines, each worker "on" one of them. A range whose backup is beside a worker and whose
//! primary is not is pulled from the backup, with the values the primary would give, through
//! losses of either server.

mod common;

use std::net::IpAddr;

use bytes::Bytes;
use common::*;
use ps_core::DType;
use ps_core::placement::Partitioner;
use ps_core::protocol::frame::Mode;
use ps_core::worker::Worker;

const IPS: [&str; 2] = ["127.0.0.1", "127.0.0.2"];
const BOUND: u64 = 1_000_000;
/// Elements of the key, all on one placement range.
const N: usize = 900;

/// A key whose single piece lives on placement range `range` of 2 servers.
fn key_on(range: usize) -> u64 {
    let p = Partitioner::new(2, BOUND);
    (1..).find(|&k| p.server_of(k) == range).unwrap()
}

/// Worker `rank` of 2 on address `IPS[rank]`.
async fn worker(servers: &Servers, rank: u32) -> Worker {
    let mut p = servers.plane(rank, 2, Mode::Sync, BOUND);
    p.replicas = 1;
    p.local = Some(IPS[rank as usize].parse::<IpAddr>().unwrap());
    within(Worker::connect(p)).await.unwrap()
}

/// Round `r` of both workers: a pushpull of `(rank + 1) * (r + 1)` everywhere, then a push of
/// as much again and a pull on its own; checks both values.
async fn round(workers: &[Worker], key: u64, r: u32) {
    let g = |rank: usize| f32s(&vec![(rank as f32 + 1.0) * (r as f32 + 1.0); N]);
    let expect = |sum: f32| vec![sum * (r as f32 + 1.0); N];
    let tickets: Vec<_> = (0..2)
        .map(|w| workers[w].pushpull(vec![(key, DType::F32, g(w))]))
        .collect();
    for t in tickets {
        assert_eq!(to_f32(&within(t.wait()).await.unwrap()[0]), expect(3.0));
    }
    let pushes: Vec<_> = (0..2)
        .map(|w| workers[w].push(vec![(key, DType::F32, g(w))]))
        .collect();
    for t in pushes {
        within(t.wait()).await.unwrap();
    }
    for w in workers {
        assert_eq!(
            to_f32(&within(w.pull(&[key]).wait()).await.unwrap()[0]),
            expect(3.0)
        );
    }
}

async fn init(workers: &[Worker], key: u64) {
    for w in workers {
        let zeros = f32s(&vec![0.0; N]);
        within(
            w.init(vec![(key, DType::F32, vec![N as u64], zeros)])
                .wait(),
        )
        .await
        .unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_range_is_pulled_from_the_backup_beside_with_the_primarys_values() {
    let servers = Servers::start_replicated_on(2, Mode::Sync, BOUND, &IPS).await;
    // Range 1: primary server 1 (beside worker 1), backup server 0 (beside worker 0).
    let key = key_on(1);
    let workers = [worker(&servers, 0).await, worker(&servers, 1).await];
    init(&workers, key).await;
    let (_, sent_before) = servers.servers[0].traffic();
    for r in 0..3 {
        round(&workers, key, r).await;
    }
    // Server 0 holds no primary of the key, yet sent worker 0 its value twice a round.
    let (_, sent) = servers.servers[0].traffic();
    let values = 3 * 2 * N as u64 * 4;
    assert!(
        sent - sent_before >= values,
        "{} bytes sent",
        sent - sent_before
    );
    servers.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn losing_the_backup_beside_sends_pulls_back_to_the_primary() {
    let mut servers = Servers::start_replicated_on(2, Mode::Sync, BOUND, &IPS).await;
    let key = key_on(1);
    let workers = [worker(&servers, 0).await, worker(&servers, 1).await];
    init(&workers, key).await;
    round(&workers, key, 0).await;
    servers.fail_over(0, vec![vec![1], vec![1]], &workers).await;
    for r in 1..3 {
        round(&workers, key, r).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn losing_the_primary_leaves_the_backup_beside_serving_every_round() {
    let mut servers = Servers::start_replicated_on(2, Mode::Sync, BOUND, &IPS).await;
    let key = key_on(1);
    let workers = [worker(&servers, 0).await, worker(&servers, 1).await];
    init(&workers, key).await;
    round(&workers, key, 0).await;
    servers.fail_over(1, vec![vec![0], vec![0]], &workers).await;
    for r in 1..3 {
        round(&workers, key, r).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pulls_are_answered_with_their_round_though_later_pushes_follow_at_once() {
    let servers = Servers::start_replicated_on(2, Mode::Sync, BOUND, &IPS).await;
    // Worker 0 pulls range 1 from server 0; large keys of range 0 (whose primary is server
    // 0) are queued on that connection before the pull, so the pull reaches server 0 late.
    let key = key_on(1);
    let p = Partitioner::new(2, BOUND);
    let bigs: Vec<u64> = (1..).filter(|&k| p.server_of(k) == 0).take(8).collect();
    let big_n = BOUND as usize - 1;
    let workers = [worker(&servers, 0).await, worker(&servers, 1).await];
    init(&workers, key).await;
    for w in &workers {
        let zeros = Bytes::from(vec![0u8; big_n * 4]);
        let items = bigs
            .iter()
            .map(|&b| (b, DType::F32, vec![big_n as u64], zeros.clone()));
        within(w.init(items.collect()).wait()).await.unwrap();
    }
    let g = |v: f32| f32s(&vec![v; N]);
    let large = Bytes::from(vec![0u8; big_n * 4]);
    let mut tickets = Vec::new();
    for (rank, w) in workers.iter().enumerate() {
        let r = rank as f32 + 1.0;
        let items = bigs.iter().map(|&b| (b, DType::F32, large.clone()));
        tickets.push(w.push(items.collect()));
        // The initial value, then rounds 0, 1, 2 of the key, the last two pushed before the
        // first's pull is in.
        let initial = w.pull(&[key]);
        let first = w.pushpull(vec![(key, DType::F32, g(r))]);
        let later: Vec<_> = [10.0, 100.0]
            .map(|f| w.push(vec![(key, DType::F32, g(r * f))]))
            .into();
        tickets.extend(later);
        tickets.extend([initial, first]);
    }
    let mut values = Vec::new();
    for t in tickets {
        let out = within(t.wait()).await.unwrap();
        values.extend(out.first().map(|v| to_f32(v)));
    }
    // Each pull's value is the initial one and each pushpull's round 0's sum (1 + 2), not a
    // later round's.
    let each = [vec![0.0; N], vec![3.0; N]];
    assert_eq!(values, [each.clone(), each].concat());
    for w in &workers {
        let now = within(w.pull(&[key]).wait()).await.unwrap();
        assert_eq!(to_f32(&now[0]), vec![300.0; N]);
    }
    servers.stop().await;
}
