//! Matrix products on oneDNN's matmul primitive (batched or not, any strides, optionally added
//! to what the destination holds): what Winograd's convolutions run their products on.

use crate::ffi;
use crate::prim::{Attr, MemDesc, Memory, PrimDesc, Primitive};
use crate::{Dnnl, DnnlError};

/// `c (+)= a @ b`, built once for its descriptors.
pub(crate) struct Matmul {
    prim: Primitive,
    implementation: String,
    a: MemDesc,
    b: MemDesc,
    c: MemDesc,
}

impl Matmul {
    /// The product of `a` and `b` into `c`, added to what `c` holds with `accumulate`.
    pub(crate) fn new(
        d: &'static Dnnl,
        a: MemDesc,
        b: MemDesc,
        c: MemDesc,
        accumulate: bool,
    ) -> Result<Matmul, DnnlError> {
        let attr = accumulate.then(|| Attr::accumulate(d)).transpose()?;
        let null = std::ptr::null();
        let detail = || format!("a matrix product (accumulating: {accumulate})");
        let pd = PrimDesc::create(d, "matmul", &detail, |raw| {
            // SAFETY: every descriptor and the attributes are live; no bias.
            unsafe {
                (d.api.dnnl_matmul_primitive_desc_create)(
                    raw,
                    d.engine,
                    a.raw,
                    b.raw,
                    null,
                    c.raw,
                    attr.as_ref().map_or(null, |a| a.raw),
                )
            }
        })?;
        Ok(Matmul {
            prim: Primitive::new(&pd)?,
            implementation: pd.implementation(),
            a,
            b,
            c,
        })
    }

    /// The implementation oneDNN chose, e.g. `brg:avx512_core`.
    pub(crate) fn implementation(&self) -> &str {
        &self.implementation
    }

    /// Runs it on the caller's buffers (each checked against its descriptor's size).
    pub(crate) fn run(&self, a: &[f32], b: &[f32], c: &mut [f32]) -> Result<(), DnnlError> {
        let (am, bm) = (Memory::lend(&self.a, a)?, Memory::lend(&self.b, b)?);
        let cm = Memory::lend_mut(&self.c, c)?;
        self.prim.run(&[
            (ffi::ARG_SRC, &am),
            (ffi::ARG_WEIGHTS, &bm),
            (ffi::ARG_DST, &cm),
        ])
    }
}
