//! Owned oneDNN handles (memory descriptors, primitive descriptors, primitives, memory
//! objects) and [`Port`], a primitive's tensor argument between the caller's dense row-major
//! buffer and the layout the primitive computes in.

use std::ffi::{CStr, c_char, c_int, c_void};
use std::marker::PhantomData;
use std::sync::Arc;

use parking_lot::Mutex;

use crate::ffi::{self, Dim, Handle};
use crate::unblock::Blocked16;
use crate::{Dnnl, DnnlError};

/// `dims` as oneDNN's fixed-size array, or an error for too many.
pub(crate) fn dims_of(dims: &[i64]) -> Result<ffi::Dims, DnnlError> {
    let mut out = [0; ffi::MAX_NDIMS];
    if dims.is_empty() || dims.len() > ffi::MAX_NDIMS {
        return Err(DnnlError::Input(format!("{} dimensions", dims.len())));
    }
    out[..dims.len()].copy_from_slice(dims);
    Ok(out)
}

/// A caller's dense `f32` buffer and its strides in elements (any permutation of a row-major
/// layout: NCHW, NHWC, ...).
#[derive(Debug, Clone, Copy)]
pub struct Tensor<'a> {
    pub data: &'a [f32],
    pub strides: &'a [i64],
}

/// A caller's dense `f32` buffer to write, and its strides in elements.
#[derive(Debug)]
pub struct TensorMut<'a> {
    pub data: &'a mut [f32],
    pub strides: &'a [i64],
}

/// The strides (in elements) of dense row-major data of `dims`.
pub fn plain_strides(dims: &[Dim]) -> Vec<Dim> {
    let mut st = vec![1; dims.len()];
    for i in (0..dims.len().saturating_sub(1)).rev() {
        st[i] = st[i + 1] * dims[i + 1].max(1);
    }
    st
}

/// The strides of channels-last data of `(N, C, *spatial)` dims: C varies fastest.
pub fn channels_last_strides(dims: &[Dim]) -> Vec<Dim> {
    if dims.len() < 3 {
        return plain_strides(dims);
    }
    // the order N, *spatial, C as a row-major array, read back in (N, C, *spatial) order
    let mut order: Vec<usize> = vec![0];
    order.extend(2..dims.len());
    order.push(1);
    let permuted: Vec<Dim> = order.iter().map(|&i| dims[i]).collect();
    let pst = plain_strides(&permuted);
    let mut st = vec![0; dims.len()];
    for (k, &i) in order.iter().enumerate() {
        st[i] = pst[k];
    }
    st
}

/// True when two stride lists address the same elements of `dims` (dims of size 1 are never
/// stepped along, so their strides do not matter).
pub fn same_layout(dims: &[Dim], a: &[Dim], b: &[Dim]) -> bool {
    a.len() == dims.len()
        && b.len() == dims.len()
        && dims
            .iter()
            .zip(a.iter().zip(b))
            .all(|(&n, (x, y))| n == 1 || x == y)
}

/// An error unless `strides` (one per dimension) lay out `dims` densely: every element in
/// one block of memory, in some axis order.
pub(crate) fn check_dense(dims: &[Dim], strides: &[Dim]) -> Result<(), DnnlError> {
    let fail = || {
        DnnlError::Input(format!(
            "strides {strides:?} do not lay out {dims:?} densely"
        ))
    };
    if strides.len() != dims.len() {
        return Err(fail());
    }
    let mut axes: Vec<(Dim, Dim)> = strides
        .iter()
        .zip(dims)
        .filter(|(_, n)| **n > 1)
        .map(|(s, n)| (*s, *n))
        .collect();
    axes.sort_unstable();
    let mut next: Dim = 1;
    for (s, n) in axes {
        if s != next {
            return Err(fail());
        }
        next = next.checked_mul(n).ok_or_else(fail)?;
    }
    Ok(())
}

/// An error unless each of `given` addresses the elements of `dims` as `built` does (the
/// layout a kernel was built for); `what` names the kernel.
pub(crate) fn check_layouts(
    what: &str,
    dims: &[Dim],
    built: &[Dim],
    given: &[&[Dim]],
) -> Result<(), DnnlError> {
    match given.iter().find(|st| !same_layout(dims, built, st)) {
        None => Ok(()),
        Some(st) => Err(DnnlError::Input(format!(
            "{what} built for strides {built:?}, given {st:?}"
        ))),
    }
}

