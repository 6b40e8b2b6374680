//! oneDNN's kernels as Python classes: each is built for one shape and set of attributes (the
//! Python side caches them) and runs on C-contiguous float32 NumPy arrays without the GIL.

use mxrs_onednn::bnorm::{BatchNorm, Stats};
use mxrs_onednn::conv::{Conv, ConvSpec, WinogradUse};
use mxrs_onednn::eltwise::{Activation, Eltwise};
use mxrs_onednn::inner::InnerProduct;
use mxrs_onednn::lrn::{Lrn, LrnParams};
use mxrs_onednn::pool::{Pool, PoolKind, PoolSpec};
use mxrs_onednn::relu;
use mxrs_onednn::softmax::Softmax;
use mxrs_onednn::{DnnlError, Tensor, TensorMut, load};
use numpy::{PyReadonlyArrayDyn, PyReadwriteArrayDyn};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

pyo3::import_exception!(mxrs.base, KernelError);
pyo3::import_exception!(mxrs.base, KernelUnsupportedError);

fn to_py(err: DnnlError) -> PyErr {
    match err {
        DnnlError::Unsupported { .. } => KernelUnsupportedError::new_err(err.to_string()),
        _ => KernelError::new_err(err.to_string()),
    }
}

/// A read-only view of `a`'s elements, or an error naming `what` if it is not contiguous.
fn view<'a>(a: &'a PyReadonlyArrayDyn<'_, f32>, what: &str) -> PyResult<&'a [f32]> {
    a.as_slice()
        .map_err(|_| KernelError::new_err(format!("{what} must be a C-contiguous float32 array")))
}

fn view_mut<'a>(a: &'a mut PyReadwriteArrayDyn<'_, f32>, what: &str) -> PyResult<&'a mut [f32]> {
    a.as_slice_mut()
        .map_err(|_| KernelError::new_err(format!("{what} must be a C-contiguous float32 array")))
}

/// The weight and bias gradients a backward pass was asked for (None: not wanted).
type ParamGrads<'a> = (Option<&'a mut [f32]>, Option<&'a mut [f32]>);

fn param_grads<'a>(
    gw: &'a mut Option<PyReadwriteArrayDyn<'_, f32>>,
    gb: &'a mut Option<PyReadwriteArrayDyn<'_, f32>>,
) -> PyResult<ParamGrads<'a>> {
    let gw = gw
        .as_mut()
        .map(|a| view_mut(a, "weight gradient"))
        .transpose()?;
    let gb = gb
        .as_mut()
        .map(|a| view_mut(a, "bias gradient"))
        .transpose()?;
    Ok((gw, gb))
}

/// The strides (in elements) of an array of `shape` and `strides` (in elements) whose
/// elements fill one block of memory in some axis order (row-major, channels-last, ...),
/// else None.
fn dense_strides(shape: &[usize], strides: &[isize]) -> Option<Vec<i64>> {
    let mut axes: Vec<(isize, usize)> = strides
        .iter()
        .zip(shape)
        .filter(|(_, n)| **n > 1)
        .map(|(s, n)| (*s, *n))
        .collect();
    axes.sort_unstable();
    let mut next = 1isize;
    for (s, n) in axes {
        if s != next {
            return None;
        }
        next = next.checked_mul(n as isize)?;
    }
    // Axes of size 1 are never stepped along, and NumPy gives them any stride: give them the
    // one a row-major array would have next to their inner neighbour, so that two arrays with
    // one element order have equal strides.
    let mut out: Vec<i64> = strides.iter().map(|&s| s as i64).collect();
    for i in (0..out.len()).rev() {
        if shape[i] == 1 {
            out[i] = out.get(i + 1).map_or(1, |s| s * shape[i + 1] as i64);
        }
    }
    Some(out)
}

fn not_dense(what: &str) -> PyErr {
    KernelError::new_err(format!(
        "{what} must be a dense float32 array (row-major or another axis order)"
    ))
}

/// A dense array's elements as one buffer, with its strides.
struct Dense<'a> {
    data: &'a [f32],
    strides: Vec<i64>,
}

impl Dense<'_> {
    fn t(&self) -> Tensor<'_> {
        Tensor {
            data: self.data,
            strides: &self.strides,
        }
    }
}

/// A dense array to write, as one buffer with its strides.
struct DenseMut<'a> {
    data: &'a mut [f32],
    strides: Vec<i64>,
}

impl DenseMut<'_> {
    fn t(&mut self) -> TensorMut<'_> {
        TensorMut {
            data: self.data,
            strides: &self.strides,
        }
    }
}

