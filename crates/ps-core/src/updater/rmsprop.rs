//! RMSProp: MXNet's `rmsprop_update` kernel (Tieleman & Hinton, `centered=0`) and
//! `rmspropalex_update` kernel (Graves, `centered=1`). Weight decay is added to the rescaled
//! gradient before clipping; `epsilon` sits inside the square root; weights are clipped last
//! when `clip_weights` is positive. Buffers: `[n]`, or `[n, g, delta]` when centered.

use super::{Hyper, Step, clip};
use crate::dtype::Float;

/// One update of plain RMSProp.
#[allow(clippy::needless_range_loop)] // indexed loops over equal-length slices vectorise
pub(super) fn plain<T: Float>(h: &Hyper, s: Step, w: &mut [T], g: &[T], sq: &mut [T]) {
    let n = w.len();
    let (g, sq) = (&g[..n], &mut sq[..n]);
    let lr = T::of(s.lr);
    let wd = T::of(s.wd);
    let (g1, one_g1) = (T::of(h.gamma1), T::of(1.0 - h.gamma1));
    let eps = T::of(h.epsilon);
    let rescale = T::of(h.rescale_grad);
    let bound = T::of(h.kernel_clip());
    let w_bound = T::of(h.clip_weights.unwrap_or(f64::INFINITY));
    // ĝ = clip(r·g + wd·w, c);  n ← (1−γ1)·ĝ² + γ1·n;  w ← clip(w − lr·ĝ/√(n + ε), c_w)
    for i in 0..n {
        let gi = clip(rescale * g[i] + wd * w[i], bound);
        let ni = one_g1 * gi * gi + g1 * sq[i];
        sq[i] = ni;
        w[i] = clip(w[i] - lr * (gi / (ni + eps).sqrt()), w_bound);
    }
}

