//! Max and average pooling over 1, 2 or 3 spatial dimensions, forward and backward, with
//! MXNet's padding (symmetric, plus extra at the high end for its 'full' convention).

use crate::ffi;
use crate::prim::{
    MemDesc, Memory, Port, PrimDesc, Primitive, Tensor, TensorMut, dims_of, same_layout,
};
use crate::{Dnnl, DnnlError};

/// How a window is reduced.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PoolKind {
    Max,
    /// Divides by the whole window, padding included.
    AvgIncludePadding,
    /// Divides by the window's positions inside the data.
    AvgExcludePadding,
}

/// The shapes and attributes one pooling kernel is built for.
#[derive(Debug, Clone)]
pub struct PoolSpec {
    /// `(N, C, *spatial)`.
    pub src: Vec<i64>,
    /// The input's strides in elements (row-major, channels-last, ...): the primitive
    /// computes in this layout.
    pub src_strides: Vec<i64>,
    pub kind: PoolKind,
    pub kernel: Vec<i64>,
    pub stride: Vec<i64>,
    pub pad_l: Vec<i64>,
    pub pad_r: Vec<i64>,
    pub training: bool,
}

impl PoolSpec {
    /// The output shape, or an error naming what does not fit.
    pub fn dst(&self) -> Result<Vec<i64>, DnnlError> {
        let nd = self.src.len().wrapping_sub(2);
        let ok = (1..=3).contains(&nd)
            && [&self.kernel, &self.stride, &self.pad_l, &self.pad_r]
                .iter()
                .all(|v| v.len() == nd)
            && self.kernel.iter().chain(&self.stride).all(|&v| v >= 1)
            && self.pad_l.iter().chain(&self.pad_r).all(|&v| v >= 0)
            && self.src.iter().all(|&v| v >= 1);
        if !ok {
            return Err(DnnlError::Input(format!(
                "a pooling that does not fit: {self:?}"
            )));
        }
        let mut dst = self.src[..2].to_vec();
        for i in 0..nd {
            let o = (self.src[i + 2] + self.pad_l[i] + self.pad_r[i] - self.kernel[i])
                / self.stride[i]
                + 1;
            if o < 1 {
                return Err(DnnlError::Input(format!(
                    "window larger than the input: {self:?}"
                )));
            }
            dst.push(o);
        }
        Ok(dst)
    }
}

/// One pooling's primitives, built once for its [`PoolSpec`].
pub struct Pool {
    spec: PoolSpec,
    dst: Vec<i64>,
    fwd: Primitive,
    src: MemDesc,
    out: Port,
    workspace: Option<MemDesc>,
    bwd: Option<(Primitive, Port, Port)>,
    implementation: String,
}

impl std::fmt::Debug for Pool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Pool(-> {:?}, {})", self.dst, self.implementation)
    }
}