fn dense<'a>(a: &'a PyReadonlyArrayDyn<'_, f32>, what: &str) -> PyResult<Dense<'a>> {
    let v = a.as_array();
    let strides = dense_strides(v.shape(), v.strides()).ok_or_else(|| not_dense(what))?;
    // SAFETY: the array is borrowed for 'a, and its elements fill exactly `len` consecutive
    // floats from its first one (checked above: positive strides of a dense axis order).
    let data = unsafe { std::slice::from_raw_parts(v.as_ptr(), v.len()) };
    Ok(Dense { data, strides })
}

fn dense_mut<'a>(a: &'a mut PyReadwriteArrayDyn<'_, f32>, what: &str) -> PyResult<DenseMut<'a>> {
    let mut v = a.as_array_mut();
    let strides = dense_strides(v.shape(), v.strides()).ok_or_else(|| not_dense(what))?;
    let len = v.len();
    // SAFETY: the array is borrowed mutably for 'a, and its elements fill exactly `len`
    // consecutive floats from its first one (checked above).
    let data = unsafe { std::slice::from_raw_parts_mut(v.as_mut_ptr(), len) };
    Ok(DenseMut { data, strides })
}

fn loaded() -> PyResult<&'static mxrs_onednn::Dnnl> {
    mxrs_onednn::loaded()
        .ok_or_else(|| KernelError::new_err("oneDNN is not loaded (onednn_load first)"))
}

fn view_bytes<'a>(a: &'a mut PyReadwriteArrayDyn<'_, u8>) -> PyResult<&'a mut [u8]> {
    a.as_slice_mut()
        .map_err(|_| KernelError::new_err("the workspace must be a C-contiguous uint8 array"))
}

/// Loads oneDNN from the library at `path` (once per process) and returns its version as
/// `"major.minor.patch"`.
#[pyfunction]
pub(crate) fn onednn_load(path: &str) -> PyResult<String> {
    let d = load(path).map_err(to_py)?;
    let (a, b, c) = d.version();
    Ok(format!("{a}.{b}.{c}"))
}

/// Runs oneDNN's primitives on at most `n` OpenMP threads from now on, whichever thread calls
/// them (0: as `OMP_NUM_THREADS` says).
#[pyfunction]
pub(crate) fn onednn_set_threads(n: i32) -> PyResult<()> {
    loaded()?.set_threads(n).map_err(to_py)
}

/// One convolution, `OnednnConv(src, weights, groups, bias, stride, dilate, pad, training)`,
/// with MXNet's shapes and attributes; with `adj` (one value per axis) a deconvolution, whose
/// weights are MXNet's `(C, F / groups, *kernel)`.
#[pyclass(frozen, module = "mxrs._native")]
pub(crate) struct OnednnConv {
    conv: Conv,
}

#[pymethods]
impl OnednnConv {
    #[new]
    #[pyo3(signature = (src, weights, groups, bias, stride, dilate, pad, training, adj = None, winograd = "auto"))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        src: Vec<i64>,
        weights: Vec<i64>,
        groups: i64,
        bias: bool,
        stride: Vec<i64>,
        dilate: Vec<i64>,
        pad: Vec<i64>,
        training: bool,
        adj: Option<Vec<i64>>,
        winograd: &str,
    ) -> PyResult<OnednnConv> {
        let d = loaded()?;
        let winograd = match winograd {
            "off" => WinogradUse::Off,
            "auto" => WinogradUse::Auto,
            "always" => WinogradUse::Always,
            other => {
                return Err(PyValueError::new_err(format!(
                    "winograd must be 'off', 'auto' or 'always', not {other:?}"
                )));
            }
        };
        let spec = ConvSpec {
            src,
            weights,
            groups,
            bias,
            stride,
            dilate,
            pad,
            training,
            transposed: adj.is_some(),
            adj: adj.unwrap_or_default(),
            winograd,
        };
        let conv = py.detach(|| Conv::new(d, spec)).map_err(to_py)?;
        Ok(OnednnConv { conv })
    }

    /// The output shape.
    #[getter]
    fn dst_shape(&self) -> Vec<i64> {
        self.conv.dst_dims().to_vec()
    }

    /// The implementation oneDNN chose, e.g. `jit:avx512_core`.
    #[getter]
    fn implementation(&self) -> String {
        self.conv.implementation().to_string()
    }

    /// Writes `conv(x, w) + b` into `y`.
    #[pyo3(signature = (x, w, b, y))]
    fn forward(
        &self,
        py: Python<'_>,
        x: PyReadonlyArrayDyn<'_, f32>,
        w: PyReadonlyArrayDyn<'_, f32>,
        b: Option<PyReadonlyArrayDyn<'_, f32>>,
        mut y: PyReadwriteArrayDyn<'_, f32>,
    ) -> PyResult<()> {
        let (x, w) = (dense(&x, "data")?, view(&w, "weight")?);
        let b = b.as_ref().map(|b| view(b, "bias")).transpose()?;
        let mut y = dense_mut(&mut y, "output")?;
        py.detach(|| self.conv.forward(x.t(), w, b, y.t()))
            .map_err(to_py)
    }

    /// Writes the gradients asked for (`gx`, `gw`, `gb`: arrays or None) given `gy`.
    #[pyo3(signature = (x, w, gy, gx, gw, gb))]
    #[allow(clippy::too_many_arguments)]
    fn backward(
        &self,
        py: Python<'_>,
        x: PyReadonlyArrayDyn<'_, f32>,
        w: PyReadonlyArrayDyn<'_, f32>,
        gy: PyReadonlyArrayDyn<'_, f32>,
        mut gx: Option<PyReadwriteArrayDyn<'_, f32>>,
        mut gw: Option<PyReadwriteArrayDyn<'_, f32>>,
        mut gb: Option<PyReadwriteArrayDyn<'_, f32>>,
    ) -> PyResult<()> {
        let (x, w, gy) = (
            dense(&x, "data")?,
            view(&w, "weight")?,
            dense(&gy, "gradient")?,
        );
        let mut gx = gx
            .as_mut()
            .map(|a| dense_mut(a, "data gradient"))
            .transpose()?;
        let (gw, gb) = param_grads(&mut gw, &mut gb)?;
        py.detach(|| {
            let gx = gx.as_mut().map(DenseMut::t);
            self.conv.backward(x.t(), w, gy.t(), gx, gw, gb)
        })
        .map_err(to_py)
    }
}

