//! oneDNN's kernels as Python classes: each is built for one shape and set of attributes (the
//! Python side caches them) and runs on C-contiguous float32 NumPy arrays without the GIL.

use mxrs_onednn::bnorm::{BatchNorm, Stats};
use mxrs_onednn::conv::{Conv, ConvSpec};
use mxrs_onednn::eltwise::{Activation, Eltwise};
use mxrs_onednn::pool::{Pool, PoolKind, PoolSpec};
use mxrs_onednn::{DnnlError, load};
use numpy::{PyReadonlyArrayDyn, PyReadwriteArrayDyn};
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

/// One convolution: `OnednnConv(src, weights, groups, bias, stride, dilate, pad, training)`
/// with MXNet's shapes and attributes.
#[pyclass(frozen, module = "mxrs._native")]
pub(crate) struct OnednnConv {
    conv: Conv,
}

#[pymethods]
impl OnednnConv {
    #[new]
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
    ) -> PyResult<OnednnConv> {
        let d = loaded()?;
        let spec = ConvSpec {
            src,
            weights,
            groups,
            bias,
            stride,
            dilate,
            pad,
            training,
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
        let (x, w) = (view(&x, "data")?, view(&w, "weight")?);
        let b = b.as_ref().map(|b| view(b, "bias")).transpose()?;
        let y = view_mut(&mut y, "output")?;
        py.detach(|| self.conv.forward(x, w, b, y)).map_err(to_py)
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
        let gw = gw
            .as_mut()
            .map(|a| view_mut(a, "weight gradient"))
            .transpose()?;
        let gb = gb
            .as_mut()
            .map(|a| view_mut(a, "bias gradient"))
            .transpose()?;
        py.detach(|| self.conv.backward(x, w, gy, gx, gw, gb))
            .map_err(to_py)
    }
}

/// One pooling: `OnednnPool(src, kind, kernel, stride, pad_l, pad_r, training)`, `kind` one
/// of "max", "avg_include", "avg_exclude".
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
        let x = view(&x, "data")?;
        let y = view_mut(&mut y, "output")?;
        let ws = ws.as_mut().map(view_bytes).transpose()?;
        py.detach(|| self.pool.forward(x, y, ws)).map_err(to_py)
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
        let gy = view(&gy, "gradient")?;
        let gx = view_mut(&mut gx, "data gradient")?;
        let ws = ws.as_mut().map(view_bytes).transpose()?;
        py.detach(|| self.pool.backward(gy, ws, gx)).map_err(to_py)
    }
}

/// One batch normalisation over axis 1: `OnednnBatchNorm(shape, eps, use_global, training)`.
#[pyclass(frozen, module = "mxrs._native")]
pub(crate) struct OnednnBatchNorm {
    norm: BatchNorm,
}

#[pymethods]
impl OnednnBatchNorm {
    #[new]
    fn new(
        py: Python<'_>,
        shape: Vec<i64>,
        eps: f32,
        use_global: bool,
        training: bool,
    ) -> PyResult<OnednnBatchNorm> {
        let d = loaded()?;
        let norm = py
            .detach(|| BatchNorm::new(d, &shape, eps, use_global, training))
            .map_err(to_py)?;
        Ok(OnednnBatchNorm { norm })
    }

    /// The implementation oneDNN chose.
    #[getter]
    fn implementation(&self) -> String {
        self.norm.implementation().to_string()
    }

    /// Writes the normalised `x` into `y`; the batch's mean and (biased) variance into `mean`
    /// and `var`, or reads them from there with `use_global`.
    #[pyo3(signature = (x, scale, shift, mean, var, y))]
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
    ) -> PyResult<()> {
        let x = view(&x, "data")?;
        let s = Stats {
            scale: view(&scale, "gamma")?,
            shift: view(&shift, "beta")?,
            mean: view_mut(&mut mean, "mean")?,
            var: view_mut(&mut var, "variance")?,
        };
        let y = view_mut(&mut y, "output")?;
        py.detach(|| self.norm.forward(x, y, s)).map_err(to_py)
    }

    /// Writes the gradients of the data, the scale and the shift for `gy`.
    #[pyo3(signature = (x, gy, scale, mean, var, gx, gscale, gshift))]
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
    ) -> PyResult<()> {
        let (x, gy) = (view(&x, "data")?, view(&gy, "gradient")?);
        let s = Stats {
            scale: view(&scale, "gamma")?,
            shift: &[],
            mean: view_mut(&mut mean, "mean")?,
            var: view_mut(&mut var, "variance")?,
        };
        let gx = view_mut(&mut gx, "data gradient")?;
        let gscale = view_mut(&mut gscale, "gamma gradient")?;
        let gshift = view_mut(&mut gshift, "beta gradient")?;
        py.detach(|| self.norm.backward(x, gy, s, gx, gscale, gshift))
            .map_err(to_py)
    }
}

/// One activation over buffers of `len` elements: `OnednnActivation(kind, len, training)`,
/// `kind` one of "relu", "sigmoid", "tanh", "softrelu".
#[pyclass(frozen, module = "mxrs._native")]
pub(crate) struct OnednnActivation {
    op: Eltwise,
}

#[pymethods]
impl OnednnActivation {
    #[new]
    fn new(py: Python<'_>, kind: &str, len: i64, training: bool) -> PyResult<OnednnActivation> {
        let d = loaded()?;
        let kind = match kind {
            "relu" => Activation::Relu,
            "sigmoid" => Activation::Sigmoid,
            "tanh" => Activation::Tanh,
            "softrelu" => Activation::SoftRelu,
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
        let x = view(&x, "data")?;
        let y = view_mut(&mut y, "output")?;
        py.detach(|| self.op.forward(x, y)).map_err(to_py)
    }

    /// Writes the input gradient `gx` for `gy`; `data` is the forward output (relu, sigmoid,
    /// tanh) or input (softrelu).
    fn backward(
        &self,
        py: Python<'_>,
        data: PyReadonlyArrayDyn<'_, f32>,
        gy: PyReadonlyArrayDyn<'_, f32>,
        mut gx: PyReadwriteArrayDyn<'_, f32>,
    ) -> PyResult<()> {
        let (data, gy) = (view(&data, "data")?, view(&gy, "gradient")?);
        let gx = view_mut(&mut gx, "data gradient")?;
        py.detach(|| self.op.backward(data, gy, gx)).map_err(to_py)
    }
}
