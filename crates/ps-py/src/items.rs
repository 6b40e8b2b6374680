//! Python arguments of a request read into what ps-core takes: arrays lent as bytes, shapes
//! checked against the keys, destinations checked, row ids read (while the GIL is held).

use numpy::{PyArrayDescrMethods, PyUntypedArray, PyUntypedArrayMethods};
use ps_core::PsError;
use ps_core::codec::Compression;
use ps_core::node::JobWorker;
use pyo3::prelude::*;

use crate::arrays::ArrayInfo;
use crate::errors::{KVStoreError, to_py};

pub(crate) fn check_lengths(what: &str, keys: usize, arrays: usize) -> PyResult<()> {
    if keys == arrays {
        Ok(())
    } else {
        Err(KVStoreError::new_err(format!(
            "{what}: {keys} keys but {arrays} arrays"
        )))
    }
}

/// Checks pushed arrays against the shapes their keys were initialised with, so the error names
/// both shapes (the data plane itself only sees bytes).
pub(crate) fn check_shapes(
    job: &JobWorker,
    items: &[(u64, ArrayInfo, bytes::Bytes)],
) -> PyResult<()> {
    for (key, info, _) in items {
        if let Some((dtype, shape)) = job.worker().key_layout(*key)
            && shape != info.shape
        {
            return Err(to_py(PsError::ShapeMismatch(format!(
                "key {key}: pushed {} but the key holds {}",
                ps_core::dtype::describe_array(info.dtype, &info.shape),
                ps_core::dtype::describe_array(dtype, &shape)
            ))));
        }
    }
    Ok(())
}

/// Reads `arrays` (one per key) as lent byte views.
pub(crate) fn lend(
    keys: &[u64],
    arrays: &[Bound<'_, PyUntypedArray>],
) -> PyResult<Vec<(u64, ArrayInfo, bytes::Bytes)>> {
    keys.iter()
        .zip(arrays)
        .map(|(&key, arr)| {
            let info = ArrayInfo::of(arr, key, false)?;
            let bytes = info.lend(arr.clone().into_any().unbind());
            Ok((key, info, bytes))
        })
        .collect()
}

/// The compression a push names: `(kind, threshold)` ("2bit", "fp16" or "bf16").
pub(crate) fn compression(spec: Option<(String, f64)>) -> PyResult<Option<Compression>> {
    spec.map(|(kind, threshold)| Compression::new(&kind, threshold).map_err(to_py))
        .transpose()
}

/// Starts a push or pushpull of `items`: compressed ones are encoded here, without the GIL
/// (the encoding is the cost of a large compressed push).
pub(crate) fn start_push(
    py: Python<'_>,
    job: &JobWorker,
    items: Vec<(u64, ps_core::DType, bytes::Bytes)>,
    pull_back: bool,
    compression: Option<Compression>,
    priority: i32,
) -> ps_core::worker::Ticket {
    let worker = job.worker();
    match compression {
        None => worker.push_request(pull_back, items, None, priority),
        // encoding reads every element: let other Python threads run meanwhile
        Some(c) => py.detach(|| worker.push_request(pull_back, items, Some(c), priority)),
    }
}

/// Reads `outs` (one per key) as writable destinations; two that share memory are refused
/// (both would be written at once).
pub(crate) fn destinations(
    keys: &[u64],
    outs: &[Bound<'_, PyUntypedArray>],
) -> PyResult<(Vec<ArrayInfo>, Vec<Py<PyAny>>)> {
    let infos = keys
        .iter()
        .zip(outs)
        .map(|(&key, arr)| ArrayInfo::of(arr, key, true))
        .collect::<PyResult<Vec<_>>>()?;
    let mut spans: Vec<(usize, usize, u64)> = infos
        .iter()
        .zip(keys)
        .filter(|(info, _)| info.len() > 0)
        .map(|(info, &key)| (info.addr(), info.addr() + info.len(), key))
        .collect();
    spans.sort_unstable();
    if let Some(w) = spans.windows(2).find(|w| w[1].0 < w[0].1) {
        return Err(KVStoreError::new_err(format!(
            "the destinations of keys {} and {} share memory; pull each key into an array of \
             its own",
            w[0].2, w[1].2
        )));
    }
    let keep = outs.iter().map(|a| a.clone().into_any().unbind()).collect();
    Ok((infos, keep))
}

/// Reads `row_ids` (one per key: 1-D, C-contiguous, int64) as lent byte views of 8-byte ids.
pub(crate) fn lend_ids(
    keys: &[u64],
    row_ids: &[Bound<'_, PyUntypedArray>],
) -> PyResult<Vec<bytes::Bytes>> {
    keys.iter()
        .zip(row_ids)
        .map(|(&key, arr)| {
            let descr = arr.dtype();
            let int64 = descr.kind() == b'i'
                && descr.itemsize() == 8
                && descr.is_native_byteorder() != Some(false)
                && cfg!(target_endian = "little");
            if !int64 || arr.ndim() != 1 {
                let name: String = descr.getattr("name")?.extract()?;
                return Err(to_py(PsError::InvalidRows(format!(
                    "key {key}: row ids must be a 1-D int64 array, not {name} of shape {:?}",
                    arr.shape()
                ))));
            }
            crate::arrays::lend_raw(arr, key, 8)
        })
        .collect()
}

/// Checks `info`, the values of `n` rows of row-sparse `key` (pushed, or a pull's
/// destination): the key's dtype, shape `(n, *row_shape)`. A key that is not row-sparse is
/// left to ps-core, whose error says so.
pub(crate) fn check_rows(job: &JobWorker, key: u64, n: usize, info: &ArrayInfo) -> PyResult<()> {
    let Some((_, row_shape, dtype)) = job.worker().row_layout(key) else {
        return Ok(());
    };
    let mut want = vec![n as u64];
    want.extend_from_slice(&row_shape);
    if info.dtype != dtype || info.shape != want {
        return Err(to_py(PsError::ShapeMismatch(format!(
            "key {key}: rows given as {} but {n} row ids take {}",
            ps_core::dtype::describe_array(info.dtype, &info.shape),
            ps_core::dtype::describe_array(dtype, &want)
        ))));
    }
    Ok(())
}
