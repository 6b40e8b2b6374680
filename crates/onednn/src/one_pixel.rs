//! A convolution of a one-pixel input to a one-pixel output (a 3×3 layer of an ImageNet network
//! fed 32×32 images, once the image has shrunk to 1×1): the output pixel reads the input
//! through the one kernel tap whose offset equals the padding, every other tap meeting only
//! padding, so the convolution is a fully connected layer on that tap's weights. Computed as
//! oneDNN matrix products on the tap's weights alone, it skips what the direct kernels cost
//! there: reordering the whole kernel (9× the tap's weights for 3×3) into oneDNN's layout on
//! every pass.

use crate::matmul::Matmul;
use crate::prim::MemDesc;
use crate::{Dnnl, DnnlError};

/// The products of one such convolution: `y = x @ wt^T + b`, `gx = gy @ wt`, `gwt = gy^T @ x`
/// for `x` `(n, c)`, `y` `(n, f)` and the tap's weights `wt` `(f, c)`.
pub(crate) struct OnePixel {
    c: usize,
    f: usize,
    /// Taps per kernel, and the one that meets the input.
    taps: usize,
    tap: usize,
    fwd: Matmul,
    /// The data and the weight gradients' products, for training.
    grads: Option<(Matmul, Matmul)>,
}

impl OnePixel {
    /// The products for `n` images of `c` channels to `f`, kernels of `taps` taps of which
    /// `tap` (row-major within the kernel) meets the input.
    pub(crate) fn new(
        d: &'static Dnnl,
        (n, c, f): (usize, usize, usize),
        (taps, tap): (usize, usize),
        bias: bool,
        training: bool,
    ) -> Result<OnePixel, DnnlError> {
        let (ni, ci, fi) = (n as i64, c as i64, f as i64);
        let fwd = Matmul::new(
            d,
            MemDesc::plain(d, &[ni, ci])?,
            // the tap's weights (f, c) row-major, read as (c, f)
            MemDesc::strided(d, &[ci, fi], &[1, ci])?,
            MemDesc::plain(d, &[ni, fi])?,
            bias.then(|| MemDesc::plain(d, &[1, fi])).transpose()?,
            false,
        )?;
        let grads = if training {
            let data = Matmul::new(
                d,
                MemDesc::plain(d, &[ni, fi])?,
                MemDesc::plain(d, &[fi, ci])?,
                MemDesc::plain(d, &[ni, ci])?,
                None,
                false,
            )?;
            let weights = Matmul::new(
                d,
                // the output gradient (n, f) read as (f, n)
                MemDesc::strided(d, &[fi, ni], &[1, fi])?,
                MemDesc::plain(d, &[ni, ci])?,
                MemDesc::plain(d, &[fi, ci])?,
                None,
                false,
            )?;
            Some((data, weights))
        } else {
            None
        };
        Ok(OnePixel {
            c,
            f,
            taps,
            tap,
            fwd,
            grads,
        })
    }

    /// `one_pixel+matmul:` and the implementation oneDNN chose for the forward product.
    pub(crate) fn implementation(&self) -> String {
        format!("one_pixel+matmul:{}", self.fwd.implementation())
    }

    /// An error naming `what` unless it holds whole kernels: `f * c * taps` elements.
    fn check_kernels(&self, what: &str, len: usize) -> Result<(), DnnlError> {
        if len == self.f * self.c * self.taps {
            return Ok(());
        }
        Err(DnnlError::Input(format!(
            "{what} of {len} elements for {} filters of {} channels and {} taps",
            self.f, self.c, self.taps
        )))
    }

    /// The tap's weights of MXNet's `(f, c, *kernel)` weights `w`, as `(f, c)`.
    fn tap_weights(&self, w: &[f32]) -> Result<Vec<f32>, DnnlError> {
        self.check_kernels("weights", w.len())?;
        Ok(w.iter()
            .skip(self.tap)
            .step_by(self.taps)
            .copied()
            .collect())
    }

    /// `y = conv(x, w) + b` for `x` `(n, c)` and `y` `(n, f)`.
    pub(crate) fn forward(
        &self,
        x: &[f32],
        w: &[f32],
        b: Option<&[f32]>,
        y: &mut [f32],
    ) -> Result<(), DnnlError> {
        let wt = self.tap_weights(w)?;
        self.fwd.run(x, &wt, y, b)
    }

    /// The data gradient `gx` `(n, c)` and the weight gradient `gw` (the whole kernels, zero
    /// but for the tap) of the output gradient `gy` `(n, f)`, each where asked for.
    pub(crate) fn backward(
        &self,
        x: &[f32],
        w: &[f32],
        gy: &[f32],
        gx: Option<&mut [f32]>,
        gw: Option<&mut [f32]>,
    ) -> Result<(), DnnlError> {
        let Some((data, weights)) = &self.grads else {
            return Err(DnnlError::Input(
                "the gradient of a convolution kernel built for inference".into(),
            ));
        };
        if let Some(gx) = gx {
            data.run(gy, &self.tap_weights(w)?, gx, None)?;
        }
        if let Some(gw) = gw {
            self.check_kernels("a weight gradient", gw.len())?;
            let mut gt = vec![0.0; self.f * self.c];
            weights.run(gy, x, &mut gt, None)?;
            gw.fill(0.0);
            for (g, t) in gw.iter_mut().skip(self.tap).step_by(self.taps).zip(&gt) {
                *g = *t;
            }
        }
        Ok(())
    }
}