impl Pool {
    /// Creates the forward primitive (and, for training, the backward one).
    pub fn new(d: &'static Dnnl, spec: PoolSpec) -> Result<Pool, DnnlError> {
        let dst = spec.dst()?;
        let nd = spec.kernel.len();
        let alg = match spec.kind {
            PoolKind::Max => ffi::POOLING_MAX,
            PoolKind::AvgIncludePadding => ffi::POOLING_AVG_INCLUDE_PADDING,
            PoolKind::AvgExcludePadding => ffi::POOLING_AVG_EXCLUDE_PADDING,
        };
        let (strides, kernel) = (dims_of(&spec.stride)?, dims_of(&spec.kernel)?);
        let dilation = dims_of(&vec![0; nd])?;
        let (pad_l, pad_r) = (dims_of(&spec.pad_l)?, dims_of(&spec.pad_r)?);
        let detail = || format!("{spec:?}");
        let src = MemDesc::strided(d, &spec.src, &spec.src_strides)?;
        let d_any = MemDesc::any(d, &dst)?;
        let prop = if spec.training {
            ffi::FORWARD_TRAINING
        } else {
            ffi::FORWARD_INFERENCE
        };
        let null = std::ptr::null();
        let fwd_pd = PrimDesc::create(d, "pooling", &detail, |raw| {
            // SAFETY: the descriptors are live; each geometry array holds `nd` values.
            unsafe {
                (d.api.dnnl_pooling_forward_primitive_desc_create)(
                    raw,
                    d.engine,
                    prop,
                    alg,
                    src.raw,
                    d_any.raw,
                    strides.as_ptr(),
                    kernel.as_ptr(),
                    dilation.as_ptr(),
                    pad_l.as_ptr(),
                    pad_r.as_ptr(),
                    null,
                )
            }
        })?;
        let implementation = fwd_pd.implementation();
        let out_md = fwd_pd.md_of(ffi::QUERY_DST_MD)?;
        let workspace = if spec.training {
            fwd_pd.md(ffi::QUERY_WORKSPACE_MD)?
        } else {
            None
        };
        let bwd = if spec.training {
            let gsrc = MemDesc::strided(d, &spec.src, &spec.src_strides)?;
            let bwd_pd = PrimDesc::create(d, "pooling gradient", &detail, |raw| {
                // SAFETY: as above; `fwd_pd` is the live hint.
                unsafe {
                    (d.api.dnnl_pooling_backward_primitive_desc_create)(
                        raw,
                        d.engine,
                        alg,
                        gsrc.raw,
                        out_md.raw,
                        strides.as_ptr(),
                        kernel.as_ptr(),
                        dilation.as_ptr(),
                        pad_l.as_ptr(),
                        pad_r.as_ptr(),
                        fwd_pd.raw,
                        null,
                    )
                }
            })?;
            let gy = Port::input(d, &dst, bwd_pd.md_of(ffi::QUERY_DIFF_DST_MD)?)?;
            let gx = Port::output(d, &spec.src, bwd_pd.md_of(ffi::QUERY_DIFF_SRC_MD)?)?;
            Some((Primitive::new(&bwd_pd)?, gy, gx))
        } else {
            None
        };
        Ok(Pool {
            spec,
            out: Port::output(d, &dst, out_md)?,
            fwd: Primitive::new(&fwd_pd)?,
            src,
            dst,
            workspace,
            bwd,
            implementation,
        })
    }

    /// The output shape.
    pub fn dst_dims(&self) -> &[i64] {
        &self.dst
    }

    /// The implementation oneDNN chose.
    pub fn implementation(&self) -> &str {
        &self.implementation
    }

    /// Bytes of the workspace a training forward pass fills for the backward one (0: none).
    pub fn workspace_bytes(&self) -> usize {
        self.workspace.as_ref().map_or(0, MemDesc::bytes)
    }

    fn check_src(&self, strides: &[i64]) -> Result<(), DnnlError> {
        if !same_layout(&self.spec.src, &self.spec.src_strides, strides) {
            return Err(DnnlError::Input(format!(
                "pooling built for strides {:?}, given {strides:?}",
                self.spec.src_strides
            )));
        }
        Ok(())
    }

    /// Pools `x` into `y`; a training kernel with a workspace fills `ws` for [`Pool::backward`].
    pub fn forward(
        &self,
        x: Tensor<'_>,
        y: TensorMut<'_>,
        ws: Option<&mut [u8]>,
    ) -> Result<(), DnnlError> {
        self.check_src(x.strides)?;
        let xm = Memory::lend(&self.src, x.data)?;
        let sink = self.out.sink(y.data, y.strides)?;
        let wsm = Memory::workspace("a pooling", self.workspace.as_ref(), ws)?;
        let mut args = vec![(ffi::ARG_SRC, &xm), (ffi::ARG_DST, &sink.mem)];
        if let Some(w) = &wsm {
            args.push((ffi::ARG_WORKSPACE, w));
        }
        self.fwd.run(&args)?;
        drop(args);
        sink.finish()
    }

    /// The input gradient `gx` for the output gradient `gy` (and the forward pass's `ws`).
    pub fn backward(
        &self,
        gy: Tensor<'_>,
        ws: Option<&mut [u8]>,
        gx: TensorMut<'_>,
    ) -> Result<(), DnnlError> {
        let Some((prim, gy_port, gx_port)) = &self.bwd else {
            return Err(DnnlError::Input(
                "the gradient of a pooling built for inference".into(),
            ));
        };
        let gym = gy_port.feed(gy.data, gy.strides)?;
        let sink = gx_port.sink(gx.data, gx.strides)?;
        let wsm = Memory::workspace("a pooling", self.workspace.as_ref(), ws)?;
        let mut args = vec![(ffi::ARG_DIFF_DST, &gym), (ffi::ARG_DIFF_SRC, &sink.mem)];
        if let Some(w) = &wsm {
            args.push((ffi::ARG_WORKSPACE, w));
        }
        prim.run(&args)?;
        drop(args);
        sink.finish()
    }
}
