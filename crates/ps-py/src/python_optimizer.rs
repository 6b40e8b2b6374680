//! Python optimizers on a server: the [`ForeignUpdater`] hook of `ps_core`, registered by a
//! server process started from Python before its server runs.
//!
//! A worker sends an optimizer the servers do not run natively pickled (MXNet 1.9.1 pickles it
//! to its servers too). The factory registered here unpickles it into a
//! `mxrs.kvstore.server_optimizer.ServerOptimizer`, which keeps a state per piece of a key and
//! applies `update_multi_precision`. Every call runs on the thread that started the server
//! (`main_thread`), with the GIL; the piece's weights and gradient travel as NumPy arrays made
//! from copies, and the updated weights are copied back. A Python exception becomes the
//! update's error, which the server reports to the workers.

use std::sync::Arc;

use bytemuck::Pod;
use numpy::{Element, PyArray1, PyArrayMethods};
use ps_core::updater::foreign::{ForeignGrad, ForeignUpdate};
use ps_core::updater::{ForeignUpdater, Piece, set_foreign_factory};
use ps_core::{DType, PsError};
use pyo3::prelude::*;
use pyo3::types::PyBytes;

use crate::main_thread::on_main;

pyo3::import_exception!(mxrs.base, MXNetError);

/// The module that runs pickled optimizers on a server.
const MODULE: &str = "mxrs.kvstore.server_optimizer";

/// Registers the factory that builds Python optimizers from their pickles, for the servers
/// this process runs.
pub(crate) fn register() {
    set_foreign_factory(Arc::new(|payload: &[u8]| {
        let payload = payload.to_vec();
        on_main(move |py| {
            let runner = py
                .import(MODULE)
                .and_then(|m| m.getattr("ServerOptimizer"))
                .and_then(|class| class.call1((PyBytes::new(py, &payload),)))
                .map_err(|e| error(py, &e))?;
            let name: String = runner
                .getattr("name")
                .and_then(|n| n.extract())
                .map_err(|e| error(py, &e))?;
            let hook: Arc<dyn ForeignUpdater> = Arc::new(PyOptimizer {
                runner: Arc::new(runner.unbind()),
                name,
            });
            Ok(hook)
        })
    }));
}

/// The message of a Python exception: an `MXNetError`'s own message (the runner words its
/// errors), else `Type: message`.
fn error(py: Python<'_>, err: &PyErr) -> PsError {
    let msg = if err.is_instance_of::<MXNetError>(py) {
        err.value(py).to_string()
    } else {
        err.to_string()
    };
    PsError::Optimizer(msg)
}

/// A Python optimizer unpickled on this server.
#[derive(Debug)]
struct PyOptimizer {
    /// The `ServerOptimizer` (only touched on the main thread, with the GIL).
    runner: Arc<Py<PyAny>>,
    /// `module.Class` of the optimizer.
    name: String,
}

/// A gradient as it goes to Python: the whole piece's, or some rows'.
enum Grad<T> {
    Dense(Vec<T>),
    Rows {
        row_len: usize,
        rows: Vec<i64>,
        values: Vec<T>,
    },
}

/// The `T` elements of native-endian `bytes` (a trailing partial element is left out).
fn elements<T: Pod>(bytes: &[u8]) -> Vec<T> {
    let mut out = vec![T::zeroed(); bytes.len() / size_of::<T>()];
    let dst: &mut [u8] = bytemuck::cast_slice_mut(&mut out);
    let n = dst.len();
    dst.copy_from_slice(&bytes[..n]);
    out
}

impl PyOptimizer {
    /// [`ForeignUpdater::update`] for elements of type `T`.
    fn update_as<T: Element + Pod>(&self, u: ForeignUpdate<'_>) -> ps_core::Result<()> {
        let weight: Vec<T> = elements(u.weight);
        let grad = match u.grad {
            ForeignGrad::Dense(g) => Grad::Dense(elements::<T>(g)),
            ForeignGrad::Rows {
                row_len,
                rows,
                values,
            } => Grad::Rows {
                row_len,
                rows: rows.iter().map(|&r| r as i64).collect(),
                values: elements::<T>(values),
            },
        };
        let (runner, Piece { key, offset }) = (self.runner.clone(), u.piece);
        let updated: Vec<T> = on_main(move |py| {
            let runner = runner.bind(py);
            let w = PyArray1::from_vec(py, weight);
            let called = match grad {
                Grad::Dense(g) => {
                    runner.call_method1("update", (key, offset, &w, PyArray1::from_vec(py, g)))
                }
                Grad::Rows {
                    row_len,
                    rows,
                    values,
                } => runner.call_method1(
                    "update_rows",
                    (
                        key,
                        offset,
                        &w,
                        row_len,
                        PyArray1::from_vec(py, rows),
                        PyArray1::from_vec(py, values),
                    ),
                ),
            };
            called.map_err(|e| error(py, &e))?;
            let w = w.readonly();
            let w = w
                .as_slice()
                .map_err(|e| PsError::Optimizer(e.to_string()))?;
            Ok(w.to_vec())
        })?;
        let updated: &[u8] = bytemuck::cast_slice(&updated);
        if updated.len() != u.weight.len() {
            return Err(PsError::Optimizer(format!(
                "{} changed the length of key {key}'s weights",
                self.name
            )));
        }
        u.weight.copy_from_slice(updated);
        Ok(())
    }
}

impl ForeignUpdater for PyOptimizer {
    fn update(&self, u: ForeignUpdate<'_>) -> ps_core::Result<()> {
        match u.dtype {
            DType::F32 => self.update_as::<f32>(u),
            DType::F64 => self.update_as::<f64>(u),
            other => Err(PsError::Optimizer(format!(
                "{}: the servers update float32 or float64 weights, not {other}",
                self.name
            ))),
        }
    }

    fn set_params(
        &self,
        params: &[(String, f64)],
        key_mults: &[(u64, f64, f64)],
    ) -> ps_core::Result<()> {
        let (runner, params, key_mults) =
            (self.runner.clone(), params.to_vec(), key_mults.to_vec());
        on_main(move |py| {
            runner
                .bind(py)
                .call_method1("set_params", (params, key_mults))
                .map(drop)
                .map_err(|e| error(py, &e))
        })
    }

    fn save_state(&self, piece: Piece) -> ps_core::Result<Option<Vec<u8>>> {
        let runner = self.runner.clone();
        on_main(move |py| {
            let saved = runner
                .bind(py)
                .call_method1("save_state", (piece.key, piece.offset))
                .map_err(|e| error(py, &e))?;
            if saved.is_none() {
                return Ok(None);
            }
            let bytes = saved
                .cast::<PyBytes>()
                .map_err(|e| PsError::Optimizer(format!("save_state: {e}")))?;
            Ok(Some(bytes.as_bytes().to_vec()))
        })
    }

    fn load_states(&self, states: &[(Piece, &[u8])]) -> ps_core::Result<()> {
        let runner = self.runner.clone();
        let states: Vec<(u64, u64, Vec<u8>)> = states
            .iter()
            .map(|(p, bytes)| (p.key, p.offset, bytes.to_vec()))
            .collect();
        on_main(move |py| {
            let pieces: Vec<(u64, u64, Bound<'_, PyBytes>)> = states
                .iter()
                .map(|(key, offset, bytes)| (*key, *offset, PyBytes::new(py, bytes)))
                .collect();
            runner
                .bind(py)
                .call_method1("load_states", (pieces,))
                .map(drop)
                .map_err(|e| error(py, &e))
        })
    }
}
