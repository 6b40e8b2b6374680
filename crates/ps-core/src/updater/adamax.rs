//! Adamax (Kingma & Ba, 2014, §7): Adam with the infinity norm of past gradients in place of the
//! second moment, as mxrs's Python `Adamax`. The mean's bias correction divides the learning
//! rate, in f64 with the key's update count `t`; weight decay is added to the rescaled gradient
//! before clipping. Buffers: `[mean, u]`.

use super::{Hyper, Step, clip};
use crate::dtype::Float;

/// One Adamax update.
#[allow(clippy::needless_range_loop)] // indexed loops over equal-length slices vectorise
pub(super) fn update<T: Float>(
    h: &Hyper,
    s: Step,
    w: &mut [T],
    g: &[T],
    mean: &mut [T],
    u: &mut [T],
) {
    let n = w.len();
    let (g, mean, u) = (&g[..n], &mut mean[..n], &mut u[..n]);
    // lr_t = lr / (1 − β1^t), in f64 as the Python optimizer computes it.
    let lr = T::of(s.lr / (1.0 - h.beta1.powf(s.t as f64)));
    let wd = T::of(s.wd);
    let (b1, one_b1, b2) = (T::of(h.beta1), T::of(1.0 - h.beta1), T::of(h.beta2));
    let rescale = T::of(h.rescale_grad);
    let bound = T::of(h.kernel_clip());
    // ĝ = clip(r·g + wd·w, c);  m ← β1·m + (1−β1)·ĝ;  u ← max(β2·u, |ĝ|);  w ← w − lr_t·m / u
    for i in 0..n {
        let gi = clip(rescale * g[i] + wd * w[i], bound);
        let m = b1 * mean[i] + one_b1 * gi;
        let (decayed, abs) = (b2 * u[i], gi.abs());
        // A NaN on either side wins, as NumPy's `maximum`.
        let ui = if decayed.is_nan() || decayed > abs {
            decayed
        } else {
            abs
        };
        mean[i] = m;
        u[i] = ui;
        w[i] = w[i] - m * lr / ui;
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::{GRADS, W0, assert_close, run, updater};
    use crate::dtype::Float;

    /// Adamax with an explicitly bias-corrected mean, in f64: w = w − lr·m̂ / u with
    /// m̂ = m / (1 − β1^t).
    fn reference(lr: f64, wd: f64, r: f64, clip: Option<f64>, b1: f64, b2: f64) -> Vec<f64> {
        let mut w = W0.to_vec();
        let (mut m, mut u) = (vec![0.0; w.len()], vec![0.0f64; w.len()]);
        for (step, g) in GRADS.iter().enumerate() {
            let t = (step + 1) as i32;
            for i in 0..w.len() {
                let mut gi = r * g[i] + wd * w[i];
                if let Some(c) = clip {
                    gi = gi.clamp(-c, c);
                }
                m[i] = b1 * m[i] + (1.0 - b1) * gi;
                u[i] = (b2 * u[i]).max(gi.abs());
                let m_hat = m[i] / (1.0 - b1.powi(t));
                w[i] -= lr * m_hat / u[i];
            }
        }
        w
    }

    fn check<T: Float>() {
        let (w, st) = run::<T>(&updater("adamax", &[]), &W0, &GRADS);
        assert_close(&w, &reference(0.002, 0.0, 1.0, None, 0.9, 0.999));
        assert_eq!((st.steps, st.buffers.len()), (3, 2));

        let params = [
            ("learning_rate", 0.1),
            ("beta1", 0.8),
            ("beta2", 0.5),
            ("wd", 0.05),
            ("rescale_grad", 0.5),
            ("clip_gradient", 0.6),
        ];
        let (w, _) = run::<T>(&updater("adamax", &params), &W0, &GRADS);
        assert_close(&w, &reference(0.1, 0.05, 0.5, Some(0.6), 0.8, 0.5));

        let params = [("learning_rate", 0.05), ("beta1", 0.0), ("wd", 0.1)];
        let (w, _) = run::<T>(&updater("adamax", &params), &W0, &GRADS);
        assert_close(&w, &reference(0.05, 0.1, 1.0, None, 0.0, 0.999));
    }

    #[test]
    fn adamax_matches_reference() {
        check::<f32>();
        check::<f64>();
    }

    #[test]
    fn adamax_known_numbers() {
        // lr 0.1, β1 0.9, β2 0.999, w 1.
        // t = 1, g 0.5: m = 0.05, u = max(0, 0.5) = 0.5, lr_t = 0.1/0.1 = 1,
        //   w = 1 − 0.05/0.5 = 0.9.
        // t = 2, g −0.25: m = 0.045 − 0.025 = 0.02, u = max(0.4995, 0.25) = 0.4995,
        //   lr_t = 0.1/0.19, w = 0.9 − (0.1/0.19)·0.02/0.4995 = 0.9 − 0.0105263157894737/0.4995
        //   = 0.9 − 0.0210737052842316 = 0.8789262947157684.
        let u = updater("adamax", &[("learning_rate", 0.1)]);
        let (w, st) = run::<f64>(&u, &[1.0], &[[0.5]]);
        assert_close(&w, &[0.9]);
        assert_close(&st.buffers[0], &[0.05]);
        assert_close(&st.buffers[1], &[0.5]);
        let (w, st) = run::<f64>(&u, &[1.0], &[[0.5], [-0.25]]);
        assert_close(&w, &[0.8789262947157684]);
        assert_close(&st.buffers[0], &[0.02]);
        assert_close(&st.buffers[1], &[0.4995]);
    }

    #[test]
    fn nan_gradients_stay_in_the_norm() {
        let u = updater("adamax", &[]);
        let (w, st) = run::<f32>(&u, &[1.0], &[[f64::NAN], [0.5]]);
        assert!(w[0].is_nan() && st.buffers[1][0].is_nan());
    }
}
