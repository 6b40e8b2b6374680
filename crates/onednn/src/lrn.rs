//! Local response normalisation across the channels (axis 1) of `(N, C, ...)` data, forward
//! and backward: `y = x / (k + alpha / size * sum(x^2))^beta`, the sum over a window of
//! `size` channels centred on each one (`size` odd).
//!
//! The primitives compute channels-last, where oneDNN's gradient has a fast implementation
//! (in row-major `NCHW` it has only its reference one); data in another layout is reordered in
//! and out.

use crate::ffi;
use crate::prim::{MemDesc, Memory, Port, PrimDesc, Primitive, Tensor, TensorMut};
use crate::{Dnnl, DnnlError};

/// The window and constants of one LRN, in oneDNN's terms.
#[derive(Debug, Clone, Copy)]
pub struct LrnParams {
    /// Channels in the window, odd so that it is centred, and above 1 (a window of one
    /// channel is an elementwise function, not served here).
    pub size: i64,
    /// Divided by `size` in the formula.
    pub alpha: f32,
    pub beta: f32,
    pub k: f32,
}

/// The backward primitive and its arguments' ports.
struct Backward {
    prim: Primitive,
    gy: Port,
    gx: Port,
}

/// One LRN's primitives, built once for a shape and its parameters.
pub struct Lrn {
    dims: Vec<i64>,
    src: Port,
    dst: Port,
    fwd: Primitive,
    workspace: Option<MemDesc>,
    bwd: Option<Backward>,
    implementation: String,
}

impl std::fmt::Debug for Lrn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Lrn({:?}, {})", self.dims, self.implementation)
    }
}

impl Lrn {
    /// LRN of data `dims`; `training` builds the backward primitive too.
    pub fn new(
        d: &'static Dnnl,
        dims: &[i64],
        p: LrnParams,
        training: bool,
    ) -> Result<Lrn, DnnlError> {
        if p.size == 1 {
            // oneDNN 3.2's channels-last kernel crashes on a training LRN of one channel
            return Err(DnnlError::Unsupported {
                what: "LRN",
                detail: "a window of one channel".into(),
            });
        }
        let ok = dims.len() >= 3
            && dims.iter().all(|&v| v >= 1)
            && p.size >= 3
            && p.size % 2 == 1
            && [p.alpha, p.beta, p.k].iter().all(|v| v.is_finite());
        if !ok {
            return Err(DnnlError::Input(format!(
                "an LRN that does not fit: data {dims:?}, {p:?}"
            )));
        }
        let md = MemDesc::channels_last(d, dims)?;
        let alg = ffi::LRN_ACROSS_CHANNELS;
        let prop = if training {
            ffi::FORWARD_TRAINING
        } else {
            ffi::FORWARD_INFERENCE
        };
        let detail = || format!("data {dims:?}, {p:?}");
        let null = std::ptr::null();
        let fwd_pd = PrimDesc::create(d, "LRN", &detail, |raw| {
            // SAFETY: the descriptor and the engine are live.
            unsafe {
                (d.api.dnnl_lrn_forward_primitive_desc_create)(
                    raw, d.engine, prop, alg, md.raw, md.raw, p.size, p.alpha, p.beta, p.k, null,
                )
            }
        })?;
        let workspace = if training {
            fwd_pd.md(ffi::QUERY_WORKSPACE_MD)?
        } else {
            None
        };
        let bwd = if training {
            let pd = PrimDesc::create(d, "LRN gradient", &detail, |raw| {
                // SAFETY: as above; `fwd_pd` is the live hint.
                unsafe {
                    (d.api.dnnl_lrn_backward_primitive_desc_create)(
                        raw, d.engine, alg, md.raw, md.raw, md.raw, p.size, p.alpha, p.beta, p.k,
                        fwd_pd.raw, null,
                    )
                }
            })?;
            Some(Backward {
                gy: Port::input(d, dims, pd.md_of(ffi::QUERY_DIFF_DST_MD)?)?,
                gx: Port::output(d, dims, pd.md_of(ffi::QUERY_DIFF_SRC_MD)?)?,
                prim: Primitive::new(&pd)?,
            })
        } else {
            None
        };
        Ok(Lrn {
            dims: dims.to_vec(),
            src: Port::input(d, dims, fwd_pd.md_of(ffi::QUERY_SRC_MD)?)?,
            dst: Port::output(d, dims, fwd_pd.md_of(ffi::QUERY_DST_MD)?)?,
            implementation: fwd_pd.implementation(),
            fwd: Primitive::new(&fwd_pd)?,
            workspace,
            bwd,
        })
    }

    /// The implementation oneDNN chose.
    pub fn implementation(&self) -> &str {
        &self.implementation
    }

    /// Bytes of the workspace a training forward pass fills for the backward one (0: none).
    pub fn workspace_bytes(&self) -> usize {
        self.workspace.as_ref().map_or(0, MemDesc::bytes)
    }

    /// Normalises `x` into `y` (each in any dense layout); a training kernel with a
    /// workspace fills `ws` for [`Lrn::backward`].
    pub fn forward(
        &self,
        x: Tensor<'_>,
        y: TensorMut<'_>,
        ws: Option<&mut [u8]>,
    ) -> Result<(), DnnlError> {
        let xm = self.src.feed(x.data, x.strides)?;
        let sink = self.dst.sink(y.data, y.strides)?;
        let wsm = Memory::workspace("an LRN", self.workspace.as_ref(), ws)?;
        let mut args = vec![(ffi::ARG_SRC, &xm), (ffi::ARG_DST, &sink.mem)];
        if let Some(w) = &wsm {
            args.push((ffi::ARG_WORKSPACE, w));
        }
        self.fwd.run(&args)?;
        drop(args);
        sink.finish()
    }

    /// Writes the input gradient `gx` for the output gradient `gy`, given the forward pass's
    /// input `x` and workspace `ws` (each in any dense layout).
    pub fn backward(
        &self,
        x: Tensor<'_>,
        gy: Tensor<'_>,
        ws: Option<&mut [u8]>,
        gx: TensorMut<'_>,
    ) -> Result<(), DnnlError> {
        let Some(bwd) = &self.bwd else {
            return Err(DnnlError::Input(
                "the gradient of an LRN built for inference".into(),
            ));
        };
        let xm = self.src.feed(x.data, x.strides)?;
        let gym = bwd.gy.feed(gy.data, gy.strides)?;
        let sink = bwd.gx.sink(gx.data, gx.strides)?;
        let wsm = Memory::workspace("an LRN", self.workspace.as_ref(), ws)?;
        let mut args = vec![
            (ffi::ARG_SRC, &xm),
            (ffi::ARG_DIFF_DST, &gym),
            (ffi::ARG_DIFF_SRC, &sink.mem),
        ];
        if let Some(w) = &wsm {
            args.push((ffi::ARG_WORKSPACE, w));
        }
        bwd.prim.run(&args)?;
        drop(args);
        sink.finish()
    }
}
