//! Signum: MXNet's `signum_update` kernel when `momentum > 0`, `signsgd_update` when it is 0.
//! In Signum weight decay `wd` enters the momentum and `wd_lh` decays the weight directly; signSGD
//! takes the sign of the raw gradient (rescaling and clipping cannot change it) and uses `wd` as
//! a direct decay. Buffers: `[momentum]` when `momentum != 0`, else none.

use super::{Hyper, Step, clip, sign};
use crate::dtype::Float;

/// One signSGD update (momentum 0).
#[allow(clippy::needless_range_loop)] // indexed loops over equal-length slices vectorise
pub(super) fn sign_sgd<T: Float>(_h: &Hyper, s: Step, w: &mut [T], g: &[T]) {
    let n = w.len();
    let g = &g[..n];
    let keep = T::of(1.0 - s.lr * s.wd);
    let lr = T::of(s.lr);
    // w ← (1 − lr·wd)·w − lr·sign(g)
    for i in 0..n {
        w[i] = keep * w[i] - lr * sign(g[i]);
    }
}

/// One Signum update; `mom` holds MXNet's (negative-direction) momentum.
#[allow(clippy::needless_range_loop)]
pub(super) fn momentum<T: Float>(h: &Hyper, s: Step, w: &mut [T], g: &[T], mom: &mut [T]) {
    let n = w.len();
    let (g, mom) = (&g[..n], &mut mom[..n]);
    let (mu, one_mu) = (T::of(h.momentum), T::of(1.0 - h.momentum));
    let wd = T::of(s.wd);
    let keep = T::of(1.0 - s.lr * h.wd_lh);
    let lr = T::of(s.lr);
    let rescale = T::of(h.rescale_grad);
    let bound = T::of(h.kernel_clip());
    // m ← μ·m − (1−μ)·(wd·w + clip(r·g, c));   w ← (1 − lr·wd_lh)·w + lr·sign(m)
    for i in 0..n {
        let m = mu * mom[i] - one_mu * (wd * w[i] + clip(rescale * g[i], bound));
        mom[i] = m;
        w[i] = keep * w[i] + lr * sign(m);
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::{GRADS, W0, assert_close, run, updater};
    use crate::dtype::Float;

    /// Signum in f64 (Bernstein et al.): an exponential average v of the regularised gradient,
    /// a step of −lr·sign(v), decoupled decay lr·wd_lh·w. With momentum 0: signSGD on the raw
    /// gradient with decay lr·wd·w.
    fn reference(lr: f64, wd: f64, mu: f64, r: f64, clip: Option<f64>, wd_lh: f64) -> Vec<f64> {
        let mut w = W0.to_vec();
        let mut v = vec![0.0; w.len()];
        for g in &GRADS {
            for i in 0..w.len() {
                if mu == 0.0 {
                    w[i] -= lr * wd * w[i] + lr * g[i].signum();
                    continue;
                }
                let mut gi = r * g[i];
                if let Some(c) = clip {
                    gi = gi.clamp(-c, c);
                }
                v[i] = mu * v[i] + (1.0 - mu) * (gi + wd * w[i]);
                w[i] -= lr * wd_lh * w[i] + lr * v[i].signum();
            }
        }
        w
    }

    fn check<T: Float>() {
        let (w, st) = run::<T>(&updater("signum", &[]), &W0, &GRADS);
        assert_close(&w, &reference(0.01, 0.0, 0.9, 1.0, None, 0.0));
        assert_eq!((st.steps, st.buffers.len()), (3, 1));

        let params = [
            ("learning_rate", 0.1),
            ("momentum", 0.5),
            ("wd", 0.05),
            ("wd_lh", 0.02),
            ("rescale_grad", 0.5),
            ("clip_gradient", 0.6),
        ];
        let (w, _) = run::<T>(&updater("signum", &params), &W0, &GRADS);
        assert_close(&w, &reference(0.1, 0.05, 0.5, 0.5, Some(0.6), 0.02));

        let params = [
            ("learning_rate", 0.1),
            ("momentum", 0.0),
            ("wd", 0.05),
            ("wd_lh", 0.3),
        ];
        let (w, st) = run::<T>(&updater("signum", &params), &W0, &GRADS);
        assert_close(&w, &reference(0.1, 0.05, 0.0, 1.0, None, 0.3));
        assert!(st.buffers.is_empty());
    }

    #[test]
    fn signum_matches_reference() {
        check::<f32>();
        check::<f64>();
    }

    #[test]
    fn signum_known_numbers() {
        // μ 0.9, lr 0.1, wd_lh 0.5, w [1, 2, 0], g [0.5, −0.5, 0]:
        // m = −0.1·g = [−0.05, 0.05, 0];  w = 0.95·w + 0.1·sign(m) = [0.85, 2.0, 0]
        let u = updater("signum", &[("learning_rate", 0.1), ("wd_lh", 0.5)]);
        let (w, st) = run::<f64>(&u, &[1.0, 2.0, 0.0], &[[0.5, -0.5, 0.0]]);
        assert_close(&w, &[0.85, 2.0, 0.0]);
        assert_close(&st.buffers[0], &[-0.05, 0.05, 0.0]);
    }
}
