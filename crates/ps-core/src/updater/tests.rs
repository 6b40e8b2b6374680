//! Tests across optimizers: specs, multipliers, `set_params`, state layout, errors; and the
//! helpers the optimizers' and encodings' own tests use.

use std::mem::size_of;

use super::*;

/// Starting weights of the reference runs.
pub(super) const W0: [f64; 6] = [1.0, -2.0, 0.5, 3.0, -0.25, 0.75];

/// Three steps of gradients; with `rescale_grad` 0.5 and `clip_gradient` 0.6 several clip.
pub(super) const GRADS: [[f64; 6]; 3] = [
    [0.5, 0.25, -3.0, 1.5, 2.5, -0.7],
    [-0.4, 0.3, -2.0, 1.0, -2.2, 0.1],
    [0.2, -0.6, 2.8, 0.9, 0.05, -1.9],
];

pub(super) fn spec(name: &str, params: &[(&str, f64)]) -> OptimizerSpec {
    OptimizerSpec {
        name: name.into(),
        params: params.iter().map(|(n, v)| (n.to_string(), *v)).collect(),
        key_mults: Vec::new(),
        payload: Vec::new(),
    }
}

pub(super) fn updater(name: &str, params: &[(&str, f64)]) -> Native {
    Native::new(&spec(name, params)).unwrap()
}

/// Converts to `T` through [`Float::of`].
fn to<T: Float>(v: &[f64]) -> Vec<T> {
    v.iter().map(|x| T::of(*x)).collect()
}

/// Runs one update of key 0 per gradient, in `T`, from weights `w0` and a fresh state.
pub(super) fn run<T: Float>(
    u: &Native,
    w0: &[f64],
    grads: &[impl AsRef<[f64]>],
) -> (Vec<T>, State<T>) {
    run_key(u, 0, w0, grads)
}

fn run_key<T: Float>(
    u: &Native,
    key: u64,
    w0: &[f64],
    grads: &[impl AsRef<[f64]>],
) -> (Vec<T>, State<T>) {
    let mut w = to::<T>(w0);
    let mut state = u.new_state::<T>(w.len());
    for g in grads {
        u.update(key, &mut w, &to::<T>(g.as_ref()), &mut state);
    }
    (w, state)
}

/// Asserts `got` equals `want` to a relative 1e-12 for f64, 2e-6 for f32 (absolute below 1).
#[track_caller]
pub(super) fn assert_close<T: Float>(got: &[T], want: &[f64]) {
    let tol = if size_of::<T>() == 8 { 1e-12 } else { 2e-6 };
    assert_eq!(got.len(), want.len());
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        let g = g.to_f64().unwrap_or(f64::NAN);
        assert!(
            (g - w).abs() <= tol * w.abs().max(1.0),
            "element {i}: got {g}, want {w} (all: {got:?} vs {want:?})"
        );
    }
}

fn err(result: Result<Native>) -> String {
    match result {
        Ok(u) => panic!("expected an error, built {u:?}"),
        Err(e) => {
            assert!(matches!(e, PsError::Optimizer(_)), "{e:?}");
            e.to_string()
        }
    }
}

#[test]
fn unknown_optimizer_is_refused_with_advice() {
    let e = err(Native::new(&spec("lamb", &[])));
    assert_eq!(
        e,
        "optimizer 'lamb' cannot run on the parameter servers (they run sgd, nag, adam, \
         adagrad, rmsprop, signum, adamax, adadelta, ftml, ftrl); use update_on_kvstore=False \
         to update on the workers"
    );
}

#[test]
fn names_are_case_insensitive_like_mxnet_registry() {
    assert_eq!(updater("SGD", &[]).name(), "sgd");
    assert_eq!(updater("RMSProp", &[]).name(), "rmsprop");
    assert_eq!(updater("AdaDelta", &[]).name(), "adadelta");
    assert_eq!(updater("FTML", &[]).name(), "ftml");
    assert_eq!(updater("Ftrl", &[]).name(), "ftrl");
}

#[test]
fn unknown_hyper_parameter_lists_the_accepted_ones() {
    let e = err(Native::new(&spec("adam", &[("momentum", 0.9)])));
    assert_eq!(
        e,
        "optimizer 'adam' does not take hyper-parameter 'momentum'; it takes learning_rate, wd, \
         rescale_grad, clip_gradient, begin_num_update, multi_precision, lazy_update, beta1, \
         beta2, epsilon"
    );
    let e = err(Native::new(&spec("adagrad", &[("epsilon", 1e-6)])));
    assert!(
        e.contains("'epsilon'") && e.ends_with("lazy_update, eps"),
        "{e}"
    );
}