/// An owned memory descriptor.
pub(crate) struct MemDesc {
    d: &'static Dnnl,
    pub(crate) raw: Handle,
}

impl MemDesc {
    fn with_tag(d: &'static Dnnl, dims: &[Dim], tag: c_int) -> Result<MemDesc, DnnlError> {
        let a = dims_of(dims)?;
        let mut raw: Handle = std::ptr::null_mut();
        // SAFETY: `a` holds `dims.len()` dims; `raw` receives a new descriptor.
        let s = unsafe {
            (d.api.dnnl_memory_desc_create_with_tag)(
                &mut raw,
                dims.len() as c_int,
                a.as_ptr(),
                ffi::F32,
                tag,
            )
        };
        d.check("dnnl_memory_desc_create_with_tag", s)?;
        Ok(MemDesc { d, raw })
    }

    /// The dense row-major `f32` layout of `dims`.
    pub(crate) fn plain(d: &'static Dnnl, dims: &[Dim]) -> Result<MemDesc, DnnlError> {
        let tag = *ffi::PLAIN_TAG
            .get(dims.len().wrapping_sub(1))
            .ok_or_else(|| DnnlError::Input(format!("{} dimensions", dims.len())))?;
        MemDesc::with_tag(d, dims, tag)
    }

    /// Dense `f32` data of `dims` laid out by `strides` (in elements).
    pub(crate) fn strided(
        d: &'static Dnnl,
        dims: &[Dim],
        strides: &[Dim],
    ) -> Result<MemDesc, DnnlError> {
        let a = dims_of(dims)?;
        let st = dims_of(strides)?;
        if strides.len() != dims.len() {
            return Err(DnnlError::Input(format!(
                "strides {strides:?} for dims {dims:?}"
            )));
        }
        let mut raw: Handle = std::ptr::null_mut();
        // SAFETY: `a` and `st` hold `dims.len()` values; `raw` receives a new descriptor.
        let s = unsafe {
            (d.api.dnnl_memory_desc_create_with_strides)(
                &mut raw,
                dims.len() as c_int,
                a.as_ptr(),
                ffi::F32,
                st.as_ptr(),
            )
        };
        d.check("dnnl_memory_desc_create_with_strides", s)?;
        Ok(MemDesc { d, raw })
    }

    /// Channels-last `f32` data of `(N, C, *spatial)` dims (`nwc`, `nhwc`, `ndhwc`).
    pub(crate) fn channels_last(d: &'static Dnnl, dims: &[Dim]) -> Result<MemDesc, DnnlError> {
        MemDesc::strided(d, dims, &channels_last_strides(dims))
    }

    /// Weights of `dims` (`(a, b, *kernel)`, 1 to 3 kernel dimensions) in oneDNN's
    /// `AB…16b16a` blocks ([`crate::unblock`]).
    fn blocked_16b16a(d: &'static Dnnl, dims: &[Dim]) -> Result<MemDesc, DnnlError> {
        let tag = *ffi::BLOCKED_16B16A_TAG
            .get(dims.len().wrapping_sub(3))
            .ok_or_else(|| DnnlError::Input(format!("{} dimensions", dims.len())))?;
        MemDesc::with_tag(d, dims, tag)
    }

    /// `f32` data of `dims` in whatever layout the primitive prefers.
    pub(crate) fn any(d: &'static Dnnl, dims: &[Dim]) -> Result<MemDesc, DnnlError> {
        MemDesc::with_tag(d, dims, ffi::FORMAT_ANY)
    }

    /// True when both describe the same layout of the same data.
    pub(crate) fn same(&self, other: &MemDesc) -> bool {
        // SAFETY: both descriptors are live.
        unsafe { (self.d.api.dnnl_memory_desc_equal)(self.raw, other.raw) != 0 }
    }

    /// Bytes a buffer of this descriptor takes.
    pub(crate) fn bytes(&self) -> usize {
        // SAFETY: the descriptor is live.
        unsafe { (self.d.api.dnnl_memory_desc_get_size)(self.raw) }
    }
}

