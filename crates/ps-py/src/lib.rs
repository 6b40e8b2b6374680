//! `mxrs._native`: the Rust side of mxrs seen from Python.
//!
//! # Layout
//! - `lib.rs`: the module and its version.

use pyo3::prelude::*;

/// The Rust extension of mxrs.
#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