/// One pooling: `OnednnPool(src, src_strides, kind, kernel, stride, pad_l, pad_r, training)`
/// for input of shape `src` laid out by `src_strides` (elements), `kind` one of "max",
/// "avg_include", "avg_exclude".
#[pyclass(frozen, module = "mxrs._native")]
pub(crate) struct OnednnPool {
    pool: Pool,
}

#[pymethods]
impl OnednnPool {
    #[new]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        src: Vec<i64>,
        src_strides: Vec<i64>,
        kind: &str,
        kernel: Vec<i64>,
        stride: Vec<i64>,
        pad_l: Vec<i64>,
        pad_r: Vec<i64>,
        training: bool,
    ) -> PyResult<OnednnPool> {
        let d = loaded()?;
        let kind = match kind {
            "max" => PoolKind::Max,
            "avg_include" => PoolKind::AvgIncludePadding,
            "avg_exclude" => PoolKind::AvgExcludePadding,
            other => return Err(KernelError::new_err(format!("no pooling kind {other:?}"))),
        };
        let spec = PoolSpec {
            src,
            src_strides,
            kind,
            kernel,
            stride,
            pad_l,
            pad_r,
            training,
        };
        let pool = py.detach(|| Pool::new(d, spec)).map_err(to_py)?;
        Ok(OnednnPool { pool })
    }

    /// The output shape.
    #[getter]
    fn dst_shape(&self) -> Vec<i64> {
        self.pool.dst_dims().to_vec()
    }

    /// The implementation oneDNN chose.
    #[getter]
    fn implementation(&self) -> String {
        self.pool.implementation().to_string()
    }

    /// Bytes of the workspace the forward pass fills for the backward pass (0: none).
    #[getter]
    fn workspace_bytes(&self) -> usize {
        self.pool.workspace_bytes()
    }

    /// Pools `x` into `y`, filling the uint8 `ws` when the kernel has a workspace.
    #[pyo3(signature = (x, y, ws))]
    fn forward(
        &self,
        py: Python<'_>,
        x: PyReadonlyArrayDyn<'_, f32>,
        mut y: PyReadwriteArrayDyn<'_, f32>,
        mut ws: Option<PyReadwriteArrayDyn<'_, u8>>,
    ) -> PyResult<()> {
        let x = dense(&x, "data")?;
        let mut y = dense_mut(&mut y, "output")?;
        let ws = ws.as_mut().map(view_bytes).transpose()?;
        py.detach(|| self.pool.forward(x.t(), y.t(), ws))
            .map_err(to_py)
    }

    /// Writes the input gradient `gx` for `gy`.
    #[pyo3(signature = (gy, ws, gx))]
    fn backward(
        &self,
        py: Python<'_>,
        gy: PyReadonlyArrayDyn<'_, f32>,
        mut ws: Option<PyReadwriteArrayDyn<'_, u8>>,
        mut gx: PyReadwriteArrayDyn<'_, f32>,
    ) -> PyResult<()> {
        let gy = dense(&gy, "gradient")?;
        let mut gx = dense_mut(&mut gx, "data gradient")?;
        let ws = ws.as_mut().map(view_bytes).transpose()?;
        py.detach(|| self.pool.backward(gy.t(), ws, gx.t()))
            .map_err(to_py)
    }
}

