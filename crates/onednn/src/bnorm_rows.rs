//! Batch normalisation of channels-last data, the layout mxrs's convolutions write: `(N, C,
//! ...)` with C varying fastest is a matrix of `N × spatial` rows of `C` channels, and every
//! pass here is a walk down those rows with one accumulator or coefficient per channel.
//!
//! oneDNN 3.2's kernel for this layout (`bnorm_jit` on `acdb`) makes about three passes over
//! the data forward and five backward where the arithmetic needs two each: for 256 channels at
//! 56×56 it took 3× the time of a copy of the data forward and 4.8× backward. These loops make
//! the two passes: forward, the statistics and then the normalised output; backward, the two
//! per-channel sums of the gradient and then the data gradient. A fused ReLU costs no
//! workspace: the backward pass recomputes each output's sign from the input it reads anyway,
//! with the same arithmetic as the forward pass. A residual unit's end, `relu(bn(x) + r)`,
//! is one pass forward too; backward, the ReLU's mask of the output's gradient (in two parts
//! where the unit's output feeds two layers, added there) is the residual's gradient and the
//! normalisation's.
//!
//! Sums run in `f32` over blocks of [`BLOCK`] rows and in `f64` across blocks and threads; the
//! statistics sum `x - k` for `k` the first row (any value near the mean keeps the variance's
//! `E[d²] - E[d]²` free of cancellation). Threads ([`crate::parallel`]) each take a run of rows;
//! their sums are added in row order, so a result depends on the thread count but never on
//! timing. ReLU keeps MXNet's semantics, as [`crate::relu`] does: NaN passes through.

use parking_lot::Mutex;

use crate::DnnlError;
use crate::parallel::{MIN_PER_THREAD, SharedMut, for_parts};
use crate::relu::{mask, relu};

/// Rows summed in `f32` before their sums are added to the `f64` ones.
const BLOCK: usize = 64;

/// The shape of one batch norm's data: `rows` rows of `channels` values.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Rows {
    pub(crate) rows: usize,
    pub(crate) channels: usize,
    /// Built for training: the backward pass may run.
    pub(crate) training: bool,
}

/// Per-channel arrays of one forward call (see [`crate::bnorm::Stats`]).
#[derive(Debug)]
pub(crate) struct Forward<'a> {
    pub(crate) scale: &'a [f32],
    pub(crate) shift: &'a [f32],
    pub(crate) mean: &'a mut [f32],
    pub(crate) var: &'a mut [f32],
}

/// What a backward call reads and writes per channel.
#[derive(Debug)]
pub(crate) struct Backward<'a> {
    pub(crate) scale: &'a [f32],
    pub(crate) mean: &'a [f32],
    pub(crate) var: &'a [f32],
    pub(crate) gscale: &'a mut [f32],
    pub(crate) gshift: &'a mut [f32],
}

