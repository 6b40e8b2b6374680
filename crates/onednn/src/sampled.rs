//! The data gradient of a 1×1 convolution of stride above 1 (a ResNet's downsampling
//! shortcut and, in its V1 units, the first convolution of a stage), computed as what it is:
//! such a convolution reads only the pixels at multiples of its stride, so it is a stride-1
//! convolution of those pixels, and its data gradient is that convolution's data gradient
//! scattered back onto them, zero at every pixel it never read.
//!
//! oneDNN 3.2's channels-last data-gradient kernel for the strided case (`brgconv_strided`)
//! took 5 ms where its stride-1 1×1 kernel and the scatter take 3.3 (256 channels at 56×56 to
//! 128, batch 8, one thread), and in a ResNet-50 step its six layers took twice MXNet's
//! 55 ms, some calls 4–6× their usual time.

use parking_lot::Mutex;

use crate::conv::{Conv, ConvSpec, WinogradUse};
use crate::parallel::{MIN_PER_THREAD, SharedMut, for_parts};
use crate::prim::{Tensor, TensorMut, channels_last_strides};
use crate::{Dnnl, DnnlError};

/// A strided 1×1 convolution's data gradient by the stride-1 convolution of the pixels it
/// reads.
pub(crate) struct Sampled {
    /// The stride-1 convolution of the sampled pixels: `(N, C, *dst spatial)` to the output.
    dense: Box<Conv>,
    /// `(N, C, *src spatial)`: the data gradient's shape.
    src: Vec<usize>,
    /// `(N, C, *dst spatial)`: the dense data gradient's shape.
    sampled: Vec<usize>,
    stride: Vec<usize>,
    /// The dense data gradient, kept between calls (a quarter of the data gradient at stride
    /// 2, the size one call needs; a fresh buffer each call would fault its pages in again).
    scratch: Mutex<Vec<f32>>,
}

impl Sampled {
    /// The kernel for `spec` where it is a training 1×1 convolution of stride above 1 and no
    /// padding whose output has the dims `dst`; `None` for any other convolution.
    pub(crate) fn for_spec(
        d: &'static Dnnl,
        spec: &ConvSpec,
        dst: &[i64],
    ) -> Result<Option<Sampled>, DnnlError> {
        let fits = spec.training
            && !spec.transposed
            && spec.weights[2..].iter().all(|&k| k == 1)
            && spec.pad.iter().all(|&p| p == 0)
            && spec.stride.iter().any(|&s| s > 1);
        if !fits {
            return Ok(None);
        }
        let nd = spec.src.len() - 2;
        let mut sampled = spec.src[..2].to_vec();
        sampled.extend_from_slice(&dst[2..]);
        let dense = Conv::new(
            d,
            ConvSpec {
                src: sampled.clone(),
                weights: spec.weights.clone(),
                groups: spec.groups,
                bias: false,
                stride: vec![1; nd],
                dilate: vec![1; nd],
                pad: vec![0; nd],
                training: true,
                transposed: false,
                adj: Vec::new(),
                winograd: WinogradUse::Off,
            },
        )?;
        let us = |v: &[i64]| v.iter().map(|&x| x as usize).collect::<Vec<_>>();
        Ok(Some(Sampled {
            dense: Box::new(dense),
            src: us(&spec.src),
            sampled: us(&sampled),
            stride: us(&spec.stride),
            scratch: Mutex::new(Vec::new()),
        }))
    }

    /// `gx` from the output gradient `gy` and row-major weights `w`; both gradients
    /// channels-last (the caller checks).
    pub(crate) fn data_grad(
        &self,
        w: &[f32],
        gy: Tensor<'_>,
        gx: TensorMut<'_>,
    ) -> Result<(), DnnlError> {
        let len: usize = self.sampled.iter().product();
        if gx.data.len() != self.src.iter().product::<usize>() {
            return Err(DnnlError::Input(format!(
                "a data gradient of {} elements for {:?}",
                gx.data.len(),
                self.src
            )));
        }
        let dims: Vec<i64> = self.sampled.iter().map(|&v| v as i64).collect();
        let strides = channels_last_strides(&dims);
        let mut scratch = self.scratch.lock();
        scratch.resize(len, 0.0);
        // the data gradient does not read the data: an empty buffer stands in for it
        let x = Tensor {
            data: &[],
            strides: &strides,
        };
        let g = TensorMut {
            data: &mut scratch,
            strides: &strides,
        };
        self.dense.backward(x, w, gy, Some(g), None, None)?;
        scatter(
            &scratch,
            (&self.src, &self.sampled[2..], &self.stride),
            gx.data,
        );
        Ok(())
    }
}