/// A batch norm call's per-channel arrays (`shift` absent: an empty slice, which only a
/// kernel that never reads it is given).
fn stats<'a>(
    scale: &'a PyReadonlyArrayDyn<'_, f32>,
    shift: Option<&'a PyReadonlyArrayDyn<'_, f32>>,
    mean: &'a mut PyReadwriteArrayDyn<'_, f32>,
    var: &'a mut PyReadwriteArrayDyn<'_, f32>,
) -> PyResult<Stats<'a>> {
    Ok(Stats {
        scale: view(scale, "gamma")?,
        shift: shift.map(|b| view(b, "beta")).transpose()?.unwrap_or(&[]),
        mean: view_mut(mean, "mean")?,
        var: view_mut(var, "variance")?,
    })
}

/// One batch normalisation over axis 1: `OnednnBatchNorm(shape, strides, eps, use_global,
/// training, relu=False)` for data of `shape` laid out by `strides` (elements); `relu` fuses a
/// ReLU on the output, whose training pass keeps a workspace of `workspace_bytes`.
#[pyclass(frozen, module = "mxrs._native")]
pub(crate) struct OnednnBatchNorm {
    norm: BatchNorm,
}

#[pymethods]
impl OnednnBatchNorm {
    #[new]
    #[pyo3(signature = (shape, strides, eps, use_global, training, relu = false))]
    fn new(
        py: Python<'_>,
        shape: Vec<i64>,
        strides: Vec<i64>,
        eps: f32,
        use_global: bool,
        training: bool,
        relu: bool,
    ) -> PyResult<OnednnBatchNorm> {
        let d = loaded()?;
        let norm = py
            .detach(|| BatchNorm::new(d, &shape, &strides, eps, use_global, training, relu))
            .map_err(to_py)?;
        Ok(OnednnBatchNorm { norm })
    }

    /// The implementation oneDNN chose.
    #[getter]
    fn implementation(&self) -> String {
        self.norm.implementation().to_string()
    }

    /// Bytes of the uint8 workspace a training pass with a fused ReLU fills (0: none).
    #[getter]
    fn workspace_bytes(&self) -> usize {
        self.norm.workspace_bytes()
    }

    /// Writes the normalised `x` into `y`; the batch's mean and (biased) variance into `mean`
    /// and `var`, or reads them from there with `use_global`; fills `ws` when the kernel keeps
    /// a workspace.
    #[pyo3(signature = (x, scale, shift, mean, var, y, ws = None))]
    #[allow(clippy::too_many_arguments)]
    fn forward(
        &self,
        py: Python<'_>,
        x: PyReadonlyArrayDyn<'_, f32>,
        scale: PyReadonlyArrayDyn<'_, f32>,
        shift: PyReadonlyArrayDyn<'_, f32>,
        mut mean: PyReadwriteArrayDyn<'_, f32>,
        mut var: PyReadwriteArrayDyn<'_, f32>,
        mut y: PyReadwriteArrayDyn<'_, f32>,
        mut ws: Option<PyReadwriteArrayDyn<'_, u8>>,
    ) -> PyResult<()> {
        let x = dense(&x, "data")?;
        let s = stats(&scale, Some(&shift), &mut mean, &mut var)?;
        let mut y = dense_mut(&mut y, "output")?;
        let ws = ws.as_mut().map(view_bytes).transpose()?;
        py.detach(|| self.norm.forward(x.t(), y.t(), s, ws))
            .map_err(to_py)
    }

    /// Writes the gradients of the data, the scale and the shift for `gy`; with a fused ReLU,
    /// the forward pass's workspace `ws` (`workspace_bytes` > 0) or its shift `shift` (the
    /// channels-last kernel, which recomputes the ReLU's mask).
    #[pyo3(signature = (x, gy, scale, mean, var, gx, gscale, gshift, ws = None, shift = None))]
    #[allow(clippy::too_many_arguments)]
    fn backward(
        &self,
        py: Python<'_>,
        x: PyReadonlyArrayDyn<'_, f32>,
        gy: PyReadonlyArrayDyn<'_, f32>,
        scale: PyReadonlyArrayDyn<'_, f32>,
        mut mean: PyReadwriteArrayDyn<'_, f32>,
        mut var: PyReadwriteArrayDyn<'_, f32>,
        mut gx: PyReadwriteArrayDyn<'_, f32>,
        mut gscale: PyReadwriteArrayDyn<'_, f32>,
        mut gshift: PyReadwriteArrayDyn<'_, f32>,
        mut ws: Option<PyReadwriteArrayDyn<'_, u8>>,
        shift: Option<PyReadonlyArrayDyn<'_, f32>>,
    ) -> PyResult<()> {
        let (x, gy) = (dense(&x, "data")?, dense(&gy, "gradient")?);
        let s = stats(&scale, shift.as_ref(), &mut mean, &mut var)?;
        let mut gx = dense_mut(&mut gx, "data gradient")?;
        let gscale = view_mut(&mut gscale, "gamma gradient")?;
        let gshift = view_mut(&mut gshift, "beta gradient")?;
        let ws = ws.as_mut().map(view_bytes).transpose()?;
        py.detach(|| {
            self.norm
                .backward(x.t(), gy.t(), s, ws, gx.t(), gscale, gshift)
        })
        .map_err(to_py)
    }

