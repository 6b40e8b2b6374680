//! `mxrs._native`: the parameter server of mxrs seen from Python.
//!
//! A thin layer over `ps-core`: Python objects are read (buffers, shapes, dtypes) while the GIL
//! is held, then the GIL is released around every network wait.
//!
//! # Layout
//! - `errors`: `PsError` to the `MXNetError` subclasses of `mxrs.base`.
//! - `exit`: the exit status of a process whose errors were never reported.
//! - `runtime`: the process-wide tokio runtime (rebuilt in forked children).
//! - `arrays`: NumPy arrays as byte views, without copies.
//! - `items`: a request's Python arguments read and checked (arrays lent, destinations, row ids).
//! - `onednn`: oneDNN's CPU kernels (convolution, pooling, batch norm, activations, inner
//!   product, softmax, LRN) on NumPy arrays.
//! - `updates`: optimizer updates of a worker's own weights, by the servers' loops.
//! - `codec`: gradient compression for arrays in this process (the 'device' KVStore).
//! - `kvstore`: `Worker` (a job's worker) and `Ticket` (a pending push or pull).
//! - `roles`: running a scheduler or server process (`import mxrs` with `DMLC_ROLE`, and the
//!   `ps-scheduler` / `ps-server` console scripts).
//! - `main_thread`: a server's node on a thread of its own, its Python work on the thread that
//!   started it.
//! - `python_optimizer`: the pickled Python optimizers a server runs (`ps_core`'s foreign
//!   updater hook).

mod arrays;
mod codec;
mod errors;
mod exit;
mod host_arrays;
mod items;
mod kvstore;
mod main_thread;
mod onednn;
mod python_optimizer;
mod roles;
mod runtime;
mod tls;
mod updates;

use pyo3::prelude::*;

/// The Rust extension of mxrs.
#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add_class::<kvstore::Worker>()?;
    m.add_class::<kvstore::Ticket>()?;
    m.add_function(wrap_pyfunction!(roles::run_role, m)?)?;
    m.add_function(wrap_pyfunction!(roles::node_main, m)?)?;
    m.add_function(wrap_pyfunction!(exit::exit_with_status, m)?)?;
    m.add_function(wrap_pyfunction!(codec::compress_roundtrip, m)?)?;
    m.add_function(wrap_pyfunction!(tls::tls_job_certificates, m)?)?;
    m.add_function(wrap_pyfunction!(updates::sgd_update, m)?)?;
    m.add_function(wrap_pyfunction!(updates::copy_into, m)?)?;
    m.add_function(wrap_pyfunction!(updates::add_into, m)?)?;
    m.add_function(wrap_pyfunction!(onednn::onednn_load, m)?)?;
    m.add_function(wrap_pyfunction!(host_arrays::stagger_host_arrays, m)?)?;
    m.add_function(wrap_pyfunction!(onednn::onednn_set_threads, m)?)?;
    m.add_function(wrap_pyfunction!(onednn::relu_forward, m)?)?;
    m.add_function(wrap_pyfunction!(onednn::relu_add_forward, m)?)?;
    m.add_function(wrap_pyfunction!(onednn::relu_backward, m)?)?;
    m.add_function(wrap_pyfunction!(onednn::relu_backward_sum, m)?)?;
    m.add_class::<onednn::OnednnConv>()?;
    m.add_class::<onednn::OnednnPool>()?;
    m.add_class::<onednn::OnednnBatchNorm>()?;
    m.add_class::<onednn::OnednnActivation>()?;
    m.add_class::<onednn::OnednnInnerProduct>()?;
    m.add_class::<onednn::OnednnSoftmax>()?;
    m.add_class::<onednn::OnednnLrn>()?;
    Ok(())
}
