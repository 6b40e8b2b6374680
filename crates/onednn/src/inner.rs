//! Inner product (MXNet's `FullyConnected`): `y = x @ w.T + b` for `x` `(N, IC)` and `w`
//! `(OC, IC)`, forward and the gradients of the data, the weights and the bias, all row-major.

use crate::ffi;
use crate::prim::{MemDesc, Memory, Port, PrimDesc, Primitive, or_scratch, plain_strides};
use crate::{Dnnl, DnnlError};

/// One inner product's primitives, built once for its shapes.
pub struct InnerProduct {
    batch: i64,
    inputs: i64,
    outputs: i64,
    src: MemDesc,
    dst: MemDesc,
    bias: Option<MemDesc>,
    weights: Port,
    fwd: Primitive,
    /// The data gradient's primitive, its weights port; the weight gradient's primitive and
    /// its port.
    bwd: Option<(Primitive, Port, Primitive, Port)>,
    implementation: String,
}

impl std::fmt::Debug for InnerProduct {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "InnerProduct({}x{} -> {}, {})",
            self.batch, self.inputs, self.outputs, self.implementation
        )
    }
}

impl InnerProduct {
    /// `batch` rows of `inputs` values to `outputs` values (and the gradients when
    /// `training`).
    pub fn new(
        d: &'static Dnnl,
        batch: i64,
        inputs: i64,
        outputs: i64,
        bias: bool,
        training: bool,
    ) -> Result<InnerProduct, DnnlError> {
        if batch < 1 || inputs < 1 || outputs < 1 {
            return Err(DnnlError::Input(format!(
                "an inner product of {batch}x{inputs} -> {outputs}"
            )));
        }
        let src = MemDesc::plain(d, &[batch, inputs])?;
        let dst = MemDesc::plain(d, &[batch, outputs])?;
        let wdims = [outputs, inputs];
        let w_any = MemDesc::any(d, &wdims)?;
        let bias = bias.then(|| MemDesc::plain(d, &[outputs])).transpose()?;
        let prop = if training {
            ffi::FORWARD_TRAINING
        } else {
            ffi::FORWARD_INFERENCE
        };
        let detail = || format!("{batch}x{inputs} -> {outputs}");
        let null = std::ptr::null();
        let bias_raw = bias.as_ref().map_or(null, |b| b.raw);
        let fwd_pd = PrimDesc::create(d, "inner product", &detail, |raw| {
            // SAFETY: every descriptor and the engine are live.
            unsafe {
                (d.api.dnnl_inner_product_forward_primitive_desc_create)(
                    raw, d.engine, prop, src.raw, w_any.raw, bias_raw, dst.raw, null,
                )
            }
        })?;
        let weights = Port::input(d, &wdims, fwd_pd.md_of(ffi::QUERY_WEIGHTS_MD)?)?;
        let bwd = if training {
            let data_pd = PrimDesc::create(d, "inner product data gradient", &detail, |raw| {
                // SAFETY: as above; `fwd_pd` is the live hint.
                unsafe {
                    (d.api.dnnl_inner_product_backward_data_primitive_desc_create)(
                        raw, d.engine, src.raw, w_any.raw, dst.raw, fwd_pd.raw, null,
                    )
                }
            })?;
            let w_pd = PrimDesc::create(d, "inner product weight gradient", &detail, |raw| {
                // SAFETY: as above.
                unsafe {
                    (d.api
                        .dnnl_inner_product_backward_weights_primitive_desc_create)(
                        raw, d.engine, src.raw, w_any.raw, bias_raw, dst.raw, fwd_pd.raw, null,
                    )
                }
            })?;
            Some((
                Primitive::new(&data_pd)?,
                Port::input(d, &wdims, data_pd.md_of(ffi::QUERY_WEIGHTS_MD)?)?,
                Primitive::new(&w_pd)?,
                Port::output(d, &wdims, w_pd.md_of(ffi::QUERY_DIFF_WEIGHTS_MD)?)?,
            ))
        } else {
            None
        };
        Ok(InnerProduct {
            implementation: fwd_pd.implementation(),
            fwd: Primitive::new(&fwd_pd)?,
            batch,
            inputs,
            outputs,
            src,
            dst,
            bias,
            weights,
            bwd,
        })
    }

