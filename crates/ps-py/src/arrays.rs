//! NumPy arrays as byte views for the data plane, without copies.
//!
//! A pushed array is lent to the transfer: its memory is wrapped in `Bytes` that keep a reference
//! to the array, so the array stays alive until the bytes are on the wire; the caller must not
//! write to it until the push's ticket completes. A pulled value is written straight into the
//! destination array's memory.

use bytes::Bytes;
use numpy::{PyArrayDescrMethods, PyUntypedArray, PyUntypedArrayMethods};
use ps_core::DType;
use pyo3::prelude::*;

use crate::errors::KVStoreError;

/// What a C-contiguous array is, read while holding the GIL.
pub(crate) struct ArrayInfo {
    pub dtype: DType,
    pub shape: Vec<u64>,
    ptr: *mut u8,
    len: usize,
}

impl ArrayInfo {
    /// Describes `arr`; fails unless it is C-contiguous (and writable when `write`) with a
    /// dtype the servers aggregate.
    pub(crate) fn of(arr: &Bound<'_, PyUntypedArray>, key: u64, write: bool) -> PyResult<Self> {
        let descr = arr.dtype();
        // The type character is a plain field of the descriptor; `dtype.name` is computed in
        // Python on every access, which costs more than the rest of a small push.
        let dtype = match (descr.kind(), descr.itemsize()) {
            (b'f', 4) => DType::F32,
            (b'f', 8) => DType::F64,
            (b'f', 2) => DType::F16,
            _ => {
                let name: String = descr.getattr("name")?.extract()?;
                DType::from_name(&name)
                    .map_err(|e| KVStoreError::new_err(format!("key {key}: {e}")))?
            }
        };
        let (ptr, len) = raw_view(arr, key, write, dtype.size())?;
        let shape: Vec<u64> = arr.shape().iter().map(|&d| d as u64).collect();
        Ok(ArrayInfo {
            dtype,
            shape,
            ptr,
            len,
        })
    }

    /// Address of the array's first byte.
    pub(crate) fn addr(&self) -> usize {
        self.ptr as usize
    }

    /// Size of the array in bytes.
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// The array's bytes, lent for a transfer (keeps `owner` alive until dropped).
    pub(crate) fn lend(&self, owner: Py<PyAny>) -> Bytes {
        Bytes::from_owner(Lent {
            _owner: owner,
            ptr: self.ptr,
            len: self.len,
        })
    }

    /// A writable view of the array's bytes.
    ///
    /// # Safety
    /// The array must stay alive and unresized while the view is used (the ticket holds a
    /// reference to it), and nothing else may access it meanwhile.
    pub(crate) unsafe fn bytes_mut<'a>(&self) -> &'a mut [u8] {
        if self.len == 0 {
            return &mut [];
        }
        // SAFETY: by the caller's contract the memory is live and exclusively ours.
        unsafe { std::slice::from_raw_parts_mut(self.ptr, self.len) }
    }
}

/// The memory of C-contiguous `arr` of `elem` bytes per element: its first byte and length;
/// fails unless it is C-contiguous (and writable when `write`).
fn raw_view(
    arr: &Bound<'_, PyUntypedArray>,
    key: u64,
    write: bool,
    elem: usize,
) -> PyResult<(*mut u8, usize)> {
    if !arr.is_c_contiguous() {
        return Err(KVStoreError::new_err(format!(
            "key {key}: the array must be C-contiguous"
        )));
    }
    let raw = arr.as_array_ptr();
    // SAFETY: `raw` points at the live array object we hold a reference to.
    let (data, flags) = unsafe { ((*raw).fields.data, (*raw).fields.flags) };
    if write && flags & numpy::npyffi::NPY_ARRAY_WRITEABLE == 0 {
        return Err(KVStoreError::new_err(format!(
            "key {key}: the destination array is read-only"
        )));
    }
    Ok((
        data as *mut u8,
        arr.shape().iter().product::<usize>() * elem,
    ))
}

/// The bytes of C-contiguous `arr`, whose elements take `elem` bytes (its dtype checked by the
/// caller), lent for a transfer as [`ArrayInfo::lend`] does.
pub(crate) fn lend_raw(arr: &Bound<'_, PyUntypedArray>, key: u64, elem: usize) -> PyResult<Bytes> {
    let (ptr, len) = raw_view(arr, key, false, elem)?;
    Ok(Bytes::from_owner(Lent {
        _owner: arr.clone().into_any().unbind(),
        ptr,
        len,
    }))
}

// SAFETY: the pointer is only dereferenced while the owning array is kept alive by a reference
// we hold; NumPy array memory is not tied to a thread.
unsafe impl Send for ArrayInfo {}

/// An array's memory lent to `Bytes`: only moved into the `Bytes` (which reads the view once,
/// when it is made) and dropped, so it is `Send` but never shared between threads.
struct Lent {
    _owner: Py<PyAny>,
    ptr: *mut u8,
    len: usize,
}

// SAFETY: as for `ArrayInfo`; `_owner` keeps the memory alive, and dropping a `Py` without the
// GIL defers the decref to the next time the GIL is held.
unsafe impl Send for Lent {}

impl AsRef<[u8]> for Lent {
    fn as_ref(&self) -> &[u8] {
        if self.len == 0 {
            return &[];
        }
        // SAFETY: the owner keeps `len` bytes at `ptr` alive and unmoved.
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
    }
}
