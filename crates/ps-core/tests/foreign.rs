//! Foreign optimizers on the servers, end to end, with a hook registered as the Python bindings
//! register theirs: every piece is updated through it with its own state, an update that fails
//! reaches the workers of that round and the server keeps serving, states are saved and loaded
//! through it, and a backup takes over the states it copied.
//!
//! The hook here is `w += t·g`, `t` the piece's update count (its state), so that a lost or
//! doubled state shows in the weights. Its payload says how it behaves: `add`, `fail:N` (the
//! N-th update of every piece fails), `refuse` (the factory fails).

mod common;

use std::collections::HashMap;
use std::sync::{Arc, Once};

use common::*;
use parking_lot::Mutex;
use ps_core::protocol::frame::Mode;
use ps_core::server::Farewell;
use ps_core::updater::foreign::{ForeignGrad, ForeignUpdate};
use ps_core::updater::{ForeignUpdater, OptimizerSpec, Piece, set_foreign_factory};
use ps_core::{DType, PsError};

#[derive(Debug)]
struct Scaled {
    fail_at: Option<u64>,
    counts: Mutex<HashMap<Piece, u64>>,
}

impl ForeignUpdater for Scaled {
    fn update(&self, u: ForeignUpdate<'_>) -> ps_core::Result<()> {
        let mut counts = self.counts.lock();
        let t = counts.entry(u.piece).or_insert(0);
        *t += 1;
        if Some(*t) == self.fail_at {
            return Err(PsError::Optimizer(format!(
                "ValueError: update {t} of key {} refused",
                u.piece.key
            )));
        }
        let t = *t as f32;
        assert_eq!(u.dtype, DType::F32);
        let w: &mut [f32] = bytemuck::cast_slice_mut(u.weight);
        match u.grad {
            ForeignGrad::Dense(g) => {
                let g: &[f32] = bytemuck::cast_slice(g);
                assert_eq!(g.len(), w.len());
                w.iter_mut().zip(g).for_each(|(w, g)| *w += t * g);
            }
            ForeignGrad::Rows {
                row_len,
                rows,
                values,
            } => {
                let g: &[f32] = bytemuck::cast_slice(values);
                for (j, r) in rows.iter().enumerate() {
                    for k in 0..row_len {
                        w[r * row_len + k] += t * g[j * row_len + k];
                    }
                }
            }
        }
        Ok(())
    }

    fn set_params(&self, params: &[(String, f64)], _: &[(u64, f64, f64)]) -> ps_core::Result<()> {
        match params.first() {
            Some((name, _)) => Err(PsError::Optimizer(format!("cannot change {name}"))),
            None => Ok(()),
        }
    }

    fn save_state(&self, piece: Piece) -> ps_core::Result<Option<Vec<u8>>> {
        Ok(self
            .counts
            .lock()
            .get(&piece)
            .map(|t| t.to_le_bytes().to_vec()))
    }

    fn load_states(&self, states: &[(Piece, &[u8])]) -> ps_core::Result<()> {
        let mut loaded = Vec::new();
        for (piece, bytes) in states {
            let t: [u8; 8] = (*bytes)
                .try_into()
                .map_err(|_| PsError::Rejected(format!("bad state for key {}", piece.key)))?;
            loaded.push((*piece, u64::from_le_bytes(t)));
        }
        self.counts.lock().extend(loaded);
        Ok(())
    }
}

fn register() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        set_foreign_factory(Arc::new(
            |payload: &[u8]| -> ps_core::Result<Arc<dyn ForeignUpdater>> {
                let text = std::str::from_utf8(payload).unwrap();
                let fail_at = match text {
                    "add" => None,
                    "refuse" => {
                        return Err(PsError::Optimizer("cannot unpickle the optimizer".into()));
                    }
                    _ => Some(text.strip_prefix("fail:").unwrap().parse().unwrap()),
                };
                Ok(Arc::new(Scaled {
                    fail_at,
                    counts: Mutex::default(),
                }))
            },
        ));
    });
}

fn python(payload: &str) -> OptimizerSpec {
    OptimizerSpec {
        name: "python:tests.Scaled".into(),
        payload: payload.as_bytes().to_vec(),
        ..Default::default()
    }
}

/// `w0 + Σ_t t·(g0_t + g1_t)` over the rounds given.
fn reference(w0: &[f32], grads: &[[Vec<f32>; 2]], rounds: &[usize]) -> Vec<f32> {
    let mut w = w0.to_vec();
    for &r in rounds {
        let t = (r + 1) as f32;
        for (i, w) in w.iter_mut().enumerate() {
            *w += t * (grads[r][0][i] + grads[r][1][i]);
        }
    }
    w
}

