//! NumPy's memory handler for mxrs's host arrays: large blocks start at staggered offsets
//! within a page.
//!
//! glibc hands out consecutive heap blocks 16 bytes past each other's page offset, and a
//! network's arrays are mostly whole pages long, so every array of a step starts at about one
//! offset in its page. A memory-bound pass that reads three or four such arrays and writes
//! another (a batch norm's gradient, a ReLU's, an optimizer's update) then finds its loads
//! waiting on stores that merely share an address's low 12 bits (4K aliasing) and its streams
//! competing for the same cache sets: on one thread a pass over four arrays of 25.7 MB and a
//! fifth written took 12.3 ms so aligned, 6.8 ms staggered. Here a block of at least
//! [`STAGGER_FROM`] bytes starts on a cache line, the next of [`COLORS`] lines in turn; smaller
//! ones on a line too. Each block keeps the address glibc gave it just before its start.

use std::ffi::c_void;
use std::sync::atomic::{AtomicUsize, Ordering};

use pyo3::exceptions::PyRuntimeError;
use pyo3::ffi;
use pyo3::prelude::*;

/// Blocks from this size on are staggered.
const STAGGER_FROM: usize = 64 * 1024;
/// A cache line.
const LINE: usize = 64;
/// Offsets in turn: one page's lines.
const COLORS: usize = 4096 / LINE;
/// Index of `PyDataMem_SetHandler` in NumPy's C API table (NumPy 1.22 on).
const SET_HANDLER: usize = 304;

unsafe extern "C" {
    fn malloc(size: usize) -> *mut c_void;
    fn free(ptr: *mut c_void);
    fn malloc_usable_size(ptr: *mut c_void) -> usize;
}

/// NumPy's `PyDataMemAllocator` (version 1).
#[repr(C)]
struct Allocator {
    ctx: *mut c_void,
    malloc: unsafe extern "C" fn(*mut c_void, usize) -> *mut c_void,
    calloc: unsafe extern "C" fn(*mut c_void, usize, usize) -> *mut c_void,
    realloc: unsafe extern "C" fn(*mut c_void, *mut c_void, usize) -> *mut c_void,
    free: unsafe extern "C" fn(*mut c_void, *mut c_void, usize),
}

/// NumPy's `PyDataMem_Handler`.
#[repr(C)]
struct Handler {
    name: [u8; 127],
    version: u8,
    allocator: Allocator,
}

// SAFETY: the handler is immutable; its context pointer is null and never used.
unsafe impl Sync for Handler {}

const fn name(s: &str) -> [u8; 127] {
    let mut out = [0u8; 127];
    let b = s.as_bytes();
    let mut i = 0;
    while i < b.len() {
        out[i] = b[i];
        i += 1;
    }
    out
}

static HANDLER: Handler = Handler {
    name: name("mxrs_staggered"),
    version: 1,
    allocator: Allocator {
        ctx: std::ptr::null_mut(),
        malloc: block_malloc,
        calloc: block_calloc,
        realloc: block_realloc,
        free: block_free,
    },
};

static NEXT_COLOR: AtomicUsize = AtomicUsize::new(0);

/// A block of `size` bytes on a cache line (the next offset in turn when large), glibc's
/// address kept in the 8 bytes before it.
unsafe extern "C" fn block_malloc(_ctx: *mut c_void, size: usize) -> *mut c_void {
    let (color, colors) = if size >= STAGGER_FROM {
        (NEXT_COLOR.fetch_add(1, Ordering::Relaxed) % COLORS, COLORS)
    } else {
        (0, 0)
    };
    // room for the kept address, the rounding up to a line and any offset: one size for
    // every offset, so that a freed block serves the next array of its size
    let Some(total) = size.checked_add(2 * LINE + colors * LINE) else {
        return std::ptr::null_mut();
    };
    // SAFETY: plain malloc; a null result is passed on.
    let raw = unsafe { malloc(total) };
    if raw.is_null() {
        return raw;
    }
    let start = ((raw as usize + 8).next_multiple_of(LINE) + color * LINE) as *mut c_void;
    // SAFETY: `start - 8 >= raw` and `start + size <= raw + total` (start is at most
    // `raw + 8 + 63 + color * LINE`); the slot is 8-aligned as `start` is.
    unsafe { start.cast::<*mut c_void>().sub(1).write(raw) };
    start
}

/// The address glibc gave the block starting at `p`.
///
/// # Safety
/// `p` came from [`block_malloc`] and is not freed.
unsafe fn raw_of(p: *mut c_void) -> *mut c_void {
    // SAFETY: block_malloc wrote it there.
    unsafe { p.cast::<*mut c_void>().sub(1).read() }
}

unsafe extern "C" fn block_calloc(ctx: *mut c_void, n: usize, each: usize) -> *mut c_void {
    let Some(size) = n.checked_mul(each) else {
        return std::ptr::null_mut();
    };
    // SAFETY: a fresh block of `size` bytes, zeroed.
    unsafe {
        let p = block_malloc(ctx, size);
        if !p.is_null() {
            p.cast::<u8>().write_bytes(0, size);
        }
        p
    }
}

