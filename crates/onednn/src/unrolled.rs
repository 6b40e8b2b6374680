//! A convolution of an image so small that every output pixel meets every input pixel through
//! one kernel tap: a 3×3 layer of an ImageNet network fed 32×32 images, once the image has
//! shrunk to 2×2 or 1×1. Such a convolution is a fully connected layer from the whole input
//! image to the whole output image, on the kernel *unrolled* over the pairs of pixels: the
//! block of output pixel `o` and input pixel `i` is the `(f, c)` matrix of the tap between
//! them. Each pass is then one matrix product on oneDNN's matmul, where the direct kernels walk
//! taps that meet only padding and reorder the whole kernel into their layout on every pass
//! (256 channels at 2×2, batch 32, forward and both gradients: 7.1 ms against 2.1).
//!
//! The input and output are channels-last, so `(n, pixels, channels)` is the matrix `(n,
//! pixels × channels)`; the unrolled kernel is `(out_pixels × f, in_pixels × c)`, row-major,
//! and the products read it as it lies (transposed for the forward pass).

use crate::matmul::Matmul;
use crate::parallel::for_parts;
use crate::prim::MemDesc;
use crate::{Dnnl, DnnlError};

/// Products of input and output pixels above which a convolution is not unrolled: the
/// unrolled kernel holds that many blocks of `f × c` weights.
pub(crate) const MAX_PIXEL_PAIRS: usize = 16;

/// The geometry of one unrolled convolution.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Pairs {
    /// Input and output channels.
    pub(crate) c: usize,
    pub(crate) f: usize,
    /// Taps per kernel.
    pub(crate) taps: usize,
    pub(crate) in_pixels: usize,
    pub(crate) out_pixels: usize,
    /// The tap between output pixel `o` and input pixel `i`, at `o * in_pixels + i`.
    pub(crate) tap: Vec<usize>,
}

impl Pairs {
    /// Elements of the unrolled kernel.
    fn len(&self) -> usize {
        self.out_pixels * self.f * self.in_pixels * self.c
    }

    /// Writes the unrolled kernel of MXNet's `(f, c, *kernel)` weights `w` into `big`.
    fn unroll(&self, w: &[f32], big: &mut [f32]) {
        let (c, f, taps, row) = (self.c, self.f, self.taps, self.in_pixels * self.c);
        let out = crate::parallel::SharedMut::new(big);
        for_parts(self.out_pixels * f, 1, 1, |rows| {
            for r in rows {
                let (o, co) = (r / f, r % f);
                let kernels = &w[co * c * taps..(co + 1) * c * taps];
                // SAFETY: for_parts hands out each row once.
                let dst = unsafe { out.range(r * row..(r + 1) * row) };
                for (i, block) in dst.chunks_exact_mut(c).enumerate() {
                    let t = self.tap[o * self.in_pixels + i];
                    for (d, k) in block.iter_mut().zip(kernels.chunks_exact(taps)) {
                        *d = k[t];
                    }
                }
            }
        });
    }

    /// Folds the unrolled kernel's gradient `big` into MXNet's weight gradient `gw`: each
    /// tap's gradient is the sum of its blocks' (zero for a tap that meets only padding).
    fn fold(&self, big: &[f32], gw: &mut [f32]) {
        let (c, f, taps, row) = (self.c, self.f, self.taps, self.in_pixels * self.c);
        let out = crate::parallel::SharedMut::new(gw);
        for_parts(f, 1, 1, |filters| {
            for co in filters {
                // SAFETY: for_parts hands out each filter once.
                let kernels = unsafe { out.range(co * c * taps..(co + 1) * c * taps) };
                kernels.fill(0.0);
                for o in 0..self.out_pixels {
                    let src = &big[(o * f + co) * row..(o * f + co + 1) * row];
                    for (i, block) in src.chunks_exact(c).enumerate() {
                        let t = self.tap[o * self.in_pixels + i];
                        for (k, g) in kernels.chunks_exact_mut(taps).zip(block) {
                            k[t] += g;
                        }
                    }
                }
            }
        });
    }
}

/// One unrolled convolution: `y = x @ big^T + b` for `x` `(n, in_pixels × c)` and the
/// unrolled kernel `big`.
pub(crate) struct Unrolled {
    pairs: Pairs,
    bias: bool,
    forward: Matmul,
    /// The data gradient `gy @ big` and the kernel's `gy^T @ x`, when built for training.
    grads: Option<(Matmul, Matmul)>,
}

