//! Optimizers on the servers, end to end: the result of a round equals the same update applied
//! to the whole array in one place (whatever the slicing over servers), states survive a
//! save/load, a new optimizer starts from fresh states, and unknown ones are refused.

mod common;

use common::*;
use ps_core::protocol::frame::Mode;
use ps_core::updater::{OptimizerSpec, Piece, State, Updater};
use ps_core::{DType, PsError};

fn spec(name: &str, params: &[(&str, f64)]) -> OptimizerSpec {
    OptimizerSpec {
        name: name.into(),
        params: params.iter().map(|(k, v)| (k.to_string(), *v)).collect(),
        key_mults: vec![],
        payload: Vec::new(),
    }
}

/// Runs `rounds` sync rounds of two workers on a key of `n` elements sliced over two servers
/// and returns the pulled weights after each round.
async fn train(opt: &OptimizerSpec, w0: &[f32], grads: &[[Vec<f32>; 2]]) -> Vec<Vec<f32>> {
    let servers = Servers::start(2, 2, None).await;
    let workers = servers.workers(2, Mode::Sync, 5).await;
    let n = w0.len() as u64;
    for wk in &workers {
        within(wk.init(vec![(11, DType::F32, vec![n], f32s(w0))]).wait())
            .await
            .unwrap();
        within(wk.set_optimizer(opt)).await.unwrap();
    }
    let mut out = Vec::new();
    for g in grads {
        let t0 = workers[0].push(vec![(11, DType::F32, f32s(&g[0]))]);
        let t1 = workers[1].push(vec![(11, DType::F32, f32s(&g[1]))]);
        within(t0.wait()).await.unwrap();
        within(t1.wait()).await.unwrap();
        out.push(to_f32(
            &within(workers[0].pull(&[11]).wait()).await.unwrap()[0],
        ));
    }
    servers.stop().await;
    out
}

fn reference(opt: &OptimizerSpec, w0: &[f32], grads: &[[Vec<f32>; 2]]) -> Vec<Vec<f32>> {
    let updater = Updater::new(opt).unwrap();
    let mut w = w0.to_vec();
    let mut state: State<f32> = updater.new_state(w.len());
    grads
        .iter()
        .map(|g| {
            let sum: Vec<f32> = g[0].iter().zip(&g[1]).map(|(a, b)| a + b).collect();
            let piece = Piece { key: 11, offset: 0 };
            updater.update(piece, &mut w, &sum, &mut state).unwrap();
            w.clone()
        })
        .collect()
}

