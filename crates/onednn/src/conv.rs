//! Convolution and deconvolution (transposed convolution) over 1, 2 or 3 spatial dimensions:
//! forward, and the gradients of the data, the weights and the bias, as MXNet's `Convolution`
//! and `Deconvolution` define them (symmetric padding, MXNet's dilation where 1 is dense,
//! grouped channels; a deconvolution's `adj` extra output at the high end).
//!
//! The primitives compute in the channels-last layout (`nwc`, `nhwc`, `ndhwc`), where oneDNN
//! 3.2's fastest AVX-512 convolutions run: the output is written channels-last, so the next
//! layer (another convolution, a batch norm, an activation, an addition) reads it without a
//! reorder; data in another layout is reordered in and out. 3×3 convolutions of stride 1 with
//! 16 to 512 channels compute by Winograd's F(4×4, 3×3) instead ([`crate::winograd`]), images
//! so small that every output pixel meets every input pixel through one tap by one matrix
//! product on the kernel unrolled over the pairs of pixels ([`crate::unrolled`]), and the data
//! gradient of a strided 1×1 convolution by a stride-1 one ([`crate::sampled`]).

use crate::ffi::{self, Dim};
use crate::parallel::{MIN_PER_THREAD, for_parts};
use crate::prim::{
    MemDesc, Port, PrimDesc, Primitive, Tensor, TensorMut, channels_last_strides, plain_strides,
    same_layout,
};
use crate::sampled::Sampled;
use crate::unrolled::{MAX_PIXEL_PAIRS, Pairs, Unrolled};
use crate::winograd::{Pass, Tiling, Winograd};
use crate::{Dnnl, DnnlError};
use parking_lot::Mutex;

/// The shapes and attributes one convolution kernel is built for.
#[derive(Debug, Clone)]
pub struct ConvSpec {
    /// `(N, C, *spatial)`.
    pub src: Vec<i64>,
    /// MXNet's weight shape: `(F, C / groups, *kernel)`, or `(C, F / groups, *kernel)` when
    /// `transposed`.
    pub weights: Vec<i64>,
    pub groups: i64,
    pub bias: bool,
    pub stride: Vec<i64>,
    /// MXNet's dilation: 1 for a dense kernel.
    pub dilate: Vec<i64>,
    pub pad: Vec<i64>,
    /// Build the gradients too (a forward pass for training).
    pub training: bool,
    /// A deconvolution: the transpose of the convolution these attributes describe.
    pub transposed: bool,
    /// A deconvolution's extra output at the high end of each axis (each below its stride).
    pub adj: Vec<i64>,
    /// When to compute the forward pass and the data and weight gradients by Winograd's
    /// F(4×4, 3×3) ([`crate::winograd`]).
    pub winograd: WinogradUse,
}

/// When a convolution computes by Winograd's F(4×4, 3×3) instead of oneDNN's direct kernels.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum WinogradUse {
    /// Never.
    Off,
    /// Where it is faster: 16 to 512 channels, enough tiles to repay transforming the kernels
    /// on every call, and tiles that the output fills well enough to need at most half the
    /// direct kernels' multiplications.
    #[default]
    Auto,
    /// For every convolution it can compute (tests use it on small shapes).
    Always,
}

/// Tiles below which [`WinogradUse::Auto`] keeps the direct kernels (512 channels at 4×4,
/// one tile an image: 8 images took 1.25 times the direct kernels' time, 32 images 0.6).
const WINOGRAD_MIN_TILES: usize = 16;
/// Products of input and output channels above which [`WinogradUse::Auto`] keeps the direct
/// kernels: the transformed kernels take 144 bytes per pair of the process's scratch buffer
/// (38 MB for 512 channels in and out).
const WINOGRAD_MAX_CHANNEL_PAIRS: usize = 512 * 512;

