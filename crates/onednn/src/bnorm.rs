//! Batch normalisation over axis 1 of `(N, C, ...)` data: the batch's statistics (or given
//! ones), the normalised output with scale and shift, and the gradients of all three; a ReLU
//! on the output can be fused in (`relu`). Channels-last data runs on mxrs's own two-pass
//! loops ([`crate::bnorm_rows`]); other layouts on oneDNN's primitives, whose training pass
//! with a fused ReLU keeps a workspace (which outputs were positive) for the backward pass.
//! A residual unit's end, `relu(bn(x) + r)`, is one kernel on channels-last data
//! ([`BatchNorm::forward_residual`]).

use crate::bnorm_rows::{self, Parts, Rows};
use crate::ffi;
use crate::prim::{
    MemDesc, Memory, PrimDesc, Primitive, Tensor, TensorMut, channels_last_strides, check_layouts,
    same_layout,
};
use crate::{Dnnl, DnnlError};

/// One batch normalisation's kernel, built once for a shape.
pub struct BatchNorm {
    channels: usize,
    dims: Vec<i64>,
    strides: Vec<i64>,
    eps: f32,
    global: bool,
    relu: bool,
    engine: Engine,
    implementation: String,
}

/// What computes a [`BatchNorm`].
enum Engine {
    /// oneDNN's primitives.
    Onednn(Box<Primitives>),
    /// mxrs's loops over the rows of channels-last data.
    Rows(Rows),
}

