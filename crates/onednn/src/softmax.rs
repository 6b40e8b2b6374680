//! Softmax and log-softmax along one axis of dense data of any shape and axis order,
//! forward and backward (the gradient is computed from the forward output).

use crate::ffi;
use crate::prim::{
    MemDesc, Memory, PrimDesc, Primitive, Tensor, TensorMut, check_dense, check_layouts,
};
use crate::{Dnnl, DnnlError};

/// One softmax's primitives, built once for a shape, a layout and an axis.
pub struct Softmax {
    dims: Vec<i64>,
    strides: Vec<i64>,
    md: MemDesc,
    fwd: Primitive,
    bwd: Option<Primitive>,
    implementation: String,
}

impl std::fmt::Debug for Softmax {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Softmax({:?}, {})", self.dims, self.implementation)
    }
}

impl Softmax {
    /// `exp(x) / sum(exp(x))` along `axis` of data `dims` laid out by `strides` (every
    /// argument shares that layout), or its logarithm when `log`; `training` builds the
    /// backward primitive too.
    pub fn new(
        d: &'static Dnnl,
        dims: &[i64],
        strides: &[i64],
        axis: usize,
        log: bool,
        training: bool,
    ) -> Result<Softmax, DnnlError> {
        if dims.is_empty() || dims.iter().any(|&v| v < 1) || axis >= dims.len() {
            return Err(DnnlError::Input(format!(
                "a softmax along axis {axis} of data {dims:?}"
            )));
        }
        check_dense(dims, strides)?;
        let md = MemDesc::strided(d, dims, strides)?;
        let alg = if log {
            ffi::SOFTMAX_LOG
        } else {
            ffi::SOFTMAX_ACCURATE
        };
        let prop = if training {
            ffi::FORWARD_TRAINING
        } else {
            ffi::FORWARD_INFERENCE
        };
        let axis = axis as i32;
        let detail = || format!("data {dims:?} along axis {axis}");
        let null = std::ptr::null();
        let fwd_pd = PrimDesc::create(d, "softmax", &detail, |raw| {
            // SAFETY: the descriptor and the engine are live; `axis` is below the rank.
            unsafe {
                (d.api.dnnl_softmax_forward_primitive_desc_create)(
                    raw, d.engine, prop, alg, md.raw, md.raw, axis, null,
                )
            }
        })?;
        let bwd = if training {
            let pd = PrimDesc::create(d, "softmax gradient", &detail, |raw| {
                // SAFETY: as above; `fwd_pd` is the live hint.
                unsafe {
                    (d.api.dnnl_softmax_backward_primitive_desc_create)(
                        raw, d.engine, alg, md.raw, md.raw, md.raw, axis, fwd_pd.raw, null,
                    )
                }
            })?;
            Some(Primitive::new(&pd)?)
        } else {
            None
        };
        Ok(Softmax {
            dims: dims.to_vec(),
            strides: strides.to_vec(),
            implementation: fwd_pd.implementation(),
            fwd: Primitive::new(&fwd_pd)?,
            md,
            bwd,
        })
    }

    /// The implementation oneDNN chose.
    pub fn implementation(&self) -> &str {
        &self.implementation
    }

    /// Writes the softmax of `x` into `y`.
    pub fn forward(&self, x: Tensor<'_>, y: TensorMut<'_>) -> Result<(), DnnlError> {
        check_layouts(
            "softmax",
            &self.dims,
            &self.strides,
            &[x.strides, y.strides],
        )?;
        let xm = Memory::lend(&self.md, x.data)?;
        let ym = Memory::lend_mut(&self.md, y.data)?;
        self.fwd.run(&[(ffi::ARG_SRC, &xm), (ffi::ARG_DST, &ym)])
    }

    /// Writes the input gradient `gx` for the output gradient `gy`, given the forward
    /// output `y`.
    pub fn backward(
        &self,
        y: Tensor<'_>,
        gy: Tensor<'_>,
        gx: TensorMut<'_>,
    ) -> Result<(), DnnlError> {
        let Some(bwd) = &self.bwd else {
            return Err(DnnlError::Input(
                "the gradient of a softmax built for inference".into(),
            ));
        };
        check_layouts(
            "softmax",
            &self.dims,
            &self.strides,
            &[y.strides, gy.strides, gx.strides],
        )?;
        let ym = Memory::lend(&self.md, y.data)?;
        let gym = Memory::lend(&self.md, gy.data)?;
        let gxm = Memory::lend_mut(&self.md, gx.data)?;
        bwd.run(&[
            (ffi::ARG_DST, &ym),
            (ffi::ARG_DIFF_DST, &gym),
            (ffi::ARG_DIFF_SRC, &gxm),
        ])
    }
}