    /// A residual unit's end, `y = relu(bn(x) + residual)`, in one pass after the statistics
    /// (a kernel built with `relu` for channels-last data; statistics as `forward`).
    #[allow(clippy::too_many_arguments)]
    fn forward_residual(
        &self,
        py: Python<'_>,
        x: PyReadonlyArrayDyn<'_, f32>,
        residual: PyReadonlyArrayDyn<'_, f32>,
        scale: PyReadonlyArrayDyn<'_, f32>,
        shift: PyReadonlyArrayDyn<'_, f32>,
        mut mean: PyReadwriteArrayDyn<'_, f32>,
        mut var: PyReadwriteArrayDyn<'_, f32>,
        mut y: PyReadwriteArrayDyn<'_, f32>,
    ) -> PyResult<()> {
        let (x, r) = (dense(&x, "data")?, dense(&residual, "residual")?);
        let s = stats(&scale, Some(&shift), &mut mean, &mut var)?;
        let mut y = dense_mut(&mut y, "output")?;
        py.detach(|| self.norm.forward_residual(x.t(), r.t(), y.t(), s))
            .map_err(to_py)
    }

    /// The gradients of `forward_residual` for the output `y`'s gradient `gy` (and `gy2`, its
    /// second part, added here): the residual's `gr` (also the normalised data's), the data's
    /// `gx`, the scale's and the shift's.
    #[pyo3(signature = (x, y, gy, gy2, scale, mean, var, gx, gr, gscale, gshift))]
    #[allow(clippy::too_many_arguments)]
    fn backward_residual(
        &self,
        py: Python<'_>,
        x: PyReadonlyArrayDyn<'_, f32>,
        y: PyReadonlyArrayDyn<'_, f32>,
        gy: PyReadonlyArrayDyn<'_, f32>,
        gy2: Option<PyReadonlyArrayDyn<'_, f32>>,
        scale: PyReadonlyArrayDyn<'_, f32>,
        mut mean: PyReadwriteArrayDyn<'_, f32>,
        mut var: PyReadwriteArrayDyn<'_, f32>,
        mut gx: PyReadwriteArrayDyn<'_, f32>,
        mut gr: PyReadwriteArrayDyn<'_, f32>,
        mut gscale: PyReadwriteArrayDyn<'_, f32>,
        mut gshift: PyReadwriteArrayDyn<'_, f32>,
    ) -> PyResult<()> {
        let (x, y, g1) = (
            dense(&x, "data")?,
            dense(&y, "output")?,
            dense(&gy, "gradient")?,
        );
        let g2 = gy2.as_ref().map(|g| dense(g, "gradient")).transpose()?;
        let s = stats(&scale, None, &mut mean, &mut var)?;
        let mut gx = dense_mut(&mut gx, "data gradient")?;
        let mut gr = dense_mut(&mut gr, "residual gradient")?;
        let gscale = view_mut(&mut gscale, "gamma gradient")?;
        let gshift = view_mut(&mut gshift, "beta gradient")?;
        py.detach(|| {
            let mut parts = vec![g1.t()];
            parts.extend(g2.as_ref().map(|g| g.t()));
            self.norm
                .backward_residual(x.t(), y.t(), &parts, s, gx.t(), gr.t(), gscale, gshift)
        })
        .map_err(to_py)
    }
}

/// An error unless every array (of one shape) lays its elements out in the same order: an
/// activation runs over raw buffers.
fn same_order(strides: &[&Vec<i64>]) -> PyResult<()> {
    if strides.windows(2).all(|w| w[0] == w[1]) {
        Ok(())
    } else {
        Err(KernelError::new_err(format!(
            "an activation's arrays must share one layout, got strides {strides:?}"
        )))
    }
}