    /// The implementation oneDNN chose.
    pub fn implementation(&self) -> &str {
        &self.implementation
    }

    fn wstrides(&self) -> Vec<i64> {
        plain_strides(&[self.outputs, self.inputs])
    }

    /// `y = x @ w.T + b`.
    pub fn forward(
        &self,
        x: &[f32],
        w: &[f32],
        b: Option<&[f32]>,
        y: &mut [f32],
    ) -> Result<(), DnnlError> {
        let xm = Memory::lend(&self.src, x)?;
        let wm = self.weights.feed(w, &self.wstrides())?;
        let bm = match (&self.bias, b) {
            (Some(md), Some(b)) => Some(Memory::lend(md, b)?),
            (None, None) => None,
            _ => {
                return Err(DnnlError::Input(
                    "bias given to a kernel built without one".into(),
                ));
            }
        };
        let ym = Memory::lend_mut(&self.dst, y)?;
        let mut args = vec![
            (ffi::ARG_SRC, &xm),
            (ffi::ARG_WEIGHTS, &wm),
            (ffi::ARG_DST, &ym),
        ];
        if let Some(bm) = &bm {
            args.push((ffi::ARG_BIAS, bm));
        }
        self.fwd.run(&args)
    }

    /// The gradients of the data (`gx`), the weights (`gw`) and the bias (`gb`) for `gy`,
    /// each only when asked for (the weights' and bias' come together).
    pub fn backward(
        &self,
        x: &[f32],
        w: &[f32],
        gy: &[f32],
        gx: Option<&mut [f32]>,
        gw: Option<&mut [f32]>,
        gb: Option<&mut [f32]>,
    ) -> Result<(), DnnlError> {
        let Some((data, data_w, weights, diff_w)) = &self.bwd else {
            return Err(DnnlError::Input(
                "the gradient of an inner product built for inference".into(),
            ));
        };
        let gym = Memory::lend(&self.dst, gy)?;
        if let Some(gx) = gx {
            let wm = data_w.feed(w, &self.wstrides())?;
            let gxm = Memory::lend_mut(&self.src, gx)?;
            data.run(&[
                (ffi::ARG_DIFF_DST, &gym),
                (ffi::ARG_WEIGHTS, &wm),
                (ffi::ARG_DIFF_SRC, &gxm),
            ])?;
        }
        if gw.is_none() && gb.is_none() {
            return Ok(());
        }
        if gb.is_some() && self.bias.is_none() {
            return Err(DnnlError::Input(
                "a bias gradient from a kernel without bias".into(),
            ));
        }
        // The primitive writes every gradient it was built for: lend scratch where not asked.
        let (mut w_scratch, mut b_scratch) = (Vec::new(), Vec::new());
        let gw = or_scratch(gw, &mut w_scratch, w.len());
        let gb = self
            .bias
            .as_ref()
            .map(|_| or_scratch(gb, &mut b_scratch, self.outputs as usize));
        let xm = Memory::lend(&self.src, x)?;
        let sink = diff_w.sink(gw, &self.wstrides())?;
        let gbm = match (&self.bias, gb) {
            (Some(md), Some(gb)) => Some(Memory::lend_mut(md, gb)?),
            _ => None,
        };
        let mut args = vec![
            (ffi::ARG_SRC, &xm),
            (ffi::ARG_DIFF_DST, &gym),
            (ffi::ARG_DIFF_WEIGHTS, &sink.mem),
        ];
        if let Some(gbm) = &gbm {
            args.push((ffi::ARG_DIFF_BIAS, gbm));
        }
        weights.run(&args)?;
        drop(args);
        sink.finish()
    }
}
