//! Batch normalisation over axis 1 of `(N, C, ...)` data: the batch's statistics (or given
//! ones), the normalised output with scale and shift, and the gradients of all three; a ReLU
//! on the output can be fused in (`relu`), whose training pass then keeps a workspace (which
//! outputs were positive) for the backward pass.

use crate::ffi;
use crate::prim::{MemDesc, Memory, PrimDesc, Primitive, Tensor, TensorMut, check_layouts};
use crate::{Dnnl, DnnlError};

/// One batch normalisation's primitives, built once for a shape.
pub struct BatchNorm {
    channels: usize,
    dims: Vec<i64>,
    strides: Vec<i64>,
    data: MemDesc,
    stat: MemDesc,
    fwd: Primitive,
    bwd: Option<Primitive>,
    workspace: Option<MemDesc>,
    implementation: String,
}

impl std::fmt::Debug for BatchNorm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "BatchNorm({} channels, {})",
            self.channels, self.implementation
        )
    }
}

/// The per-channel arrays of one call.
#[derive(Debug)]
pub struct Stats<'a> {
    pub scale: &'a [f32],
    pub shift: &'a [f32],
    /// Batch statistics are written here, or given statistics read from here (`global`).
    pub mean: &'a mut [f32],
    pub var: &'a mut [f32],
}

impl BatchNorm {
    /// `dims` is `(N, C, ...)` laid out by `strides` (every data argument shares that
    /// layout); `global` normalises with given statistics instead of the
    /// batch's; `training` builds the backward primitive too; `relu` applies a ReLU to the
    /// output (and to the gradient, in the backward pass).
    pub fn new(
        d: &'static Dnnl,
        dims: &[i64],
        strides: &[i64],
        eps: f32,
        global: bool,
        training: bool,
        relu: bool,
    ) -> Result<BatchNorm, DnnlError> {
        if dims.len() < 2 || dims.len() > 6 || dims.iter().any(|&v| v < 1) {
            return Err(DnnlError::Input(format!("batch norm of data {dims:?}")));
        }
        let data = MemDesc::strided(d, dims, strides)?;
        let stat = MemDesc::plain(d, &[dims[1]])?;
        let mut flags = ffi::USE_SCALE | ffi::USE_SHIFT;
        if global {
            flags |= ffi::USE_GLOBAL_STATS;
        }
        if relu {
            flags |= ffi::FUSE_NORM_RELU;
        }
        // Only a training pass writes the batch's statistics out.
        let prop = if training || !global {
            ffi::FORWARD_TRAINING
        } else {
            ffi::FORWARD_INFERENCE
        };
        let detail = || format!("data {dims:?}");
        let null = std::ptr::null();
        let fwd_pd = PrimDesc::create(d, "batch normalization", &detail, |raw| {
            // SAFETY: the descriptors are live.
            unsafe {
                (d.api.dnnl_batch_normalization_forward_primitive_desc_create)(
                    raw, d.engine, prop, data.raw, data.raw, eps, flags, null,
                )
            }
        })?;
        // A fused ReLU's training pass records which outputs it kept for the backward pass.
        let workspace = if relu && prop == ffi::FORWARD_TRAINING {
            fwd_pd.md(ffi::QUERY_WORKSPACE_MD)?
        } else {
            None
        };
        let bwd = if training {
            let pd = PrimDesc::create(d, "batch normalization gradient", &detail, |raw| {
                // SAFETY: as above; `fwd_pd` is the live hint.
                unsafe {
                    (d.api
                        .dnnl_batch_normalization_backward_primitive_desc_create)(
                        raw,
                        d.engine,
                        ffi::BACKWARD,
                        data.raw,
                        data.raw,
                        data.raw,
                        eps,
                        flags,
                        fwd_pd.raw,
                        null,
                    )
                }
            })?;
            Some(Primitive::new(&pd)?)
        } else {
            None
        };
        Ok(BatchNorm {
            channels: dims[1] as usize,
            dims: dims.to_vec(),
            strides: strides.to_vec(),
            implementation: fwd_pd.implementation(),
            fwd: Primitive::new(&fwd_pd)?,
            data,
            stat,
            bwd,
            workspace,
        })
    }

