//! The update of a row-sparse key's piece after a round whose pushes carried only some rows.
//!
//! With `lazy_update` (the default, as in MXNet) the optimizer's rule runs on the rows present
//! only: their weights and the same rows of every state buffer; every other row, and its state,
//! is left exactly as it was. This is MXNet 1.x's lazy update of SGD (with and without
//! momentum), Adam and FTRL, whose row-sparse kernels apply the dense rule row by row, and of
//! AdaGrad, whose row-sparse kernel differs from its dense Python rule only in clipping, which
//! it does only for a positive `clip_gradient` (MXNet passes 0 as "no clipping" there); MXNet
//! refuses weight decay for row-sparse AdaGrad, here it applies to the rows present as in the
//! dense rule. NAG, RMSProp, Signum, Adamax, AdaDelta and FTML have no row-sparse kernel in
//! MXNet (it would densify the gradient): here they too update the rows present only.
//!
//! With `lazy_update = 0` the round is a dense update of the whole piece in which absent rows
//! have a zero gradient (MXNet's standard update on a row-sparse gradient): weight decay and
//! momentum move every row. Zero gradients come from one small buffer, not a piece-sized one.
//!
//! Either way the key's update count grows by one per round, as for a dense update, so Adam's
//! bias correction uses the number of rounds, as MXNet's per-key count does.

use std::borrow::Cow;
use std::ops::Range;

use super::{Buffers, Hyper, Kind, Native, State};
use crate::dtype::Float;
use crate::warm::{WARM_ROWS, warm};

/// Elements of zero gradient fed to one kernel call for absent rows (dense rounds).
const ZERO_CHUNK: usize = 4096;

/// The `span` of every buffer.
fn slices<T>(buffers: &mut [Vec<T>], span: Range<usize>) -> Buffers<'_, T> {
    buffers.iter_mut().map(|b| &mut b[span.clone()]).collect()
}

impl Native {
    /// Applies one round of a row-sparse key's pushes to `weight`, a piece of whole rows of
    /// `row_len` elements: `rows` are the rows present (indices into the piece, increasing) and
    /// `grads` their summed gradients, `row_len` elements each, in the same order. `key`
    /// selects lr_mult/wd_mult. Rows outside the piece are ignored.
    pub(super) fn update_rows<T: Float>(
        &self,
        key: u64,
        weight: &mut [T],
        row_len: usize,
        rows: &[usize],
        grads: &[T],
        state: &mut State<T>,
    ) {
        debug_assert_eq!(grads.len(), rows.len() * row_len);
        let n = weight.len();
        self.fit_state(state, n);
        let step = self.next_step(key, state);
        let present = rows
            .iter()
            .enumerate()
            .map(|(j, &r)| {
                (
                    r * row_len..(r + 1) * row_len,
                    j * row_len..(j + 1) * row_len,
                )
            })
            .take_while(|(span, grad)| span.end <= n && grad.end <= grads.len());
        if self.hyper.lazy_update {
            let h = self.lazy_hyper();
            let present: Vec<_> = present.collect();
            for chunk in present.chunks(WARM_ROWS) {
                let spans = chunk.iter().map(|(span, _)| span.clone());
                warm(weight, &state.buffers, spans);
                for (span, grad) in chunk {
                    let mut buffers = slices(&mut state.buffers, span.clone());
                    let w = &mut weight[span.clone()];
                    self.kernel(&h, step, w, &grads[grad.clone()], &mut buffers);
                }
            }
            return;
        }
        let zeros = vec![T::zero(); ZERO_CHUNK.min(n)];
        let mut at = 0;
        for (span, grad) in present {
            self.zero_run(step, weight, state, at..span.start, &zeros);
            let mut buffers = slices(&mut state.buffers, span.clone());
            let h = &self.hyper;
            self.kernel(
                h,
                step,
                &mut weight[span.clone()],
                &grads[grad],
                &mut buffers,
            );
            at = span.end;
        }
        self.zero_run(step, weight, state, at..n, &zeros);
    }

    /// The dense rule with a zero gradient over the elements `span`, a chunk at a time.
    fn zero_run<T: Float>(
        &self,
        step: super::Step,
        weight: &mut [T],
        state: &mut State<T>,
        span: Range<usize>,
        zeros: &[T],
    ) {
        let mut at = span.start;
        while at < span.end {
            let end = span.end.min(at + zeros.len().max(1));
            let mut buffers = slices(&mut state.buffers, at..end);
            let g = &zeros[..end - at];
            self.kernel(&self.hyper, step, &mut weight[at..end], g, &mut buffers);
            at = end;
        }
    }