impl Drop for MemDesc {
    fn drop(&mut self) {
        // SAFETY: this descriptor is owned here and not used after.
        unsafe { (self.d.api.dnnl_memory_desc_destroy)(self.raw) };
    }
}

/// An owned primitive descriptor.
pub(crate) struct PrimDesc {
    d: &'static Dnnl,
    pub(crate) raw: Handle,
}

impl PrimDesc {
    /// Runs a `*_primitive_desc_create` call; "unimplemented" becomes [`DnnlError::Unsupported`]
    /// naming `what` and `detail`.
    pub(crate) fn create(
        d: &'static Dnnl,
        what: &'static str,
        detail: &dyn Fn() -> String,
        make: impl FnOnce(*mut Handle) -> ffi::Status,
    ) -> Result<PrimDesc, DnnlError> {
        let mut raw: Handle = std::ptr::null_mut();
        let s = make(&mut raw);
        if s == 3 || s == 2 {
            return Err(DnnlError::Unsupported {
                what,
                detail: detail(),
            });
        }
        d.check(what, s)?;
        Ok(PrimDesc { d, raw })
    }

    /// A copy of the descriptor of argument `what` (a `QUERY_*_MD`), or None if it has none.
    pub(crate) fn md(&self, what: c_int) -> Result<Option<MemDesc>, DnnlError> {
        // SAFETY: the primitive descriptor is live; the result is owned by it (or null).
        let q = unsafe { (self.d.api.dnnl_primitive_desc_query_md)(self.raw, what, 0) };
        if q.is_null() {
            return Ok(None);
        }
        let mut raw: Handle = std::ptr::null_mut();
        // SAFETY: `q` is a live descriptor owned by the primitive descriptor.
        let s = unsafe { (self.d.api.dnnl_memory_desc_clone)(&mut raw, q) };
        self.d.check("dnnl_memory_desc_clone", s)?;
        let md = MemDesc { d: self.d, raw };
        Ok((md.bytes() > 0).then_some(md))
    }

    /// Like [`PrimDesc::md`] for an argument every such primitive has.
    pub(crate) fn md_of(&self, what: c_int) -> Result<MemDesc, DnnlError> {
        self.md(what)?.ok_or(DnnlError::Call {
            call: "dnnl_primitive_desc_query_md",
            status: 2,
        })
    }

    /// The implementation oneDNN picked, e.g. `jit:avx512_core`.
    pub(crate) fn implementation(&self) -> String {
        let mut s: *const c_char = std::ptr::null();
        let out: *mut *const c_char = &mut s;
        // SAFETY: impl_info_str writes a pointer to a string owned by the descriptor.
        let st = unsafe {
            (self.d.api.dnnl_primitive_desc_query)(
                self.raw,
                ffi::QUERY_IMPL_INFO_STR,
                0,
                out.cast::<c_void>(),
            )
        };
        if st != ffi::SUCCESS || s.is_null() {
            return String::from("unknown");
        }
        // SAFETY: a NUL-terminated string that lives as long as the descriptor.
        unsafe { CStr::from_ptr(s) }.to_string_lossy().into_owned()
    }
}

impl Drop for PrimDesc {
    fn drop(&mut self) {
        // SAFETY: owned here and not used after.
        unsafe { (self.d.api.dnnl_primitive_desc_destroy)(self.raw) };
    }
}

/// An owned primitive, ready to run.
pub(crate) struct Primitive {
    d: &'static Dnnl,
    raw: Handle,
}

impl Primitive {
    pub(crate) fn new(pd: &PrimDesc) -> Result<Primitive, DnnlError> {
        let mut raw: Handle = std::ptr::null_mut();
        // SAFETY: the primitive descriptor is live; `raw` receives the primitive.
        let s = unsafe { (pd.d.api.dnnl_primitive_create)(&mut raw, pd.raw) };
        pd.d.check("dnnl_primitive_create", s)?;
        Ok(Primitive { d: pd.d, raw })
    }

