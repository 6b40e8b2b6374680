//! Row-sparse keys end to end: real servers and workers on 127.0.0.1 (2 workers x 2 servers),
//! tables cut over the servers by rows, pushes and pulls of some rows.

mod common;

use bytes::Bytes;
use common::*;
use ps_core::DType;
use ps_core::protocol::frame::Mode;
use ps_core::updater::OptimizerSpec;
use ps_core::worker::Worker;

/// Row ids as they travel (int64, little-endian).
fn ids(v: &[i64]) -> Bytes {
    Bytes::from(v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<_>>())
}

/// A table of `rows` rows of `len` elements: row r is [r·10, r·10 + 1, ...].
fn table(rows: usize, len: usize) -> Vec<f32> {
    (0..rows * len)
        .map(|i| ((i / len) * 10 + i % len) as f32)
        .collect()
}

fn spec(name: &str, params: &[(&str, f64)]) -> OptimizerSpec {
    OptimizerSpec {
        name: name.into(),
        params: params.iter().map(|(n, v)| (n.to_string(), *v)).collect(),
        key_mults: vec![],
        payload: Vec::new(),
    }
}

/// 2 servers, 2 workers in `mode`; key 7 a row-sparse table of 10 rows of 3 (30 elements over
/// the bound of 10: rows 0..5 on server 0, 5..10 on server 1).
async fn job(mode: Mode) -> (Servers, Vec<Worker>) {
    let servers = Servers::start(2, 2, None).await;
    let workers = servers.workers(2, mode, 10).await;
    for w in &workers {
        let init = w.init_rows(vec![(7, DType::F32, vec![10, 3], f32s(&table(10, 3)))]);
        within(init.wait()).await.unwrap();
    }
    (servers, workers)
}

async fn push_rows(w: &Worker, key: u64, rows: &[i64], values: &[f32]) {
    let t = w.push_rows(vec![(key, ids(rows), DType::F32, f32s(values))], None, 0);
    within(t.wait()).await.unwrap();
}

async fn pull_rows(w: &Worker, key: u64, rows: &[i64]) -> Vec<f32> {
    let t = w.pull_rows(vec![(key, ids(rows))], 0);
    to_f32(&within(t.wait()).await.unwrap()[0])
}

