//! FTML, Follow the Moving Leader (Zheng & Kwok, ICML 2017), as mxrs's Python `FTML`. Weight
//! decay is added to the rescaled gradient before clipping; both bias corrections use the key's
//! update count `t`, and `(1 − β1^t) / lr` is computed in f64. Buffers: `[d, v, z]`.
//!
//! A zero learning rate (e.g. `lr_mult` 0 for a frozen key) leaves the weights and buffers as
//! they are: the rule divides by it, and the weights' limit as it goes to zero is no change.

use super::{Hyper, Step, clip};
use crate::dtype::Float;

/// One FTML update.
#[allow(clippy::needless_range_loop)] // indexed loops over equal-length slices vectorise
pub(super) fn update<T: Float>(
    h: &Hyper,
    s: Step,
    w: &mut [T],
    g: &[T],
    d: &mut [T],
    v: &mut [T],
    z: &mut [T],
) {
    if s.lr == 0.0 {
        return;
    }
    let n = w.len();
    let (g, d, v, z) = (&g[..n], &mut d[..n], &mut v[..n], &mut z[..n]);
    let t = s.t as f64;
    let scale = T::of((1.0 - h.beta1.powf(t)) / s.lr);
    let correction = T::of(1.0 - h.beta2.powf(t));
    let wd = T::of(s.wd);
    let (b1, one_b1) = (T::of(h.beta1), T::of(1.0 - h.beta1));
    let (b2, one_b2) = (T::of(h.beta2), T::of(1.0 - h.beta2));
    let eps = T::of(h.epsilon);
    let rescale = T::of(h.rescale_grad);
    let bound = T::of(h.kernel_clip());
    // ĝ = clip(r·g + wd·w, c);  v ← β2·v + (1−β2)·ĝ²;
    // d_t = (√(v / (1−β2^t)) + ε) · (1−β1^t)/lr;  z ← β1·z + (1−β1)·ĝ − (d_t − β1·d)·w;
    // w ← −z / d_t;  d ← d_t
    for i in 0..n {
        let gi = clip(rescale * g[i] + wd * w[i], bound);
        let vi = b2 * v[i] + one_b2 * (gi * gi);
        let dt = ((vi / correction).sqrt() + eps) * scale;
        let sigma = dt - d[i] * b1;
        let zi = b1 * z[i] + one_b1 * gi - sigma * w[i];
        v[i] = vi;
        d[i] = dt;
        z[i] = zi;
        w[i] = -zi / dt;
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::{GRADS, W0, assert_close, run, updater};
    use crate::dtype::Float;

    /// FTML in the paper's form, in f64: with d_t as above, w_t minimises
    /// Σ_s ⟨ĝ_s, w⟩ + ½‖w‖²_{σ_s} in closed form, w = −z_t / d_t, where z_t accumulates
    /// ĝ_s − σ_s·w_{s−1} discounted by β1 and σ_s = d_s − β1·d_{s−1}.
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
        let len = w.len();
        let (mut d_prev, mut v, mut z) = (vec![0.0; len], vec![0.0; len], vec![0.0; len]);
        for (step, g) in GRADS.iter().enumerate() {
            let t = (step + 1) as i32;
            for i in 0..len {
                let mut gi = r * g[i] + wd * w[i];
                if let Some(c) = clip {
                    gi = gi.clamp(-c, c);
                }
                v[i] = b2 * v[i] + (1.0 - b2) * gi * gi;
                let v_hat = v[i] / (1.0 - b2.powi(t));
                let d = (1.0 - b1.powi(t)) / lr * (v_hat.sqrt() + eps);
                let sigma = d - b1 * d_prev[i];
                z[i] = b1 * z[i] + (1.0 - b1) * gi - sigma * w[i];
                w[i] = -z[i] / d;
                d_prev[i] = d;
            }
        }
        w
    }

    fn check<T: Float>() {
        let (w, st) = run::<T>(&updater("ftml", &[]), &W0, &GRADS);
        assert_close(&w, &reference(0.01, 0.0, 1.0, None, 0.6, 0.999, 1e-8));
        assert_eq!((st.steps, st.buffers.len()), (3, 3));

        let params = [
            ("learning_rate", 0.1),
            ("beta1", 0.8),
            ("beta2", 0.99),
            ("epsilon", 1e-3),
            ("wd", 0.05),
            ("rescale_grad", 0.5),
            ("clip_gradient", 0.6),
        ];
        let (w, _) = run::<T>(&updater("ftml", &params), &W0, &GRADS);
        assert_close(&w, &reference(0.1, 0.05, 0.5, Some(0.6), 0.8, 0.99, 1e-3));

        let params = [("learning_rate", 0.02), ("beta1", 0.0), ("beta2", 0.5)];
        let (w, _) = run::<T>(&updater("ftml", &params), &W0, &GRADS);
        assert_close(&w, &reference(0.02, 0.0, 1.0, None, 0.0, 0.5, 1e-8));
    }

    #[test]
    fn ftml_matches_reference() {
        check::<f32>();
        check::<f64>();
    }

    #[test]
    fn ftml_known_numbers() {
        // lr 0.1, β1 0.6, β2 0.999, ε 1e-8, w 1, g 0.5, t = 1:
        // v = 0.001·0.25 = 0.00025, √(v/0.001) = 0.5, d = (0.5 + 1e-8)·0.4/0.1 = 2.00000004,
        // z = 0.4·0.5 − 2.00000004·1 = −1.80000004,
        // w = 1.80000004/2.00000004 = 0.9 + 0.4e-8/2.00000004 = 0.90000000199999996.
        let u = updater("ftml", &[("learning_rate", 0.1)]);
        let (w, st) = run::<f64>(&u, &[1.0], &[[0.5]]);
        assert_close(&w, &[0.900000002]);
        assert_close(&st.buffers[0], &[2.00000004]);
        assert_close(&st.buffers[1], &[0.00025]);
        assert_close(&st.buffers[2], &[-1.80000004]);
    }

    #[test]
    fn zero_learning_rate_changes_nothing() {
        let u = updater("ftml", &[("learning_rate", 0.0)]);
        let (w, st) = run::<f32>(&u, &W0, &GRADS);
        assert_close(&w, &W0);
        assert_eq!(st.steps, 3);
        assert!(st.buffers.iter().flatten().all(|&x| x == 0.0));
    }
}