fn grads(n: usize, rounds: usize) -> Vec<[Vec<f32>; 2]> {
    (0..rounds)
        .map(|r| {
            let g = |w: usize| {
                (0..n)
                    .map(|i| ((i * 7 + r * 3 + w * 5) % 11) as f32 * 0.25 - 1.0)
                    .collect()
            };
            [g(0), g(1)]
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_piece_is_updated_through_the_hook_with_its_own_state() {
    register();
    let w0: Vec<f32> = (0..13).map(|i| i as f32 * 0.5 - 3.0).collect();
    let g = grads(13, 3);
    for mode in [Mode::Sync, Mode::Async] {
        // 13 elements, bound 5: sliced over both servers.
        let servers = Servers::start(2, 2, None).await;
        let workers = servers.workers(2, mode, 5).await;
        for wk in &workers {
            within(wk.init(vec![(11, DType::F32, vec![13], f32s(&w0))]).wait())
                .await
                .unwrap();
            within(wk.set_optimizer(&python("add"))).await.unwrap();
        }
        for gr in &g {
            match mode {
                Mode::Sync => {
                    let t0 = workers[0].push(vec![(11, DType::F32, f32s(&gr[0]))]);
                    let t1 = workers[1].push(vec![(11, DType::F32, f32s(&gr[1]))]);
                    within(t0.wait()).await.unwrap();
                    within(t1.wait()).await.unwrap();
                }
                Mode::Async => {
                    // One update of the sum per round, as in dist_sync.
                    let sum: Vec<f32> = gr[0].iter().zip(&gr[1]).map(|(a, b)| a + b).collect();
                    within(workers[0].push(vec![(11, DType::F32, f32s(&sum))]).wait())
                        .await
                        .unwrap();
                }
            }
        }
        let v = to_f32(&within(workers[0].pull(&[11]).wait()).await.unwrap()[0]);
        assert_eq!(v, reference(&w0, &g, &[0, 1, 2]), "{mode:?}");
        servers.stop().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_update_reaches_every_worker_of_its_round_and_the_server_goes_on() {
    register();
    let w0 = [1.0f32, 2.0, 3.0];
    let g = grads(3, 3);
    let servers = Servers::start(1, 2, None).await;
    let workers = servers.workers(2, Mode::Sync, 100).await;
    for wk in &workers {
        within(wk.init(vec![(4, DType::F32, vec![3], f32s(&w0))]).wait())
            .await
            .unwrap();
        within(wk.set_optimizer(&python("fail:2"))).await.unwrap();
    }
    for (r, gr) in g.iter().enumerate() {
        let t0 = workers[0].pushpull(vec![(4, DType::F32, f32s(&gr[0]))]);
        let t1 = workers[1].pushpull(vec![(4, DType::F32, f32s(&gr[1]))]);
        let (a, b) = (within(t0.wait()).await, within(t1.wait()).await);
        if r == 1 {
            for e in [a.unwrap_err(), b.unwrap_err()] {
                assert!(matches!(&e, PsError::Optimizer(_)), "{e:?}");
                let msg = e.to_string();
                assert!(
                    msg.contains("key 4: the optimizer's update of round 2 failed")
                        && msg.contains("ValueError: update 2 of key 4 refused"),
                    "{msg}"
                );
            }
        } else {
            let v = to_f32(&a.unwrap()[0]);
            assert_eq!(v, to_f32(&b.unwrap()[0]));
        }
    }
    // Round 2 left the weights as they were; rounds 1 and 3 applied (t = 1 and 3).
    let v = to_f32(&within(workers[0].pull(&[4]).wait()).await.unwrap()[0]);
    assert_eq!(v, reference(&w0, &g, &[0, 2]));

    // dist_async: the pushing worker's push fails; the next one is applied.
    servers.stop().await;
    let servers = Servers::start(1, 1, None).await;
    let w = servers.workers(1, Mode::Async, 100).await.remove(0);
    within(w.init(vec![(4, DType::F32, vec![3], f32s(&w0))]).wait())
        .await
        .unwrap();
    within(w.set_optimizer(&python("fail:1"))).await.unwrap();
    let e = within(w.push(vec![(4, DType::F32, f32s(&[1.0; 3]))]).wait())
        .await
        .unwrap_err();
    assert!(e.to_string().contains("update 1 of key 4 refused"), "{e}");
    within(w.push(vec![(4, DType::F32, f32s(&[1.0; 3]))]).wait())
        .await
        .unwrap();
    let v = to_f32(&within(w.pull(&[4]).wait()).await.unwrap()[0]);
    assert_eq!(v, [3.0, 4.0, 5.0]);
    servers.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn states_are_saved_and_loaded_through_the_hook() {
    register();
    let w0: Vec<f32> = (0..7).map(|i| i as f32).collect();
    let g = grads(7, 3);
    let sum = |r: usize| -> Vec<f32> { g[r][0].iter().zip(&g[r][1]).map(|(a, b)| a + b).collect() };
    let full = reference(&w0, &g, &[0, 1, 2]);

    let servers = Servers::start(2, 1, None).await;
    let w = servers.workers(1, Mode::Sync, 3).await.remove(0);
    within(w.init(vec![(11, DType::F32, vec![7], f32s(&w0))]).wait())
        .await
        .unwrap();
    within(w.set_optimizer(&python("add"))).await.unwrap();
    for r in 0..2 {
        within(w.push(vec![(11, DType::F32, f32s(&sum(r)))]).wait())
            .await
            .unwrap();
    }
    let after_two = to_f32(&within(w.pull(&[11]).wait()).await.unwrap()[0]);
    let blob = within(w.save_states()).await.unwrap();
    servers.stop().await;

    // A new job from round 2's weights: with the counts loaded, round 3 has t = 3.
    let servers = Servers::start(2, 1, None).await;
    let w = servers.workers(1, Mode::Sync, 3).await.remove(0);
    within(
        w.init(vec![(11, DType::F32, vec![7], f32s(&after_two))])
            .wait(),
    )
    .await
    .unwrap();
    within(w.set_optimizer(&python("add"))).await.unwrap();
    within(w.load_states(&blob)).await.unwrap();
    within(w.push(vec![(11, DType::F32, f32s(&sum(2)))]).wait())
        .await
        .unwrap();
    let v = to_f32(&within(w.pull(&[11]).wait()).await.unwrap()[0]);
    assert_eq!(v, full);
    // States the hook refuses are refused whole.
    // (One piece, key 11 at element 0, float32, five bytes of state: see `protocol::states`.)
    let mut bad = 1u64.to_le_bytes().to_vec();
    bad.extend_from_slice(&11u64.to_le_bytes());
    bad.extend_from_slice(&0u64.to_le_bytes());
    bad.push(0);
    bad.extend_from_slice(&5u64.to_le_bytes());
    bad.extend_from_slice(b"short");
    let e = within(w.load_states(&bad)).await.unwrap_err();
    assert!(e.to_string().contains("bad state for key 11"), "{e}");
    servers.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refusals_leave_the_server_serving() {
    register();
    let servers = Servers::start(1, 1, None).await;
    let w = servers.workers(1, Mode::Sync, 100).await.remove(0);
    within(
        w.init(vec![(2, DType::F32, vec![2], f32s(&[1.0, 1.0]))])
            .wait(),
    )
    .await
    .unwrap();
    let e = within(w.set_optimizer(&python("refuse")))
        .await
        .unwrap_err();
    assert!(e.to_string().contains("cannot unpickle"), "{e}");
    // A hyper-parameter the hook cannot change is refused by it.
    within(w.set_optimizer(&python("add"))).await.unwrap();
    let change = OptimizerSpec {
        params: vec![("momentum".into(), 0.9)],
        ..Default::default()
    };
    let e = within(w.set_params(&change)).await.unwrap_err();
    assert!(e.to_string().contains("cannot change momentum"), "{e}");
    within(w.push(vec![(2, DType::F32, f32s(&[0.5, 1.0]))]).wait())
        .await
        .unwrap();
    let v = to_f32(&within(w.pull(&[2]).wait()).await.unwrap()[0]);
    assert_eq!(v, [1.5, 2.0]);
    servers.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_backup_takes_over_the_states_of_the_pieces_it_copied() {
    register();
    let mut servers = Servers::start_replicated(2, 2, 1, Mode::Sync, 4).await;
    let mut workers = Vec::new();
    for rank in 0..2 {
        let mut p = servers.plane(rank, 2, Mode::Sync, 4);
        p.replicas = 1;
        workers.push(within(ps_core::worker::Worker::connect(p)).await.unwrap());
    }
    // Key 1 (2 elements) lives on one server; key 2 (8 elements, above the bound) on both.
    for w in &workers {
        let items = vec![
            (1, DType::F32, vec![2], f32s(&[0.0; 2])),
            (2, DType::F32, vec![8], f32s(&[0.0; 8])),
        ];
        within(w.init(items).wait()).await.unwrap();
        within(w.set_optimizer(&python("add"))).await.unwrap();
    }
    // Each round t adds t·(g + g) with g = 1 (the count t is each piece's state).
    let round = |t: u64| {
        let tickets: Vec<_> = workers
            .iter()
            .map(|w| {
                w.pushpull(vec![
                    (1, DType::F32, f32s(&[1.0; 2])),
                    (2, DType::F32, f32s(&[1.0; 8])),
                ])
            })
            .collect();
        async move {
            let want = (t * (t + 1)) as f32; // Σ 2s for s = 1..=t
            for tk in tickets {
                let v = within(tk.wait()).await.unwrap();
                assert_eq!(
                    (to_f32(&v[0]), to_f32(&v[1])),
                    (vec![want; 2], vec![want; 8])
                );
            }
        }
    };
    for t in 1..=3 {
        round(t).await;
    }
    // Server 0 leaves; server 1 takes its pieces over with their counts.
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
    round(4).await;
    round(5).await;
}
