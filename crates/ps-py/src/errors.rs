//! One mapping from `PsError` to the Python exception classes of `mxrs.base`.

use ps_core::PsError;
use pyo3::PyErr;

pyo3::import_exception!(mxrs.base, KVStoreError);
pyo3::import_exception!(mxrs.base, ShapeMismatchError);
pyo3::import_exception!(mxrs.base, NodeLostError);
pyo3::import_exception!(mxrs.base, AuthenticationError);

/// Converts a parameter-server error into the `MXNetError` subclass that names its kind, with
/// the server's (or client's) message.
pub(crate) fn to_py(err: PsError) -> PyErr {
    let msg = err.to_string();
    match err {
        PsError::ShapeMismatch(_) => ShapeMismatchError::new_err(msg),
        PsError::NodeLost(_) => NodeLostError::new_err(msg),
        PsError::Auth(_) => AuthenticationError::new_err(msg),
        _ => KVStoreError::new_err(msg),
    }
}
