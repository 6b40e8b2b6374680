//! Optimizer updates of a worker's own weights (the Python optimizers' local steps) by the loops
//! the servers run (`ps_core::updater`): one pass over the arrays, without the GIL.

use numpy::{PyReadonlyArrayDyn, PyReadwriteArrayDyn};
use ps_core::PsError;
use ps_core::updater::{SgdStep, sgd_update as sgd};
use pyo3::prelude::*;

use crate::errors::to_py;

fn contiguous(what: &str) -> PyErr {
    to_py(PsError::ShapeMismatch(format!(
        "{what} must be a C-contiguous float32 array"
    )))
}

/// MXNet's `sgd_update` (`mom` None) or `sgd_mom_update` in place on C-contiguous float32
/// arrays of one length: `mom = momentum*mom - lr*wd*weight - lr*clip(rescale_grad*grad)`,
/// `weight += mom` (without momentum, `weight = (1 - lr*wd)*weight - lr*clip(...)`).
#[pyfunction]
#[pyo3(signature = (weight, grad, mom, lr, wd, momentum, rescale_grad, clip_gradient = None))]
#[allow(clippy::too_many_arguments)]
pub(crate) fn sgd_update(
    py: Python<'_>,
    mut weight: PyReadwriteArrayDyn<'_, f32>,
    grad: PyReadonlyArrayDyn<'_, f32>,
    mut mom: Option<PyReadwriteArrayDyn<'_, f32>>,
    lr: f64,
    wd: f64,
    momentum: f64,
    rescale_grad: f64,
    clip_gradient: Option<f64>,
) -> PyResult<()> {
    let w = weight
        .as_slice_mut()
        .map_err(|_| contiguous("the weight"))?;
    let g = grad.as_slice().map_err(|_| contiguous("the gradient"))?;
    let m = match &mut mom {
        Some(m) => Some(m.as_slice_mut().map_err(|_| contiguous("the momentum"))?),
        None => None,
    };
    let step = SgdStep {
        lr,
        wd,
        momentum,
        rescale_grad,
        clip_gradient,
    };
    py.detach(|| sgd(step, w, g, m)).map_err(to_py)
}
