//! Compressed pushes: each piece of a pushed value is encoded on its own (2-bit codes from the
//! piece's first element, so slices and packing always agree), with the key's residual held for
//! the whole value.

use bytes::Bytes;
use parking_lot::MutexGuard;

use super::KeyMeta;
use crate::codec::Compression;
use crate::dtype::DType;
use crate::error::{PsError, Result};
use crate::protocol::frame::Entry;

/// Checks that a push of `dtype` into `key` can be compressed: float32 values only, as MXNet
/// 1.9.1 compresses only float32.
pub(super) fn check_compressible(
    key: u64,
    meta: &KeyMeta,
    dtype: DType,
    c: Compression,
) -> Result<()> {
    if dtype != DType::F32 || meta.dtype != DType::F32 {
        return Err(PsError::Rejected(format!(
            "key {key}: gradient compression {} applies to float32 values; this push is {dtype} \
             into a key of {}",
            c.name(),
            meta.dtype
        )));
    }
    Ok(())
}

/// Encodes the pieces of one pushed value, holding its key's residual for 2bit.
pub(super) struct Encoder<'a> {
    compression: Compression,
    residual: Option<MutexGuard<'a, Vec<f32>>>,
}

impl<'a> Encoder<'a> {
    pub(super) fn new(compression: Compression, meta: &'a KeyMeta) -> Encoder<'a> {
        let residual = compression.needs_residual().then(|| {
            let mut r = meta.residual.lock();
            r.resize(meta.numel() as usize, 0.0);
            r
        });
        Encoder {
            compression,
            residual,
        }
    }

    /// Replaces `e`'s float32 payload by its encoding (each piece from its own first element).
    pub(super) fn encode(&mut self, e: &mut Entry) {
        let at = e.offset as usize;
        let residual = match &mut self.residual {
            Some(r) => &mut r[at..at + e.count as usize],
            None => &mut [][..],
        };
        e.payload = Bytes::from(self.compression.encode(&e.payload, residual));
        e.dtype = self.compression.dtype();
        e.codec = self.compression.codec();
    }
}