impl ConvSpec {
    /// The output shape `(N, F, *out)`, or an error naming what does not fit.
    pub fn dst(&self) -> Result<Vec<i64>, DnnlError> {
        let nd = self.src.len().wrapping_sub(2);
        let (c, f) = (self.src.get(1).copied().unwrap_or(0), self.filters());
        let per_group = if self.transposed {
            self.weights[0] == c
        } else {
            self.weights[1] * self.groups == c
        };
        let ok = (1..=3).contains(&nd)
            && self.weights.len() == nd + 2
            && [&self.stride, &self.dilate, &self.pad]
                .iter()
                .all(|v| v.len() == nd)
            && (!self.transposed || self.adj.len() == nd)
            && self.groups >= 1
            && c % self.groups == 0
            && f % self.groups == 0
            && per_group
            && self.stride.iter().chain(&self.dilate).all(|&v| v >= 1)
            && self.pad.iter().all(|&p| p >= 0)
            && self.src.iter().chain(&self.weights).all(|&v| v >= 1);
        if !ok {
            return Err(DnnlError::Input(format!(
                "a convolution that does not fit: {self:?}"
            )));
        }
        let mut dst = vec![self.src[0], f];
        for i in 0..nd {
            let span = self.dilate[i] * (self.weights[i + 2] - 1) + 1;
            let o = if self.transposed {
                self.stride[i] * (self.src[i + 2] - 1) + span - 2 * self.pad[i] + self.adj[i]
            } else {
                (self.src[i + 2] + 2 * self.pad[i] - span) / self.stride[i] + 1
            };
            if o < 1 {
                return Err(DnnlError::Input(format!(
                    "kernel larger than the padded input: {self:?}"
                )));
            }
            dst.push(o);
        }
        Ok(dst)
    }

    /// The tiles of the forward pass and of the data gradient by Winograd's F(4×4, 3×3), where
    /// [`ConvSpec::winograd`] asks for it and the convolution is one it computes: 2-D, 3×3,
    /// stride 1, dense, one group, at most 2 of padding (the data gradient's padding is 2
    /// minus the forward one).
    fn winograd_tiling(&self) -> Option<(Tiling, Tiling)> {
        let fits = self.winograd != WinogradUse::Off
            && !self.transposed
            && self.src.len() == 4
            && self.groups == 1
            && self.weights[2..] == [3, 3]
            && self.stride == [1, 1]
            && self.dilate == [1, 1]
            && self.pad.iter().all(|p| (0..=2).contains(p));
        if !fits {
            return None;
        }
        let u = |v: i64| usize::try_from(v).ok();
        let (n, c, h, w) = (
            u(self.src[0])?,
            u(self.src[1])?,
            u(self.src[2])?,
            u(self.src[3])?,
        );
        let (f, ph, pw) = (u(self.weights[0])?, u(self.pad[0])?, u(self.pad[1])?);
        let fwd = Tiling::new(n, c, f, (h, w), (ph, pw))?;
        let (oh, ow) = fwd.out_size();
        let bwd = Tiling::new(n, f, c, (oh, ow), (2 - ph, 2 - pw))?;
        // 36 multiplications a tile where the direct kernels do 9 an output pixel (a 2×2
        // output, one tile mostly empty, gains nothing)
        let fewer = 36 * fwd.tiles() * 2 <= 9 * n * oh * ow;
        let faster = c.min(f) >= 16
            && c * f <= WINOGRAD_MAX_CHANNEL_PAIRS
            && fwd.tiles() >= WINOGRAD_MIN_TILES
            && fewer;
        (self.winograd == WinogradUse::Always || faster).then_some((fwd, bwd))
    }