    /// Runs the primitive on `args` and waits for it.
    pub(crate) fn run(&self, args: &[(c_int, &Memory<'_>)]) -> Result<(), DnnlError> {
        let args: Vec<ffi::ExecArg> = args
            .iter()
            .map(|(arg, m)| ffi::ExecArg {
                arg: *arg,
                memory: m.raw,
            })
            .collect();
        let stream = self.d.stream.lock();
        self.d.limit_threads();
        // SAFETY: the primitive, the stream and every memory object are live; the memory
        // objects' buffers outlive this call (their owners hold them across it) and fit their
        // descriptors (checked when they were wrapped).
        let s = unsafe {
            (self.d.api.dnnl_primitive_execute)(
                self.raw,
                *stream,
                args.len() as c_int,
                args.as_ptr(),
            )
        };
        self.d.check("dnnl_primitive_execute", s)?;
        // SAFETY: the stream is live and held.
        let s = unsafe { (self.d.api.dnnl_stream_wait)(*stream) };
        self.d.check("dnnl_stream_wait", s)
    }
}

impl Drop for Primitive {
    fn drop(&mut self) {
        // SAFETY: owned here and not used after.
        unsafe { (self.d.api.dnnl_primitive_destroy)(self.raw) };
    }
}

// SAFETY: oneDNN primitives and descriptors are immutable once created and may be executed
// or queried from any thread; mxrs runs them through the one stream under its mutex.
unsafe impl Send for Primitive {}
// SAFETY: as for Send.
unsafe impl Sync for Primitive {}
// SAFETY: a primitive descriptor is immutable once created.
unsafe impl Send for PrimDesc {}
// SAFETY: as for Send.
unsafe impl Sync for PrimDesc {}
// SAFETY: a memory descriptor is immutable once created.
unsafe impl Send for MemDesc {}
// SAFETY: as for Send.
unsafe impl Sync for MemDesc {}

/// Owned primitive attributes.
pub(crate) struct Attr {
    d: &'static Dnnl,
    pub(crate) raw: Handle,
}

impl Attr {
    /// Attributes that make a primitive add its result to what its destination holds (a sum
    /// post-op of scale 1).
    pub(crate) fn accumulate(d: &'static Dnnl) -> Result<Attr, DnnlError> {
        let mut raw: Handle = std::ptr::null_mut();
        // SAFETY: `raw` receives new default attributes.
        d.check("dnnl_primitive_attr_create", unsafe {
            (d.api.dnnl_primitive_attr_create)(&mut raw)
        })?;
        let attr = Attr { d, raw };
        let mut ops: Handle = std::ptr::null_mut();
        // SAFETY: `ops` receives an empty post-op sequence.
        d.check("dnnl_post_ops_create", unsafe {
            (d.api.dnnl_post_ops_create)(&mut ops)
        })?;
        // SAFETY: `ops` is live; the attributes copy it, so it is destroyed right after.
        let s = unsafe {
            let s = (d.api.dnnl_post_ops_append_sum)(ops, 1.0, 0, ffi::DATA_TYPE_UNDEF);
            let s = if s == ffi::SUCCESS {
                (d.api.dnnl_primitive_attr_set_post_ops)(attr.raw, ops)
            } else {
                s
            };
            (d.api.dnnl_post_ops_destroy)(ops);
            s
        };
        d.check("dnnl_post_ops_append_sum", s)?;
        Ok(attr)
    }
}

impl Drop for Attr {
    fn drop(&mut self) {
        // SAFETY: owned here and not used after.
        unsafe { (self.d.api.dnnl_primitive_attr_destroy)(self.raw) };
    }
}

/// A memory object: a caller's buffer lent for one call, or one oneDNN allocated.
pub(crate) struct Memory<'a> {
    d: &'static Dnnl,
    raw: Handle,
    /// Bytes oneDNN allocated for it ([`Memory::alloc`]); 0 for a lent buffer.
    allocated: usize,
    /// A lent buffer stays borrowed while oneDNN may touch it.
    _buf: PhantomData<&'a mut [f32]>,
}

impl<'a> Memory<'a> {
    /// The caller's `data` seen through `md`; oneDNN only reads it.
    pub(crate) fn lend(md: &MemDesc, data: &'a [f32]) -> Result<Memory<'a>, DnnlError> {
        Memory::check_len(md, data.len())?;
        Memory::create(md, data.as_ptr().cast_mut().cast())
    }

    /// The caller's `data` seen through `md`, for oneDNN to write.
    pub(crate) fn lend_mut(md: &MemDesc, data: &'a mut [f32]) -> Result<Memory<'a>, DnnlError> {
        Memory::check_len(md, data.len())?;
        Memory::create(md, data.as_mut_ptr().cast())
    }

    /// The caller's `bytes` (a workspace) seen through `md`, for oneDNN to read and write.
    pub(crate) fn lend_bytes(md: &MemDesc, bytes: &'a mut [u8]) -> Result<Memory<'a>, DnnlError> {
        if bytes.len() != md.bytes() {
            return Err(DnnlError::Input(format!(
                "a workspace of {} bytes where the kernel needs {}",
                bytes.len(),
                md.bytes()
            )));
        }
        Memory::create(md, bytes.as_mut_ptr().cast())
    }

    /// The caller's workspace `ws` for a kernel that keeps the workspace `md` (None: keeps
    /// none), or an error naming the kernel (`what`, with its article: "a batch norm") when one
    /// is missing or unwanted.
    pub(crate) fn workspace(
        what: &str,
        md: Option<&MemDesc>,
        ws: Option<&'a mut [u8]>,
    ) -> Result<Option<Memory<'a>>, DnnlError> {
        match (md, ws) {
            (Some(md), Some(ws)) => Ok(Some(Memory::lend_bytes(md, ws)?)),
            (None, None) => Ok(None),
            (Some(md), None) => Err(DnnlError::Input(format!(
                "{what} needs a workspace of {} bytes",
                md.bytes()
            ))),
            (None, Some(_)) => Err(DnnlError::Input(format!(
                "a workspace for {what} that keeps none"
            ))),
        }
    }

    /// A buffer of `md` that oneDNN allocates and frees with the object.
    pub(crate) fn alloc(md: &MemDesc) -> Result<Memory<'a>, DnnlError> {
        let mut m = Memory::create(md, ffi::MEMORY_ALLOCATE)?;
        m.allocated = md.bytes();
        Ok(m)
    }

    /// The first `len` values of a buffer oneDNN allocated ([`Memory::alloc`]).
    fn allocated(&self, len: usize) -> Result<&[f32], DnnlError> {
        if len * 4 > self.allocated {
            return Err(DnnlError::Input(format!(
                "{len} values read from a buffer oneDNN allocated {} bytes for",
                self.allocated
            )));
        }
        let mut ptr: *mut c_void = std::ptr::null_mut();
        // SAFETY: the memory object is live; `ptr` receives its buffer's address.
        let s = unsafe { (self.d.api.dnnl_memory_get_data_handle)(self.raw, &mut ptr) };
        self.d.check("dnnl_memory_get_data_handle", s)?;
        if ptr.is_null() || !(ptr as usize).is_multiple_of(align_of::<f32>()) {
            return Err(DnnlError::Input("a memory object without a buffer".into()));
        }
        // SAFETY: oneDNN allocated at least `len` f32s (checked) for this object, which
        // lives as long as the borrow of `self`; no primitive writes it while it is read
        // (primitives run to completion on the calling thread's stream).
        Ok(unsafe { std::slice::from_raw_parts(ptr.cast::<f32>(), len) })
    }

    fn check_len(md: &MemDesc, len: usize) -> Result<(), DnnlError> {
        let want = md.bytes() / 4;
        if len != want {
            return Err(DnnlError::Input(format!(
                "a buffer of {len} elements where the kernel needs {want}"
            )));
        }
        Ok(())
    }

    fn create(md: &MemDesc, handle: Handle) -> Result<Memory<'a>, DnnlError> {
        let d = md.d;
        let mut raw: Handle = std::ptr::null_mut();
        // SAFETY: `md` and the engine are live; `handle` is either a buffer of at least
        // `md.bytes()` bytes (checked by the callers that lend one) or MEMORY_ALLOCATE.
        let s = unsafe { (d.api.dnnl_memory_create)(&mut raw, md.raw, d.engine, handle) };
        d.check("dnnl_memory_create", s)?;
        Ok(Memory {
            d,
            raw,
            allocated: 0,
            _buf: PhantomData,
        })
    }
}

impl Drop for Memory<'_> {
    fn drop(&mut self) {
        // SAFETY: owned here and not used after; a lent buffer stays the caller's.
        unsafe { (self.d.api.dnnl_memory_destroy)(self.raw) };
    }
}