#[test]
fn invalid_values_are_named() {
    let cases: &[(&str, &str, f64, &str)] = &[
        (
            "sgd",
            "learning_rate",
            f64::NAN,
            "learning_rate must be a finite number, got NaN",
        ),
        (
            "sgd",
            "learning_rate",
            -0.1,
            "learning_rate must be >= 0, got -0.1",
        ),
        (
            "sgd",
            "wd",
            f64::INFINITY,
            "wd must be a finite number, got inf",
        ),
        (
            "sgd",
            "momentum",
            1.0,
            "momentum must be in [0, 1), got 1.0",
        ),
        (
            "nag",
            "momentum",
            -0.5,
            "momentum must be in [0, 1), got -0.5",
        ),
        ("adam", "beta1", 1.5, "beta1 must be in [0, 1), got 1.5"),
        ("adam", "beta2", -0.1, "beta2 must be in [0, 1), got -0.1"),
        ("adam", "epsilon", 0.0, "epsilon must be > 0, got 0.0"),
        ("adagrad", "eps", -1e-7, "eps must be > 0, got -1e-7"),
        (
            "rmsprop",
            "gamma1",
            1.0,
            "gamma1 must be in [0, 1), got 1.0",
        ),
        (
            "rmsprop",
            "centered",
            2.0,
            "centered must be 0 or 1, got 2.0",
        ),
        (
            "rmsprop",
            "clip_weights",
            f64::NEG_INFINITY,
            "clip_weights must be a finite number",
        ),
        ("signum", "wd_lh", -1.0, "wd_lh must be >= 0, got -1.0"),
        ("adamax", "beta2", 1.0, "beta2 must be in [0, 1), got 1.0"),
        ("adadelta", "rho", 1.0, "rho must be in [0, 1), got 1.0"),
        ("adadelta", "epsilon", 0.0, "epsilon must be > 0, got 0.0"),
        ("ftml", "beta1", -0.1, "beta1 must be in [0, 1), got -0.1"),
        (
            "sgd",
            "rescale_grad",
            0.0,
            "rescale_grad must be > 0, got 0.0",
        ),
        (
            "sgd",
            "clip_gradient",
            f64::NAN,
            "clip_gradient must be a finite number, got NaN",
        ),
        (
            "sgd",
            "lazy_update",
            0.5,
            "lazy_update must be 0 or 1, got 0.5",
        ),
        (
            "adam",
            "begin_num_update",
            1.5,
            "begin_num_update must be a whole number >= 0",
        ),
    ];
    for (name, param, value, msg) in cases {
        let e = err(Native::new(&spec(name, &[(param, *value)])));
        assert!(e.starts_with(&format!("optimizer '{name}': ")), "{e}");
        assert!(e.contains(msg), "{e} does not say {msg}");
    }
    let mut s = spec("sgd", &[]);
    s.key_mults = vec![(7, 1.0, -2.0)];
    assert_eq!(
        err(Native::new(&s)),
        "wd_mult of key 7 must be a finite number >= 0, got -2.0"
    );
}

#[test]
fn defaults_follow_mxnet() {
    let lrs = [
        ("sgd", 0.01),
        ("nag", 0.01),
        ("adam", 0.001),
        ("adagrad", 0.01),
        ("rmsprop", 0.001),
        ("signum", 0.01),
        ("adamax", 0.002),
        ("adadelta", 0.01),
        ("ftml", 0.01),
        ("ftrl", 0.1),
    ];
    for (name, lr) in lrs {
        assert_eq!(updater(name, &[]).learning_rate(), lr, "{name}");
    }
    let counts = [
        ("sgd", 0),
        ("nag", 0),
        ("adam", 2),
        ("adagrad", 1),
        ("rmsprop", 1),
        ("signum", 1),
        ("adamax", 2),
        ("adadelta", 2),
        ("ftml", 3),
        ("ftrl", 2),
    ];
    for (name, n) in counts {
        let st = updater(name, &[]).new_state::<f32>(5);
        assert_eq!((st.steps, st.buffers.len()), (0, n), "{name}");
        assert!(st.buffers.iter().all(|b| b == &[0.0; 5]));
    }
    let u = updater("sgd", &[("momentum", 0.9), ("begin_num_update", 7.0)]);
    let st = u.new_state::<f64>(3);
    assert_eq!((st.steps, st.buffers.len()), (7, 1));
    assert_eq!(
        updater("rmsprop", &[("centered", 1.0)])
            .new_state::<f32>(1)
            .buffers
            .len(),
        3
    );
    let ftml = updater("ftml", &[]).hyper;
    assert_eq!((ftml.beta1, ftml.beta2, ftml.epsilon), (0.6, 0.999, 1e-8));
    let adadelta = updater("adadelta", &[]).hyper;
    assert_eq!((adadelta.rho, adadelta.epsilon), (0.9, 1e-5));
    let ftrl = updater("ftrl", &[]).hyper;
    assert_eq!((ftrl.lamda1, ftrl.beta), (0.01, 1.0));
    let adamax = updater("adamax", &[]).hyper;
    assert_eq!((adamax.beta1, adamax.beta2), (0.9, 0.999));
}