impl Unrolled {
    /// The kernel for `n` images of `pairs`' geometry.
    pub(crate) fn new(
        d: &'static Dnnl,
        n: usize,
        pairs: Pairs,
        bias: bool,
        training: bool,
    ) -> Result<Unrolled, DnnlError> {
        let (n, c, f) = (
            n as i64,
            (pairs.in_pixels * pairs.c) as i64,
            (pairs.out_pixels * pairs.f) as i64,
        );
        let plain = |rows: i64, cols: i64| MemDesc::strided(d, &[rows, cols], &[cols, 1]);
        let transposed = |rows: i64, cols: i64| MemDesc::strided(d, &[rows, cols], &[1, rows]);
        // a bias is written into the output first and the product added to it
        let forward = Matmul::new(d, plain(n, c)?, transposed(c, f)?, plain(n, f)?, bias)?;
        let grads = if training {
            Some((
                Matmul::new(d, plain(n, f)?, plain(f, c)?, plain(n, c)?, false)?,
                Matmul::new(d, transposed(f, n)?, plain(n, c)?, plain(f, c)?, false)?,
            ))
        } else {
            None
        };
        Ok(Unrolled {
            pairs,
            bias,
            forward,
            grads,
        })
    }

    /// `unrolled+` and the implementation oneDNN chose for the forward product.
    pub(crate) fn implementation(&self) -> String {
        format!("unrolled+{}", self.forward.implementation())
    }

    /// An error naming `what` unless it holds whole kernels.
    fn check_kernels(&self, what: &str, len: usize) -> Result<(), DnnlError> {
        let p = &self.pairs;
        if len == p.f * p.c * p.taps {
            return Ok(());
        }
        Err(DnnlError::Input(format!(
            "{what} of {len} elements for {} filters of {} channels and {} taps",
            p.f, p.c, p.taps
        )))
    }

    fn unrolled(&self, w: &[f32]) -> Result<Vec<f32>, DnnlError> {
        self.check_kernels("weights", w.len())?;
        let mut big = vec![0.0; self.pairs.len()];
        self.pairs.unroll(w, &mut big);
        Ok(big)
    }

    /// `y = conv(x, w) + b` for channels-last `x` and `y`.
    pub(crate) fn forward(
        &self,
        x: &[f32],
        w: &[f32],
        b: Option<&[f32]>,
        y: &mut [f32],
    ) -> Result<(), DnnlError> {
        let big = self.unrolled(w)?;
        let f = self.pairs.f;
        match b {
            Some(b) if self.bias && b.len() == f => {
                for pixel in y.chunks_exact_mut(f) {
                    pixel.copy_from_slice(b);
                }
            }
            None if !self.bias => {}
            _ => {
                return Err(DnnlError::Input(format!(
                    "a bias of {:?} elements for a kernel built {} one of {f}",
                    b.map(<[f32]>::len),
                    if self.bias { "with" } else { "without" },
                )));
            }
        }
        self.forward.run(x, &big, y)
    }

    /// The data gradient `gx` and the weight gradient `gw` of the output gradient `gy`, each
    /// where asked for; all channels-last.
    pub(crate) fn backward(
        &self,
        x: &[f32],
        w: &[f32],
        gy: &[f32],
        gx: Option<&mut [f32]>,
        gw: Option<&mut [f32]>,
    ) -> Result<(), DnnlError> {
        let Some((data, kernel)) = &self.grads else {
            return Err(DnnlError::Input(
                "the gradient of a convolution built for inference".into(),
            ));
        };
        if let Some(gx) = gx {
            data.run(gy, &self.unrolled(w)?, gx)?;
        }
        if let Some(gw) = gw {
            self.check_kernels("a weight gradient", gw.len())?;
            let mut big = vec![0.0; self.pairs.len()];
            kernel.run(gy, x, &mut big)?;
            self.pairs.fold(&big, gw);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 2×2 to 2×2 by 3×3 kernels with padding 1: the tap between `o` and `i` is `i - o + 1`
    /// on each axis.
    fn two_by_two(c: usize, f: usize) -> Pairs {
        let mut tap = Vec::new();
        for o in 0..4 {
            for i in 0..4 {
                let (oy, ox, iy, ix) = (o / 2, o % 2, i / 2, i % 2);
                tap.push((iy + 1 - oy) * 3 + (ix + 1 - ox));
            }
        }
        Pairs {
            c,
            f,
            taps: 9,
            in_pixels: 4,
            out_pixels: 4,
            tap,
        }
    }

    #[test]
    fn unrolling_places_each_pairs_tap() {
        let p = two_by_two(2, 3);
        let w: Vec<f32> = (0..3 * 2 * 9).map(|v| v as f32).collect();
        let mut big = vec![f32::NAN; p.len()];
        p.unroll(&w, &mut big);
        let row = p.in_pixels * p.c;
        for o in 0..4 {
            for co in 0..3 {
                for i in 0..4 {
                    for ci in 0..2 {
                        let t = p.tap[o * 4 + i];
                        assert_eq!(
                            big[(o * 3 + co) * row + i * 2 + ci],
                            w[(co * 2 + ci) * 9 + t]
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn folding_sums_each_taps_blocks() {
        let p = two_by_two(2, 3);
        let big = vec![1.0; p.len()];
        let mut gw = vec![f32::NAN; 3 * 2 * 9];
        p.fold(&big, &mut gw);
        // the centre meets all four pixel pairs on the diagonal, an edge two, a corner one
        let want = [1.0, 2.0, 1.0, 2.0, 4.0, 2.0, 1.0, 2.0, 1.0];
        for k in gw.chunks_exact(9) {
            assert_eq!(k, want);
        }
    }
}
