//! Row-sparse keys when things go wrong or are measured: bad row ids refused by the worker
//! (nothing sent) and by the server (a malformed message from a hand-driven connection), the
//! bytes a push of some rows puts on the wire, and a backup that holds every row round.

mod common;

use bytes::Bytes;
use common::*;
use ps_core::codec::{Codec, Compression};
use ps_core::protocol::frame::rows::{encode_pull, encode_push};
use ps_core::protocol::frame::{Entry, Mode, Op};
use ps_core::server::Farewell;
use ps_core::worker::Worker;
use ps_core::{DType, PsError};

fn ids(v: &[i64]) -> Bytes {
    Bytes::from(v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<_>>())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_row_ids_are_refused_before_anything_is_sent() {
    let servers = Servers::start(2, 2, None).await;
    let workers = servers.workers(2, Mode::Sync, 10).await;
    for w in &workers {
        let init = w.init_rows(vec![(7, DType::F32, vec![10, 3], f32s(&[1.0; 30]))]);
        within(init.wait()).await.unwrap();
        let dense = w.init(vec![(8, DType::F32, vec![4], f32s(&[0.0; 4]))]);
        within(dense.wait()).await.unwrap();
    }
    let w = &workers[0];
    let push = |key, rows: &[i64], dtype, values: Bytes| {
        w.push_rows(vec![(key, ids(rows), dtype, values)], None, 0)
    };
    let refused = [
        (push(7, &[2, 10], DType::F32, f32s(&[0.0; 6])), "row id 10"),
        (push(7, &[-1], DType::F32, f32s(&[0.0; 3])), "row id -1"),
        (
            push(7, &[4, 2], DType::F32, f32s(&[0.0; 6])),
            "strictly increasing, but 2",
        ),
        (
            push(7, &[3, 3], DType::F32, f32s(&[0.0; 6])),
            "strictly increasing, but 3",
        ),
        (
            push(8, &[0], DType::F32, f32s(&[0.0])),
            "key 8 is not row-sparse",
        ),
        (
            push(9, &[0], DType::F32, f32s(&[0.0])),
            "key 9 has not been initialised",
        ),
        (
            push(7, &[1], DType::F64, f64s(&[0.0; 3])),
            "pushed rows of float64",
        ),
        (
            push(7, &[1, 2], DType::F32, f32s(&[0.0; 3])),
            "2 row ids but 12 bytes",
        ),
        (
            w.pull_rows(vec![(7, ids(&[0, 12]))], 0),
            "row id 12 (at position 1) is out of range: the key has 10 rows",
        ),
        (
            w.push_rows(
                vec![(7, ids(&[1]), DType::F32, f32s(&[0.0; 3]))],
                Some(Compression::new("2bit", 0.5).unwrap()),
                0,
            ),
            "compression (2bit) does not apply to row-sparse pushes",
        ),
    ];
    for (ticket, says) in refused {
        let e = within(ticket.wait()).await.unwrap_err();
        assert!(e.to_string().contains(says), "{e} does not say {says}");
        if says.starts_with("row id") || says.starts_with("strictly") {
            assert!(matches!(e, PsError::InvalidRows(_)), "{e:?}");
            assert!(e.to_string().contains("key 7"), "{e}");
        }
    }
    // Nothing was sent and no round counted: the next pushes are those of round 0.
    assert_eq!(w.rounds(7).unwrap(), 0);
    let stats = within(w.server_stats()).await.unwrap();
    assert!(stats.iter().all(|s| s.frames == 0), "{stats:?}");
    for (rank, wk) in workers.iter().enumerate() {
        let t = wk.push_rows(
            vec![(7, ids(&[9]), DType::F32, f32s(&[rank as f32; 3]))],
            None,
            0,
        );
        within(t.wait()).await.unwrap();
    }
    let got = within(w.pull_rows(vec![(7, ids(&[0, 9]))], 0).wait())
        .await
        .unwrap();
    assert_eq!(to_f32(&got[0]), [0., 0., 0., 1., 1., 1.]);
    servers.stop().await;
}

/// An entry of row-sparse key 5 (4 rows of 2 float32) on its one server.
fn rows_entry(key: u64, round: u64, payload: Bytes) -> Entry {
    Entry {
        rows: true,
        round,
        payload,
        ..Entry::new(key, DType::F32, &[4, 2], 0, 8)
    }
}

fn push_payload(rows: &[i64], values: &[f32]) -> Bytes {
    encode_push(&ids(rows), &f32s(values))
}

/// The error a one-entry reply carries.
fn error_of(reply: Option<ps_core::protocol::frame::Frame>) -> PsError {
    let reply = reply.expect("the server answers");
    reply.entries[0].clone().into_result().unwrap_err()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_row_messages_get_an_error_and_change_nothing() {
    let servers = Servers::start(1, 1, None).await;
    let mut raw = Raw::open(&servers, 0, 1).await;
    let init = rows_entry(5, 0, f32s(&[1.0; 8]));
    let reply = raw.call(Op::Init, vec![init]).await.unwrap();
    reply.entries[0].clone().into_result().unwrap();
    let dense = entry(6, &[2], &[0.0; 2], 0);
    raw.call(Op::Init, vec![dense]).await.unwrap();

    let cases: Vec<(Op, Vec<Entry>, &str)> = vec![
        // Values cut short: 1 row of 2 elements announced, 4 bytes of values.
        (
            Op::PushRows,
            vec![rows_entry(5, 0, encode_push(&ids(&[1]), &[0u8; 4]))],
            "a row message of 1 rows carries 12 bytes, expected 16",
        ),
        (
            Op::PushRows,
            vec![rows_entry(5, 0, Bytes::from_static(&[1, 2]))],
            "lacks its row count",
        ),
        (
            Op::PushRows,
            vec![rows_entry(5, 0, push_payload(&[4], &[0.0; 2]))],
            "row id 4",
        ),
        (
            Op::PushRows,
            vec![rows_entry(5, 0, push_payload(&[2, 1], &[0.0; 4]))],
            "strictly increasing",
        ),
        (
            Op::PushRows,
            vec![rows_entry(99, 0, push_payload(&[0], &[0.0; 2]))],
            "key 99 has not been initialised",
        ),
        (
            Op::PushRows,
            vec![Entry {
                payload: push_payload(&[0], &[0.0; 2]),
                ..entry(6, &[2], &[], 0)
            }],
            "key 6 is not row-sparse",
        ),
        (
            Op::PushRows,
            vec![Entry {
                codec: Codec::TwoBit,
                ..rows_entry(5, 0, push_payload(&[0], &[0.0; 2]))
            }],
            "row-sparse pushes cannot be compressed",
        ),
        // One good entry and one bad one: neither is applied.
        (
            Op::PushRows,
            vec![
                rows_entry(5, 0, push_payload(&[0], &[7.0; 2])),
                rows_entry(5, 0, push_payload(&[9], &[7.0; 2])),
            ],
            "not applied, because key 5 in the same request was refused",
        ),
        (
            Op::PullRows,
            vec![rows_entry(5, 0, encode_pull(&ids(&[3, 3])))],
            "strictly",
        ),
        (
            Op::PullRows,
            vec![rows_entry(5, 0, Bytes::new())],
            "lacks its row count",
        ),
    ];
    for (op, entries, says) in cases {
        let e = error_of(raw.call(op, entries).await);
        assert!(e.to_string().contains(says), "{e} does not say {says}");
    }
    // Still round 0 and the initial value.
    let pull = rows_entry(5, 0, Bytes::new());
    let reply = raw.call(Op::Pull, vec![pull]).await.unwrap();
    let e = reply.entries[0].clone().into_result().unwrap();
    assert_eq!((e.round, to_f32(&e.payload)), (0, vec![1.0; 8]));
    // A good push of round 0 completes the round (one worker): row 2 replaced, others zero.
    let good = rows_entry(5, 0, push_payload(&[2], &[4.0, 5.0]));
    let reply = raw.call(Op::PushRows, vec![good]).await.unwrap();
    reply.entries[0].clone().into_result().unwrap();
    let pull = rows_entry(5, 1, encode_pull(&ids(&[1, 2])));
    let reply = raw.call(Op::PullRows, vec![pull]).await.unwrap();
    let e = reply.entries[0].clone().into_result().unwrap();
    assert_eq!((e.round, to_f32(&e.payload)), (1, vec![0., 0., 4., 5.]));
    servers.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_push_of_k_rows_puts_k_rows_on_the_wire() {
    // 1000 rows of 64 float32 (256 kB), over 2 servers (one piece each).
    let (rows, len) = (1000u64, 64u64);
    let servers = Servers::start(2, 1, None).await;
    let workers = servers.workers(1, Mode::Sync, 1000).await;
    let w = &workers[0];
    let init = w.init_rows(vec![(
        1,
        DType::F32,
        vec![rows, len],
        f32s(&vec![0.0; 64_000]),
    )]);
    within(init.wait()).await.unwrap();
    let k = 10usize;
    let picked: Vec<i64> = (0..k as i64).map(|i| i * 100 + 3).collect();
    let t = w.push_rows(
        vec![(1, ids(&picked), DType::F32, f32s(&vec![1.0; k * 64]))],
        None,
        0,
    );
    within(t.wait()).await.unwrap();
    let stats = within(w.server_stats()).await.unwrap();
    let payload: u64 = stats.iter().map(|s| s.payload_bytes).sum();
    let frames: u64 = stats.iter().map(|s| s.frame_bytes).sum();
    let row_bytes = len * 4;
    // k rows of values and 8-byte ids, plus one 8-byte row count per server.
    assert_eq!(payload, k as u64 * (row_bytes + 8) + 2 * 8);
    // Framing: per server a frame header (16) and one entry header (40 + 2 dims).
    assert_eq!(frames, payload + 2 * (16 + 56));
    assert!(frames < rows * row_bytes / 50, "{frames} bytes for 10 rows");
    let got = within(w.pull_rows(vec![(1, ids(&[3, 4, 903]))], 0).wait())
        .await
        .unwrap();
    let got = to_f32(&got[0]);
    assert_eq!(
        (&got[..64], &got[64..128], &got[128..]),
        (&[1.0; 64][..], &[0.0; 64][..], &[1.0; 64][..])
    );
    servers.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_backup_holds_every_row_round_and_its_optimizer_state() {
    let mut servers = Servers::start_replicated(2, 2, 1, Mode::Sync, 4).await;
    let mut workers = Vec::new();
    for rank in 0..2 {
        let mut p = servers.plane(rank, 2, Mode::Sync, 4);
        p.replicas = 1;
        workers.push(within(Worker::connect(p)).await.unwrap());
    }
    let sgd = ps_core::updater::OptimizerSpec {
        name: "sgd".into(),
        params: vec![("learning_rate".into(), 0.1), ("momentum".into(), 0.9)],
        key_mults: Vec::new(),
        payload: Vec::new(),
    };
    // 4 rows of 2 (8 elements, over the bound): rows 0..2 on server 0, 2..4 on server 1.
    for w in &workers {
        within(w.set_optimizer(&sgd)).await.unwrap();
        let init = w.init_rows(vec![(3, DType::F32, vec![4, 2], f32s(&[0.0; 8]))]);
        within(init.wait()).await.unwrap();
    }
    let round = |g: f32| {
        let tickets: Vec<_> = workers
            .iter()
            .map(|w| w.push_rows(vec![(3, ids(&[1, 2]), DType::F32, f32s(&[g; 4]))], None, 0))
            .collect();
        async move {
            for t in tickets {
                within(t.wait()).await.unwrap();
            }
        }
    };
    round(1.0).await;
    // Server 0 is lost: server 1, its backup, serves rows 0..2 with their momentum.
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
    round(0.5).await;
    // m1 = −0.1·2 = −0.2, w1 = −0.2; m2 = 0.9·m1 − 0.1·1 = −0.28, w2 = −0.48.
    let got = within(
        workers[1]
            .pull_rows(vec![(3, ids(&[0, 1, 2, 3]))], 0)
            .wait(),
    )
    .await
    .unwrap();
    let got = to_f32(&got[0]);
    let want = [0.0, 0.0, -0.48, -0.48, -0.48, -0.48, 0.0, 0.0];
    for (g, w) in got.iter().zip(want) {
        assert!((g - w).abs() < 1e-6, "{got:?} != {want:?}");
    }
}