    /// Where every output pixel meets every input pixel through one kernel tap and the two
    /// images are small, the tap of each pair of pixels ([`crate::unrolled`]).
    fn unrolled_pairs(&self, dst: &[i64]) -> Option<Pairs> {
        let u = |v: i64| usize::try_from(v).ok();
        let (ins, outs, kernel) = (&self.src[2..], &dst[2..], &self.weights[2..]);
        let in_pixels = ins.iter().try_fold(1, |a, &v| Some(a * u(v)?))?;
        let out_pixels = outs.iter().try_fold(1, |a, &v| Some(a * u(v)?))?;
        if self.transposed || self.groups != 1 || in_pixels * out_pixels > MAX_PIXEL_PAIRS {
            return None;
        }
        // pixel `p`'s index on each axis, row-major
        let coords = |mut p: i64, dims: &[i64]| {
            let mut at = vec![0; dims.len()];
            for (a, &d) in at.iter_mut().zip(dims).rev() {
                *a = p % d;
                p /= d;
            }
            at
        };
        let mut tap = Vec::with_capacity(in_pixels * out_pixels);
        for o in 0..out_pixels as i64 {
            let oc = coords(o, outs);
            for i in 0..in_pixels as i64 {
                let ic = coords(i, ins);
                let mut t = 0;
                for axis in 0..kernel.len() {
                    let offset = ic[axis] + self.pad[axis] - oc[axis] * self.stride[axis];
                    let k = offset / self.dilate[axis];
                    if offset < 0 || offset % self.dilate[axis] != 0 || k >= kernel[axis] {
                        return None;
                    }
                    t = t * kernel[axis] + k;
                }
                tap.push(u(t)?);
            }
        }
        Some(Pairs {
            c: u(self.src[1])?,
            f: u(self.filters())?,
            taps: kernel.iter().try_fold(1, |a, &v| Some(a * u(v)?))?,
            in_pixels,
            out_pixels,
            tap,
        })
    }

    /// Output channels.
    fn filters(&self) -> i64 {
        if self.transposed {
            self.weights.get(1).map_or(0, |w| w * self.groups)
        } else {
            self.weights.first().copied().unwrap_or(0)
        }
    }

    /// The high-end padding: a deconvolution's `adj` extends its output there.
    fn pad_r(&self) -> Vec<i64> {
        if self.transposed {
            self.pad.iter().zip(&self.adj).map(|(p, a)| p - a).collect()
        } else {
            self.pad.clone()
        }
    }

    /// oneDNN's weight dims, `(F, C, *kernel)` or `(groups, F / groups, C / groups, *kernel)`,
    /// and the strides of MXNet's row-major weights in them (a deconvolution's weights are
    /// stored with C and F swapped).
    fn dnnl_weights(&self) -> (Vec<i64>, Vec<i64>) {
        let (c, f, g) = (self.src[1], self.filters(), self.groups);
        let kernel = &self.weights[2..];
        let k: i64 = kernel.iter().product();
        let kst = plain_strides(kernel);
        let mut dims = if g == 1 {
            vec![f, c]
        } else {
            vec![g, f / g, c / g]
        };
        dims.extend_from_slice(kernel);
        let (fg, cg) = (f / g, c / g);
        // strides of the (F/g, C/g) pair: F-major for a convolution, C-major transposed
        let (sf, sc) = if self.transposed {
            (k, fg * k)
        } else {
            (cg * k, k)
        };
        let mut st = if g == 1 {
            vec![sf, sc]
        } else {
            vec![fg * cg * k, sf, sc]
        };
        st.extend(kst);
        (dims, st)
    }
}

/// The geometry arrays every convolution call takes.
struct Geometry {
    strides: ffi::Dims,
    dilates: ffi::Dims,
    pad: ffi::Dims,
    pad_r: ffi::Dims,
}

struct BackwardData {
    prim: Primitive,
    diff_dst: Port,
    weights: Port,
    diff_src: Port,
}

struct BackwardWeights {
    prim: Primitive,
    src: Port,
    diff_dst: Port,
    diff_weights: Port,
}

/// One convolution's primitives, built once for its [`ConvSpec`].
pub struct Conv {
    spec: ConvSpec,
    dst: Vec<i64>,
    fwd: Primitive,
    src: Port,
    weights: Port,
    bias: Option<MemDesc>,
    out: Port,
    bwd_data: Option<BackwardData>,
    bwd_weights: Option<BackwardWeights>,
    /// The strides of MXNet's row-major weights in oneDNN's weight dims.
    wstrides: Vec<i64>,
    /// The fully connected product of an image small enough to unroll the kernel over its
    /// pixels ([`crate::unrolled`]), where it is one.
    unrolled: Option<Unrolled>,
    /// Winograd's kernels, where they apply: the forward one (which computes the weight
    /// gradient too) and the data gradient's. They take channels-last data, the primitives
    /// anything else.
    winograd: Option<(Winograd, Option<Winograd>)>,
    /// The data gradient of a strided 1×1 convolution, by the stride-1 one of the pixels it
    /// reads, where this is one; it takes channels-last gradients, the primitive anything else.
    sampled: Option<Sampled>,
    implementation: String,
}