#[test]
fn new_optimizers_take_only_their_own_parameters() {
    let e = err(Native::new(&spec("adamax", &[("epsilon", 1e-3)])));
    assert!(e.ends_with("lazy_update, beta1, beta2"), "{e}");
    let e = err(Native::new(&spec("adadelta", &[("beta1", 0.5)])));
    assert!(e.ends_with("lazy_update, rho, epsilon"), "{e}");
    let e = err(Native::new(&spec("ftml", &[("rho", 0.5)])));
    assert!(e.ends_with("lazy_update, beta1, beta2, epsilon"), "{e}");
    let e = err(Native::new(&spec("ftrl", &[("momentum", 0.5)])));
    assert!(e.ends_with("lazy_update, lamda1, beta"), "{e}");
    // Every optimizer takes lazy_update (it decides how a row-sparse round is applied).
    for k in Kind::ALL {
        updater(k.name(), &[("lazy_update", 0.0)]);
    }
}

#[test]
fn flags_for_dense_arrays_change_nothing() {
    let plain = updater("sgd", &[("momentum", 0.9)]);
    let flagged = updater(
        "sgd",
        &[
            ("momentum", 0.9),
            ("lazy_update", 0.0),
            ("multi_precision", 1.0),
        ],
    );
    let a = run::<f32>(&plain, &W0, &GRADS);
    let b = run::<f32>(&flagged, &W0, &GRADS);
    assert_eq!(a, b);
}

#[test]
fn negative_clip_gradient_means_no_clipping() {
    let names = [
        "sgd", "nag", "adam", "adagrad", "rmsprop", "signum", "adamax", "adadelta", "ftml", "ftrl",
    ];
    for name in names {
        let a = run::<f64>(&updater(name, &[("learning_rate", 0.1)]), &W0, &GRADS);
        let params = [("learning_rate", 0.1), ("clip_gradient", -1.0)];
        let b = run::<f64>(&updater(name, &params), &W0, &GRADS);
        assert_eq!(a, b, "{name}");
        // Zero is "off" for the fused kernels (MXNet passes it only when truthy).
        if name != "adagrad" {
            let params = [("learning_rate", 0.1), ("clip_gradient", 0.0)];
            assert_eq!(
                a,
                run::<f64>(&updater(name, &params), &W0, &GRADS),
                "{name}"
            );
        }
    }
}

#[test]
fn key_multipliers_scale_lr_and_wd() {
    let mut s = spec(
        "sgd",
        &[("learning_rate", 0.1), ("wd", 0.01), ("momentum", 0.9)],
    );
    s.key_mults = vec![(3, 2.0, 0.0), (4, 0.5, 3.0)];
    let u = Native::new(&s).unwrap();
    for (key, lr, wd) in [(0, 0.1, 0.01), (3, 0.2, 0.0), (4, 0.05, 0.03)] {
        let (got, _) = run_key::<f64>(&u, key, &W0, &GRADS);
        let same = updater(
            "sgd",
            &[("learning_rate", lr), ("wd", wd), ("momentum", 0.9)],
        );
        let (want, _) = run::<f64>(&same, &W0, &GRADS);
        assert_close(&got, &want);
    }
    // Adam's bias correction multiplies the key's learning rate, not the base one.
    let mut s = spec("adam", &[("learning_rate", 0.1), ("wd", 0.01)]);
    s.key_mults = vec![(9, 0.25, 2.0)];
    let (got, _) = run_key::<f64>(&Native::new(&s).unwrap(), 9, &W0, &GRADS);
    let (want, _) = run::<f64>(
        &updater("adam", &[("learning_rate", 0.025), ("wd", 0.02)]),
        &W0,
        &GRADS,
    );
    assert_close(&got, &want);
    // AdaDelta takes no learning rate: lr_mult changes nothing, wd_mult scales the decay.
    let mut s = spec("adadelta", &[("wd", 0.01)]);
    s.key_mults = vec![(5, 0.0, 3.0)];
    let (got, _) = run_key::<f64>(&Native::new(&s).unwrap(), 5, &W0, &GRADS);
    let (want, _) = run::<f64>(&updater("adadelta", &[("wd", 0.03)]), &W0, &GRADS);
    assert_close(&got, &want);
}