    /// Bytes of the workspace a training pass with a fused ReLU fills (0: none).
    pub fn workspace_bytes(&self) -> usize {
        self.workspace.as_ref().map_or(0, MemDesc::bytes)
    }

    /// The implementation oneDNN chose.
    pub fn implementation(&self) -> &str {
        &self.implementation
    }

    fn check(&self, strides: &[&[i64]]) -> Result<(), DnnlError> {
        check_layouts("batch norm", &self.dims, &self.strides, strides)
    }

    /// Normalises `x` into `y` (both in the kernel's layout), filling `ws` when the kernel
    /// keeps a workspace ([`BatchNorm::workspace_bytes`]).
    pub fn forward(
        &self,
        x: Tensor<'_>,
        y: TensorMut<'_>,
        s: Stats<'_>,
        ws: Option<&mut [u8]>,
    ) -> Result<(), DnnlError> {
        self.check(&[x.strides, y.strides])?;
        let wsm = Memory::workspace("a batch norm", self.workspace.as_ref(), ws)?;
        let xm = Memory::lend(&self.data, x.data)?;
        let ym = Memory::lend_mut(&self.data, y.data)?;
        let scale = Memory::lend(&self.stat, s.scale)?;
        let shift = Memory::lend(&self.stat, s.shift)?;
        let mean = Memory::lend_mut(&self.stat, s.mean)?;
        let var = Memory::lend_mut(&self.stat, s.var)?;
        let mut args = vec![
            (ffi::ARG_SRC, &xm),
            (ffi::ARG_DST, &ym),
            (ffi::ARG_SCALE, &scale),
            (ffi::ARG_SHIFT, &shift),
            (ffi::ARG_MEAN, &mean),
            (ffi::ARG_VARIANCE, &var),
        ];
        if let Some(w) = &wsm {
            args.push((ffi::ARG_WORKSPACE, w));
        }
        self.fwd.run(&args)
    }

    /// The gradients of the data (`gx`), the scale and the shift for `gy`, given the forward
    /// pass's input and statistics (every data argument in the kernel's layout) and, with a
    /// fused ReLU, its workspace.
    #[allow(clippy::too_many_arguments)]
    pub fn backward(
        &self,
        x: Tensor<'_>,
        gy: Tensor<'_>,
        s: Stats<'_>,
        ws: Option<&mut [u8]>,
        gx: TensorMut<'_>,
        gscale: &mut [f32],
        gshift: &mut [f32],
    ) -> Result<(), DnnlError> {
        let Some(bwd) = &self.bwd else {
            return Err(DnnlError::Input(
                "the gradient of a batch norm built for inference".into(),
            ));
        };
        self.check(&[x.strides, gy.strides, gx.strides])?;
        let wsm = Memory::workspace("a batch norm", self.workspace.as_ref(), ws)?;
        let xm = Memory::lend(&self.data, x.data)?;
        let gym = Memory::lend(&self.data, gy.data)?;
        let gxm = Memory::lend_mut(&self.data, gx.data)?;
        let scale = Memory::lend(&self.stat, s.scale)?;
        let mean = Memory::lend_mut(&self.stat, s.mean)?;
        let var = Memory::lend_mut(&self.stat, s.var)?;
        let gsc = Memory::lend_mut(&self.stat, gscale)?;
        let gsh = Memory::lend_mut(&self.stat, gshift)?;
        let mut args = vec![
            (ffi::ARG_SRC, &xm),
            (ffi::ARG_DIFF_DST, &gym),
            (ffi::ARG_SCALE, &scale),
            (ffi::ARG_MEAN, &mean),
            (ffi::ARG_VARIANCE, &var),
            (ffi::ARG_DIFF_SRC, &gxm),
            (ffi::ARG_DIFF_SCALE, &gsc),
            (ffi::ARG_DIFF_SHIFT, &gsh),
        ];
        if let Some(w) = &wsm {
            args.push((ffi::ARG_WORKSPACE, w));
        }
        bwd.run(&args)
    }
}