impl std::fmt::Debug for Conv {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "Conv({:?} -> {:?}, {})",
            self.spec.src, self.dst, self.implementation
        )
    }
}

impl Conv {
    /// Creates the forward primitive (and, for training, both backward ones).
    pub fn new(d: &'static Dnnl, spec: ConvSpec) -> Result<Conv, DnnlError> {
        let dst = spec.dst()?;
        let (wdims, wstrides) = spec.dnnl_weights();
        let pad_r = spec.pad_r();
        if pad_r.iter().any(|&p| p < 0) {
            return Err(DnnlError::Unsupported {
                what: "deconvolution",
                detail: format!("adj {:?} beyond pad {:?}", spec.adj, spec.pad),
            });
        }
        let (alg, fwd_fn, data_fn, weights_fn) = if spec.transposed {
            (
                ffi::DECONVOLUTION_DIRECT,
                d.api.dnnl_deconvolution_forward_primitive_desc_create,
                d.api.dnnl_deconvolution_backward_data_primitive_desc_create,
                d.api
                    .dnnl_deconvolution_backward_weights_primitive_desc_create,
            )
        } else {
            (
                ffi::CONVOLUTION_DIRECT,
                d.api.dnnl_convolution_forward_primitive_desc_create,
                d.api.dnnl_convolution_backward_data_primitive_desc_create,
                d.api
                    .dnnl_convolution_backward_weights_primitive_desc_create,
            )
        };
        let nd = spec.src.len() - 2;
        let dil: Vec<i64> = spec.dilate.iter().map(|v| v - 1).collect();
        let g = Geometry {
            strides: crate::prim::dims_of(&spec.stride)?,
            dilates: crate::prim::dims_of(&dil)?,
            pad: crate::prim::dims_of(&spec.pad)?,
            pad_r: crate::prim::dims_of(&pad_r)?,
        };
        let detail = || format!("{spec:?}");
        let any = |dims: &[Dim]| MemDesc::any(d, dims);
        let bias_dims = [spec.filters()];
        let bias = spec
            .bias
            .then(|| MemDesc::plain(d, &bias_dims))
            .transpose()?;
        let prop = if spec.training {
            ffi::FORWARD_TRAINING
        } else {
            ffi::FORWARD_INFERENCE
        };
        let (s_any, w_any, d_any) = (
            MemDesc::channels_last(d, &spec.src)?,
            any(&wdims)?,
            MemDesc::channels_last(d, &dst)?,
        );
        let null = std::ptr::null();
        let fwd_pd = PrimDesc::create(d, "convolution", &detail, |raw| {
            // SAFETY: every descriptor is live; the geometry arrays hold `nd` values each.
            unsafe {
                fwd_fn(
                    raw,
                    d.engine,
                    prop,
                    alg,
                    s_any.raw,
                    w_any.raw,
                    bias.as_ref().map_or(null, |b| b.raw),
                    d_any.raw,
                    g.strides.as_ptr(),
                    g.dilates.as_ptr(),
                    g.pad.as_ptr(),
                    g.pad_r.as_ptr(),
                    null,
                )
            }
        })?;
        let implementation = fwd_pd.implementation();
        let src = Port::input(d, &spec.src, fwd_pd.md_of(ffi::QUERY_SRC_MD)?)?;
        let weights = Port::input(d, &wdims, fwd_pd.md_of(ffi::QUERY_WEIGHTS_MD)?)?;
        let out = Port::output(d, &dst, fwd_pd.md_of(ffi::QUERY_DST_MD)?)?;
        let fwd = Primitive::new(&fwd_pd)?;
        let (mut bwd_data, mut bwd_weights) = (None, None);
        if spec.training {
            let data_pd = PrimDesc::create(d, "convolution data gradient", &detail, |raw| {
                // SAFETY: as above; `fwd_pd` is the live hint.
                unsafe {
                    data_fn(
                        raw,
                        d.engine,
                        alg,
                        s_any.raw,
                        w_any.raw,
                        d_any.raw,
                        g.strides.as_ptr(),
                        g.dilates.as_ptr(),
                        g.pad.as_ptr(),
                        g.pad_r.as_ptr(),
                        fwd_pd.raw,
                        null,
                    )
                }
            })?;
            bwd_data = Some(BackwardData {
                diff_dst: Port::input(d, &dst, data_pd.md_of(ffi::QUERY_DIFF_DST_MD)?)?,
                weights: Port::input(d, &wdims, data_pd.md_of(ffi::QUERY_WEIGHTS_MD)?)?,
                diff_src: Port::output(d, &spec.src, data_pd.md_of(ffi::QUERY_DIFF_SRC_MD)?)?,
                prim: Primitive::new(&data_pd)?,
            });
            let weights_pd = PrimDesc::create(d, "convolution weight gradient", &detail, |raw| {
                // SAFETY: as above.
                unsafe {
                    weights_fn(
                        raw,
                        d.engine,
                        alg,
                        s_any.raw,
                        w_any.raw,
                        // the bias gradient is summed here ([`bias_grad`]): oneDNN's
                        // channels-last 1×1 kernel takes longer over it than over the weights'
                        null,
                        d_any.raw,
                        g.strides.as_ptr(),
                        g.dilates.as_ptr(),
                        g.pad.as_ptr(),
                        g.pad_r.as_ptr(),
                        fwd_pd.raw,
                        null,
                    )
                }
            })?;
            bwd_weights = Some(BackwardWeights {
                src: Port::input(d, &spec.src, weights_pd.md_of(ffi::QUERY_SRC_MD)?)?,
                diff_dst: Port::input(d, &dst, weights_pd.md_of(ffi::QUERY_DIFF_DST_MD)?)?,
                diff_weights: Port::output(
                    d,
                    &wdims,
                    weights_pd.md_of(ffi::QUERY_DIFF_WEIGHTS_MD)?,
                )?,
                prim: Primitive::new(&weights_pd)?,
            });
        }
        let _ = nd;
        let mut implementation = implementation;
        let unrolled = match spec.unrolled_pairs(&dst) {
            Some(pairs) => {
                let k = Unrolled::new(d, spec.src[0] as usize, pairs, spec.bias, spec.training)?;
                implementation = k.implementation();
                Some(k)
            }
            None => None,
        };
        let tiling = if unrolled.is_none() {
            spec.winograd_tiling()
        } else {
            None
        };
        let winograd = match tiling {
            Some((fwd, bwd)) => {
                let pass = Pass::Forward {
                    weight_grad: spec.training,
                };
                let f = Winograd::new(d, fwd, pass)?;
                implementation = f.implementation().to_string();
                let b = spec
                    .training
                    .then(|| Winograd::new(d, bwd, Pass::DataGrad))
                    .transpose()?;
                Some((f, b))
            }
            None => None,
        };
        let sampled = Sampled::for_spec(d, &spec, &dst)?;
        Ok(Conv {
            unrolled,
            winograd,
            sampled,
            spec,
            dst,
            fwd,
            src,
            weights,
            bias,
            out,
            bwd_data,
            bwd_weights,
            wstrides,
            implementation,
        })
    }

