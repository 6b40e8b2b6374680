//! SGD: MXNet's `sgd_update` (momentum 0) and `sgd_mom_update` kernels, which the Python `SGD`
//! calls with `lr`/`wd` already multiplied by the key's `lr_mult`/`wd_mult`. Gradients are
//! rescaled and clipped first, weight decay added after clipping. Buffers: `[momentum]` when
//! `momentum != 0`, else none. NAG with momentum 0 runs [`plain`] too, as MXNet does.

use super::{Hyper, Step, clip};
use crate::dtype::Float;

/// One update without momentum.
#[allow(clippy::needless_range_loop)] // indexed loops over equal-length slices vectorise
pub(super) fn plain<T: Float>(h: &Hyper, s: Step, w: &mut [T], g: &[T]) {
    let n = w.len();
    let g = &g[..n];
    let keep = T::of(1.0 - s.lr * s.wd);
    let lr = T::of(s.lr);
    let rescale = T::of(h.rescale_grad);
    let bound = T::of(h.kernel_clip());
    // w ← (1 − lr·wd)·w − lr·clip(r·g, c)
    for i in 0..n {
        w[i] = keep * w[i] - lr * clip(rescale * g[i], bound);
    }
}

/// One update with momentum; `mom` holds MXNet's (negative-direction) momentum.
#[allow(clippy::needless_range_loop)]
pub(super) fn momentum<T: Float>(h: &Hyper, s: Step, w: &mut [T], g: &[T], mom: &mut [T]) {
    let n = w.len();
    let (g, mom) = (&g[..n], &mut mom[..n]);
    let mu = T::of(h.momentum);
    let lr = T::of(s.lr);
    let lr_wd = T::of(s.lr * s.wd);
    let rescale = T::of(h.rescale_grad);
    let bound = T::of(h.kernel_clip());
    // m ← μ·m − lr·wd·w − lr·clip(r·g, c);   w ← w + m
    for i in 0..n {
        let m = mu * mom[i] - lr_wd * w[i] - lr * clip(rescale * g[i], bound);
        mom[i] = m;
        w[i] = w[i] + m;
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::{GRADS, W0, assert_close, run, updater};
    use crate::dtype::Float;

    /// SGD by its textbook form in f64: v = μ·v + lr·(clip(r·g) + wd·w); w = w − v.
    fn reference(lr: f64, wd: f64, mu: f64, r: f64, clip: Option<f64>) -> Vec<f64> {
        let mut w = W0.to_vec();
        let mut v = vec![0.0; w.len()];
        for g in &GRADS {
            for i in 0..w.len() {
                let mut gi = r * g[i];
                if let Some(c) = clip {
                    gi = gi.clamp(-c, c);
                }
                v[i] = mu * v[i] + lr * (gi + wd * w[i]);
                w[i] -= v[i];
            }
        }
        w
    }

    fn check<T: Float>() {
        let (w, st) = run::<T>(&updater("sgd", &[]), &W0, &GRADS);
        assert_close(&w, &reference(0.01, 0.0, 0.0, 1.0, None));
        assert!(st.buffers.is_empty());
        assert_eq!(st.steps, 3);

        let u = updater(
            "sgd",
            &[
                ("learning_rate", 0.1),
                ("momentum", 0.9),
                ("wd", 0.05),
                ("rescale_grad", 0.5),
                ("clip_gradient", 0.6),
            ],
        );
        let (w, st) = run::<T>(&u, &W0, &GRADS);
        assert_close(&w, &reference(0.1, 0.05, 0.9, 0.5, Some(0.6)));
        assert_eq!(st.buffers.len(), 1);

        let u = updater(
            "sgd",
            &[("learning_rate", 0.1), ("wd", 0.05), ("clip_gradient", 0.6)],
        );
        let (w, _) = run::<T>(&u, &W0, &GRADS);
        assert_close(&w, &reference(0.1, 0.05, 0.0, 1.0, Some(0.6)));
    }

    #[test]
    fn sgd_matches_reference() {
        check::<f32>();
        check::<f64>();
    }

    #[test]
    fn one_array_update_matches_the_servers() {
        use super::super::{SgdStep, sgd_update};
        let step = SgdStep {
            lr: 0.1,
            wd: 0.05,
            momentum: 0.9,
            rescale_grad: 0.5,
            clip_gradient: Some(0.6),
        };
        let mut w = W0.to_vec();
        let mut mom = vec![0.0; w.len()];
        for g in &GRADS {
            sgd_update(step, &mut w, g, Some(&mut mom)).unwrap();
        }
        assert_close(&w, &reference(0.1, 0.05, 0.9, 0.5, Some(0.6)));
        let mut w = W0.to_vec();
        let plain = SgdStep {
            momentum: 0.0,
            ..step
        };
        for g in &GRADS {
            sgd_update(plain, &mut w, g, None).unwrap();
        }
        assert_close(&w, &reference(0.1, 0.05, 0.0, 0.5, Some(0.6)));
        let err = sgd_update(step, &mut w, &GRADS[0][..1], None).unwrap_err();
        assert!(err.to_string().contains("with 1 gradients"), "{err}");
        let err = sgd_update(step, &mut w, &GRADS[0], Some(&mut [0.0])).unwrap_err();
        assert!(err.to_string().contains("and 1 momenta"), "{err}");
    }

    #[test]
    fn sgd_momentum_known_numbers() {
        // m1 = −lr·wd·w − lr·g = [−0.001 − 0.05, 0.002 − 0.025] = [−0.051, −0.023]
        // w1 = [0.949, −2.023]
        // m2 = 0.9·m1 − 0.001·w1 − 0.1·g = [−0.0459 − 0.000949 − 0.05, −0.0207 + 0.002023 − 0.025]
        //    = [−0.096849, −0.043677];  w2 = [0.852151, −2.066677]
        let u = updater(
            "sgd",
            &[("momentum", 0.9), ("learning_rate", 0.1), ("wd", 0.01)],
        );
        let (w, st) = run::<f64>(&u, &[1.0, -2.0], &[[0.5, 0.25], [0.5, 0.25]]);
        assert_close(&w, &[0.852151, -2.066677]);
        assert_close(&st.buffers[0], &[-0.096849, -0.043677]);
    }
}
