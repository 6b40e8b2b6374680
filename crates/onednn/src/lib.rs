//! oneDNN, loaded at run time, and the primitives mxrs's CPU kernels run on.
//!
//! mxrs finds `libdnnl.so.3` (the `onednn-cpu-gomp` wheel installs it beside Python's own
//! libraries) and calls [`load`] once; where it cannot load, mxrs computes with NumPy. Each
//! kernel ([`conv::Conv`], [`pool::Pool`], [`bnorm::BatchNorm`], [`eltwise::Eltwise`],
//! [`inner::InnerProduct`], [`softmax::Softmax`], [`lrn::Lrn`]) is built for one shape and set
//! of attributes, creates its oneDNN primitives once and runs them on caller-owned, dense,
//! row-major `f32` buffers: data in a layout oneDNN computes faster in (its blocked formats) is
//! reordered in and out inside the call. Beside them, [`relu`] holds ReLU's own loops, which
//! [`parallel`] splits over the OpenMP threads oneDNN runs on.
//!
//! Every `unsafe` block is a call into oneDNN's C API; the wrappers here own its handles
//! (destroyed on drop) and check every buffer's length before oneDNN sees it.

#[macro_use]
mod simd;

pub mod bnorm;
mod bnorm_rows;
pub mod conv;
pub mod eltwise;
mod ffi;
pub mod inner;
pub mod lrn;
mod matmul;
pub mod parallel;
pub mod pool;
mod prim;
pub mod relu;
mod sampled;
pub mod softmax;
mod unblock;
mod unrolled;
mod winograd;

use std::ffi::{CStr, c_int};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicI32, Ordering};

use parking_lot::Mutex;

pub use prim::{Tensor, TensorMut, channels_last_strides, plain_strides};

/// What can go wrong with oneDNN.
#[derive(Debug, thiserror::Error)]
pub enum DnnlError {
    /// The library could not be opened or is not oneDNN 3.x.
    #[error("cannot load oneDNN from {path}: {reason}")]
    Load { path: String, reason: String },
    /// oneDNN has no implementation for this shape and attributes (the caller falls back).
    #[error("oneDNN has no {what} for {detail}")]
    Unsupported { what: &'static str, detail: String },
    /// A oneDNN call failed.
    #[error("oneDNN {call} failed with status {status} ({})", status_name(*.status))]
    Call { call: &'static str, status: i32 },
    /// The caller's buffers do not fit the kernel.
    #[error("{0}")]
    Input(String),
}

fn status_name(status: i32) -> &'static str {
    match status {
        1 => "out of memory",
        2 => "invalid arguments",
        3 => "unimplemented",
        4 => "last implementation reached",
        5 => "runtime error",
        6 => "not required",
        _ => "unknown status",
    }
}

/// A loaded oneDNN: its entry points, one CPU engine and the stream every primitive runs on.
pub struct Dnnl {
    api: ffi::Api,
    engine: ffi::Handle,
    /// Held while a primitive runs: a stream executes one primitive at a time.
    stream: Mutex<ffi::Handle>,
    version: (i32, i32, i32),
    /// The OpenMP runtime oneDNN runs its threads on, where it is libgomp.
    omp: Option<ffi::Omp>,
    /// Threads each primitive runs on (0: as the OpenMP runtime decides).
    threads: AtomicI32,
}

impl std::fmt::Debug for Dnnl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (a, b, c) = self.version;
        write!(f, "Dnnl({a}.{b}.{c})")
    }
}

// SAFETY: a CPU engine is immutable once created and may be used from any thread; the stream
// handle is only used under its mutex.
unsafe impl Send for Dnnl {}
// SAFETY: as for Send: the engine is shared read-only, the stream is behind a mutex.
unsafe impl Sync for Dnnl {}

static LOADED: OnceLock<Dnnl> = OnceLock::new();