    /// The output shape.
    pub fn dst_dims(&self) -> &[i64] {
        &self.dst
    }

    /// The implementation oneDNN chose for the forward pass (e.g. `jit:avx512_core`).
    pub fn implementation(&self) -> &str {
        &self.implementation
    }

    /// `y = conv(x, w) + b`; `w` and `b` are row-major.
    pub fn forward(
        &self,
        x: Tensor<'_>,
        w: &[f32],
        b: Option<&[f32]>,
        y: TensorMut<'_>,
    ) -> Result<(), DnnlError> {
        if let Some(k) = &self.unrolled
            && channels_last(&self.spec.src, x.strides)
            && channels_last(&self.dst, y.strides)
        {
            return k.forward(x.data, w, b, y.data);
        }
        if let Some((wf, _)) = &self.winograd
            && channels_last(&self.spec.src, x.strides)
            && channels_last(&self.dst, y.strides)
        {
            return wf.run(x.data, w, b, y.data);
        }
        let xm = self.src.feed(x.data, x.strides)?;
        let wm = self.weights.feed(w, &self.wstrides)?;
        let bm = match (&self.bias, b) {
            (Some(md), Some(b)) => Some(crate::prim::Memory::lend(md, b)?),
            (None, None) => None,
            _ => {
                return Err(DnnlError::Input(
                    "bias given to a kernel built without one".into(),
                ));
            }
        };
        let sink = self.out.sink(y.data, y.strides)?;
        let mut args = vec![
            (ffi::ARG_SRC, &xm),
            (ffi::ARG_WEIGHTS, &wm),
            (ffi::ARG_DST, &sink.mem),
        ];
        if let Some(bm) = &bm {
            args.push((ffi::ARG_BIAS, bm));
        }
        self.fwd.run(&args)?;
        drop(args);
        sink.finish()
    }