/// One activation over buffers of `len` elements: `OnednnActivation(kind, len, training,
/// slope)`, `kind` one of "relu", "sigmoid", "tanh", "softrelu", "leaky" (`slope * x` below
/// zero), "elu" (`slope * (exp(x) - 1)` below zero), "gelu" (erf form).
#[pyclass(frozen, module = "mxrs._native")]
pub(crate) struct OnednnActivation {
    op: Eltwise,
}

#[pymethods]
impl OnednnActivation {
    #[new]
    #[pyo3(signature = (kind, len, training, slope = 0.0))]
    fn new(
        py: Python<'_>,
        kind: &str,
        len: i64,
        training: bool,
        slope: f32,
    ) -> PyResult<OnednnActivation> {
        let d = loaded()?;
        let kind = match kind {
            "relu" => Activation::Relu,
            "sigmoid" => Activation::Sigmoid,
            "tanh" => Activation::Tanh,
            "softrelu" => Activation::SoftRelu,
            "leaky" => Activation::Leaky { slope },
            "elu" => Activation::Elu { alpha: slope },
            "gelu" => Activation::GeluErf,
            other => return Err(KernelError::new_err(format!("no activation {other:?}"))),
        };
        let op = py
            .detach(|| Eltwise::new(d, kind, len, training))
            .map_err(to_py)?;
        Ok(OnednnActivation { op })
    }

    /// The implementation oneDNN chose.
    #[getter]
    fn implementation(&self) -> String {
        self.op.implementation().to_string()
    }

    /// Writes `f(x)` into `y`.
    fn forward(
        &self,
        py: Python<'_>,
        x: PyReadonlyArrayDyn<'_, f32>,
        mut y: PyReadwriteArrayDyn<'_, f32>,
    ) -> PyResult<()> {
        let x = dense(&x, "data")?;
        let y = dense_mut(&mut y, "output")?;
        same_order(&[&x.strides, &y.strides])?;
        py.detach(|| self.op.forward(x.data, y.data)).map_err(to_py)
    }

    /// Writes the input gradient `gx` for `gy`; `data` is the forward output (relu, sigmoid,
    /// tanh) or input (the others).
    fn backward(
        &self,
        py: Python<'_>,
        data: PyReadonlyArrayDyn<'_, f32>,
        gy: PyReadonlyArrayDyn<'_, f32>,
        mut gx: PyReadwriteArrayDyn<'_, f32>,
    ) -> PyResult<()> {
        let (data, gy) = (dense(&data, "data")?, dense(&gy, "gradient")?);
        let gx = dense_mut(&mut gx, "data gradient")?;
        same_order(&[&data.strides, &gy.strides, &gx.strides])?;
        py.detach(|| self.op.backward(data.data, gy.data, gx.data))
            .map_err(to_py)
    }
}

/// ReLU's forward pass, `y = relu(x)`, keeping NaN (see `mxrs_onednn::relu`); the arrays share
/// one dense layout. Runs on oneDNN's OpenMP threads when it is loaded, else on this one.
#[pyfunction]
pub(crate) fn relu_forward(
    py: Python<'_>,
    x: PyReadonlyArrayDyn<'_, f32>,
    mut y: PyReadwriteArrayDyn<'_, f32>,
) -> PyResult<()> {
    let x = dense(&x, "data")?;
    let y = dense_mut(&mut y, "output")?;
    same_order(&[&x.strides, &y.strides])?;
    py.detach(|| relu::forward(x.data, y.data)).map_err(to_py)
}

/// The residual addition and its ReLU in one pass: `y = relu(a + b)`.
#[pyfunction]
pub(crate) fn relu_add_forward(
    py: Python<'_>,
    a: PyReadonlyArrayDyn<'_, f32>,
    b: PyReadonlyArrayDyn<'_, f32>,
    y: PyReadwriteArrayDyn<'_, f32>,
) -> PyResult<()> {
    two_to_one(
        py,
        (&a, "first addend"),
        (&b, "second addend"),
        y,
        relu::add_forward,
    )
}

/// ReLU's gradient `gx` from its output `y` and the output's gradient `gy`, NaN kept.
#[pyfunction]
pub(crate) fn relu_backward(
    py: Python<'_>,
    y: PyReadonlyArrayDyn<'_, f32>,
    gy: PyReadonlyArrayDyn<'_, f32>,
    gx: PyReadwriteArrayDyn<'_, f32>,
) -> PyResult<()> {
    two_to_one(py, (&y, "output"), (&gy, "gradient"), gx, relu::backward)
}

