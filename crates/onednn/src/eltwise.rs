//! Activations applied element by element (ReLU, sigmoid, tanh, softrelu, leaky ReLU, ELU,
//! GELU) to a dense buffer of any shape, forward and backward, on oneDNN's threads.

use crate::ffi;
use crate::prim::{MemDesc, Memory, PrimDesc, Primitive};
use crate::{Dnnl, DnnlError};

/// Which activation.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Activation {
    Relu,
    Sigmoid,
    Tanh,
    /// `log(1 + exp(x))`.
    SoftRelu,
    /// `x` for `x > 0`, else `slope * x`.
    Leaky {
        slope: f32,
    },
    /// `x` for `x > 0`, else `alpha * (exp(x) - 1)`.
    Elu {
        alpha: f32,
    },
    /// `x * Phi(x)`, the normal CDF written with erf.
    GeluErf,
}

impl Activation {
    /// oneDNN's algorithm and its alpha; ReLU, sigmoid and tanh differentiate from their
    /// output.
    fn alg(self) -> (i32, f32) {
        match self {
            Activation::Relu => (ffi::ELTWISE_RELU_USE_DST, 0.0),
            Activation::Sigmoid => (ffi::ELTWISE_LOGISTIC_USE_DST, 0.0),
            Activation::Tanh => (ffi::ELTWISE_TANH_USE_DST, 0.0),
            // oneDNN's soft_relu is log(1 + exp(alpha * x)) / alpha
            Activation::SoftRelu => (ffi::ELTWISE_SOFT_RELU, 1.0),
            Activation::Leaky { slope } => (ffi::ELTWISE_RELU, slope),
            Activation::Elu { alpha } => (ffi::ELTWISE_ELU, alpha),
            Activation::GeluErf => (ffi::ELTWISE_GELU_ERF, 0.0),
        }
    }

    /// True when the gradient is computed from the output, not the input.
    pub fn grad_from_output(self) -> bool {
        matches!(
            self,
            Activation::Relu | Activation::Sigmoid | Activation::Tanh
        )
    }
}

/// One activation's primitives for buffers of one length.
pub struct Eltwise {
    md: MemDesc,
    fwd: Primitive,
    bwd: Option<Primitive>,
    kind: Activation,
    implementation: String,
}

impl std::fmt::Debug for Eltwise {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Eltwise({:?})", self.kind)
    }
}

impl Eltwise {
    /// Builds `kind` over `len` elements (and its gradient when `training`).
    pub fn new(
        d: &'static Dnnl,
        kind: Activation,
        len: i64,
        training: bool,
    ) -> Result<Eltwise, DnnlError> {
        if len < 1 {
            return Err(DnnlError::Input(format!(
                "an activation over {len} elements"
            )));
        }
        let md = MemDesc::plain(d, &[len])?;
        if let Activation::Leaky { slope: a } | Activation::Elu { alpha: a } = kind
            && !a.is_finite()
        {
            return Err(DnnlError::Input(format!("{kind:?} with a slope of {a}")));
        }
        let (alg, alpha) = kind.alg();
        let prop = if training {
            ffi::FORWARD_TRAINING
        } else {
            ffi::FORWARD_INFERENCE
        };
        let detail = || format!("{kind:?} over {len}");
        let null = std::ptr::null();
        let fwd_pd = PrimDesc::create(d, "activation", &detail, |raw| {
            // SAFETY: the descriptor and the engine are live.
            unsafe {
                (d.api.dnnl_eltwise_forward_primitive_desc_create)(
                    raw, d.engine, prop, alg, md.raw, md.raw, alpha, 0.0, null,
                )
            }
        })?;
        let bwd = if training {
            let pd = PrimDesc::create(d, "activation gradient", &detail, |raw| {
                // SAFETY: as above; `fwd_pd` is the live hint.
                unsafe {
                    (d.api.dnnl_eltwise_backward_primitive_desc_create)(
                        raw, d.engine, alg, md.raw, md.raw, md.raw, alpha, 0.0, fwd_pd.raw, null,
                    )
                }
            })?;
            Some(Primitive::new(&pd)?)
        } else {
            None
        };
        Ok(Eltwise {
            implementation: fwd_pd.implementation(),
            fwd: Primitive::new(&fwd_pd)?,
            md,
            bwd,
            kind,
        })
    }

    /// The implementation oneDNN chose.
    pub fn implementation(&self) -> &str {
        &self.implementation
    }

    /// `y = f(x)`.
    pub fn forward(&self, x: &[f32], y: &mut [f32]) -> Result<(), DnnlError> {
        let xm = Memory::lend(&self.md, x)?;
        let ym = Memory::lend_mut(&self.md, y)?;
        self.fwd.run(&[(ffi::ARG_SRC, &xm), (ffi::ARG_DST, &ym)])
    }

    /// `gx = f'(.) * gy`, where `data` is the forward output when
    /// [`Activation::grad_from_output`], else its input.
    pub fn backward(&self, data: &[f32], gy: &[f32], gx: &mut [f32]) -> Result<(), DnnlError> {
        let Some(bwd) = &self.bwd else {
            return Err(DnnlError::Input(
                "the gradient of an activation built for inference".into(),
            ));
        };
        let arg = if self.kind.grad_from_output() {
            ffi::ARG_DST
        } else {
            ffi::ARG_SRC
        };
        let dm = Memory::lend(&self.md, data)?;
        let gym = Memory::lend(&self.md, gy)?;
        let gxm = Memory::lend_mut(&self.md, gx)?;
        bwd.run(&[
            (arg, &dm),
            (ffi::ARG_DIFF_DST, &gym),
            (ffi::ARG_DIFF_SRC, &gxm),
        ])
    }
}