/// The channels-last `gx` of dims `src` `(N, C, *spatial)` from the channels-last `g` of the
/// sampled pixels (spatial dims `sampled`): pixel `p` of `g` lands on pixel `p · stride`,
/// every other pixel is zero. Threaded by rows (all spatial axes but the last).
fn scatter(g: &[f32], (src, sampled, stride): (&[usize], &[usize], &[usize]), gx: &mut [f32]) {
    let (c, space) = (src[1], &src[2..]);
    let nd = space.len();
    let (last, s_last) = (space[nd - 1], stride[nd - 1]);
    let (row, g_row) = (last * c, sampled[nd - 1] * c);
    let rows = gx.len() / row.max(1);
    let out = SharedMut::new(gx);
    for_parts(rows, (MIN_PER_THREAD / row.max(1)).max(1), 1, |r| {
        // SAFETY: for_parts hands out each range of rows once.
        let dst = unsafe { out.range(r.start * row..r.end * row) };
        for (i, dst) in (r.start..r.end).zip(dst.chunks_exact_mut(row)) {
            // the row's coordinates, innermost axis first, and its row in `g` if sampled
            let (mut rest, mut at, mut scale, mut hit) = (i, 0, 1, true);
            for k in (0..nd - 1).rev() {
                let v = rest % space[k];
                rest /= space[k];
                hit &= v % stride[k] == 0;
                at += v / stride[k] * scale;
                scale *= sampled[k];
            }
            if !hit {
                dst.fill(0.0);
                continue;
            }
            let src_row = &g[(rest * scale + at) * g_row..][..g_row];
            for (j, px) in dst.chunks_exact_mut(c).enumerate() {
                if j % s_last == 0 {
                    px.copy_from_slice(&src_row[j / s_last * c..][..c]);
                } else {
                    px.fill(0.0);
                }
            }
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `scatter` against the definition, element by element.
    fn check(src: &[usize], stride: &[usize]) {
        let space = &src[2..];
        let sampled: Vec<usize> = space
            .iter()
            .zip(stride)
            .map(|(&d, &s)| (d - 1) / s + 1)
            .collect();
        let (n, c) = (src[0], src[1]);
        let g_len = n * c * sampled.iter().product::<usize>();
        let g: Vec<f32> = (0..g_len).map(|i| i as f32 + 1.0).collect();
        let mut gx = vec![f32::NAN; src.iter().product()];
        scatter(&g, (src, &sampled, stride), &mut gx);
        // walk gx channels-last: (n, *spatial, c)
        let mut dims = vec![n];
        dims.extend_from_slice(space);
        dims.push(c);
        for (i, &v) in gx.iter().enumerate() {
            let mut coords = vec![0; dims.len()];
            let mut rest = i;
            for k in (0..dims.len()).rev() {
                coords[k] = rest % dims[k];
                rest /= dims[k];
            }
            let spatial = &coords[1..=space.len()];
            let want = if spatial.iter().zip(stride).all(|(&p, &s)| p % s == 0) {
                let mut j = coords[0];
                for (k, &p) in spatial.iter().enumerate() {
                    j = j * sampled[k] + p / stride[k];
                }
                g[j * c + coords[space.len() + 1]]
            } else {
                0.0
            };
            assert_eq!(
                v, want,
                "element {i} ({coords:?}) of {src:?} stride {stride:?}"
            );
        }
    }

    #[test]
    fn the_sampled_pixels_get_their_gradient_and_every_other_pixel_zero() {
        check(&[2, 3, 6, 6], &[2, 2]);
        check(&[1, 5, 7, 5], &[2, 2]); // odd sizes: the last pixel is sampled
        check(&[2, 2, 5, 7], &[3, 2]); // a stride per axis
        check(&[2, 4, 6, 6], &[1, 2]); // one axis dense
        check(&[3, 2, 9], &[2]); // 1-D: one row per image
        check(&[1, 3, 5, 4, 6], &[2, 3, 2]); // 3-D
        check(&[1, 1, 3, 3], &[5, 5]); // stride beyond the size: one pixel
    }
}
