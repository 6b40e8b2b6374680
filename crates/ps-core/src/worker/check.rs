//! What a worker checks before it records or sends anything: an init against what the key
//! already is, a push against the key's dtype and size.

use super::KeyMeta;
use crate::dtype::{Access, DType, describe_array};
use crate::error::{PsError, Result};
use crate::protocol::frame::MAX_NDIM;

/// Checks an init of `key` (as a row-sparse array with `rows`) against what it already is
/// (`known`: the table, or an earlier item of the same request: dtype, shape, row-sparse).
pub(super) fn check_init(
    key: u64,
    dtype: DType,
    shape: &[u64],
    len: usize,
    rows: bool,
    known: Option<(DType, &[u64], bool)>,
) -> Result<()> {
    if shape.len() > MAX_NDIM {
        return Err(PsError::ShapeMismatch(format!(
            "key {key}: an array of {} dimensions; at most {MAX_NDIM} are supported",
            shape.len()
        )));
    }
    let numel = shape.iter().try_fold(1u64, |n, &d| n.checked_mul(d));
    let bytes = numel.and_then(|n| n.checked_mul(dtype.size() as u64));
    if bytes != Some(len as u64) {
        return Err(PsError::ShapeMismatch(format!(
            "key {key}: init value of {len} bytes for {}",
            describe_array(dtype, shape)
        )));
    }
    if rows && shape.first().is_none_or(|&r| r == 0 || numel == Some(0)) {
        return Err(PsError::ShapeMismatch(format!(
            "key {key}: a row-sparse array needs at least one row and one element per row, not \
             {}",
            describe_array(dtype, shape)
        )));
    }
    let kind = |rows| if rows { "init_rows" } else { "init" };
    match known {
        Some((d, s, r)) if !d.accepts(dtype, Access::Init) || s != shape || r != rows => {
            Err(PsError::ShapeMismatch(format!(
                "key {key}: {} with {} but it was initialised ({}) as {}",
                kind(rows),
                describe_array(dtype, shape),
                kind(r),
                describe_array(d, s)
            )))
        }
        _ => Ok(()),
    }
}

pub(super) fn check_push(key: u64, meta: &KeyMeta, dtype: DType, len: usize) -> Result<()> {
    let expected = meta.numel() as usize * dtype.size();
    if !meta.dtype.accepts(dtype, Access::Push) || len != expected {
        return Err(PsError::ShapeMismatch(format!(
            "key {key}: pushed {} bytes of {dtype} but the key holds {} ({expected} bytes of \
             {dtype})",
            len,
            describe_array(meta.dtype, &meta.shape)
        )));
    }
    Ok(())
}
