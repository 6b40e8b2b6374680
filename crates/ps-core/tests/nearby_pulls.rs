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

/// Initialises `keys` of `n` elements to zeros on every worker.
async fn init_zeros(workers: &[Worker], keys: &[u64], n: usize) {
    let zeros = f32s(&vec![0.0; n]);
    for w in workers {
        let items = keys
            .iter()
            .map(|&k| (k, DType::F32, vec![n as u64], zeros.clone()));
        within(w.init(items.collect()).wait()).await.unwrap();
    }
}

async fn init(workers: &[Worker], key: u64) {
    init_zeros(workers, &[key], N).await;
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
    // Server 0 holds no primary of the key, yet sent worker 0 its value twice a round (its
    // counters count a reply once written: the worker may have it a moment before).
    let values = 3 * 2 * N as u64 * 4;
    let sent = || servers.servers[0].traffic().1 - sent_before;
    within(async {
        while sent() < values {
            tokio::time::sleep(std::time::Duration::from_millis(1)).await;
        }
    })
    .await;
    servers.stop().await;
}

/// A round, the loss of server `lost` (the other takes every range), two more rounds.
async fn rounds_around_losing(lost: usize) {
    let mut servers = Servers::start_replicated_on(2, Mode::Sync, BOUND, &IPS).await;
    let key = key_on(1);
    let workers = [worker(&servers, 0).await, worker(&servers, 1).await];
    init(&workers, key).await;
    round(&workers, key, 0).await;
    let rest = 1 - lost as u32;
    servers
        .fail_over(lost, vec![vec![rest], vec![rest]], &workers)
        .await;
    for r in 1..3 {
        round(&workers, key, r).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn losing_the_backup_beside_sends_pulls_back_to_the_primary() {
    rounds_around_losing(0).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn losing_the_primary_leaves_the_backup_beside_serving_every_round() {
    rounds_around_losing(1).await;
}

/// Large keys of placement range 0 (whose primary, server 0, is the backup beside worker 0),
/// initialised: pushing them queues megabytes on worker 0's connection to server 0, so a pull
/// sent there after them arrives late.
struct Ballast(Vec<u64>);

impl Ballast {
    const N: usize = BOUND as usize - 1;

    async fn new(workers: &[Worker]) -> Ballast {
        let p = Partitioner::new(2, BOUND);
        let keys: Vec<u64> = (1..).filter(|&k| p.server_of(k) == 0).take(8).collect();
        init_zeros(workers, &keys, Self::N).await;
        Ballast(keys)
    }

    fn push(&self, w: &Worker) -> ps_core::worker::Ticket {
        let large = Bytes::from(vec![0u8; Self::N * 4]);
        w.push(
            self.0
                .iter()
                .map(|&b| (b, DType::F32, large.clone()))
                .collect(),
        )
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pulls_are_answered_with_their_round_though_later_pushes_follow_at_once() {
    let servers = Servers::start_replicated_on(2, Mode::Sync, BOUND, &IPS).await;
    // Worker 0 pulls range 1 from server 0, after the ballast.
    let key = key_on(1);
    let workers = [worker(&servers, 0).await, worker(&servers, 1).await];
    init(&workers, key).await;
    let ballast = Ballast::new(&workers).await;
    let g = |v: f32| f32s(&vec![v; N]);
    let mut tickets = Vec::new();
    for (rank, w) in workers.iter().enumerate() {
        let r = rank as f32 + 1.0;
        tickets.push(ballast.push(w));
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dense_pull_of_a_row_sparse_key_is_not_overtaken_by_its_row_pushes() {
    let servers = Servers::start_replicated_on(2, Mode::Sync, BOUND, &IPS).await;
    let workers = [worker(&servers, 0).await, worker(&servers, 1).await];
    // A table of 1000 rows of 4, placed by rows: a piece on each server.
    let (key, rows, width) = (1_000_003, 1000usize, 4usize);
    for w in &workers {
        let ones = f32s(&vec![1.0; rows * width]);
        let t = w.init_rows(vec![(
            key,
            DType::F32,
            vec![rows as u64, width as u64],
            ones,
        )]);
        within(t.wait()).await.unwrap();
    }
    let ballast = Ballast::new(&workers).await;
    let every: Vec<u8> = (0..rows as i64).flat_map(|i| i.to_le_bytes()).collect();
    let round = |w: &Worker, v: f32| {
        let values = f32s(&vec![v; rows * width]);
        w.push_rows(
            vec![(key, Bytes::from(every.clone()), DType::F32, values)],
            None,
            0,
        )
    };
    // Worker 0: the ballast, round 0 of every row, a pull of that round from server 0 behind
    // the ballast, and rounds 1 and 2 before the pull's answer is in; then worker 1.
    let mut tickets = vec![ballast.push(&workers[0]), round(&workers[0], 1.0)];
    let pulled = workers[0].pull(&[key]);
    tickets.extend([round(&workers[0], 10.0), round(&workers[0], 100.0)]);
    tickets.push(ballast.push(&workers[1]));
    tickets.extend([1.0, 10.0, 100.0].map(|v| round(&workers[1], v)));
    for t in tickets {
        within(t.wait()).await.unwrap();
    }
    // Round 0's sum, not a later round's.
    let value = within(pulled.wait()).await.unwrap();
    assert_eq!(to_f32(&value[0]), vec![2.0; rows * width]);
    for w in &workers {
        let now = within(w.pull(&[key]).wait()).await.unwrap();
        assert_eq!(to_f32(&now[0]), vec![200.0; rows * width]);
    }
    servers.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_key_cut_over_both_servers_is_pushpulled_round_after_round() {
    let servers = Servers::start_replicated_on(2, Mode::Sync, BOUND, &IPS).await;
    let workers = [worker(&servers, 0).await, worker(&servers, 1).await];
    // Pieces on both servers: each worker's pushpull has fused frames (the pieces whose
    // primary is beside it) and split ones; none may wait for another of the same request.
    let (key, n) = (3, 3 * BOUND as usize + 7);
    init_zeros(&workers, &[key], n).await;
    for r in 1..=3 {
        let tickets: Vec<_> = (0..2)
            .map(|w| {
                let g = f32s(&vec![(w as f32 + 1.0) * r as f32; n]);
                workers[w].pushpull(vec![(key, DType::F32, g)])
            })
            .collect();
        for t in tickets {
            let out = within(t.wait()).await.unwrap();
            assert_eq!(to_f32(&out[0]), vec![3.0 * r as f32; n]);
        }
    }
    servers.stop().await;
}