simd_dispatch! {
    fn shifted_sums / shifted_sums_body(x: &[f32], k: &[f32], sums: &mut [f64]);
    fn grad_sums / grad_sums_body(x: &[f32], gy: &[f32], c: &Coefs<'_>, sums: &mut [f64]);
    fn normalize / normalize_body(x: &[f32], c: &Coefs<'_>, y: &mut [f32]);
    fn grad_apply / grad_apply_body(x: &[f32], gy: &[f32], c: &Coefs<'_>, gx: &mut [f32]);
    fn normalize_add / normalize_add_body(x: &[f32], r: &[f32], c: &Coefs<'_>, y: &mut [f32]);
}

/// An output's gradient, whole or in two parts to add (the output fed two layers).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Parts<'a> {
    pub(crate) first: &'a [f32],
    pub(crate) second: Option<&'a [f32]>,
}

impl<'a> Parts<'a> {
    fn lens(&self) -> Vec<usize> {
        std::iter::once(self.first.len())
            .chain(self.second.map(<[f32]>::len))
            .collect()
    }
}

/// Per-channel coefficients of a pass: the output is `(x - mean) * a + b` (ReLU'd when
/// `relu`; subtracting the mean first keeps data far from zero exact); the data gradient is
/// `g * a + (x - mean) * k2 + k3` for `g` the (masked) output gradient.
#[derive(Debug)]
struct Coefs<'a> {
    a: &'a [f32],
    b: &'a [f32],
    mean: &'a [f32],
    k2: &'a [f32],
    k3: &'a [f32],
    relu: bool,
}

/// Adds `Σ (x - k)` and `Σ (x - k)²` of `x`'s rows to `sums` (`[Σ d; C]` then `[Σ d²; C]`).
#[inline(always)]
fn shifted_sums_body(x: &[f32], k: &[f32], sums: &mut [f64]) {
    let ch = k.len();
    let (mut s, mut q) = (vec![0f32; ch], vec![0f32; ch]);
    let (s64, q64) = sums.split_at_mut(ch);
    for block in x.chunks(BLOCK * ch) {
        s.fill(0.0);
        q.fill(0.0);
        for row in block.chunks_exact(ch) {
            for (((s, q), &x), &k) in s.iter_mut().zip(q.iter_mut()).zip(row).zip(k) {
                let d = x - k;
                *s += d;
                *q += d * d;
            }
        }
        for (t, &v) in s64.iter_mut().zip(&s) {
            *t += f64::from(v);
        }
        for (t, &v) in q64.iter_mut().zip(&q) {
            *t += f64::from(v);
        }
    }
}

/// Adds `Σ g` and `Σ g (x - mean)` of the rows to `sums`, `g` the masked gradient.
#[inline(always)]
fn grad_sums_body(x: &[f32], gy: &[f32], c: &Coefs<'_>, sums: &mut [f64]) {
    let ch = c.a.len();
    let (mut s, mut p) = (vec![0f32; ch], vec![0f32; ch]);
    let (s64, p64) = sums.split_at_mut(ch);
    for (xb, gb) in x.chunks(BLOCK * ch).zip(gy.chunks(BLOCK * ch)) {
        s.fill(0.0);
        p.fill(0.0);
        for (xr, gr) in xb.chunks_exact(ch).zip(gb.chunks_exact(ch)) {
            if c.relu {
                let it = xr.iter().zip(gr).zip(c.a).zip(c.b).zip(c.mean);
                for ((s, p), ((((&x, &g), &a), &b), &m)) in s.iter_mut().zip(p.iter_mut()).zip(it) {
                    let g = mask((x - m) * a + b, g);
                    *s += g;
                    *p += g * (x - m);
                }
            } else {
                let it = xr.iter().zip(gr).zip(c.mean);
                for ((s, p), ((&x, &g), &m)) in s.iter_mut().zip(p.iter_mut()).zip(it) {
                    *s += g;
                    *p += g * (x - m);
                }
            }
        }
        for (t, &v) in s64.iter_mut().zip(&s) {
            *t += f64::from(v);
        }
        for (t, &v) in p64.iter_mut().zip(&p) {
            *t += f64::from(v);
        }
    }
}

/// `y = (x - mean) * a + b` row by row, ReLU'd when asked.
#[inline(always)]
fn normalize_body(x: &[f32], c: &Coefs<'_>, y: &mut [f32]) {
    let ch = c.a.len();
    for (yr, xr) in y.chunks_exact_mut(ch).zip(x.chunks_exact(ch)) {
        let it = xr.iter().zip(c.a).zip(c.b).zip(c.mean);
        if c.relu {
            for (y, (((&x, &a), &b), &m)) in yr.iter_mut().zip(it) {
                *y = relu((x - m) * a + b);
            }
        } else {
            for (y, (((&x, &a), &b), &m)) in yr.iter_mut().zip(it) {
                *y = (x - m) * a + b;
            }
        }
    }
}

/// `y = relu((x - mean) * a + b + r)` row by row: a residual unit's end (the same arithmetic,
/// to the bit, as the normalisation and then the ReLU of the sum).
#[inline(always)]
fn normalize_add_body(x: &[f32], r: &[f32], c: &Coefs<'_>, y: &mut [f32]) {
    let ch = c.a.len();
    let rows = y
        .chunks_exact_mut(ch)
        .zip(x.chunks_exact(ch))
        .zip(r.chunks_exact(ch));
    for ((yr, xr), rr) in rows {
        let it = xr.iter().zip(rr).zip(c.a).zip(c.b).zip(c.mean);
        for (y, ((((&x, &r), &a), &b), &m)) in yr.iter_mut().zip(it) {
            *y = relu((x - m) * a + b + r);
        }
    }
}

/// `gx = g * a + (x - mean) * k2 + k3` row by row, `g` the masked gradient.
#[inline(always)]
fn grad_apply_body(x: &[f32], gy: &[f32], c: &Coefs<'_>, gx: &mut [f32]) {
    let ch = c.a.len();
    for ((out, xr), gr) in gx
        .chunks_exact_mut(ch)
        .zip(x.chunks_exact(ch))
        .zip(gy.chunks_exact(ch))
    {
        let coefs =
            c.a.iter()
                .zip(c.b)
                .zip(c.mean.iter().zip(c.k2.iter().zip(c.k3)));
        for (((o, &x), &g), ((&a, &b), (&m, (&k2, &k3)))) in
            out.iter_mut().zip(xr).zip(gr).zip(coefs)
        {
            let d = x - m;
            let g = if c.relu { mask(d * a + b, g) } else { g };
            *o = g * a + d * k2 + k3;
        }
    }
}

/// `1 / sqrt(var + eps)` per channel.
fn inverse_stds(var: &[f32], eps: f32) -> Vec<f64> {
    let eps = f64::from(eps);
    var.iter()
        .map(|&v| 1.0 / (f64::from(v) + eps).sqrt())
        .collect()
}

/// `gamma * inv` per channel, the normalisation's scale.
fn scales(gamma: &[f32], inv: &[f64]) -> Vec<f32> {
    gamma
        .iter()
        .zip(inv)
        .map(|(&g, &i)| (f64::from(g) * i) as f32)
        .collect()
}

impl Rows {
    fn len(&self) -> usize {
        self.rows * self.channels
    }

    fn check(&self, lens: &[(usize, &str)]) -> Result<(), DnnlError> {
        for &(len, what) in lens {
            let want = if what.starts_with("per-channel") {
                self.channels
            } else {
                self.len()
            };
            if len != want {
                return Err(DnnlError::Input(format!(
                    "batch norm of {} rows of {} channels: {what} holds {len} values, not {want}",
                    self.rows, self.channels
                )));
            }
        }
        Ok(())
    }

    /// Rows a thread takes at least.
    fn grain(&self) -> usize {
        (MIN_PER_THREAD / self.channels.max(1)).max(1)
    }

    /// `f(rows, sums)` over runs of rows on the threads, each run's `width` sums per channel
    /// added together in row order.
    fn reduce<F>(&self, width: usize, f: F) -> Vec<f64>
    where
        F: Fn(std::ops::Range<usize>, &mut [f64]) + Sync,
    {
        let parts = Mutex::new(Vec::new());
        for_parts(self.rows, self.grain(), 1, |r| {
            let mut sums = vec![0f64; width * self.channels];
            let start = r.start;
            f(r, &mut sums);
            parts.lock().push((start, sums));
        });
        let mut parts = parts.into_inner();
        parts.sort_by_key(|p| p.0);
        let mut total = vec![0f64; width * self.channels];
        for (_, sums) in parts {
            for (t, s) in total.iter_mut().zip(sums) {
                *t += s;
            }
        }
        total
    }

    /// `f(rows, out)` over runs of rows on the threads, `out` the runs' part of `dst`.
    fn map<F>(&self, dst: &mut [f32], f: F)
    where
        F: Fn(std::ops::Range<usize>, &mut [f32]) + Sync,
    {
        let ch = self.channels;
        let out = SharedMut::new(dst);
        for_parts(self.rows, self.grain(), 1, |r| {
            // SAFETY: for_parts hands out each run of rows once.
            let o = unsafe { out.range(r.start * ch..r.end * ch) };
            f(r, o);
        });
    }

    /// Normalises `x` into `y`: by the batch's statistics, written to `s.mean` and `s.var`
    /// (biased), or by those `s` holds (`global`); then a ReLU (`relu`), or the addition of
    /// `residual` and a ReLU.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn forward(
        &self,
        x: &[f32],
        residual: Option<&[f32]>,
        y: &mut [f32],
        s: Forward<'_>,
        eps: f32,
        global: bool,
        relu: bool,
    ) -> Result<(), DnnlError> {
        if let Some(r) = residual {
            self.check(&[(r.len(), "the residual")])?;
        }
        self.check(&[
            (x.len(), "the data"),
            (y.len(), "the output"),
            (s.scale.len(), "per-channel gamma"),
            (s.shift.len(), "per-channel beta"),
            (s.mean.len(), "per-channel mean"),
            (s.var.len(), "per-channel variance"),
        ])?;
        let ch = self.channels;
        if !global {
            let k = &x[..ch];
            let sums = self.reduce(2, |r, sums| {
                shifted_sums(&x[r.start * ch..r.end * ch], k, sums);
            });
            let m = self.rows as f64;
            for i in 0..ch {
                let (ds, qs) = (sums[i] / m, sums[ch + i] / m);
                s.mean[i] = (f64::from(k[i]) + ds) as f32;
                s.var[i] = (qs - ds * ds).max(0.0) as f32;
            }
        }
        let a = scales(s.scale, &inverse_stds(s.var, eps));
        let coefs = Coefs {
            a: &a,
            b: s.shift,
            mean: s.mean,
            k2: &[],
            k3: &[],
            relu,
        };
        self.map(y, |r, out| {
            let span = r.start * ch..r.end * ch;
            match residual {
                Some(res) => normalize_add(&x[span.clone()], &res[span], &coefs, out),
                None => normalize(&x[span], &coefs, out),
            }
        });
        Ok(())
    }

    /// The gradients of the data (`gx`), the scale and the shift for `gy`, given the forward
    /// pass's input, shift and statistics; `global`: the statistics were given, not the
    /// batch's (so the data gradient does not go through them).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn backward(
        &self,
        x: &[f32],
        gy: &[f32],
        shift: &[f32],
        s: Backward<'_>,
        gx: &mut [f32],
        eps: f32,
        global: bool,
        relu: bool,
    ) -> Result<(), DnnlError> {
        self.check(&[
            (x.len(), "the data"),
            (gy.len(), "the gradient"),
            (gx.len(), "the data gradient"),
            (s.scale.len(), "per-channel gamma"),
            (s.mean.len(), "per-channel mean"),
            (s.var.len(), "per-channel variance"),
            (s.gscale.len(), "per-channel gamma gradient"),
            (s.gshift.len(), "per-channel beta gradient"),
        ])?;
        if relu {
            self.check(&[(shift.len(), "per-channel beta")])?;
        }
        let ch = self.channels;
        let inv = inverse_stds(s.var, eps);
        let a = scales(s.scale, &inv);
        // the ReLU's mask is recomputed from the shift; without a ReLU it is never read
        let zeros = vec![0f32; ch];
        let b = if relu { shift } else { &zeros };
        let (mut k2, mut k3) = (vec![0f32; ch], vec![0f32; ch]);
        let sums = {
            let coefs = Coefs {
                a: &a,
                b,
                mean: s.mean,
                k2: &k2,
                k3: &k3,
                relu,
            };
            self.reduce(2, |r, sums| {
                let span = r.start * ch..r.end * ch;
                grad_sums(&x[span.clone()], &gy[span], &coefs, sums);
            })
        };
        let m = self.rows as f64;
        for i in 0..ch {
            let (sg, sgx) = (sums[i], sums[ch + i]);
            s.gshift[i] = sg as f32;
            s.gscale[i] = (sgx * inv[i]) as f32;
            if !global {
                let ai = f64::from(a[i]);
                k2[i] = (-ai * inv[i] * inv[i] * sgx / m) as f32;
                k3[i] = (-ai * sg / m) as f32;
            }
        }
        let coefs = Coefs {
            a: &a,
            b,
            mean: s.mean,
            k2: &k2,
            k3: &k3,
            relu,
        };
        self.map(gx, |r, out| {
            let span = r.start * ch..r.end * ch;
            grad_apply(&x[span.clone()], &gy[span], &coefs, out);
        });
        Ok(())
    }

    /// The gradients of a residual unit's end, `y = relu(bn(x) + r)` ([`Rows::forward`] with
    /// a residual), for the output's gradient `g`: the residual's (the masked gradient, `gz`),
    /// the data's (`gx`), the scale's and the shift's; `global` as in [`Rows::backward`].
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn backward_residual(
        &self,
        x: &[f32],
        y: &[f32],
        g: Parts<'_>,
        s: Backward<'_>,
        gx: &mut [f32],
        gz: &mut [f32],
        eps: f32,
        global: bool,
    ) -> Result<(), DnnlError> {
        let parts: Vec<(usize, &str)> = g.lens().into_iter().map(|n| (n, "the gradient")).collect();
        self.check(&parts)?;
        self.check(&[(y.len(), "the output"), (gz.len(), "the residual gradient")])?;
        // the mask first, in a pass of its own: folded into the sums' pass, five streams at
        // once ran slower than the two passes
        match g.second {
            Some(g2) => crate::relu::backward_sum(y, g.first, g2, gz)?,
            None => crate::relu::backward(y, g.first, gz)?,
        }
        self.backward(x, gz, &[], s, gx, eps, global, false)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 5 rows of 3 channels, channel `c` of row `r` is `base[c] + r * step[c]`.
    fn data(base: [f32; 3], step: [f32; 3]) -> Vec<f32> {
        (0..5)
            .flat_map(|r| (0..3).map(move |c| base[c] + r as f32 * step[c]))
            .collect()
    }

    const ROWS: Rows = Rows {
        rows: 5,
        channels: 3,
        training: true,
    };

    #[test]
    fn statistics_and_output_of_evenly_spaced_rows() {
        // rows 0..5 evenly spaced: mean base + 2 step, biased variance 2 step²
        let x = data([1.0, -2.0, 1000.0], [1.0, 0.5, 0.01]);
        let (scale, shift) = ([2.0, 1.0, 1.0], [0.5, 0.0, -1.0]);
        let (mut mean, mut var, mut y) = ([0.0; 3], [0.0; 3], vec![0.0; 15]);
        let f = Forward {
            scale: &scale,
            shift: &shift,
            mean: &mut mean,
            var: &mut var,
        };
        ROWS.forward(&x, None, &mut y, f, 0.0, false, false)
            .unwrap();
        assert_eq!(mean, [3.0, -1.0, 1000.02]);
        let want_var = [2.0, 0.5, 2e-4];
        for (v, w) in var.iter().zip(want_var) {
            assert!((v - w).abs() <= 1e-3 * w, "{var:?}");
        }
        // row 4 of channel 0: (5 - 3) / sqrt(2) * 2 + 0.5
        assert!(
            (y[12] - (2.0 / 2f32.sqrt() * 2.0 + 0.5)).abs() < 1e-5,
            "{y:?}"
        );
        // channel 2, far from zero, still normalises to ±sqrt(2) at its ends
        assert!((y[2] - (-(2f32.sqrt()) - 1.0)).abs() < 2e-3, "{y:?}");
    }

    #[test]
    fn relu_gradient_recomputes_the_mask() {
        let x = data([-2.0, 0.0, 5.0], [1.0, 1.0, -1.0]);
        let (scale, shift) = ([1.0; 3], [0.0; 3]);
        let (mean, var) = ([0.0; 3], [1.0; 3]);
        let gy = vec![1.0; 15];
        let (mut gx, mut gs, mut gb) = (vec![9.0; 15], [0.0; 3], [0.0; 3]);
        let b = Backward {
            scale: &scale,
            mean: &mean,
            var: &var,
            gscale: &mut gs,
            gshift: &mut gb,
        };
        // given statistics 0 and 1: y = x, the gradient passes where x > 0
        ROWS.backward(&x, &gy, &shift, b, &mut gx, 0.0, true, true)
            .unwrap();
        let passed: Vec<f32> = x.iter().map(|&v| if v > 0.0 { 1.0 } else { 0.0 }).collect();
        assert_eq!(gx, passed);
        assert_eq!(gb, [2.0, 4.0, 5.0]);
        assert_eq!(gs, [3.0, 10.0, 15.0]);
    }

    /// `(x, r)` for a residual unit's end: 40 rows of 3 channels, some outputs negative.
    fn residual_data() -> (Vec<f32>, Vec<f32>) {
        let x = (0..120)
            .map(|i| ((i * 37 % 23) as f32 - 11.0) * 0.3)
            .collect();
        let r = (0..120)
            .map(|i| ((i * 13 % 17) as f32 - 8.0) * 0.2)
            .collect();
        (x, r)
    }

    #[test]
    fn a_residual_end_equals_the_normalisation_then_the_relu_of_the_sum() {
        let rows = Rows {
            rows: 40,
            channels: 3,
            training: true,
        };
        let (x, r) = residual_data();
        let (scale, shift) = ([1.5, 0.5, -1.0], [0.25, -0.5, 0.0]);
        let run = |residual: Option<&[f32]>| {
            let (mut mean, mut var, mut y) = ([0.0; 3], [0.0; 3], vec![0.0; 120]);
            let f = Forward {
                scale: &scale,
                shift: &shift,
                mean: &mut mean,
                var: &mut var,
            };
            rows.forward(&x, residual, &mut y, f, 1e-3, false, residual.is_some())
                .unwrap();
            (y, mean, var)
        };
        let (z, mean, var) = run(None);
        let (y, mean2, var2) = run(Some(&r));
        assert_eq!((mean, var), (mean2, var2));
        let want: Vec<f32> = z.iter().zip(&r).map(|(&z, &r)| relu(z + r)).collect();
        assert_eq!(y, want);
        assert!(y.contains(&0.0) && y.iter().any(|&v| v > 0.0));

        // backward: the masked gradient, then the normalisation's gradient of it
        let g1: Vec<f32> = (0..120).map(|i| (i % 7) as f32 - 3.0).collect();
        let g2: Vec<f32> = (0..120).map(|i| (i % 5) as f32 * 0.5).collect();
        let grads = |g: Parts<'_>| {
            let (mut gx, mut gz, mut gs, mut gb) =
                (vec![0.0; 120], vec![0.0; 120], [0.0; 3], [0.0; 3]);
            let b = Backward {
                scale: &scale,
                mean: &mean,
                var: &var,
                gscale: &mut gs,
                gshift: &mut gb,
            };
            rows.backward_residual(&x, &y, g, b, &mut gx, &mut gz, 1e-3, false)
                .unwrap();
            (gx, gz, gs, gb)
        };
        let sum: Vec<f32> = g1.iter().zip(&g2).map(|(a, b)| a + b).collect();
        let whole = grads(Parts {
            first: &sum,
            second: None,
        });
        let split = grads(Parts {
            first: &g1,
            second: Some(&g2),
        });
        assert_eq!(whole, split);
        let (gx, gz, gs, gb) = whole;
        let masked: Vec<f32> = y.iter().zip(&sum).map(|(&y, &g)| mask(y, g)).collect();
        assert_eq!(gz, masked);
        let (mut gx2, mut gs2, mut gb2) = (vec![0.0; 120], [0.0; 3], [0.0; 3]);
        let b = Backward {
            scale: &scale,
            mean: &mean,
            var: &var,
            gscale: &mut gs2,
            gshift: &mut gb2,
        };
        rows.backward(&x, &masked, &shift, b, &mut gx2, 1e-3, false, false)
            .unwrap();
        assert_eq!((gx, gs, gb), (gx2, gs2, gb2));
    }

    #[test]
    fn a_residual_gradient_in_three_parts_is_refused() {
        let (x, _) = residual_data();
        let rows = Rows {
            rows: 40,
            channels: 3,
            training: true,
        };
        let short = vec![0.0; 119];
        let (mut gx, mut gz, mut gs, mut gb) = (vec![0.0; 120], vec![0.0; 120], [0.0; 3], [0.0; 3]);
        let b = Backward {
            scale: &[1.0; 3],
            mean: &[0.0; 3],
            var: &[1.0; 3],
            gscale: &mut gs,
            gshift: &mut gb,
        };
        let g = Parts {
            first: &x,
            second: Some(&short),
        };
        let err = rows
            .backward_residual(&x, &x, g, b, &mut gx, &mut gz, 1e-3, false)
            .unwrap_err();
        assert!(
            err.to_string()
                .contains("the gradient holds 119 values, not 120"),
            "{err}"
        );
    }

    #[test]
    fn wrong_lengths_are_named() {
        let x = vec![0.0; 15];
        let (mut mean, mut var, mut y) = ([0.0; 3], [0.0; 3], vec![0.0; 14]);
        let f = Forward {
            scale: &[1.0; 3],
            shift: &[0.0; 3],
            mean: &mut mean,
            var: &mut var,
        };
        let err = ROWS
            .forward(&x, None, &mut y, f, 1e-5, false, false)
            .unwrap_err();
        assert!(
            err.to_string()
                .contains("the output holds 14 values, not 15"),
            "{err}"
        );
    }
}
