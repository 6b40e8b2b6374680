//! ps-core's gradient-compression codec for arrays inside one process: the 'device' KVStore
//! passes each device's gradient through it before the merge, as a distributed push crosses the
//! wire, so both stores share one implementation of the numbers.

use numpy::{
    PyArrayDyn, PyArrayMethods, PyReadwriteArrayDyn, PyUntypedArray, PyUntypedArrayMethods,
};
use ps_core::DType;
use ps_core::codec::Compression;
use pyo3::prelude::*;

use crate::arrays::ArrayInfo;
use crate::errors::{KVStoreError, to_py};

/// `grad` (a C-contiguous float32 array) as a receiver decodes it after compression `kind`
/// ("2bit", "fp16" or "bf16"; `threshold` is 2bit's): a new float32 array of the same shape.
/// For "2bit", `residual` (C-contiguous float32 of the same size, writable) is the error-feedback
/// state and is updated in place. Encodes and decodes without the GIL.
#[pyfunction]
#[pyo3(signature = (kind, threshold, grad, residual = None))]
pub(crate) fn compress_roundtrip<'py>(
    py: Python<'py>,
    kind: &str,
    threshold: f64,
    grad: Bound<'py, PyUntypedArray>,
    residual: Option<PyReadwriteArrayDyn<'py, f32>>,
) -> PyResult<Bound<'py, PyArrayDyn<f32>>> {
    let c = Compression::new(kind, threshold).map_err(to_py)?;
    let info = ArrayInfo::of(&grad, 0, false)?;
    if info.dtype != DType::F32 {
        return Err(KVStoreError::new_err(format!(
            "gradient compression {kind} applies to float32 values, not {}",
            info.dtype
        )));
    }
    let count = info.len() / 4;
    let mut residual = residual;
    let r: &mut [f32] = match (&mut residual, c.needs_residual()) {
        (Some(r), true) => r
            .as_slice_mut()
            .map_err(|_| KVStoreError::new_err("the residual must be C-contiguous"))?,
        (None, true) => return Err(KVStoreError::new_err("2bit compression needs a residual")),
        (_, false) => &mut [],
    };
    if c.needs_residual() && r.len() != count {
        return Err(KVStoreError::new_err(format!(
            "a residual of {} elements for a gradient of {count}",
            r.len()
        )));
    }
    let out = PyArrayDyn::<f32>::zeros(py, grad.shape(), false);
    {
        let mut view = out.readwrite();
        let dst = view.as_slice_mut().expect("a fresh array is contiguous");
        let bytes = info.lend(grad.clone().into_any().unbind());
        py.detach(|| {
            let payload = c.encode(&bytes, r);
            c.decode(&payload, dst);
        });
    }
    Ok(out)
}
