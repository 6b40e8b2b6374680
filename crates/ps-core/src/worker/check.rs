//! What a worker checks before it records or sends anything: an init against what the key
//! already is, a push against the key's dtype and size.

use super::KeyMeta;
use crate::dtype::{Access, DType, describe_array};
use crate::error::{PsError, Result};

/// Checks an init of `key` against what it already is (`known`: the table, or an earlier item
/// of the same request).
pub(super) fn check_init(
    key: u64,
    dtype: DType,
    shape: &[u64],
    len: usize,
    known: Option<(DType, &[u64])>,
) -> Result<()> {
    let numel = shape.iter().try_fold(1u64, |n, &d| n.checked_mul(d));
    let bytes = numel.and_then(|n| n.checked_mul(dtype.size() as u64));
    if bytes != Some(len as u64) {
        return Err(PsError::ShapeMismatch(format!(
            "key {key}: init value of {len} bytes for {}",
            describe_array(dtype, shape)
        )));
    }
    match known {
        Some((d, s)) if !d.accepts(dtype, Access::Init) || s != shape => {
            Err(PsError::ShapeMismatch(format!(
                "key {key}: init with {} but it was initialised as {}",
                describe_array(dtype, shape),
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
