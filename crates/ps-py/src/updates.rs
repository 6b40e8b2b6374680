//! Optimizer updates of a worker's own weights (the Python optimizers' local steps) by the loops
//! the servers run (`ps_core::updater`), the store of the gradients they read and the sums of
//! long gradients and operands: one pass over the arrays, without the GIL, split over oneDNN's
//! OpenMP threads where it is loaded (`mxrs_onednn::parallel`), as MXNet's CPU kernels run on
//! its OpenMP threads.

use mxrs_onednn::parallel::{SharedMut, add, copy, for_ranges};
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
    let n = w.len();
    if g.len() != n || m.as_ref().is_some_and(|m| m.len() != n) {
        // the one-threaded call names the lengths in its error
        return sgd(step, w, g, m).map_err(to_py);
    }
    let (w, m) = (SharedMut::new(w), m.map(SharedMut::new));
    py.detach(|| {
        let failed = parking_lot::Mutex::new(None);
        for_ranges(n, |r| {
            // SAFETY: for_ranges hands out each range once; `w` and `m` are distinct arrays
            // (NumPy would not lend one array both read-write).
            let (w, m) = unsafe { (w.range(r.clone()), m.map(|m| m.range(r.clone()))) };
            if let Err(e) = sgd(step, w, &g[r], m) {
                failed.lock().get_or_insert(e);
            }
        });
        failed.into_inner().map_or(Ok(()), Err)
    })
    .map_err(to_py)
}

/// `dst[...] = src` for C-contiguous float32 arrays of one length: backward's store of a
/// gradient into a `.grad` whose `grad_req` is `write`, over the threads.
#[pyfunction]
pub(crate) fn copy_into(
    py: Python<'_>,
    mut dst: PyReadwriteArrayDyn<'_, f32>,
    src: PyReadonlyArrayDyn<'_, f32>,
) -> PyResult<()> {
    let d = dst
        .as_slice_mut()
        .map_err(|_| contiguous("the destination"))?;
    let s = src.as_slice().map_err(|_| contiguous("the source"))?;
    if d.len() != s.len() {
        return Err(to_py(PsError::ShapeMismatch(format!(
            "a copy of {} values into {}",
            s.len(),
            d.len()
        ))));
    }
    py.detach(|| copy(s, d));
    Ok(())
}

/// `out[...] = a + b` for C-contiguous float32 arrays of one length, over the threads: the
/// sum of two long operands or gradients, which NumPy adds on one thread.
#[pyfunction]
pub(crate) fn add_into(
    py: Python<'_>,
    mut out: PyReadwriteArrayDyn<'_, f32>,
    a: PyReadonlyArrayDyn<'_, f32>,
    b: PyReadonlyArrayDyn<'_, f32>,
) -> PyResult<()> {
    let o = out
        .as_slice_mut()
        .map_err(|_| contiguous("the destination"))?;
    let a = a.as_slice().map_err(|_| contiguous("the first operand"))?;
    let b = b.as_slice().map_err(|_| contiguous("the second operand"))?;
    if a.len() != o.len() || b.len() != o.len() {
        return Err(to_py(PsError::ShapeMismatch(format!(
            "a sum of {} and {} values into {}",
            a.len(),
            b.len(),
            o.len()
        ))));
    }
    py.detach(|| add(a, b, o));
    Ok(())
}