/// One update of centered RMSProp: `sq` the mean square, `mean` the mean gradient, `delta`
/// the step momentum.
#[allow(clippy::needless_range_loop)]
pub(super) fn centered<T: Float>(
    h: &Hyper,
    s: Step,
    w: &mut [T],
    g: &[T],
    sq: &mut [T],
    mean: &mut [T],
    delta: &mut [T],
) {
    let n = w.len();
    let (g, sq, mean, delta) = (&g[..n], &mut sq[..n], &mut mean[..n], &mut delta[..n]);
    let lr = T::of(s.lr);
    let wd = T::of(s.wd);
    let (g1, one_g1) = (T::of(h.gamma1), T::of(1.0 - h.gamma1));
    let g2 = T::of(h.gamma2);
    let eps = T::of(h.epsilon);
    let rescale = T::of(h.rescale_grad);
    let bound = T::of(h.kernel_clip());
    let w_bound = T::of(h.clip_weights.unwrap_or(f64::INFINITY));
    // ĝ = clip(r·g + wd·w, c);  n ← (1−γ1)·ĝ² + γ1·n;  ḡ ← (1−γ1)·ĝ + γ1·ḡ;
    // δ ← γ2·δ − lr·ĝ/√(n − ḡ² + ε);  w ← clip(w + δ, c_w)
    for i in 0..n {
        let gi = clip(rescale * g[i] + wd * w[i], bound);
        let ni = one_g1 * gi * gi + g1 * sq[i];
        let mi = one_g1 * gi + g1 * mean[i];
        let di = g2 * delta[i] - lr * gi / (ni - mi * mi + eps).sqrt();
        sq[i] = ni;
        mean[i] = mi;
        delta[i] = di;
        w[i] = clip(w[i] + di, w_bound);
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::{GRADS, W0, assert_close, run, updater};
    use crate::dtype::Float;

    struct Ref {
        lr: f64,
        wd: f64,
        r: f64,
        clip: Option<f64>,
        gamma1: f64,
        gamma2: f64,
        eps: f64,
        clip_weights: Option<f64>,
        centered: bool,
    }

    /// RMSProp in f64: exponential averages of ĝ² (and of ĝ when centered, whose square is
    /// subtracted: a running variance); Graves' variant adds a momentum on the step.
    fn reference(p: &Ref) -> Vec<f64> {
        let mut w = W0.to_vec();
        let len = w.len();
        let (mut sq, mut avg, mut step) = (vec![0.0; len], vec![0.0; len], vec![0.0; len]);
        for g in &GRADS {
            for i in 0..len {
                let mut gi = p.r * g[i] + p.wd * w[i];
                if let Some(c) = p.clip {
                    gi = gi.clamp(-c, c);
                }
                sq[i] = p.gamma1 * sq[i] + (1.0 - p.gamma1) * gi * gi;
                if p.centered {
                    avg[i] = p.gamma1 * avg[i] + (1.0 - p.gamma1) * gi;
                    let var = sq[i] - avg[i] * avg[i];
                    step[i] = p.gamma2 * step[i] - p.lr * gi / (var + p.eps).sqrt();
                    w[i] += step[i];
                } else {
                    w[i] -= p.lr * gi / (sq[i] + p.eps).sqrt();
                }
                if let Some(cw) = p.clip_weights {
                    w[i] = w[i].clamp(-cw, cw);
                }
            }
        }
        w
    }

    fn check<T: Float>() {
        let defaults = Ref {
            lr: 0.001,
            wd: 0.0,
            r: 1.0,
            clip: None,
            gamma1: 0.9,
            gamma2: 0.9,
            eps: 1e-8,
            clip_weights: None,
            centered: false,
        };
        let (w, st) = run::<T>(&updater("rmsprop", &[]), &W0, &GRADS);
        assert_close(&w, &reference(&defaults));
        assert_eq!((st.steps, st.buffers.len()), (3, 1));

        let (w, st) = run::<T>(&updater("rmsprop", &[("centered", 1.0)]), &W0, &GRADS);
        assert_close(
            &w,
            &reference(&Ref {
                centered: true,
                ..defaults
            }),
        );
        assert_eq!(st.buffers.len(), 3);

        let params = [
            ("learning_rate", 0.1),
            ("gamma1", 0.8),
            ("gamma2", 0.7),
            ("epsilon", 1e-3),
            ("wd", 0.05),
            ("rescale_grad", 0.5),
            ("clip_gradient", 0.6),
            ("clip_weights", 2.05),
        ];
        let full = Ref {
            lr: 0.1,
            wd: 0.05,
            r: 0.5,
            clip: Some(0.6),
            gamma1: 0.8,
            gamma2: 0.7,
            eps: 1e-3,
            clip_weights: Some(2.05),
            centered: false,
        };
        let (w, _) = run::<T>(&updater("rmsprop", &params), &W0, &GRADS);
        let want = reference(&full);
        // The weights that start at -2 and 3 pass the bound on the way.
        let unclipped = reference(&Ref {
            clip_weights: None,
            ..full
        });
        assert!(
            (0..6).filter(|&i| want[i] != unclipped[i]).eq([1, 3]),
            "{want:?}"
        );
        assert_close(&w, &want);

        let mut params = params.to_vec();
        params.push(("centered", 1.0));
        let (w, _) = run::<T>(&updater("rmsprop", &params), &W0, &GRADS);
        assert_close(
            &w,
            &reference(&Ref {
                centered: true,
                ..full
            }),
        );
    }

    #[test]
    fn rmsprop_matches_reference() {
        check::<f32>();
        check::<f64>();
    }

    #[test]
    fn rmsprop_known_numbers() {
        // lr 0.1, γ1 0.9, w 1, g 0.5: n = 0.1·0.25 = 0.025, w = 1 − 0.1·0.5/√(0.025 + 1e-8)
        //   = 1 − 0.05/0.158113915... = 0.683772296...
        let u = updater("rmsprop", &[("learning_rate", 0.1)]);
        let (w, st) = run::<f64>(&u, &[1.0], &[[0.5]]);
        assert_close(&w, &[1.0 - 0.05 / 0.02500001f64.sqrt()]);
        assert_close(&st.buffers[0], &[0.025]);
        // Centered: ḡ = 0.05, n − ḡ² = 0.0225, δ = −0.05/√(0.0225 + 1e-8) ≈ −0.3333332593
        let u = updater("rmsprop", &[("learning_rate", 0.1), ("centered", 1.0)]);
        let (w, st) = run::<f64>(&u, &[1.0], &[[0.5]]);
        assert_close(&w, &[1.0 - 0.05 / 0.02250001f64.sqrt()]);
        assert_close(&st.buffers[1], &[0.05]);
    }
}
