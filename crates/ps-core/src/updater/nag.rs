//! NAG: MXNet's `nag_mom_update` kernel, which the Python `NAG` calls when `momentum > 0`
//! (momentum 0 runs `sgd_update`, here [`super::sgd::plain`]). Gradients are rescaled and clipped,
//! then weight decay is added; the momentum's decay term is taken from the weight just updated.
//! Buffers: `[momentum]` when `momentum != 0`, else none.

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
    let ahead = T::one() + mu;
    // c = clip(r·g);  w' = w + μ²·m − (1 + μ)·lr·(c + wd·w);  m ← μ·m − lr·(c + wd·w'):
    // the momentum takes its decay term from the weight just updated, as MXNet's kernel.
    for i in 0..n {
        let c = clip(rescale * g[i], bound);
        let updated = w[i] + mu * mu * mom[i] - ahead * lr * (c + wd * w[i]);
        w[i] = updated;
        mom[i] = mu * mom[i] - lr * (c + wd * updated);
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::{GRADS, W0, assert_close, run, updater};
    use crate::dtype::Float;

    /// MXNet 1.9.1's NAG written out in f64 (`m` its negative-direction momentum):
    /// w' = w + μ²·m − (1 + μ)·lr·(c + wd·w);  m = μ·m − lr·(c + wd·w'),  c = clip(r·g).
    fn reference(lr: f64, wd: f64, mu: f64, r: f64, clip: Option<f64>) -> Vec<f64> {
        let mut w = W0.to_vec();
        let mut m = vec![0.0; w.len()];
        for g in &GRADS {
            for i in 0..w.len() {
                let mut c = r * g[i];
                if let Some(bound) = clip {
                    c = c.clamp(-bound, bound);
                }
                let old = w[i];
                w[i] = old + mu * mu * m[i] - (1.0 + mu) * lr * (c + wd * old);
                m[i] = mu * m[i] - lr * (c + wd * w[i]);
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
        // With weight decay the momentum decays from the weight just updated: lr 0.1, μ 0.9,
        // wd 0.07, w 1, g 0.5. w1 = 1 − 1.9·0.1·0.57 = 0.8917, m1 = −0.1·(0.5 + 0.07·0.8917)
        // = −0.0562419; w2 = 0.8917 + 0.81·m1 − 1.9·0.1·(0.5 + 0.07·0.8917) = 0.739284451,
        // m2 = 0.9·m1 − 0.1·(0.5 + 0.07·w2) = −0.105792701157.
        let params = [("momentum", 0.9), ("learning_rate", 0.1), ("wd", 0.07)];
        let (w, st) = run::<f64>(&updater("nag", &params), &[1.0], &[[0.5], [0.5]]);
        assert_close(&w, &[0.739284451]);
        assert_close(&st.buffers[0], &[-0.105792701157]);
    }
}