/// Both workers push their rows of round one (worker 0 rows 1, 4, 7; worker 1 rows 4, 8).
async fn overlapping_round(workers: &[Worker]) {
    let a = workers[0].push_rows(
        vec![(
            7,
            ids(&[1, 4, 7]),
            DType::F32,
            f32s(&[1., 1., 1., 2., 2., 2., 3., 3., 3.]),
        )],
        None,
        0,
    );
    let b = workers[1].push_rows(
        vec![(7, ids(&[4, 8]), DType::F32, f32s(&[0.5; 6]))],
        None,
        0,
    );
    within(a.wait()).await.unwrap();
    within(b.wait()).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn overlapping_rows_are_summed_and_replace_the_table_without_an_optimizer() {
    let (servers, workers) = job(Mode::Sync).await;
    // Before any push, pull_rows reads the initial rows, across both servers.
    let got = pull_rows(&workers[1], 7, &[0, 4, 5, 9]).await;
    let t = table(10, 3);
    let want: Vec<f32> = [0, 4, 5, 9]
        .iter()
        .flat_map(|&r| t[r * 3..r * 3 + 3].to_vec())
        .collect();
    assert_eq!(got, want);
    overlapping_round(&workers).await;
    // MXNet: a push without an updater replaces the value; rows no one pushed become zero.
    for w in &workers {
        let got = pull_rows(w, 7, &[0, 1, 4, 7, 8, 9]).await;
        let want = [
            [0.; 3], [1.; 3], [2.5; 3], // 2 + 0.5: both workers pushed row 4
            [3.; 3], [0.5; 3], [0.; 3],
        ];
        assert_eq!(got, want.concat());
        // A dense pull of the row-sparse key returns the whole table.
        let whole = to_f32(&within(w.pull(&[7]).wait()).await.unwrap()[0]);
        let mut want = vec![0.0; 30];
        for (r, v) in [(1, 1.0), (4, 2.5), (7, 3.0), (8, 0.5)] {
            want[r * 3..r * 3 + 3].fill(v);
        }
        assert_eq!(whole, want);
    }
    // No ids: nothing asked, nothing sent.
    assert!(pull_rows(&workers[0], 7, &[]).await.is_empty());
    servers.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lazy_sgd_moves_only_the_rows_pushed() {
    let (servers, workers) = job(Mode::Sync).await;
    let sgd = spec(
        "sgd",
        &[("learning_rate", 0.1), ("momentum", 0.9), ("wd", 0.01)],
    );
    for w in &workers {
        within(w.set_optimizer(&sgd)).await.unwrap();
    }
    overlapping_round(&workers).await;
    let t = table(10, 3);
    let got = to_f32(&within(workers[0].pull(&[7]).wait()).await.unwrap()[0]);
    let grads = [(1, 1.0), (4, 2.5), (7, 3.0), (8, 0.5)];
    for r in 0..10 {
        for k in 0..3 {
            let (i, w0) = (r * 3 + k, t[r * 3 + k]);
            let want = match grads.iter().find(|(row, _)| *row == r) {
                // m = −lr·wd·w − lr·g (momentum starts at zero); w ← w + m.
                Some(&(_, g)) => w0 + (-0.1 * 0.01 * w0 - 0.1 * g),
                None => w0, // untouched: not even weight decay
            };
            assert!(
                (got[i] - want).abs() < 1e-4,
                "row {r}: {} != {want}",
                got[i]
            );
        }
    }
    // lazy_update = 0: the same round is a dense update, weight decay moves every row.
    let dense = spec(
        "sgd",
        &[("learning_rate", 0.1), ("wd", 0.5), ("lazy_update", 0.0)],
    );
    for w in &workers {
        within(w.set_optimizer(&dense)).await.unwrap();
    }
    overlapping_round(&workers).await;
    let after = to_f32(&within(workers[1].pull(&[7]).wait()).await.unwrap()[0]);
    let keep = (1.0f64 - 0.1 * 0.5) as f32;
    let row9: Vec<f32> = got[27..30].iter().map(|w| keep * w).collect();
    assert_eq!(&after[27..30], &row9[..]);
    servers.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rows_all_on_one_server_still_complete_the_other_servers_round() {
    let (servers, workers) = job(Mode::Sync).await;
    let before: Vec<u64> = within(workers[0].server_stats())
        .await
        .unwrap()
        .iter()
        .map(|s| s.frames)
        .collect();
    // Rows 1, 2 and 3 all live on server 0; server 1 gets an empty message from each worker.
    push_rows(&workers[0], 7, &[1, 2], &[1.0; 6]).await;
    push_rows(&workers[1], 7, &[3], &[2.0; 3]).await;
    let after = within(workers[0].server_stats()).await.unwrap();
    assert_eq!(after[1].frames - before[1], 2, "{after:?}");
    assert_eq!(after[0].frames - before[0], 2, "{after:?}");
    // The pull of the whole table waits for both servers' rounds: it completes.
    let whole = to_f32(&within(workers[1].pull(&[7]).wait()).await.unwrap()[0]);
    let mut want = vec![0.0; 30];
    want[3..9].fill(1.0);
    want[9..12].fill(2.0);
    assert_eq!(whole, want);
    servers.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pull_of_rows_waits_for_the_round_this_worker_pushed() {
    let (servers, workers) = job(Mode::Sync).await;
    push_rows(&workers[0], 7, &[6], &[1.0; 3]).await;
    let mut pull = workers[0].pull_rows(vec![(7, ids(&[5, 6]))], 0);
    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    assert!(!pull.is_ready(), "the round still lacks worker 1's push");
    push_rows(&workers[1], 7, &[6], &[2.0; 3]).await;
    let got = to_f32(&within(pull.wait()).await.unwrap()[0]);
    assert_eq!(got, [0., 0., 0., 3., 3., 3.]);
    servers.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dense_pushes_of_a_row_sparse_key_use_its_row_placement() {
    let (servers, workers) = job(Mode::Sync).await;
    // Dense pushes: the sum replaces the table.
    let tickets: Vec<_> = workers
        .iter()
        .map(|w| w.push(vec![(7, DType::F32, f32s(&table(10, 3)))]))
        .collect();
    for t in tickets {
        within(t.wait()).await.unwrap();
    }
    let doubled: Vec<f32> = table(10, 3).iter().map(|v| 2.0 * v).collect();
    assert_eq!(pull_rows(&workers[0], 7, &[4, 5]).await, doubled[12..18]);
    // A dense push and a push of rows in the same round are summed, whichever comes first
    // (a push is answered on arrival, so these arrive in order).
    let mut want = vec![1.0; 30];
    want[..3].fill(3.0);
    want[27..].fill(3.0);
    for rows_first in [false, true] {
        let dense = || workers[0].push(vec![(7, DType::F32, f32s(&[1.0; 30]))]);
        let rows = || {
            let values = f32s(&[2.0; 6]);
            workers[1].push_rows(vec![(7, ids(&[0, 9]), DType::F32, values)], None, 0)
        };
        if rows_first {
            within(rows().wait()).await.unwrap();
            within(dense().wait()).await.unwrap();
        } else {
            within(dense().wait()).await.unwrap();
            within(rows().wait()).await.unwrap();
        }
        let whole = to_f32(&within(workers[1].pull(&[7]).wait()).await.unwrap()[0]);
        assert_eq!(whole, want, "rows first: {rows_first}");
    }
    servers.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rows_pushed_ahead_wait_for_their_round() {
    let (servers, workers) = job(Mode::Sync).await;
    // Worker 0 pushes rounds 0 and 1 before worker 1 pushes round 0.
    push_rows(&workers[0], 7, &[0], &[1.0; 3]).await;
    push_rows(&workers[0], 7, &[5, 9], &[2.0; 6]).await;
    push_rows(&workers[1], 7, &[0, 5], &[3.0; 6]).await;
    let mut pull = workers[0].pull_rows(vec![(7, ids(&[0, 5, 9]))], 0);
    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    assert!(!pull.is_ready(), "round 1 still lacks worker 1's push");
    assert_eq!(
        pull_rows(&workers[1], 7, &[0, 5, 9]).await,
        [[4.0; 3], [3.0; 3], [0.0; 3]].concat()
    );
    push_rows(&workers[1], 7, &[9], &[0.5; 3]).await;
    let got = to_f32(&within(pull.wait()).await.unwrap()[0]);
    assert_eq!(got, [[0.0; 3], [2.0; 3], [2.5; 3]].concat());
    servers.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn async_rows_are_applied_on_arrival() {
    let (servers, workers) = job(Mode::Async).await;
    for w in &workers {
        within(w.set_optimizer(&spec("sgd", &[("learning_rate", 1.0)])))
            .await
            .unwrap();
    }
    push_rows(&workers[0], 7, &[2, 6], &[1.0; 6]).await;
    assert_eq!(pull_rows(&workers[1], 7, &[2]).await, [19., 20., 21.]);
    push_rows(&workers[1], 7, &[2], &[0.5; 3]).await;
    let got = pull_rows(&workers[0], 7, &[1, 2, 6]).await;
    assert_eq!(got, [10., 11., 12., 18.5, 19.5, 20.5, 59., 60., 61.]);
    servers.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn half_precision_and_multi_dimensional_rows() {
    use half::f16;
    let servers = Servers::start(2, 2, None).await;
    let workers = servers.workers(2, Mode::Sync, 4).await;
    // 3 rows of 2 x 2: rows of four float16 elements.
    let h = |v: &[f32]| {
        Bytes::from(
            v.iter()
                .flat_map(|x| f16::from_f32(*x).to_le_bytes())
                .collect::<Vec<_>>(),
        )
    };
    let from_h = |b: &[u8]| -> Vec<f32> {
        b.chunks_exact(2)
            .map(|c| f16::from_le_bytes([c[0], c[1]]).to_f32())
            .collect()
    };
    for w in &workers {
        let init = w.init_rows(vec![(3, DType::F16, vec![3, 2, 2], h(&[1.0; 12]))]);
        within(init.wait()).await.unwrap();
    }
    assert_eq!(workers[0].row_layout(3), Some((3, vec![2, 2], DType::F16)));
    let a = workers[0].push_rows(vec![(3, ids(&[2]), DType::F16, h(&[0.25; 4]))], None, 0);
    let b = workers[1].push_rows(vec![(3, ids(&[0, 2]), DType::F16, h(&[0.5; 8]))], None, 0);
    within(a.wait()).await.unwrap();
    within(b.wait()).await.unwrap();
    let t = workers[1].pull_rows(vec![(3, ids(&[0, 1, 2]))], 0);
    let got = from_h(&within(t.wait()).await.unwrap()[0]);
    assert_eq!(got, [[0.5; 4], [0.0; 4], [0.75; 4]].concat());
    servers.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn optimizer_states_of_row_sparse_keys_are_saved_and_loaded() {
    let (servers, workers) = job(Mode::Sync).await;
    let adam = spec("adam", &[("learning_rate", 0.1)]);
    for w in &workers {
        within(w.set_optimizer(&adam)).await.unwrap();
    }
    overlapping_round(&workers).await;
    let saved = within(workers[0].save_states()).await.unwrap();
    let first = pull_rows(&workers[0], 7, &[4]).await;
    overlapping_round(&workers).await;
    let second = pull_rows(&workers[0], 7, &[4]).await;
    assert_ne!(first, second);
    // Loading the states of round one again changes the moments, not the weights.
    within(workers[0].load_states(&saved)).await.unwrap();
    assert_eq!(pull_rows(&workers[1], 7, &[4]).await, second);
    servers.stop().await;
}