/// A reorder from one layout to another.
fn reorder(d: &'static Dnnl, from: &MemDesc, to: &MemDesc) -> Result<Primitive, DnnlError> {
    let pd = PrimDesc::create(d, "reorder", &|| String::from("these layouts"), |raw| {
        // SAFETY: both descriptors and the engine are live; no attributes.
        unsafe {
            (d.api.dnnl_reorder_primitive_desc_create)(
                raw,
                from.raw,
                d.engine,
                to.raw,
                d.engine,
                std::ptr::null(),
            )
        }
    })?;
    Primitive::new(&pd)
}

/// A caller's layout of one argument and the reorder between it and the primitive's.
struct Layout {
    strides: Vec<Dim>,
    user: MemDesc,
    convert: Convert,
}

/// How data passes between a caller's layout and a primitive's.
enum Convert {
    /// The same layout: the primitive reads or writes the caller's buffer.
    Same,
    /// oneDNN's reorder.
    Reorder(Primitive),
    /// 16×16-blocked weights the primitive wrote, to row-major ([`crate::unblock`]).
    Unblock(Blocked16),
}

/// Layouts a port remembers (a model passes one or two per argument).
const LAYOUTS: usize = 8;

/// One tensor argument of a primitive: the layout the primitive computes in, and the
/// caller's dense layouts of it (row-major, channels-last, any permutation), each with the
/// reorder between the two when they differ.
pub(crate) struct Port {
    d: &'static Dnnl,
    dims: Vec<Dim>,
    pub(crate) inner: MemDesc,
    /// The inner layout's strides when it is a dense layout a caller can hold.
    inner_strides: Option<Vec<Dim>>,
    /// True when the primitive writes this argument (reorders run inner -> caller).
    output: bool,
    /// The shape of an output in `AB…16b16a` blocks, which mxrs's loops unblock.
    blocked: Option<Blocked16>,
    layouts: Mutex<Vec<Arc<Layout>>>,
}