fn grads(n: usize, rounds: usize) -> Vec<[Vec<f32>; 2]> {
    (0..rounds)
        .map(|r| {
            let g = |w: usize| {
                (0..n)
                    .map(|i| ((i * 7 + r * 3 + w * 5) % 11) as f32 * 0.1 - 0.5)
                    .collect()
            };
            [g(0), g(1)]
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_optimizer_matches_one_update_of_the_whole_array() {
    let w0: Vec<f32> = (0..13).map(|i| i as f32 * 0.3 - 1.0).collect();
    let g = grads(13, 3);
    let opts = [
        spec(
            "sgd",
            &[("learning_rate", 0.1), ("momentum", 0.9), ("wd", 0.01)],
        ),
        spec(
            "nag",
            &[
                ("learning_rate", 0.1),
                ("momentum", 0.9),
                ("clip_gradient", 0.6),
            ],
        ),
        spec("adam", &[("learning_rate", 0.01), ("rescale_grad", 0.5)]),
        spec("adagrad", &[("learning_rate", 0.1)]),
        spec("rmsprop", &[("learning_rate", 0.01), ("centered", 1.0)]),
        spec("signum", &[("learning_rate", 0.01), ("momentum", 0.9)]),
    ];
    for opt in &opts {
        // The key (13 elements, bound 5) is sliced over both servers; each slice keeps its own
        // state, and together they must give exactly the whole-array update.
        assert_eq!(
            train(opt, &w0, &g).await,
            reference(opt, &w0, &g),
            "{}",
            opt.name
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn optimizer_states_survive_save_and_load() {
    let opt = spec("sgd", &[("learning_rate", 0.1), ("momentum", 0.9)]);
    let w0 = [1.0f32, -2.0, 0.5, 4.0, 3.0, -1.0, 0.0];
    let g = grads(7, 3);
    let full = reference(&opt, &w0, &g);

    // Job A: two rounds, save the states.
    let servers = Servers::start(2, 1, None).await;
    let w = servers.workers(1, Mode::Sync, 3).await.remove(0);
    within(w.init(vec![(11, DType::F32, vec![7], f32s(&w0))]).wait())
        .await
        .unwrap();
    within(w.set_optimizer(&opt)).await.unwrap();
    for gr in &g[..2] {
        let sum: Vec<f32> = gr[0].iter().zip(&gr[1]).map(|(a, b)| a + b).collect();
        within(w.push(vec![(11, DType::F32, f32s(&sum))]).wait())
            .await
            .unwrap();
    }
    let blob = within(w.save_states()).await.unwrap();
    servers.stop().await;

    // Job B starts from round 2's weights; with the momentum loaded, round 3 matches.
    let servers = Servers::start(2, 1, None).await;
    let w = servers.workers(1, Mode::Sync, 3).await.remove(0);
    within(
        w.init(vec![(11, DType::F32, vec![7], f32s(&full[1]))])
            .wait(),
    )
    .await
    .unwrap();
    let err = within(w.load_states(&blob)).await.unwrap_err();
    assert!(err.to_string().contains("no optimizer"), "{err}");
    within(w.set_optimizer(&opt)).await.unwrap();
    within(w.load_states(&blob)).await.unwrap();
    let sum: Vec<f32> = g[2][0].iter().zip(&g[2][1]).map(|(a, b)| a + b).collect();
    within(w.push(vec![(11, DType::F32, f32s(&sum))]).wait())
        .await
        .unwrap();
    let v = to_f32(&within(w.pull(&[11]).wait()).await.unwrap()[0]);
    assert_eq!(v, full[2]);
    // A corrupt blob is refused and changes nothing.
    let err = within(w.load_states(&blob[..blob.len() - 1]))
        .await
        .unwrap_err();
    assert!(matches!(err, PsError::Protocol(_)), "{err}");
    servers.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_new_optimizer_starts_fresh_and_unknown_ones_are_refused() {
    let servers = Servers::start(1, 1, None).await;
    let w = servers.workers(1, Mode::Sync, 100).await.remove(0);
    within(
        w.init(vec![(2, DType::F64, vec![2], f64s(&[0.0, 0.0]))])
            .wait(),
    )
    .await
    .unwrap();
    let mom = spec("sgd", &[("learning_rate", 1.0), ("momentum", 0.5)]);
    within(w.set_optimizer(&mom)).await.unwrap();
    let step = || w.push(vec![(2, DType::F64, f64s(&[1.0, 2.0]))]);
    within(step().wait()).await.unwrap(); // m = -g, w = -g
    // The same optimizer again (every worker sends it) keeps the momentum ...
    within(w.set_optimizer(&mom)).await.unwrap();
    within(step().wait()).await.unwrap(); // m = 0.5 m - g, w += m
    let v = to_f64(&within(w.pull(&[2]).wait()).await.unwrap()[0]);
    assert_eq!(v, [-2.5, -5.0]);
    // ... another one starts from fresh state.
    let other = spec("sgd", &[("learning_rate", 1.0), ("momentum", 0.25)]);
    within(w.set_optimizer(&other)).await.unwrap();
    within(step().wait()).await.unwrap(); // m = -g
    let v = to_f64(&within(w.pull(&[2]).wait()).await.unwrap()[0]);
    assert_eq!(v, [-3.5, -7.0]);

    let err = within(w.set_optimizer(&spec("lamb", &[])))
        .await
        .unwrap_err();
    assert!(
        matches!(&err, PsError::Optimizer(m) if m.contains("update_on_kvstore=False")),
        "{err}"
    );
    let err = within(w.set_optimizer(&spec("sgd", &[("beta1", 0.9)])))
        .await
        .unwrap_err();
    assert!(err.to_string().contains("beta1"), "{err}");
    // The refused ones left the running optimizer in place.
    within(step().wait()).await.unwrap(); // m = 0.25 m - g
    let v = to_f64(&within(w.pull(&[2]).wait()).await.unwrap()[0]);
    assert_eq!(v, [-4.75, -9.5]);
    servers.stop().await;
}
