//! One mapping from `PsError` to the Python exception classes of `mxrs.base`.

use ps_core::PsError;
use pyo3::PyErr;

pyo3::import_exception!(mxrs.base, KVStoreError);
pyo3::import_exception!(mxrs.base, ShapeMismatchError);
pyo3::import_exception!(mxrs.base, NodeLostError);
pyo3::import_exception!(mxrs.base, AuthenticationError);

/// Which `MXNetError` subclass an error becomes.
#[derive(Debug, Clone, Copy)]
enum Kind {
    ShapeMismatch,
    NodeLost,
    Auth,
    Other,
}

/// A parameter-server error as Python sees it, kept so it can be raised again (a failed
/// request stays failed however often it is waited for).
#[derive(Debug, Clone)]
pub(crate) struct Failure {
    kind: Kind,
    message: String,
}

impl From<PsError> for Failure {
    fn from(err: PsError) -> Failure {
        let kind = match err {
            PsError::ShapeMismatch(_) => Kind::ShapeMismatch,
            PsError::NodeLost(_) => Kind::NodeLost,
            PsError::Auth(_) => Kind::Auth,
            _ => Kind::Other,
        };
        Failure {
            kind,
            message: err.to_string(),
        }
    }
}

impl Failure {
    /// A fresh Python exception for this failure.
    pub(crate) fn to_py(&self) -> PyErr {
        let msg = self.message.clone();
        match self.kind {
            Kind::ShapeMismatch => ShapeMismatchError::new_err(msg),
            Kind::NodeLost => NodeLostError::new_err(msg),
            Kind::Auth => AuthenticationError::new_err(msg),
            Kind::Other => KVStoreError::new_err(msg),
        }
    }
}

/// Converts a parameter-server error into the `MXNetError` subclass that names its kind, with
/// the server's (or client's) message.
pub(crate) fn to_py(err: PsError) -> PyErr {
    Failure::from(err).to_py()
}