impl Port {
    fn new(
        d: &'static Dnnl,
        dims: &[Dim],
        inner: MemDesc,
        output: bool,
    ) -> Result<Port, DnnlError> {
        let inner_strides = [plain_strides(dims), channels_last_strides(dims)]
            .into_iter()
            .find(|st| MemDesc::strided(d, dims, st).is_ok_and(|md| md.same(&inner)));
        let blocked = Blocked16::of(dims).filter(|b| {
            output
                && inner.bytes() == 4 * b.len()
                && MemDesc::blocked_16b16a(d, dims).is_ok_and(|md| md.same(&inner))
        });
        Ok(Port {
            d,
            dims: dims.to_vec(),
            inner,
            inner_strides,
            output,
            blocked,
            layouts: Mutex::new(Vec::new()),
        })
    }

    /// An argument the primitive reads.
    pub(crate) fn input(d: &'static Dnnl, dims: &[Dim], inner: MemDesc) -> Result<Port, DnnlError> {
        Port::new(d, dims, inner, false)
    }

    /// An argument the primitive writes.
    pub(crate) fn output(
        d: &'static Dnnl,
        dims: &[Dim],
        inner: MemDesc,
    ) -> Result<Port, DnnlError> {
        Port::new(d, dims, inner, true)
    }

    /// True when data laid out by `strides` is already in the primitive's layout; an error
    /// for data of another number of dimensions.
    fn direct(&self, strides: &[Dim]) -> Result<bool, DnnlError> {
        if strides.len() != self.dims.len() {
            return Err(DnnlError::Input(format!(
                "an array of {} dimensions where the kernel takes {:?}",
                strides.len(),
                self.dims
            )));
        }
        check_dense(&self.dims, strides)?;
        Ok(self
            .inner_strides
            .as_ref()
            .is_some_and(|st| same_layout(&self.dims, st, strides)))
    }