/// Loads oneDNN from `path` (once per process; later calls return the first library).
pub fn load(path: &str) -> Result<&'static Dnnl, DnnlError> {
    if let Some(d) = LOADED.get() {
        return Ok(d);
    }
    let fail = |reason: String| DnnlError::Load {
        path: path.to_string(),
        reason,
    };
    // SAFETY: the caller names oneDNN's library; a file that lacks its symbols fails here.
    let api = unsafe { ffi::Api::open(path) }.map_err(|e| fail(e.to_string()))?;
    // SAFETY: dnnl_version returns a pointer to a static struct of the library.
    let v = unsafe { &*(api.dnnl_version)() };
    let version = (v.major, v.minor, v.patch);
    if v.major != 3 {
        return Err(fail(format!(
            "version {}.{} (mxrs needs 3.x)",
            v.major, v.minor
        )));
    }
    let mut engine: ffi::Handle = std::ptr::null_mut();
    // SAFETY: creates CPU engine 0 into `engine`.
    let s = unsafe { (api.dnnl_engine_create)(&mut engine, ffi::ENGINE_CPU, 0) };
    if s != ffi::SUCCESS {
        return Err(fail(format!("dnnl_engine_create returned {s}")));
    }
    let mut stream: ffi::Handle = std::ptr::null_mut();
    // SAFETY: `engine` is the live engine just created.
    let s = unsafe { (api.dnnl_stream_create)(&mut stream, engine, ffi::STREAM_DEFAULT_FLAGS) };
    if s != ffi::SUCCESS {
        // SAFETY: the engine was created above and is not used again.
        unsafe { (api.dnnl_engine_destroy)(engine) };
        return Err(fail(format!("dnnl_stream_create returned {s}")));
    }
    let d = Dnnl {
        api,
        engine,
        stream: Mutex::new(stream),
        version,
        // SAFETY: libgomp.so.1 is GNU OpenMP's runtime (already loaded by oneDNN's library).
        omp: unsafe { ffi::Omp::open() }.ok(),
        threads: AtomicI32::new(0),
    };
    // A racing first load may have won: its library serves, and this one's handles leak once.
    Ok(LOADED.get_or_init(|| d))
}

/// The library loaded by [`load`], if any.
pub fn loaded() -> Option<&'static Dnnl> {
    LOADED.get()
}

impl Dnnl {
    /// oneDNN's version (major, minor, patch).
    pub fn version(&self) -> (i32, i32, i32) {
        self.version
    }

    /// The git hash oneDNN was built from, if it says.
    pub fn build_hash(&self) -> String {
        // SAFETY: dnnl_version returns a pointer to a static struct of the library.
        let v = unsafe { &*(self.api.dnnl_version)() };
        if v.hash.is_null() {
            return String::new();
        }
        // SAFETY: a non-null hash is a static NUL-terminated string of the library.
        unsafe { CStr::from_ptr(v.hash) }
            .to_string_lossy()
            .into_owned()
    }

    /// Runs every primitive from now on with at most `n` OpenMP threads (MXNet's
    /// `MXNET_OMP_MAX_THREADS`), whichever thread calls it; 0 leaves the choice to OpenMP
    /// (`OMP_NUM_THREADS`).
    pub fn set_threads(&self, n: i32) -> Result<(), DnnlError> {
        if n < 0 {
            return Err(DnnlError::Input(format!("{n} threads")));
        }
        if n > 0 && self.omp.is_none() {
            return Err(DnnlError::Input(
                "oneDNN's OpenMP runtime (libgomp.so.1) is not loaded: its threads cannot be set"
                    .into(),
            ));
        }
        self.threads.store(n, Ordering::Relaxed);
        Ok(())
    }

    /// The thread count set by [`Dnnl::set_threads`] (0: none).
    pub fn threads(&self) -> i32 {
        self.threads.load(Ordering::Relaxed)
    }

    /// Applies the thread count to the calling thread's OpenMP settings, before a primitive
    /// runs on it.
    fn limit_threads(&self) {
        let n = self.threads.load(Ordering::Relaxed);
        if let (true, Some(omp)) = (n > 0, &self.omp) {
            // SAFETY: omp_set_num_threads only sets the calling thread's OpenMP setting.
            unsafe { (omp.set_num_threads)(n as c_int) }
        }
    }

    fn check(&self, call: &'static str, status: ffi::Status) -> Result<(), DnnlError> {
        if status == ffi::SUCCESS {
            Ok(())
        } else {
            Err(DnnlError::Call { call, status })
        }
    }
}