    /// The gradients of the data (`gx`), the weights (`gw`) and the bias (`gb`) for the
    /// output gradient `gy`; each is computed only when asked for.
    pub fn backward(
        &self,
        x: Tensor<'_>,
        w: &[f32],
        gy: Tensor<'_>,
        gx: Option<TensorMut<'_>>,
        gw: Option<&mut [f32]>,
        gb: Option<&mut [f32]>,
    ) -> Result<(), DnnlError> {
        let (Some(bd), Some(bw)) = (&self.bwd_data, &self.bwd_weights) else {
            return Err(DnnlError::Input(
                "the gradient of a convolution kernel built for inference".into(),
            ));
        };
        match &gb {
            Some(_) if !self.spec.bias => {
                return Err(DnnlError::Input(
                    "a bias gradient from a kernel without bias".into(),
                ));
            }
            Some(b) if b.len() as i64 != self.spec.filters() => {
                return Err(DnnlError::Input(format!(
                    "a bias gradient of {} elements for {} filters",
                    b.len(),
                    self.spec.filters()
                )));
            }
            _ => {}
        }
        if let Some(gb) = gb {
            crate::prim::check_dense(&self.dst, gy.strides)?;
            if gy.data.len() as i64 != self.dst.iter().product::<i64>() {
                return Err(DnnlError::Input(format!(
                    "an output gradient of {} elements for {:?}",
                    gy.data.len(),
                    self.dst
                )));
            }
            bias_grad(gy.data, gy.strides[1] as usize, gb);
        }
        if let Some(k) = &self.unrolled
            && channels_last(&self.spec.src, x.strides)
            && channels_last(&self.dst, gy.strides)
            && gx
                .as_ref()
                .is_none_or(|g| channels_last(&self.spec.src, g.strides))
        {
            return k.backward(x.data, w, gy.data, gx.map(|g| g.data), gw);
        }
        // Winograd's kernels take what is channels-last; the primitives the rest
        let (mut gx, mut gw) = (gx, gw);
        if let Some((wf, wb)) = &self.winograd
            && channels_last(&self.dst, gy.strides)
        {
            if let Some(wb) = wb
                && let Some(g) = gx.take_if(|g| channels_last(&self.spec.src, g.strides))
            {
                wb.run(gy.data, w, None, g.data)?;
            }
            if wf.has_weight_grad()
                && channels_last(&self.spec.src, x.strides)
                && let Some(g) = gw.take()
            {
                wf.weight_grad(x.data, gy.data, g)?;
            }
        }
        if let Some(sm) = &self.sampled
            && channels_last(&self.dst, gy.strides)
            && let Some(g) = gx.take_if(|g| channels_last(&self.spec.src, g.strides))
        {
            sm.data_grad(w, gy, g)?;
        }
        // The output gradient, reordered once where both passes want the same layout.
        let shared = gx.is_some() && gw.is_some() && bd.diff_dst.inner.same(&bw.diff_dst.inner);
        let gy_data = if gx.is_some() {
            Some(bd.diff_dst.feed(gy.data, gy.strides)?)
        } else {
            None
        };
        if let (Some(gx), Some(gym)) = (gx, &gy_data) {
            let wm = bd.weights.feed(w, &self.wstrides)?;
            let sink = bd.diff_src.sink(gx.data, gx.strides)?;
            bd.prim.run(&[
                (ffi::ARG_DIFF_DST, gym),
                (ffi::ARG_WEIGHTS, &wm),
                (ffi::ARG_DIFF_SRC, &sink.mem),
            ])?;
            sink.finish()?;
        }
        let Some(gw) = gw else {
            return Ok(());
        };
        let own;
        let gym = match (&gy_data, shared) {
            (Some(m), true) => m,
            _ => {
                own = bw.diff_dst.feed(gy.data, gy.strides)?;
                &own
            }
        };
        let xm = bw.src.feed(x.data, x.strides)?;
        let sink = bw.diff_weights.sink(gw, &self.wstrides)?;
        bw.prim.run(&[
            (ffi::ARG_SRC, &xm),
            (ffi::ARG_DIFF_DST, gym),
            (ffi::ARG_DIFF_WEIGHTS, &sink.mem),
        ])?;
        sink.finish()
    }
}

