//! A convolution of a one-pixel input to a one-pixel output (a 3×3 layer of an ImageNet network
//! fed 32×32 images, once the image has shrunk to 1×1): the output pixel reads the input
//! through the one kernel tap whose offset equals the padding, every other tap meeting only
//! padding, so the convolution is a fully connected layer on that tap's weights. Computed as
//! oneDNN's inner product on the tap's weights alone, it skips what the direct kernels cost
//! there: reordering the whole kernel (9× the tap's weights for 3×3) into oneDNN's layout on
//! every pass.

use crate::inner::InnerProduct;
use crate::{Dnnl, DnnlError};

/// One such convolution: the inner product `y = x @ wt^T + b` of `x` `(n, c)` and the tap's
/// weights `wt` `(f, c)`.
pub(crate) struct OnePixel {
    ip: InnerProduct,
    c: usize,
    f: usize,
    /// Taps per kernel, and the one that meets the input.
    taps: usize,
    tap: usize,
}

impl OnePixel {
    /// The kernel for `n` images of `c` channels to `f`, kernels of `taps` taps of which `tap`
    /// (row-major within the kernel) meets the input.
    pub(crate) fn new(
        d: &'static Dnnl,
        (n, c, f): (usize, usize, usize),
        (taps, tap): (usize, usize),
        bias: bool,
        training: bool,
    ) -> Result<OnePixel, DnnlError> {
        let ip = InnerProduct::new(d, n as i64, c as i64, f as i64, bias, training)?;
        Ok(OnePixel {
            ip,
            c,
            f,
            taps,
            tap,
        })
    }

    /// `one_pixel+` and the implementation oneDNN chose for the inner product.
    pub(crate) fn implementation(&self) -> String {
        format!("one_pixel+{}", self.ip.implementation())
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
        self.ip.forward(x, &self.tap_weights(w)?, b, y)
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
        let wt = self.tap_weights(w)?;
        let mut gt = match &gw {
            Some(gw) => {
                self.check_kernels("a weight gradient", gw.len())?;
                Some(vec![0.0; self.f * self.c])
            }
            None => None,
        };
        self.ip.backward(x, &wt, gy, gx, gt.as_deref_mut(), None)?;
        if let (Some(gw), Some(gt)) = (gw, gt) {
            gw.fill(0.0);
            for (g, t) in gw.iter_mut().skip(self.tap).step_by(self.taps).zip(&gt) {
                *g = *t;
            }
        }
        Ok(())
    }
}