    /// The caller's layout `strides`, with its reorder (built on first use).
    fn layout(&self, strides: &[Dim]) -> Result<Arc<Layout>, DnnlError> {
        let mut layouts = self.layouts.lock();
        if let Some(l) = layouts
            .iter()
            .find(|l| same_layout(&self.dims, &l.strides, strides))
        {
            return Ok(l.clone());
        }
        let user = MemDesc::strided(self.d, &self.dims, strides)?;
        let plain = same_layout(&self.dims, &plain_strides(&self.dims), strides);
        let convert = if user.same(&self.inner) {
            Convert::Same
        } else if let Some(b) = self.blocked.filter(|_| plain) {
            Convert::Unblock(b)
        } else if self.output {
            Convert::Reorder(reorder(self.d, &self.inner, &user)?)
        } else {
            Convert::Reorder(reorder(self.d, &user, &self.inner)?)
        };
        let l = Arc::new(Layout {
            strides: strides.to_vec(),
            user,
            convert,
        });
        if layouts.len() == LAYOUTS {
            layouts.remove(0);
        }
        layouts.push(l.clone());
        Ok(l)
    }

    /// The memory the primitive reads `data` (laid out by `strides`) from.
    pub(crate) fn feed<'a>(
        &self,
        data: &'a [f32],
        strides: &[Dim],
    ) -> Result<Memory<'a>, DnnlError> {
        if self.direct(strides)? {
            return Memory::lend(&self.inner, data);
        }
        let l = self.layout(strides)?;
        let user = Memory::lend(&l.user, data)?;
        match &l.convert {
            Convert::Same => Ok(user),
            Convert::Reorder(r) => {
                let inner = Memory::alloc(&self.inner)?;
                r.run(&[(ffi::ARG_FROM, &user), (ffi::ARG_TO, &inner)])?;
                Ok(inner)
            }
            Convert::Unblock(_) => Err(DnnlError::Input(
                "blocked weights are unblocked on output only".into(),
            )),
        }
    }

    /// The memory the primitive writes into, then [`Sink::finish`] to land it in `data`
    /// (laid out by `strides`).
    pub(crate) fn sink<'a>(
        &self,
        data: &'a mut [f32],
        strides: &[Dim],
    ) -> Result<Sink<'a>, DnnlError> {
        if self.direct(strides)? {
            return Ok(Sink {
                mem: Memory::lend_mut(&self.inner, data)?,
                out: Landing::Direct,
            });
        }
        let l = self.layout(strides)?;
        Ok(match &l.convert {
            Convert::Same => Sink {
                mem: Memory::lend_mut(&l.user, data)?,
                out: Landing::Direct,
            },
            Convert::Reorder(_) => Sink {
                mem: Memory::alloc(&self.inner)?,
                out: Landing::Reorder(Memory::lend_mut(&l.user, data)?, l.clone()),
            },
            &Convert::Unblock(b) => {
                Memory::check_len(&l.user, data.len())?;
                Sink {
                    mem: Memory::alloc(&self.inner)?,
                    out: Landing::Unblock(data, b),
                }
            }
        })
    }
}

/// Where a primitive writes one output (see [`Port::sink`]).
pub(crate) struct Sink<'a> {
    pub(crate) mem: Memory<'a>,
    out: Landing<'a>,
}

/// How a result reaches the caller's buffer.
enum Landing<'a> {
    /// The primitive wrote it there.
    Direct,
    /// By this layout's reorder.
    Reorder(Memory<'a>, Arc<Layout>),
    /// Unblocked by mxrs's loops from the primitive's buffer.
    Unblock(&'a mut [f32], Blocked16),
}

impl Sink<'_> {
    /// Lands the result in the caller's buffer when the primitive wrote elsewhere.
    pub(crate) fn finish(self) -> Result<(), DnnlError> {
        match self.out {
            Landing::Direct => Ok(()),
            Landing::Reorder(user, l) => match &l.convert {
                Convert::Reorder(r) => r.run(&[(ffi::ARG_FROM, &self.mem), (ffi::ARG_TO, &user)]),
                _ => Err(DnnlError::Input("a layout without its reorder".into())),
            },
            Landing::Unblock(user, b) => {
                b.unblock(self.mem.allocated(b.len())?, user);
                Ok(())
            }
        }
    }
}

/// `given`, or `scratch` grown to `len` zeros: a buffer for a gradient oneDNN writes whether
/// or not the caller asked for it.
pub(crate) fn or_scratch<'a>(
    given: Option<&'a mut [f32]>,
    scratch: &'a mut Vec<f32>,
    len: usize,
) -> &'a mut [f32] {
    match given {
        Some(buf) => buf,
        None => {
            scratch.resize(len, 0.0);
            &mut scratch[..]
        }
    }
}
