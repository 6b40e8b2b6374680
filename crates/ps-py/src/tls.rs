//! A job's TLS material for the launcher: a CA made for the job and a certificate per node.

use std::time::Duration;

use ps_core::protocol::tls::JobCa;
use pyo3::prelude::*;

use crate::errors::to_py;

/// Makes a CA for the job `job`, valid for `seconds`, and one certificate with its key for each
/// of `nodes` (labels such as "worker 1"), naming `hosts` besides the name every node
/// certificate carries. Returns `(ca_pem, [(cert_pem, key_pem), ...])`; the CA's own key is
/// dropped, so nothing can sign more certificates for the job.
#[pyfunction]
#[pyo3(signature = (job, nodes, seconds, hosts = Vec::new()))]
pub(crate) fn tls_job_certificates(
    py: Python<'_>,
    job: &str,
    nodes: Vec<String>,
    seconds: f64,
    hosts: Vec<String>,
) -> PyResult<(String, Vec<(String, String)>)> {
    if !(seconds.is_finite() && seconds > 0.0) {
        return Err(pyo3::exceptions::PyValueError::new_err(format!(
            "a job's certificates need a positive validity in seconds, got {seconds}"
        )));
    }
    py.detach(|| {
        let ca = JobCa::new(job, Duration::from_secs_f64(seconds)).map_err(to_py)?;
        let certs = nodes
            .iter()
            .map(|label| {
                let n = ca.node(label, &hosts).map_err(to_py)?;
                Ok((n.cert, n.key))
            })
            .collect::<PyResult<Vec<_>>>()?;
        Ok((ca.cert_pem(), certs))
    })
}
