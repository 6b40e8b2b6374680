//! Adam: MXNet's Python `Adam.update` folds the bias correction into the learning rate with the
//! key's update count `t`, then runs the `adam_update` kernel. Weight decay is added to the
//! rescaled gradient before clipping. Buffers: `[mean, var]`.

use super::{Hyper, Step, clip};
use crate::dtype::Float;

/// One Adam update.
#[allow(clippy::needless_range_loop)] // indexed loops over equal-length slices vectorise
pub(super) fn update<T: Float>(
    h: &Hyper,
    s: Step,
    w: &mut [T],
    g: &[T],
    mean: &mut [T],
    var: &mut [T],
) {
    let n = w.len();
    let (g, mean, var) = (&g[..n], &mut mean[..n], &mut var[..n]);
    // lr_t = lr·√(1 − β2^t) / (1 − β1^t), in f64 as MXNet's Python computes it.
    let t = s.t as f64;
    let lr_t = s.lr * (1.0 - h.beta2.powf(t)).sqrt() / (1.0 - h.beta1.powf(t));
    let lr = T::of(lr_t);
    let wd = T::of(s.wd);
    let (b1, b2) = (T::of(h.beta1), T::of(h.beta2));
    let (one_b1, one_b2) = (T::of(1.0 - h.beta1), T::of(1.0 - h.beta2));
    let eps = T::of(h.epsilon);
    let rescale = T::of(h.rescale_grad);
    let bound = T::of(h.kernel_clip());
    // ĝ = clip(r·g + wd·w, c);  m ← β1·m + (1−β1)·ĝ;  v ← β2·v + (1−β2)·ĝ²;
    // w ← w − lr_t·m / (√v + ε)
    for i in 0..n {
        let gi = clip(rescale * g[i] + wd * w[i], bound);
        let m = b1 * mean[i] + one_b1 * gi;
        let v = b2 * var[i] + one_b2 * gi * gi;
        mean[i] = m;
        var[i] = v;
        w[i] = w[i] - lr * m / (v.sqrt() + eps);
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::{GRADS, W0, assert_close, run, updater};
    use crate::dtype::Float;

    /// Adam as in Kingma & Ba with explicit bias-corrected moments, in f64:
    /// w = w − lr·m̂ / (√v̂ + ε̂) where ε̂ = ε/√(1−β2^t) reproduces MXNet's ε outside the
    /// correction: lr·√(1−β2^t)/(1−β1^t)·m/(√v + ε) = lr·m̂/(√v̂ + ε/√(1−β2^t)).
    fn reference(
        lr: f64,
        wd: f64,
        r: f64,
        clip: Option<f64>,
        b1: f64,
        b2: f64,
        eps: f64,
    ) -> Vec<f64> {
        let mut w = W0.to_vec();
        let (mut m, mut v) = (vec![0.0; w.len()], vec![0.0; w.len()]);
        for (step, g) in GRADS.iter().enumerate() {
            let t = (step + 1) as i32;
            for i in 0..w.len() {
                let mut gi = r * g[i] + wd * w[i];
                if let Some(c) = clip {
                    gi = gi.clamp(-c, c);
                }
                m[i] = b1 * m[i] + (1.0 - b1) * gi;
                v[i] = b2 * v[i] + (1.0 - b2) * gi * gi;
                let m_hat = m[i] / (1.0 - b1.powi(t));
                let v_hat = v[i] / (1.0 - b2.powi(t));
                let eps_hat = eps / (1.0 - b2.powi(t)).sqrt();
                w[i] -= lr * m_hat / (v_hat.sqrt() + eps_hat);
            }
        }
        w
    }

    fn check<T: Float>() {
        let (w, st) = run::<T>(&updater("adam", &[]), &W0, &GRADS);
        assert_close(&w, &reference(0.001, 0.0, 1.0, None, 0.9, 0.999, 1e-8));
        assert_eq!((st.steps, st.buffers.len()), (3, 2));

        let params = [
            ("learning_rate", 0.1),
            ("beta1", 0.8),
            ("beta2", 0.99),
            ("epsilon", 1e-3),
            ("wd", 0.05),
            ("rescale_grad", 0.5),
            ("clip_gradient", 0.6),
        ];
        let (w, _) = run::<T>(&updater("adam", &params), &W0, &GRADS);
        assert_close(&w, &reference(0.1, 0.05, 0.5, Some(0.6), 0.8, 0.99, 1e-3));
    }

    #[test]
    fn adam_matches_reference() {
        check::<f32>();
        check::<f64>();
    }

    #[test]
    fn adam_known_numbers() {
        // t = 1, lr 0.1, w 1, g 0.5: m = 0.05, v = 0.00025, √v = 0.0158113883...,
        // lr_t = 0.1·√0.001/0.1 = 0.0316227766..., so lr_t·m/√v = 0.1 exactly and
        // w = 1 − 0.1/(1 + 1e-8/√v) = 1 − 0.1·(1 − 6.32455e-7 + ...) = 0.9000000632455...
        let u = updater("adam", &[("learning_rate", 0.1)]);
        let (w, st) = run::<f64>(&u, &[1.0], &[[0.5]]);
        assert_close(&w, &[0.9000000632455132]);
        assert_close(&st.buffers[0], &[0.05]);
        assert_close(&st.buffers[1], &[0.00025]);
    }

    #[test]
    fn bias_correction_counts_from_begin_num_update() {
        // With begin_num_update = 1000, t = 1001: the corrections are ≈ 1, so the first
        // step moves by lr·m/(√v + ε) = lr·0.1·g/(√0.001·|g| + ε) ≈ 0.316·lr.
        let u = updater(
            "adam",
            &[("learning_rate", 0.1), ("begin_num_update", 1000.0)],
        );
        let (w, st) = run::<f64>(&u, &[1.0], &[[0.5]]);
        assert_eq!(st.steps, 1001);
        let t = 1001;
        let lr_t = 0.1 * (1.0 - 0.999f64.powi(t)).sqrt() / (1.0 - 0.9f64.powi(t));
        assert_close(&w, &[1.0 - lr_t * 0.05 / (0.00025f64.sqrt() + 1e-8)]);
    }
}