struct Primitives {
    implementation: String,
    data: MemDesc,
    stat: MemDesc,
    fwd: Primitive,
    bwd: Option<Primitive>,
    workspace: Option<MemDesc>,
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
    /// batch's; `training` builds the backward pass too; `relu` applies a ReLU to the
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
        let (engine, implementation) = if same_layout(dims, &channels_last_strides(dims), strides) {
            let channels = dims[1] as usize;
            let rows = dims.iter().map(|&v| v as usize).product::<usize>() / channels;
            let rows = Rows {
                rows,
                channels,
                training,
            };
            (Engine::Rows(rows), "mxrs:channels_last".to_string())
        } else {
            let p = Primitives::new(d, dims, strides, eps, global, training, relu)?;
            let implementation = p.implementation.clone();
            (Engine::Onednn(Box::new(p)), implementation)
        };
        Ok(BatchNorm {
            channels: dims[1] as usize,
            dims: dims.to_vec(),
            strides: strides.to_vec(),
            eps,
            global,
            relu,
            engine,
            implementation,
        })
    }

    /// Bytes of the workspace a training pass with a fused ReLU fills (0: none).
    pub fn workspace_bytes(&self) -> usize {
        match &self.engine {
            Engine::Onednn(p) => p.workspace.as_ref().map_or(0, MemDesc::bytes),
            Engine::Rows(_) => 0,
        }
    }

    /// The implementation that computes it: oneDNN's name for its primitive, or
    /// `mxrs:channels_last`.
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
        let p = match &self.engine {
            Engine::Rows(rows) => {
                let f = bnorm_rows::Forward {
                    scale: s.scale,
                    shift: s.shift,
                    mean: s.mean,
                    var: s.var,
                };
                return rows.forward(x.data, None, y.data, f, self.eps, self.global, self.relu);
            }
            Engine::Onednn(p) => p,
        };
        let wsm = Memory::workspace("a batch norm", p.workspace.as_ref(), ws)?;
        let xm = Memory::lend(&p.data, x.data)?;
        let ym = Memory::lend_mut(&p.data, y.data)?;
        let scale = Memory::lend(&p.stat, s.scale)?;
        let shift = Memory::lend(&p.stat, s.shift)?;
        let mean = Memory::lend_mut(&p.stat, s.mean)?;
        let var = Memory::lend_mut(&p.stat, s.var)?;
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
        p.fwd.run(&args)
    }

    /// The gradients of the data (`gx`), the scale and the shift for `gy`, given the forward
    /// pass's input and statistics (every data argument in the kernel's layout) and, with a
    /// fused ReLU, its shift (`s.shift`; mxrs's loops recompute the ReLU's mask from it) or
    /// workspace (oneDNN's).
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
        let built_for_inference =
            || DnnlError::Input("the gradient of a batch norm built for inference".into());
        self.check(&[x.strides, gy.strides, gx.strides])?;
        let p = match &self.engine {
            Engine::Rows(rows) => {
                if !rows.training {
                    return Err(built_for_inference());
                }
                let b = bnorm_rows::Backward {
                    scale: s.scale,
                    mean: s.mean,
                    var: s.var,
                    gscale,
                    gshift,
                };
                return rows.backward(
                    x.data,
                    gy.data,
                    s.shift,
                    b,
                    gx.data,
                    self.eps,
                    self.global,
                    self.relu,
                );
            }
            Engine::Onednn(p) => p,
        };
        let Some(bwd) = &p.bwd else {
            return Err(built_for_inference());
        };
        let wsm = Memory::workspace("a batch norm", p.workspace.as_ref(), ws)?;
        let xm = Memory::lend(&p.data, x.data)?;
        let gym = Memory::lend(&p.data, gy.data)?;
        let gxm = Memory::lend_mut(&p.data, gx.data)?;
        let scale = Memory::lend(&p.stat, s.scale)?;
        let mean = Memory::lend_mut(&p.stat, s.mean)?;
        let var = Memory::lend_mut(&p.stat, s.var)?;
        let gsc = Memory::lend_mut(&p.stat, gscale)?;
        let gsh = Memory::lend_mut(&p.stat, gshift)?;
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

    /// The loops of a kernel built with `relu` for channels-last data, which alone compute a
    /// residual unit's end.
    fn residual_rows(&self) -> Result<&Rows, DnnlError> {
        match &self.engine {
            Engine::Rows(rows) if self.relu => Ok(rows),
            _ => Err(DnnlError::Input(format!(
                "the residual sum of a batch norm runs on channels-last data with a fused ReLU; \
                 this one is {}{}",
                self.implementation,
                if self.relu { "" } else { " without a ReLU" }
            ))),
        }
    }

    /// A residual unit's end: `y = relu(bn(x) + residual)` in one pass after the statistics
    /// (every data argument channels-last, as the kernel was built, with `relu`).
    pub fn forward_residual(
        &self,
        x: Tensor<'_>,
        residual: Tensor<'_>,
        y: TensorMut<'_>,
        s: Stats<'_>,
    ) -> Result<(), DnnlError> {
        self.check(&[x.strides, residual.strides, y.strides])?;
        let rows = self.residual_rows()?;
        let f = bnorm_rows::Forward {
            scale: s.scale,
            shift: s.shift,
            mean: s.mean,
            var: s.var,
        };
        rows.forward(
            x.data,
            Some(residual.data),
            y.data,
            f,
            self.eps,
            self.global,
            true,
        )
    }

    /// The gradients of [`BatchNorm::forward_residual`] for the output `y`'s gradient `gy`
    /// (one or two parts, added here): the residual's (`gr`, which is also the normalised
    /// data's), the data's (`gx`), the scale's and the shift's.
    #[allow(clippy::too_many_arguments)]
    pub fn backward_residual(
        &self,
        x: Tensor<'_>,
        y: Tensor<'_>,
        gy: &[Tensor<'_>],
        s: Stats<'_>,
        gx: TensorMut<'_>,
        gr: TensorMut<'_>,
        gscale: &mut [f32],
        gshift: &mut [f32],
    ) -> Result<(), DnnlError> {
        let (first, second) = match gy {
            [g] => (g, None),
            [g1, g2] => (g1, Some(g2)),
            _ => {
                return Err(DnnlError::Input(format!(
                    "the gradient of a residual unit's end comes in one or two parts, not {}",
                    gy.len()
                )));
            }
        };
        let mut layouts = vec![x.strides, y.strides, first.strides, gx.strides, gr.strides];
        layouts.extend(second.map(|g| g.strides));
        self.check(&layouts)?;
        let rows = self.residual_rows()?;
        if !rows.training {
            return Err(DnnlError::Input(
                "the gradient of a batch norm built for inference".into(),
            ));
        }
        let b = bnorm_rows::Backward {
            scale: s.scale,
            mean: s.mean,
            var: s.var,
            gscale,
            gshift,
        };
        let g = Parts {
            first: first.data,
            second: second.map(|g| g.data),
        };
        rows.backward_residual(
            x.data,
            y.data,
            g,
            b,
            gx.data,
            gr.data,
            self.eps,
            self.global,
        )
    }
}

impl Primitives {
    fn new(
        d: &'static Dnnl,
        dims: &[i64],
        strides: &[i64],
        eps: f32,
        global: bool,
        training: bool,
        relu: bool,
    ) -> Result<Primitives, DnnlError> {
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
        Ok(Primitives {
            implementation: fwd_pd.implementation(),
            fwd: Primitive::new(&fwd_pd)?,
            data,
            stat,
            bwd,
            workspace,
        })
    }
}