    /// The hyper-parameters of a lazy update: AdaGrad's row-sparse kernel clips only by a
    /// positive bound.
    fn lazy_hyper(&self) -> Cow<'_, Hyper> {
        match (self.kind, self.hyper.clip_gradient) {
            (Kind::AdaGrad, Some(c)) if c <= 0.0 => Cow::Owned(Hyper {
                clip_gradient: None,
                ..self.hyper.clone()
            }),
            _ => Cow::Borrowed(&self.hyper),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::{assert_close, updater};
    use super::*;

    /// A piece of 4 rows of 2 elements.
    const W0: [f64; 8] = [1.0, -2.0, 0.5, 3.0, -0.25, 0.75, 2.0, -1.5];
    const ROW: usize = 2;

    /// Two rounds: rows 1 and 3, then rows 0 and 3 (row 2 never).
    fn rounds() -> [(Vec<usize>, Vec<f64>); 2] {
        [
            (vec![1, 3], vec![0.5, -0.25, 1.5, 0.75]),
            (vec![0, 3], vec![-0.4, 0.3, 0.2, -0.6]),
        ]
    }

    /// Runs the rounds through `update_rows` in `T`; weights and state.
    fn run_rows<T: Float>(u: &Native, w0: &[f64]) -> (Vec<T>, State<T>) {
        let mut w: Vec<T> = w0.iter().map(|&x| T::of(x)).collect();
        let mut state = u.new_state::<T>(w.len());
        for (rows, g) in rounds() {
            let g: Vec<T> = g.iter().map(|&x| T::of(x)).collect();
            u.update_rows(7, &mut w, ROW, &rows, &g, &mut state);
        }
        (w, state)
    }

    /// The rounds' gradients as dense ones (zeros for absent rows).
    fn dense_rounds() -> Vec<Vec<f64>> {
        rounds()
            .into_iter()
            .map(|(rows, g)| {
                let mut d = vec![0.0; W0.len()];
                for (j, r) in rows.iter().enumerate() {
                    d[r * ROW..(r + 1) * ROW].copy_from_slice(&g[j * ROW..(j + 1) * ROW]);
                }
                d
            })
            .collect()
    }

    /// By hand, in f64: `step(t, w, g, state)` applied to the elements of the rows each round
    /// carries; rows 2 (never pushed) keep their value.
    fn by_hand(nbuf: usize, step: impl Fn(u64, &mut f64, f64, &mut [f64])) -> Vec<f64> {
        let mut w = W0.to_vec();
        let mut state = vec![vec![0.0; W0.len()]; nbuf];
        for (t, (rows, g)) in rounds().into_iter().enumerate() {
            for (j, r) in rows.iter().enumerate() {
                for k in 0..ROW {
                    let (i, gi) = (r * ROW + k, g[j * ROW + k]);
                    let mut s: Vec<f64> = state.iter().map(|b| b[i]).collect();
                    step(t as u64 + 1, &mut w[i], gi, &mut s);
                    for (b, v) in state.iter_mut().zip(s) {
                        b[i] = v;
                    }
                }
            }
        }
        w
    }

    /// Rows never pushed (row 2) keep their weights and state bit for bit.
    #[track_caller]
    fn untouched<T: Float>(w: &[T], st: &State<T>) {
        for i in 2 * ROW..3 * ROW {
            assert_eq!(w[i], T::of(W0[i]), "element {i}");
            assert!(st.buffers.iter().all(|b| b[i] == T::zero()), "state {i}");
        }
    }

    #[test]
    fn lazy_sgd_with_momentum_and_wd_moves_only_the_rows_pushed() {
        let (lr, mu, wd) = (0.1, 0.9, 0.01);
        let u = updater(
            "sgd",
            &[("learning_rate", lr), ("momentum", mu), ("wd", wd)],
        );
        let want = by_hand(1, |_, w, g, s| {
            s[0] = mu * s[0] - lr * wd * *w - lr * g;
            *w += s[0];
        });
        let (w, st) = run_rows::<f64>(&u, &W0);
        assert_close(&w, &want);
        untouched(&w, &st);
        assert_eq!(st.steps, 2);
        let (w32, _) = run_rows::<f32>(&u, &W0);
        assert_close(&w32, &want);
        // Without momentum: w ← (1 − lr·wd)·w − lr·g on the rows pushed.
        let u = updater("sgd", &[("learning_rate", lr), ("wd", wd)]);
        let want = by_hand(0, |_, w, g, _| *w = (1.0 - lr * wd) * *w - lr * g);
        let (w, st) = run_rows::<f64>(&u, &W0);
        assert_close(&w, &want);
        untouched(&w, &st);
    }

    #[test]
    fn lazy_adam_corrects_bias_with_the_rounds_of_the_key() {
        let (lr, b1, b2, eps, wd) = (0.1, 0.9, 0.999, 1e-8, 0.01);
        let u = updater("adam", &[("learning_rate", lr), ("wd", wd)]);
        let want = by_hand(2, |t, w, g, s| {
            let g = g + wd * *w;
            s[0] = b1 * s[0] + (1.0 - b1) * g;
            s[1] = b2 * s[1] + (1.0 - b2) * g * g;
            let lr_t = lr * (1.0 - b2.powi(t as i32)).sqrt() / (1.0 - b1.powi(t as i32));
            *w -= lr_t * s[0] / (s[1].sqrt() + eps);
        });
        let (w, st) = run_rows::<f64>(&u, &W0);
        assert_close(&w, &want);
        untouched(&w, &st);
        assert_eq!(st.steps, 2);
    }

    #[test]
    fn lazy_adagrad_and_ftrl_follow_mxnets_row_sparse_kernels() {
        let (lr, eps) = (0.1, 1e-7);
        // clip_gradient 0 does not clip in the row-sparse kernel (it zeroes dense gradients).
        let u = updater("adagrad", &[("learning_rate", lr), ("clip_gradient", 0.0)]);
        let want = by_hand(1, |_, w, g, s| {
            s[0] += g * g;
            *w -= lr * g / (s[0] + eps).sqrt();
        });
        let (w, st) = run_rows::<f64>(&u, &W0);
        assert_close(&w, &want);
        untouched(&w, &st);

        let (lr, l1, beta) = (0.1, 0.01, 1.0);
        let u = updater("ftrl", &[]);
        let want = by_hand(2, |_, w, g, s| {
            let (z, n) = (s[0], s[1]);
            s[0] = z + g - ((n + g * g).sqrt() - n.sqrt()) * *w / lr;
            s[1] = n + g * g;
            *w = if s[0].abs() > l1 {
                (s[0].signum() * l1 - s[0]) / ((beta + s[1].sqrt()) / lr)
            } else {
                0.0
            };
        });
        let (w, st) = run_rows::<f64>(&u, &W0);
        assert_close(&w, &want);
        untouched(&w, &st);
    }

    #[test]
    fn lazy_update_0_is_the_dense_update_with_zero_gradients() {
        let optimizers: &[(&str, &[(&str, f64)])] = &[
            ("sgd", &[("momentum", 0.9), ("wd", 0.01)]),
            ("sgd", &[("wd", 0.01)]),
            ("adam", &[("wd", 0.01), ("learning_rate", 0.1)]),
            ("adagrad", &[("wd", 0.01)]),
            ("rmsprop", &[("centered", 1.0)]),
            ("ftrl", &[("wd", 0.1)]),
            ("ftml", &[]),
        ];
        for (name, params) in optimizers {
            let mut with_flag = params.to_vec();
            with_flag.push(("lazy_update", 0.0));
            let u = updater(name, &with_flag);
            let (w, st) = run_rows::<f32>(&u, &W0);
            // The same rounds as dense pushes with zero-filled gradients: bit for bit.
            let mut dw: Vec<f32> = W0.iter().map(|&x| x as f32).collect();
            let mut dst = u.new_state::<f32>(dw.len());
            for g in dense_rounds() {
                let g: Vec<f32> = g.iter().map(|&x| x as f32).collect();
                u.update(7, &mut dw, &g, &mut dst);
            }
            assert_eq!((&w, &st), (&dw, &dst), "{name}");
        }
        // Weight decay moved row 2 too.
        let u = updater("sgd", &[("wd", 0.5), ("lazy_update", 0.0)]);
        let (w, _) = run_rows::<f64>(&u, &W0);
        assert_ne!(w[2 * ROW], W0[2 * ROW]);
    }

    #[test]
    fn every_optimizer_takes_lazy_update_and_updates_present_rows_by_its_dense_rule() {
        for name in [
            "sgd", "nag", "adam", "adagrad", "rmsprop", "signum", "adamax", "adadelta", "ftml",
            "ftrl",
        ] {
            let u = updater(name, &[("lazy_update", 1.0)]);
            let (w, st) = run_rows::<f64>(&u, &W0);
            untouched(&w, &st);
            // Row 1, pushed in the first round only, moved as a dense update of that row.
            let mut w1 = W0[ROW..2 * ROW].to_vec();
            let mut s1 = u.new_state::<f64>(ROW);
            u.update(7, &mut w1, &rounds()[0].1[..ROW], &mut s1);
            assert_eq!(&w[ROW..2 * ROW], &w1[..], "{name}");
            assert_eq!(st.steps, 2, "{name}");
        }
        // A round without rows still counts as an update of the key, and changes nothing else.
        let u = updater("adam", &[]);
        let mut w = vec![1.0f32; 4];
        let mut st = u.new_state::<f32>(4);
        u.update_rows(1, &mut w, 2, &[], &[], &mut st);
        assert_eq!((w, st.steps), (vec![1.0; 4], 1));
    }
}
