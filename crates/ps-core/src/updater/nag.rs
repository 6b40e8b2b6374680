//! NAG: MXNet's `nag_mom_update` kernel, which the Python `NAG` calls when `momentum > 0`
//! (momentum 0 runs `sgd_update`, here [`super::sgd::plain`]). Gradients are rescaled and clipped,
//! then weight decay is added. Buffers: `[momentum]` when `momentum != 0`, else none.

use super::{Hyper, Step, clip};
use crate::dtype::Float;

/// One update with Nesterov momentum; `mom` holds MXNet's (negative-direction) momentum.
#[allow(clippy::needless_range_loop)] // indexed loops over equal-length slices vectorise
pub(super) fn momentum<T: Float>(h: &Hyper, s: Step, w: &mut [T], g: &[T], mom: &mut [T]) {
    let n = w.len();
    let (g, mom) = (&g[..n], &mut mom[..n]);
    let mu = T::of(h.momentum);
    let lr = T::of(s.lr);
    let wd = T::of(s.wd);
    let rescale = T::of(h.rescale_grad);
    let bound = T::of(h.kernel_clip());
    // ĝ = clip(r·g, c) + wd·w;   m ← μ·m − lr·ĝ;   w ← w + μ·m − lr·ĝ
    for i in 0..n {
        let step = lr * (clip(rescale * g[i], bound) + wd * w[i]);
        let m = mu * mom[i] - step;
        mom[i] = m;
        w[i] = w[i] + mu * m - step;
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::{GRADS, W0, assert_close, run, updater};
    use crate::dtype::Float;

    /// Nesterov in the look-ahead form of Sutskever et al., in f64:
    /// v = μ·v + ĝ;  w = w − lr·(ĝ + μ·v)  with ĝ = clip(r·g) + wd·w (constant lr).
    fn reference(lr: f64, wd: f64, mu: f64, r: f64, clip: Option<f64>) -> Vec<f64> {
        let mut w = W0.to_vec();
        let mut v = vec![0.0; w.len()];
        for g in &GRADS {
            for i in 0..w.len() {
                let mut gi = r * g[i];
                if let Some(c) = clip {
                    gi = gi.clamp(-c, c);
                }
                gi += wd * w[i];
                v[i] = mu * v[i] + gi;
                w[i] -= lr * (gi + mu * v[i]);
            }
        }
        w
    }

    fn check<T: Float>() {
        let (w, st) = run::<T>(&updater("nag", &[]), &W0, &GRADS);
        assert_close(&w, &reference(0.01, 0.0, 0.0, 1.0, None));
        assert!(st.buffers.is_empty());

        let params = [
            ("learning_rate", 0.1),
            ("momentum", 0.8),
            ("wd", 0.05),
            ("rescale_grad", 0.5),
            ("clip_gradient", 0.6),
        ];
        let (w, st) = run::<T>(&updater("nag", &params), &W0, &GRADS);
        assert_close(&w, &reference(0.1, 0.05, 0.8, 0.5, Some(0.6)));
        assert_eq!((st.steps, st.buffers.len()), (3, 1));

        // Without momentum, NAG is SGD with weight decay added after clipping.
        let params = [("learning_rate", 0.1), ("wd", 0.05), ("clip_gradient", 0.6)];
        let (w, _) = run::<T>(&updater("nag", &params), &W0, &GRADS);
        assert_close(&w, &reference(0.1, 0.05, 0.0, 1.0, Some(0.6)));
    }

    #[test]
    fn nag_matches_reference() {
        check::<f32>();
        check::<f64>();
    }

    #[test]
    fn nag_known_numbers() {
        // lr 0.1, μ 0.9, w 1, g 0.5:  m1 = −0.05, w1 = 1 − 0.045 − 0.05 = 0.905
        // m2 = −0.045 − 0.05 = −0.095,  w2 = 0.905 − 0.0855 − 0.05 = 0.7695
        let u = updater("nag", &[("momentum", 0.9), ("learning_rate", 0.1)]);
        let (w, st) = run::<f64>(&u, &[1.0], &[[0.5], [0.5]]);
        assert_close(&w, &[0.7695]);
        assert_close(&st.buffers[0], &[-0.095]);
    }
}