#[test]
fn set_params_changes_learning_rate_between_steps() {
    let mut u = updater("sgd", &[("learning_rate", 0.1), ("momentum", 0.9)]);
    let mut w = vec![1.0f64, -2.0];
    let mut st = u.new_state::<f64>(2);
    u.update(0, &mut w, &[0.5, 0.25], &mut st);
    u.set_params(&[("learning_rate".into(), 0.05)], &[])
        .unwrap();
    assert_eq!(u.learning_rate(), 0.05);
    u.update(0, &mut w, &[0.5, 0.25], &mut st);
    // m1 = −0.1·g = [−0.05, −0.025], w1 = [0.95, −2.025];
    // m2 = 0.9·m1 − 0.05·g = [−0.07, −0.035], w2 = [0.88, −2.06]
    assert_close(&w, &[0.88, -2.06]);
    assert_close(&st.buffers[0], &[-0.07, -0.035]);
    assert_eq!(st.steps, 2);

    // Multipliers merge: key 1 gets its own, key 2 keeps its earlier pair.
    u.set_params(&[], &[(2, 0.5, 1.0)]).unwrap();
    u.set_params(&[], &[(1, 3.0, 1.0)]).unwrap();
    assert_eq!(u.mults.get(&2), Some(&(0.5, 1.0)));
    assert_eq!(u.mults.get(&1), Some(&(3.0, 1.0)));
}

#[test]
fn bad_set_params_changes_nothing() {
    let mut s = spec("adam", &[("learning_rate", 0.1)]);
    s.key_mults = vec![(1, 2.0, 1.0)];
    let mut u = Native::new(&s).unwrap();
    let (hyper, mults) = (u.hyper.clone(), u.mults.clone());
    type Attempt = (Vec<(String, f64)>, Vec<(u64, f64, f64)>);
    let attempts: [Attempt; 3] = [
        (
            vec![("learning_rate".into(), 0.5), ("beta1".into(), 1.0)],
            vec![],
        ),
        (
            vec![("learning_rate".into(), 0.5)],
            vec![(1, 1.0, 1.0), (2, f64::NAN, 1.0)],
        ),
        (
            vec![("wd".into(), 0.1), ("momentum".into(), 0.9)],
            vec![(1, 5.0, 5.0)],
        ),
    ];
    for (params, key_mults) in attempts {
        let e = u.set_params(&params, &key_mults).unwrap_err();
        assert!(matches!(e, PsError::Optimizer(_)), "{e:?}");
        assert_eq!(u.hyper, hyper);
        assert_eq!(u.mults, mults);
    }
}

#[test]
fn state_follows_a_changed_layout() {
    // Momentum switched on after the first step: the buffer starts from zero, steps keep going.
    let mut u = updater("sgd", &[("learning_rate", 0.1)]);
    let mut w = vec![1.0f64];
    let mut st = u.new_state::<f64>(1);
    u.update(0, &mut w, &[0.5], &mut st);
    u.set_params(&[("momentum".into(), 0.9)], &[]).unwrap();
    u.update(0, &mut w, &[0.5], &mut st);
    assert_close(&w, &[0.9]);
    assert_close(&st.buffers[0], &[-0.05]);
    assert_eq!(st.steps, 2);

    // Centered RMSProp switched off keeps the mean square and drops the rest.
    let mut u = updater("rmsprop", &[("centered", 1.0)]);
    let mut st = u.new_state::<f32>(2);
    u.update(0, &mut [1.0, 2.0], &[0.5, 0.5], &mut st);
    let n = st.buffers[0].clone();
    u.set_params(&[("centered".into(), 0.0)], &[]).unwrap();
    let mut w = [1.0f32, 2.0];
    u.update(0, &mut w, &[0.0, 0.0], &mut st);
    assert_eq!(st.buffers.len(), 1);
    assert_close(&st.buffers[0], &[0.9 * n[0] as f64, 0.9 * n[1] as f64]);

    // A state of the wrong length is replaced by zeros of the right one.
    let u = updater("adam", &[]);
    let mut st = State::<f64> {
        steps: 4,
        buffers: vec![vec![1.0; 3]],
    };
    u.update(0, &mut [1.0, 1.0], &[0.1, 0.1], &mut st);
    assert_eq!((st.steps, st.buffers.len(), st.buffers[1].len()), (5, 2, 2));
}

/// Overwrites bytes at the (wrapped) positions in `flips`, then cuts at `cut` (wrapped): the
/// mutations the decoders' property tests apply to valid encodings.
pub(super) fn mutate(mut bytes: Vec<u8>, flips: &[(usize, u8)], cut: usize) -> Vec<u8> {
    let n = bytes.len();
    for &(at, v) in flips {
        bytes[at % n] = v;
    }
    bytes.truncate(cut % (n + 1));
    bytes
}