unsafe extern "C" fn block_realloc(ctx: *mut c_void, p: *mut c_void, size: usize) -> *mut c_void {
    if p.is_null() {
        // SAFETY: as malloc.
        return unsafe { block_malloc(ctx, size) };
    }
    // SAFETY: `p` is a live block of this handler (NumPy's contract); the new block is
    // distinct, and the copy stays inside both (the old block's usable end from glibc).
    unsafe {
        let raw = raw_of(p);
        let held = malloc_usable_size(raw) - (p as usize - raw as usize);
        let q = block_malloc(ctx, size);
        if q.is_null() {
            return q; // the old block stays valid, as realloc's contract says
        }
        std::ptr::copy_nonoverlapping(p.cast::<u8>(), q.cast::<u8>(), held.min(size));
        free(raw);
        q
    }
}

unsafe extern "C" fn block_free(_ctx: *mut c_void, p: *mut c_void, _size: usize) {
    if !p.is_null() {
        // SAFETY: `p` is a live block of this handler (NumPy's contract).
        unsafe { free(raw_of(p)) };
    }
}

/// Makes the staggering handler NumPy's for arrays allocated from now on in the calling
/// thread's context (arrays keep the handler they were allocated with); returns its name.
#[pyfunction]
pub(crate) fn stagger_host_arrays(py: Python<'_>) -> PyResult<&'static str> {
    let module = py
        .import("numpy._core._multiarray_umath")
        .or_else(|_| py.import("numpy.core._multiarray_umath"))?;
    let api = module.getattr("_ARRAY_API")?;
    // SAFETY: `_ARRAY_API` is NumPy's capsule of its C API table (`void **`), alive with the
    // module; a null result (not a capsule) raises.
    let table = unsafe { ffi::PyCapsule_GetPointer(api.as_ptr(), std::ptr::null()) };
    if table.is_null() {
        return Err(PyErr::fetch(py));
    }
    // SAFETY: NumPy 1.22 and later put PyDataMem_SetHandler at this index of the table.
    let set: unsafe extern "C" fn(*mut ffi::PyObject) -> *mut ffi::PyObject = unsafe {
        let f = table.cast::<*const c_void>().add(SET_HANDLER).read();
        if f.is_null() {
            return Err(PyRuntimeError::new_err(
                "this NumPy has no PyDataMem_SetHandler",
            ));
        }
        std::mem::transmute::<*const c_void, _>(f)
    };
    // SAFETY: a capsule named as NumPy requires, over the static handler (never freed).
    let capsule = unsafe {
        ffi::PyCapsule_New(
            std::ptr::addr_of!(HANDLER).cast_mut().cast(),
            c"mem_handler".as_ptr(),
            None,
        )
    };
    if capsule.is_null() {
        return Err(PyErr::fetch(py));
    }
    // SAFETY: the GIL is held; NumPy's context variable takes its own reference to the
    // capsule and returns a new one to the old handler; both of ours are dropped.
    unsafe {
        let old = set(capsule);
        ffi::Py_DECREF(capsule);
        if old.is_null() {
            return Err(PyErr::fetch(py));
        }
        ffi::Py_DECREF(old);
    }
    Ok("mxrs_staggered")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn large_blocks_start_on_lines_in_turn_and_keep_their_bytes() {
        let null = std::ptr::null_mut();
        // SAFETY: the handler's own functions on its own blocks.
        unsafe {
            let blocks: Vec<*mut c_void> = (0..COLORS + 1)
                .map(|_| block_malloc(null, STAGGER_FROM))
                .collect();
            let offsets: Vec<usize> = blocks.iter().map(|&p| p as usize % 4096).collect();
            assert!(offsets.iter().all(|o| o % LINE == 0), "{offsets:?}");
            // consecutive large blocks start on different lines of their page
            let distinct: std::collections::HashSet<usize> =
                offsets.iter().map(|o| o / LINE).collect();
            assert!(distinct.len() > COLORS / 2, "{offsets:?}");
            let small = block_calloc(null, 3, 5);
            assert!(
                std::slice::from_raw_parts(small.cast::<u8>(), 15)
                    .iter()
                    .all(|&b| b == 0)
            );
            small.cast::<u8>().write_bytes(7, 15);
            let grown = block_realloc(null, small, STAGGER_FROM * 2);
            assert!(
                std::slice::from_raw_parts(grown.cast::<u8>(), 15)
                    .iter()
                    .all(|&b| b == 7)
            );
            let shrunk = block_realloc(null, grown, 4);
            assert_eq!(std::slice::from_raw_parts(shrunk.cast::<u8>(), 4), &[7; 4]);
            block_free(null, shrunk, 4);
            for p in blocks {
                block_free(null, p, STAGGER_FROM);
            }
            block_free(null, null, 0);
        }
    }
}
