//! FTRL-Proximal (McMahan et al., "Ad Click Prediction: a View from the Trenches", KDD 2013), as
//! MXNet 1.x's `ftrl_update` kernel, which the Python `Ftrl` calls with `lr`/`wd` multiplied by
//! the key's `lr_mult`/`wd_mult`. The gradient is rescaled, then clipped (only by a positive
//! `clip_gradient`: MXNet passes it to the kernel when truthy); weight decay enters the
//! denominator of the closed-form weight. Buffers: `[z, n]`. Defaults: learning rate 0.1,
//! `lamda1` 0.01, `beta` 1.
//!
//! A zero learning rate (e.g. `lr_mult` 0 for a frozen key) leaves the weights and buffers as
//! they are: the rule divides by it.

use super::{Hyper, Step, clip, sign};
use crate::dtype::Float;

/// One FTRL update.
#[allow(clippy::needless_range_loop)] // indexed loops over equal-length slices vectorise
pub(super) fn update<T: Float>(h: &Hyper, s: Step, w: &mut [T], g: &[T], z: &mut [T], n: &mut [T]) {
    if s.lr == 0.0 {
        return;
    }
    let len = w.len();
    let (g, z, n) = (&g[..len], &mut z[..len], &mut n[..len]);
    let lr = T::of(s.lr);
    let wd = T::of(s.wd);
    let lamda1 = T::of(h.lamda1);
    let beta = T::of(h.beta);
    let rescale = T::of(h.rescale_grad);
    let bound = T::of(h.kernel_clip());
    // ĝ = clip(r·g, c);  z ← z + ĝ − (√(n + ĝ²) − √n)·w / lr;  n ← n + ĝ²;
    // w ← (sign(z)·λ1 − z) / ((β + √n)/lr + wd)  where |z| > λ1, else 0
    for i in 0..len {
        let gi = clip(rescale * g[i], bound);
        let ni = n[i] + gi * gi;
        let zi = z[i] + gi - (ni.sqrt() - n[i].sqrt()) * w[i] / lr;
        z[i] = zi;
        n[i] = ni;
        w[i] = if zi.abs() > lamda1 {
            (sign(zi) * lamda1 - zi) / ((beta + ni.sqrt()) / lr + wd)
        } else {
            T::zero()
        };
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::{GRADS, W0, assert_close, run, updater};
    use crate::dtype::Float;

    /// FTRL-Proximal per coordinate in f64, as the paper's Algorithm 1 writes it with
    /// σ = (√(n + g²) − √n)/α, plus MXNet's weight decay in the denominator.
    fn reference(lr: f64, l1: f64, beta: f64, wd: f64, r: f64, clip: Option<f64>) -> Vec<f64> {
        let mut w = W0.to_vec();
        let (mut z, mut n) = (vec![0.0; w.len()], vec![0.0f64; w.len()]);
        for g in &GRADS {
            for i in 0..w.len() {
                let mut gi = r * g[i];
                if let Some(c) = clip {
                    gi = gi.clamp(-c, c);
                }
                let sigma = ((n[i] + gi * gi).sqrt() - n[i].sqrt()) / lr;
                z[i] += gi - sigma * w[i];
                n[i] += gi * gi;
                w[i] = if z[i].abs() <= l1 {
                    0.0
                } else {
                    -(z[i] - z[i].signum() * l1) / ((beta + n[i].sqrt()) / lr + wd)
                };
            }
        }
        w
    }

    fn check<T: Float>() {
        let (w, st) = run::<T>(&updater("ftrl", &[]), &W0, &GRADS);
        assert_close(&w, &reference(0.1, 0.01, 1.0, 0.0, 1.0, None));
        assert_eq!((st.steps, st.buffers.len()), (3, 2));

        let params = [
            ("learning_rate", 0.05),
            ("lamda1", 0.2),
            ("beta", 0.5),
            ("wd", 0.05),
            ("rescale_grad", 0.5),
            ("clip_gradient", 0.6),
        ];
        let (w, _) = run::<T>(&updater("ftrl", &params), &W0, &GRADS);
        assert_close(&w, &reference(0.05, 0.2, 0.5, 0.05, 0.5, Some(0.6)));
    }

    #[test]
    fn ftrl_matches_reference() {
        check::<f32>();
        check::<f64>();
    }

    #[test]
    fn ftrl_known_numbers() {
        // lr 0.1, λ1 0.01, β 1, wd 0, from w = [1, −2, 0.5] with g = [0.5, 0.25, 0.001]:
        // z = 0.5 − (0.5 − 0)·1/0.1 = −4.5, n = 0.25, w = (−0.01 + 4.5)/((1 + 0.5)/0.1) = 4.49/15;
        // z = 0.25 + 0.25·2/0.1 = 5.25, n = 0.0625, w = (0.01 − 5.25)/12.5 = −0.4192;
        // z = 0.001 − 0.001·0.5/0.1 = −0.004, |z| ≤ λ1, so w = 0.
        let u = updater("ftrl", &[]);
        let (w, st) = run::<f64>(&u, &[1.0, -2.0, 0.5], &[[0.5, 0.25, 0.001]]);
        assert_close(&w, &[4.49 / 15.0, -0.4192, 0.0]);
        assert_close(&st.buffers[0], &[-4.5, 5.25, -0.004]);
        assert_close(&st.buffers[1], &[0.25, 0.0625, 1e-6]);
        // Weight decay 0.5 adds to the denominator: 4.49/(15 + 0.5).
        let u = updater("ftrl", &[("wd", 0.5)]);
        let (w, _) = run::<f64>(&u, &[1.0], &[[0.5]]);
        assert_close(&w, &[4.49 / 15.5]);
    }

    #[test]
    fn a_zero_learning_rate_changes_nothing() {
        let u = updater("ftrl", &[("learning_rate", 0.0)]);
        let (w, st) = run::<f64>(&u, &W0, &GRADS);
        assert_eq!(w, W0);
        assert!(st.buffers.iter().all(|b| b.iter().all(|&x| x == 0.0)));
    }
}
