//! AdaGrad: MXNet's Python `AdaGrad.update` on dense arrays (its `adagrad_update` kernel only
//! serves row-sparse gradients). Gradients are rescaled and clipped (`clip_gradient` of 0 clips
//! to zero, as `clip(grad, -0, 0)` does in MXNet); weight decay is added outside the adaptive
//! step; `eps` sits inside the square root. Buffers: `[history]`.

use super::{Hyper, Step, clip};
use crate::dtype::Float;

/// One AdaGrad update.
#[allow(clippy::needless_range_loop)] // indexed loops over equal-length slices vectorise
pub(super) fn update<T: Float>(h: &Hyper, s: Step, w: &mut [T], g: &[T], history: &mut [T]) {
    let n = w.len();
    let (g, history) = (&g[..n], &mut history[..n]);
    let lr = T::of(s.lr);
    let wd = T::of(s.wd);
    let eps = T::of(h.eps);
    let rescale = T::of(h.rescale_grad);
    let bound = T::of(h.clip_gradient.unwrap_or(f64::INFINITY));
    // ĝ = clip(r·g, c);  H ← H + ĝ²;  w ← w − lr·(ĝ/√(H + eps) + wd·w)
    for i in 0..n {
        let gi = clip(rescale * g[i], bound);
        let hi = history[i] + gi * gi;
        history[i] = hi;
        w[i] = w[i] - lr * (gi / (hi + eps).sqrt() + wd * w[i]);
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::{GRADS, W0, assert_close, run, updater};
    use crate::dtype::Float;

    /// AdaGrad in f64: accumulate squared (rescaled, clipped) gradients, step by the gradient
    /// over their root, plus plain L2 decay at the same learning rate.
    fn reference(lr: f64, wd: f64, r: f64, clip: Option<f64>, eps: f64) -> Vec<f64> {
        let mut w = W0.to_vec();
        let mut sum_sq = vec![0.0; w.len()];
        for g in &GRADS {
            for i in 0..w.len() {
                let mut gi = r * g[i];
                if let Some(c) = clip {
                    gi = gi.clamp(-c, c);
                }
                sum_sq[i] += gi * gi;
                let adaptive = gi / (sum_sq[i] + eps).sqrt();
                w[i] -= lr * adaptive + lr * wd * w[i];
            }
        }
        w
    }

    fn check<T: Float>() {
        let (w, st) = run::<T>(&updater("adagrad", &[]), &W0, &GRADS);
        assert_close(&w, &reference(0.01, 0.0, 1.0, None, 1e-7));
        assert_eq!((st.steps, st.buffers.len()), (3, 1));

        let params = [
            ("learning_rate", 0.1),
            ("eps", 1e-3),
            ("wd", 0.05),
            ("rescale_grad", 0.5),
            ("clip_gradient", 0.6),
        ];
        let (w, _) = run::<T>(&updater("adagrad", &params), &W0, &GRADS);
        assert_close(&w, &reference(0.1, 0.05, 0.5, Some(0.6), 1e-3));

        // MXNet's Python clips whenever clip_gradient is not None: 0 zeroes every gradient.
        let params = [("learning_rate", 0.1), ("wd", 0.05), ("clip_gradient", 0.0)];
        let (w, _) = run::<T>(&updater("adagrad", &params), &W0, &GRADS);
        assert_close(&w, &reference(0.1, 0.05, 1.0, Some(0.0), 1e-7));
    }

    #[test]
    fn adagrad_matches_reference() {
        check::<f32>();
        check::<f64>();
    }

    #[test]
    fn adagrad_known_numbers() {
        // lr 0.1, eps 0 in effect (1e-7 ≪ 0.25): H1 = 0.25, w1 = 1 − 0.1·0.5/0.5 = 0.9;
        // H2 = 0.5, w2 = 0.9 − 0.1·0.5/√0.5 = 0.9 − 0.0707106... (eps shifts the 9th digit).
        let u = updater("adagrad", &[("learning_rate", 0.1), ("eps", 1e-30)]);
        let (w, st) = run::<f64>(&u, &[1.0], &[[0.5], [0.5]]);
        assert_close(&w, &[0.9 - 0.05 / 0.5f64.sqrt()]);
        assert_close(&st.buffers[0], &[0.5]);
    }
}