/// True when `strides` lay out `dims` channels-last.
fn channels_last(dims: &[i64], strides: &[i64]) -> bool {
    same_layout(dims, &channels_last_strides(dims), strides)
}

simd_dispatch! {
    fn pixel_sums / pixel_sums_body(pixels: &[f32], acc: &mut [f32]);
}

/// Adds each of channels-last `pixels` (rows of `acc.len()` channels) to `acc`, in order.
#[inline(always)]
fn pixel_sums_body(pixels: &[f32], acc: &mut [f32]) {
    for px in pixels.chunks_exact(acc.len()) {
        acc.iter_mut().zip(px).for_each(|(a, v)| *a += v);
    }
}

/// The bias gradient `gb[f]`: the sum of the dense output gradient `gy` over every axis but
/// its channels', whose stride is `sf` (1 channels-last). In a dense layout the elements below
/// the channel axis come in runs of `sf` of one channel, the runs cycling through the channels.
fn bias_grad(gy: &[f32], sf: usize, gb: &mut [f32]) {
    let f = gb.len();
    let total = Mutex::new(vec![0.0f32; f]);
    let add = |part: &[f32]| {
        let mut t = total.lock();
        t.iter_mut().zip(part).for_each(|(t, v)| *t += v);
    };
    if f == 1 {
        add(&[gy.iter().sum()]);
    } else if sf == 1 {
        for_parts(gy.len() / f, (MIN_PER_THREAD / f).max(1), 1, |r| {
            let mut acc = vec![0.0f32; f];
            pixel_sums(&gy[r.start * f..r.end * f], &mut acc);
            add(&acc);
        });
    } else {
        for_parts(gy.len() / sf, (MIN_PER_THREAD / sf).max(1), 1, |r| {
            let mut acc = vec![0.0f32; f];
            for j in r {
                acc[j % f] += gy[j * sf..(j + 1) * sf].iter().sum::<f32>();
            }
            add(&acc);
        });
    }
    gb.copy_from_slice(&total.into_inner());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bias_gradient_sums_every_axis_but_the_channels_in_any_layout() {
        // (N, F, H, W) = (2, 3, 2, 5): element (n, f, h, w) holds 1000 n + 100 f + 10 h + w
        let (n, f, h, w) = (2usize, 3usize, 2usize, 5usize);
        let value = |i: [usize; 4]| (1000 * i[0] + 100 * i[1] + 10 * i[2] + i[3]) as f32;
        let want: Vec<f32> = (0..f)
            .map(|c| {
                let mut s = 0.0;
                for a in 0..n {
                    for b in 0..h {
                        for d in 0..w {
                            s += value([a, c, b, d]);
                        }
                    }
                }
                s
            })
            .collect();
        // strides of NCHW, NHWC and (H, C, N, W)
        for st in [[30, 10, 5, 1], [30, 1, 15, 3], [5, 10, 30, 1]] {
            let mut gy = vec![0.0; n * f * h * w];
            for a in 0..n {
                for c in 0..f {
                    for b in 0..h {
                        for d in 0..w {
                            gy[a * st[0] + c * st[1] + b * st[2] + d * st[3]] = value([a, c, b, d]);
                        }
                    }
                }
            }
            let mut gb = vec![f32::NAN; f];
            bias_grad(&gy, st[1], &mut gb);
            assert_eq!(gb, want, "strides {st:?}");
        }
        let mut one = [f32::NAN];
        bias_grad(&[1.0, 2.0, 3.5], 7, &mut one);
        assert_eq!(one, [6.5]);
    }

    fn spec(src: &[i64], weights: &[i64], stride: &[i64], pad: &[i64], dilate: &[i64]) -> ConvSpec {
        ConvSpec {
            src: src.to_vec(),
            weights: weights.to_vec(),
            groups: 1,
            bias: false,
            stride: stride.to_vec(),
            dilate: dilate.to_vec(),
            pad: pad.to_vec(),
            training: true,
            transposed: false,
            adj: vec![0; src.len() - 2],
            winograd: WinogradUse::Auto,
        }
    }

    fn taps(s: &ConvSpec) -> Option<Vec<usize>> {
        s.unrolled_pairs(&s.dst().unwrap()).map(|p| p.tap)
    }

    #[test]
    fn small_images_whose_pixels_all_meet_are_unrolled() {
        let (one, two) = (&[1, 1][..], &[2, 2][..]);
        // one pixel: the centre tap
        let centre = spec(&[2, 8, 1, 1], &[4, 8, 3, 3], one, one, one);
        assert_eq!(taps(&centre), Some(vec![4]));
        // 2×2 to 1×1 by stride 2: the lower right 2×2 of the kernel
        let down = spec(&[2, 8, 2, 2], &[4, 8, 3, 3], two, one, one);
        assert_eq!(taps(&down), Some(vec![4, 5, 7, 8]));
        // 2×2 to 2×2: output pixel 0 meets input pixel i through tap 4 + offset, pixel 3
        // through tap 4 - offset
        let same = taps(&spec(&[2, 8, 2, 2], &[4, 8, 3, 3], one, one, one)).unwrap();
        assert_eq!(&same[..4], &[4, 5, 7, 8]);
        assert_eq!(&same[12..], &[0, 1, 3, 4]);
        // dilated, one pixel
        let dilated = spec(&[1, 2, 1, 1], &[2, 2, 3, 3], one, two, two);
        assert_eq!(taps(&dilated), Some(vec![4]));
    }

    #[test]
    fn a_pair_meeting_no_tap_or_a_larger_image_is_not_unrolled() {
        // (input, weights, stride, pad, dilate)
        type Case<'a> = (&'a [i64], &'a [i64], &'a [i64], &'a [i64], &'a [i64]);
        let cases: [Case<'_>; 4] = [
            // 3 to 3 by 3 taps: the first output pixel never meets the last input pixel
            (&[2, 4, 3], &[5, 4, 3], &[1], &[1], &[1]),
            // dilation 2 on 2×2: neighbours never meet
            (&[2, 8, 2, 2], &[8, 8, 3, 3], &[1, 1], &[2, 2], &[2, 2]),
            // a 1×1 kernel on 2×2: only a pixel and itself meet
            (&[2, 8, 2, 2], &[8, 8, 1, 1], &[1, 1], &[0, 0], &[1, 1]),
            // 3×3 to 3×3 by 5×5: every pair meets, but 81 pairs unroll the kernel 81 times
            (&[2, 8, 3, 3], &[8, 8, 5, 5], &[1, 1], &[2, 2], &[1, 1]),
        ];
        for (src, w, stride, pad, dilate) in cases {
            assert_eq!(
                taps(&spec(src, w, stride, pad, dilate)),
                None,
                "{src:?} {w:?}"
            );
        }
        let mut grouped = spec(&[2, 8, 1, 1], &[8, 4, 3, 3], &[1, 1], &[1, 1], &[1, 1]);
        grouped.groups = 2;
        assert_eq!(taps(&grouped), None);
    }
}