/// ReLU's gradient `gx` from its output `y` and the two parts of the output's gradient,
/// `gy1 + gy2`, added in the same pass.
#[pyfunction]
pub(crate) fn relu_backward_sum(
    py: Python<'_>,
    y: PyReadonlyArrayDyn<'_, f32>,
    gy1: PyReadonlyArrayDyn<'_, f32>,
    gy2: PyReadonlyArrayDyn<'_, f32>,
    mut gx: PyReadwriteArrayDyn<'_, f32>,
) -> PyResult<()> {
    let (y, g1, g2) = (
        dense(&y, "output")?,
        dense(&gy1, "first gradient")?,
        dense(&gy2, "second gradient")?,
    );
    let gx = dense_mut(&mut gx, "input gradient")?;
    same_order(&[&y.strides, &g1.strides, &g2.strides, &gx.strides])?;
    py.detach(|| relu::backward_sum(y.data, g1.data, g2.data, gx.data))
        .map_err(to_py)
}

type Loop2 = fn(&[f32], &[f32], &mut [f32]) -> Result<(), DnnlError>;

/// Runs the elementwise `kernel` on two named inputs and an output of one dense layout,
/// without the GIL.
fn two_to_one(
    py: Python<'_>,
    (a, a_name): (&PyReadonlyArrayDyn<'_, f32>, &str),
    (b, b_name): (&PyReadonlyArrayDyn<'_, f32>, &str),
    mut out: PyReadwriteArrayDyn<'_, f32>,
    kernel: Loop2,
) -> PyResult<()> {
    let (a, b) = (dense(a, a_name)?, dense(b, b_name)?);
    let out = dense_mut(&mut out, "output")?;
    same_order(&[&a.strides, &b.strides, &out.strides])?;
    py.detach(|| kernel(a.data, b.data, out.data))
        .map_err(to_py)
}

/// One inner product (`FullyConnected`): `OnednnInnerProduct(batch, inputs, outputs, bias,
/// training)` on row-major float32 arrays.
#[pyclass(frozen, module = "mxrs._native")]
pub(crate) struct OnednnInnerProduct {
    ip: InnerProduct,
}

#[pymethods]
impl OnednnInnerProduct {
    #[new]
    fn new(
        py: Python<'_>,
        batch: i64,
        inputs: i64,
        outputs: i64,
        bias: bool,
        training: bool,
    ) -> PyResult<OnednnInnerProduct> {
        let d = loaded()?;
        let ip = py
            .detach(|| InnerProduct::new(d, batch, inputs, outputs, bias, training))
            .map_err(to_py)?;
        Ok(OnednnInnerProduct { ip })
    }

    /// The implementation oneDNN chose.
    #[getter]
    fn implementation(&self) -> String {
        self.ip.implementation().to_string()
    }

    /// Writes `x @ w.T + b` into `y`.
    #[pyo3(signature = (x, w, b, y))]
    fn forward(
        &self,
        py: Python<'_>,
        x: PyReadonlyArrayDyn<'_, f32>,
        w: PyReadonlyArrayDyn<'_, f32>,
        b: Option<PyReadonlyArrayDyn<'_, f32>>,
        mut y: PyReadwriteArrayDyn<'_, f32>,
    ) -> PyResult<()> {
        let (x, w) = (view(&x, "data")?, view(&w, "weight")?);
        let b = b.as_ref().map(|b| view(b, "bias")).transpose()?;
        let y = view_mut(&mut y, "output")?;
        py.detach(|| self.ip.forward(x, w, b, y)).map_err(to_py)
    }

    /// Writes the gradients asked for (`gx`, `gw`, `gb`: arrays or None) given `gy`.
    #[pyo3(signature = (x, w, gy, gx, gw, gb))]
    #[allow(clippy::too_many_arguments)]
    fn backward(
        &self,
        py: Python<'_>,
        x: PyReadonlyArrayDyn<'_, f32>,
        w: PyReadonlyArrayDyn<'_, f32>,
        gy: PyReadonlyArrayDyn<'_, f32>,
        mut gx: Option<PyReadwriteArrayDyn<'_, f32>>,
        mut gw: Option<PyReadwriteArrayDyn<'_, f32>>,
        mut gb: Option<PyReadwriteArrayDyn<'_, f32>>,
    ) -> PyResult<()> {
        let (x, w, gy) = (
            view(&x, "data")?,
            view(&w, "weight")?,
            view(&gy, "gradient")?,
        );
        let gx = gx
            .as_mut()
            .map(|a| view_mut(a, "data gradient"))
            .transpose()?;
        let (gw, gb) = param_grads(&mut gw, &mut gb)?;
        py.detach(|| self.ip.backward(x, w, gy, gx, gw, gb))
            .map_err(to_py)
    }
}

/// One softmax: `OnednnSoftmax(shape, strides, axis, log, training)` along `axis` of data of
/// `shape` laid out by `strides` (elements); its logarithm when `log`.
#[pyclass(frozen, module = "mxrs._native")]
pub(crate) struct OnednnSoftmax {
    op: Softmax,
}

#[pymethods]
impl OnednnSoftmax {
    #[new]
    fn new(
        py: Python<'_>,
        shape: Vec<i64>,
        strides: Vec<i64>,
        axis: usize,
        log: bool,
        training: bool,
    ) -> PyResult<OnednnSoftmax> {
        let d = loaded()?;
        let op = py
            .detach(|| Softmax::new(d, &shape, &strides, axis, log, training))
            .map_err(to_py)?;
        Ok(OnednnSoftmax { op })
    }

    /// The implementation oneDNN chose.
    #[getter]
    fn implementation(&self) -> String {
        self.op.implementation().to_string()
    }

    /// Writes the softmax of `x` into `y`.
    fn forward(
        &self,
        py: Python<'_>,
        x: PyReadonlyArrayDyn<'_, f32>,
        mut y: PyReadwriteArrayDyn<'_, f32>,
    ) -> PyResult<()> {
        let x = dense(&x, "data")?;
        let mut y = dense_mut(&mut y, "output")?;
        py.detach(|| self.op.forward(x.t(), y.t())).map_err(to_py)
    }

    /// Writes the input gradient `gx` for `gy`, given the forward output `y`.
    fn backward(
        &self,
        py: Python<'_>,
        y: PyReadonlyArrayDyn<'_, f32>,
        gy: PyReadonlyArrayDyn<'_, f32>,
        mut gx: PyReadwriteArrayDyn<'_, f32>,
    ) -> PyResult<()> {
        let (y, gy) = (dense(&y, "output")?, dense(&gy, "gradient")?);
        let mut gx = dense_mut(&mut gx, "data gradient")?;
        py.detach(|| self.op.backward(y.t(), gy.t(), gx.t()))
            .map_err(to_py)
    }
}

/// One local response normalisation across channels: `OnednnLrn(shape, size, alpha, beta, k,
/// training)` for `(N, C, ...)` data of `shape` (any dense layout), in oneDNN's terms:
/// `x / (k + alpha / size * sum(x^2))^beta` over `size` channels (odd).
#[pyclass(frozen, module = "mxrs._native")]
pub(crate) struct OnednnLrn {
    op: Lrn,
}

#[pymethods]
impl OnednnLrn {
    #[new]
    fn new(
        py: Python<'_>,
        shape: Vec<i64>,
        size: i64,
        alpha: f32,
        beta: f32,
        k: f32,
        training: bool,
    ) -> PyResult<OnednnLrn> {
        let d = loaded()?;
        let p = LrnParams {
            size,
            alpha,
            beta,
            k,
        };
        let op = py
            .detach(|| Lrn::new(d, &shape, p, training))
            .map_err(to_py)?;
        Ok(OnednnLrn { op })
    }

    /// The implementation oneDNN chose.
    #[getter]
    fn implementation(&self) -> String {
        self.op.implementation().to_string()
    }

    /// Bytes of the workspace the forward pass fills for the backward pass (0: none).
    #[getter]
    fn workspace_bytes(&self) -> usize {
        self.op.workspace_bytes()
    }

    /// Normalises `x` into `y`, filling the uint8 `ws` when the kernel has a workspace.
    #[pyo3(signature = (x, y, ws))]
    fn forward(
        &self,
        py: Python<'_>,
        x: PyReadonlyArrayDyn<'_, f32>,
        mut y: PyReadwriteArrayDyn<'_, f32>,
        mut ws: Option<PyReadwriteArrayDyn<'_, u8>>,
    ) -> PyResult<()> {
        let x = dense(&x, "data")?;
        let mut y = dense_mut(&mut y, "output")?;
        let ws = ws.as_mut().map(view_bytes).transpose()?;
        py.detach(|| self.op.forward(x.t(), y.t(), ws))
            .map_err(to_py)
    }

    /// Writes the input gradient `gx` for `gy`, given the forward pass's input and workspace.
    #[pyo3(signature = (x, gy, ws, gx))]
    fn backward(
        &self,
        py: Python<'_>,
        x: PyReadonlyArrayDyn<'_, f32>,
        gy: PyReadonlyArrayDyn<'_, f32>,
        mut ws: Option<PyReadwriteArrayDyn<'_, u8>>,
        mut gx: PyReadwriteArrayDyn<'_, f32>,
    ) -> PyResult<()> {
        let (x, gy) = (dense(&x, "data")?, dense(&gy, "gradient")?);
        let mut gx = dense_mut(&mut gx, "data gradient")?;
        let ws = ws.as_mut().map(view_bytes).transpose()?;
        py.detach(|| self.op.backward(x.t(), gy.t(), ws, gx.t()))
            .map_err(to_py)
    }
}
