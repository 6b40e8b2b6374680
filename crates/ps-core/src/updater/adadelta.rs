//! AdaDelta (Zeiler, 2012) as mxrs's Python `AdaDelta`: the learning rate (and `lr_mult`) is
//! not used; the rescaled gradient is clipped without weight decay, which is subtracted after
//! the step instead. Buffers: `[acc_g, acc_delta]`.

use super::{Hyper, Step, clip};
use crate::dtype::Float;

/// One AdaDelta update.
#[allow(clippy::needless_range_loop)] // indexed loops over equal-length slices vectorise
pub(super) fn update<T: Float>(
    h: &Hyper,
    s: Step,
    w: &mut [T],
    g: &[T],
    acc_g: &mut [T],
    acc_delta: &mut [T],
) {
    let n = w.len();
    let (g, acc_g, acc_delta) = (&g[..n], &mut acc_g[..n], &mut acc_delta[..n]);
    let wd = T::of(s.wd);
    let (rho, one_rho) = (T::of(h.rho), T::of(1.0 - h.rho));
    let eps = T::of(h.epsilon);
    let rescale = T::of(h.rescale_grad);
    let bound = T::of(h.kernel_clip());
    // ĝ = clip(r·g, c);  A_g ← ρ·A_g + (1−ρ)·ĝ²;  δ = √(A_δ + ε) / √(A_g + ε) · ĝ;
    // A_δ ← ρ·A_δ + (1−ρ)·δ²;  w ← w − (δ + wd·w)
    for i in 0..n {
        let gi = clip(rescale * g[i], bound);
        let ag = rho * acc_g[i] + one_rho * (gi * gi);
        let delta = (acc_delta[i] + eps).sqrt() / (ag + eps).sqrt() * gi;
        acc_g[i] = ag;
        acc_delta[i] = rho * acc_delta[i] + one_rho * (delta * delta);
        w[i] = w[i] - (delta + wd * w[i]);
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::{GRADS, W0, assert_close, run, updater};
    use crate::dtype::Float;

    /// AdaDelta as Zeiler's Algorithm 1 in f64, with decay applied to the weight afterwards.
    fn reference(wd: f64, r: f64, clip: Option<f64>, rho: f64, eps: f64) -> Vec<f64> {
        let mut w = W0.to_vec();
        let (mut eg2, mut edx2) = (vec![0.0; w.len()], vec![0.0; w.len()]);
        for g in &GRADS {
            for i in 0..w.len() {
                let mut gi = r * g[i];
                if let Some(c) = clip {
                    gi = gi.clamp(-c, c);
                }
                eg2[i] = rho * eg2[i] + (1.0 - rho) * gi * gi;
                let rms_dx = (edx2[i] + eps).sqrt();
                let rms_g = (eg2[i] + eps).sqrt();
                let dx = -(rms_dx / rms_g) * gi;
                edx2[i] = rho * edx2[i] + (1.0 - rho) * dx * dx;
                w[i] = w[i] + dx - wd * w[i];
            }
        }
        w
    }

    fn check<T: Float>() {
        let (w, st) = run::<T>(&updater("adadelta", &[]), &W0, &GRADS);
        assert_close(&w, &reference(0.0, 1.0, None, 0.9, 1e-5));
        assert_eq!((st.steps, st.buffers.len()), (3, 2));

        let params = [
            ("learning_rate", 0.1),
            ("rho", 0.8),
            ("epsilon", 1e-3),
            ("wd", 0.05),
            ("rescale_grad", 0.5),
            ("clip_gradient", 0.6),
        ];
        let (w, _) = run::<T>(&updater("adadelta", &params), &W0, &GRADS);
        assert_close(&w, &reference(0.05, 0.5, Some(0.6), 0.8, 1e-3));

        let params = [("rho", 0.0), ("epsilon", 0.5), ("wd", 0.01)];
        let (w, _) = run::<T>(&updater("adadelta", &params), &W0, &GRADS);
        assert_close(&w, &reference(0.01, 1.0, None, 0.0, 0.5));
    }

    #[test]
    fn adadelta_matches_reference() {
        check::<f32>();
        check::<f64>();
    }

    #[test]
    fn adadelta_known_numbers() {
        // ρ 0.5, ε 0.25, wd 0.1, w 1, g 1: A_g = 0.5·1 = 0.5,
        // δ = √0.25/√0.75·1 = 1/√3 = 0.5773502691896258, A_δ = 0.5·(1/3) = 1/6,
        // w = 1 − (1/√3 + 0.1·1) = 0.3226497308103742.
        let params = [("rho", 0.5), ("epsilon", 0.25), ("wd", 0.1)];
        for lr in [0.01, 0.0, 7.0] {
            let mut params = params.to_vec();
            params.push(("learning_rate", lr));
            let (w, st) = run::<f64>(&updater("adadelta", &params), &[1.0], &[[1.0]]);
            assert_close(&w, &[0.3226497308103742]);
            assert_close(&st.buffers[0], &[0.5]);
            assert_close(&st.buffers[1], &[1.0 / 6.0]);
        }
    }
}
