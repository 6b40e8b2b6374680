//! The part of oneDNN 3.x's C API that mxrs calls, declared by hand and resolved from
//! `libdnnl.so.3` when it is loaded (no link-time dependency: mxrs imports and computes with
//! NumPy where oneDNN is missing).
//!
//! The numbers are oneDNN 3.2's (`dnnl_types.h`, `dnnl_common_types.h`); the library keeps
//! them stable within a major version, and [`Api::load`] refuses another major version.

use std::ffi::{c_char, c_int, c_uint, c_void};

use libloading::Library;

/// `dnnl_status_t`.
pub type Status = c_int;
/// `dnnl_dim_t`.
pub type Dim = i64;
/// `dnnl_dims_t`: every dimension array of the API has this many slots.
pub const MAX_NDIMS: usize = 12;
pub type Dims = [Dim; MAX_NDIMS];

/// Opaque handles (`dnnl_engine_t`, `dnnl_stream_t`, ...).
pub type Handle = *mut c_void;
pub type ConstHandle = *const c_void;

/// `dnnl_exec_arg_t`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct ExecArg {
    pub arg: c_int,
    pub memory: Handle,
}

pub const SUCCESS: Status = 0;

// dnnl_data_type_t
pub const DATA_TYPE_UNDEF: c_int = 0;
pub const F32: c_int = 3;

// dnnl_format_tag_t: plain row-major tags by number of dimensions (1 to 6), and `any`.
pub const FORMAT_ANY: c_int = 1;
/// `dnnl_a` .. `dnnl_abcdef`: the dense row-major tag of `n` dimensions is `PLAIN_TAG[n - 1]`.
pub const PLAIN_TAG: [c_int; 6] = [2, 3, 4, 5, 6, 7];
/// `dnnl_ABc16b16a`, `dnnl_ABcd16b16a`, `dnnl_ABcde16b16a`: the 16×16-blocked weights of 1, 2
/// and 3 spatial dimensions are `BLOCKED_16B16A_TAG[n - 3]` for `n` dimensions.
pub const BLOCKED_16B16A_TAG: [c_int; 3] = [57, 79, 122];

// dnnl_prop_kind_t
pub const FORWARD_TRAINING: c_int = 64;
pub const FORWARD_INFERENCE: c_int = 96;
pub const BACKWARD: c_int = 128;

// dnnl_alg_kind_t
pub const CONVOLUTION_DIRECT: c_int = 1;
pub const DECONVOLUTION_DIRECT: c_int = 10;
pub const POOLING_MAX: c_int = 511;
pub const POOLING_AVG_INCLUDE_PADDING: c_int = 767;
pub const POOLING_AVG_EXCLUDE_PADDING: c_int = 1023;

pub const ELTWISE_RELU_USE_DST: c_int = 256;
pub const ELTWISE_TANH_USE_DST: c_int = 257;
pub const ELTWISE_LOGISTIC_USE_DST: c_int = 260;
pub const ELTWISE_RELU: c_int = 32;
pub const ELTWISE_ELU: c_int = 34;
pub const ELTWISE_SOFT_RELU: c_int = 39;
pub const ELTWISE_GELU_ERF: c_int = 49;
pub const LRN_ACROSS_CHANNELS: c_int = 0xaff;
pub const SOFTMAX_ACCURATE: c_int = 0x30000;
pub const SOFTMAX_LOG: c_int = 0x30001;

// dnnl_normalization_flags_t
pub const USE_GLOBAL_STATS: c_uint = 1;
pub const USE_SCALE: c_uint = 2;
pub const USE_SHIFT: c_uint = 4;
pub const FUSE_NORM_RELU: c_uint = 8;

// dnnl_query_t
pub const QUERY_IMPL_INFO_STR: c_int = 8;
pub const QUERY_SRC_MD: c_int = 129;
pub const QUERY_DIFF_SRC_MD: c_int = 130;
pub const QUERY_WEIGHTS_MD: c_int = 131;
pub const QUERY_DIFF_WEIGHTS_MD: c_int = 132;
pub const QUERY_DST_MD: c_int = 133;
pub const QUERY_DIFF_DST_MD: c_int = 134;
pub const QUERY_WORKSPACE_MD: c_int = 135;

// DNNL_ARG_*
pub const ARG_SRC: c_int = 1;
pub const ARG_DST: c_int = 17;
pub const ARG_WEIGHTS: c_int = 33;
pub const ARG_BIAS: c_int = 41;
pub const ARG_MEAN: c_int = 49;
pub const ARG_VARIANCE: c_int = 50;
pub const ARG_SCALE: c_int = 51;
pub const ARG_SHIFT: c_int = 52;
pub const ARG_WORKSPACE: c_int = 64;
pub const ARG_DIFF_SRC: c_int = 129;
pub const ARG_DIFF_DST: c_int = 145;
pub const ARG_DIFF_WEIGHTS: c_int = 161;
pub const ARG_DIFF_BIAS: c_int = 169;
pub const ARG_DIFF_SCALE: c_int = 255;
pub const ARG_DIFF_SHIFT: c_int = 256;
pub const ARG_FROM: c_int = ARG_SRC;
pub const ARG_TO: c_int = ARG_DST;

pub const ENGINE_CPU: c_int = 1;
pub const STREAM_DEFAULT_FLAGS: c_uint = 1;

/// `DNNL_MEMORY_ALLOCATE`: asks `dnnl_memory_create` to allocate the buffer itself.
pub const MEMORY_ALLOCATE: Handle = usize::MAX as Handle;

/// `dnnl_version_t`.
#[repr(C)]
#[derive(Debug)]
pub struct Version {
    pub major: c_int,
    pub minor: c_int,
    pub patch: c_int,
    pub hash: *const c_char,
    pub cpu_runtime: c_uint,
    pub gpu_runtime: c_uint,
}

/// Declares the function table: each entry is resolved by its C name when the library loads.
macro_rules! api {
    ($($name:ident: fn($($arg:ty),* $(,)?) -> $ret:ty;)*) => {
        /// oneDNN's entry points, resolved from one loaded library that the table keeps open.
        #[allow(missing_debug_implementations)]
        pub struct Api {
            _lib: Library,
            $(pub $name: unsafe extern "C" fn($($arg),*) -> $ret,)*
        }

        impl Api {
            /// Opens `path` and resolves every entry point.
            ///
            /// # Safety
            /// `path` must name a oneDNN 3.x library: its initialisers run, and the symbols
            /// are called with the signatures declared here.
            pub unsafe fn open(path: &str) -> Result<Api, libloading::Error> {
                // SAFETY: the caller vouches that this is oneDNN, whose initialisers are sound.
                let lib = unsafe { Library::new(path)? };
                $(
                    // SAFETY: the symbol is oneDNN's function of this name, declared with its
                    // C signature; the library stays open as long as the table.
                    let $name = unsafe {
                        *lib.get::<unsafe extern "C" fn($($arg),*) -> $ret>(
                            concat!(stringify!($name), "\0").as_bytes(),
                        )?
                    };
                )*
                Ok(Api { _lib: lib, $($name,)* })
            }
        }
    };
}

/// GNU OpenMP's runtime, which the `onednn-cpu-gomp` build of oneDNN runs its threads on.
#[allow(missing_debug_implementations)]
pub struct Omp {
    _lib: Library,
    pub set_num_threads: unsafe extern "C" fn(c_int),
    /// `omp_get_max_threads`: the team size a parallel region of the calling thread gets.
    pub max_threads: unsafe extern "C" fn() -> c_int,
    /// `omp_get_thread_num` and `omp_get_num_threads`, inside a parallel region.
    pub thread_num: unsafe extern "C" fn() -> c_int,
    pub num_threads: unsafe extern "C" fn() -> c_int,
    /// `GOMP_parallel(fn, data, num_threads, flags)`: what `#pragma omp parallel` compiles to
    /// (GCC 4.9 and later): runs `fn(data)` on each thread of a team, the caller's included.
    pub parallel: unsafe extern "C" fn(OmpTask, *mut c_void, c_uint, c_uint),
}

/// The body of an OpenMP parallel region.
pub type OmpTask = unsafe extern "C" fn(*mut c_void);

impl Omp {
    /// Opens `libgomp.so.1` (loaded already where oneDNN is) and resolves the functions
    /// mxrs calls.
    ///
    /// # Safety
    /// `libgomp.so.1` must be GNU OpenMP's runtime, whose functions have the C signatures
    /// `void omp_set_num_threads(int)`, `int omp_get_max_threads(void)`,
    /// `int omp_get_thread_num(void)`, `int omp_get_num_threads(void)` and
    /// `void GOMP_parallel(void (*)(void *), void *, unsigned, unsigned)`.
    pub unsafe fn open() -> Result<Omp, libloading::Error> {
        // SAFETY: the caller vouches for the library; GNU OpenMP's initialisers are sound and
        // run at most once per process.
        let lib = unsafe { Library::new("libgomp.so.1")? };
        // SAFETY: the symbol is OpenMP's function of that name and signature; the library
        // stays open as long as `Omp`.
        let set_num_threads =
            unsafe { *lib.get::<unsafe extern "C" fn(c_int)>(b"omp_set_num_threads\0")? };
        // SAFETY: as above, for each symbol: GNU OpenMP's functions of these C signatures.
        let (max_threads, thread_num, num_threads, parallel) = unsafe {
            (
                *lib.get::<unsafe extern "C" fn() -> c_int>(b"omp_get_max_threads\0")?,
                *lib.get::<unsafe extern "C" fn() -> c_int>(b"omp_get_thread_num\0")?,
                *lib.get::<unsafe extern "C" fn() -> c_int>(b"omp_get_num_threads\0")?,
                *lib.get::<unsafe extern "C" fn(OmpTask, *mut c_void, c_uint, c_uint)>(
                    b"GOMP_parallel\0",
                )?,
            )
        };
        Ok(Omp {
            _lib: lib,
            set_num_threads,
            max_threads,
            thread_num,
            num_threads,
            parallel,
        })
    }
}

api! {
    dnnl_version: fn() -> *const Version;
    dnnl_engine_create: fn(*mut Handle, c_int, usize) -> Status;
    dnnl_engine_destroy: fn(Handle) -> Status;
    dnnl_stream_create: fn(*mut Handle, Handle, c_uint) -> Status;
    dnnl_stream_wait: fn(Handle) -> Status;
    dnnl_memory_desc_create_with_tag: fn(*mut Handle, c_int, *const Dim, c_int, c_int) -> Status;
    dnnl_memory_desc_create_with_strides: fn(*mut Handle, c_int, *const Dim, c_int, *const Dim)
        -> Status;
    dnnl_memory_desc_clone: fn(*mut Handle, ConstHandle) -> Status;
    dnnl_memory_desc_destroy: fn(Handle) -> Status;
    dnnl_memory_desc_equal: fn(ConstHandle, ConstHandle) -> c_int;
    dnnl_memory_desc_get_size: fn(ConstHandle) -> usize;
    dnnl_memory_create: fn(*mut Handle, ConstHandle, Handle, Handle) -> Status;
    dnnl_memory_destroy: fn(Handle) -> Status;
    dnnl_memory_get_data_handle: fn(ConstHandle, *mut *mut c_void) -> Status;
    dnnl_primitive_desc_destroy: fn(Handle) -> Status;
    dnnl_primitive_desc_query: fn(ConstHandle, c_int, c_int, *mut c_void) -> Status;
    dnnl_primitive_desc_query_md: fn(ConstHandle, c_int, c_int) -> ConstHandle;
    dnnl_primitive_create: fn(*mut Handle, ConstHandle) -> Status;
    dnnl_primitive_execute: fn(ConstHandle, Handle, c_int, *const ExecArg) -> Status;
    dnnl_primitive_destroy: fn(Handle) -> Status;
    dnnl_reorder_primitive_desc_create: fn(
        *mut Handle, ConstHandle, Handle, ConstHandle, Handle, ConstHandle,
    ) -> Status;
    dnnl_convolution_forward_primitive_desc_create: fn(
        *mut Handle, Handle, c_int, c_int, ConstHandle, ConstHandle, ConstHandle, ConstHandle,
        *const Dim, *const Dim, *const Dim, *const Dim, ConstHandle,
    ) -> Status;
    dnnl_convolution_backward_data_primitive_desc_create: fn(
        *mut Handle, Handle, c_int, ConstHandle, ConstHandle, ConstHandle,
        *const Dim, *const Dim, *const Dim, *const Dim, ConstHandle, ConstHandle,
    ) -> Status;
    dnnl_convolution_backward_weights_primitive_desc_create: fn(
        *mut Handle, Handle, c_int, ConstHandle, ConstHandle, ConstHandle, ConstHandle,
        *const Dim, *const Dim, *const Dim, *const Dim, ConstHandle, ConstHandle,
    ) -> Status;
    dnnl_deconvolution_forward_primitive_desc_create: fn(
        *mut Handle, Handle, c_int, c_int, ConstHandle, ConstHandle, ConstHandle, ConstHandle,
        *const Dim, *const Dim, *const Dim, *const Dim, ConstHandle,
    ) -> Status;
    dnnl_deconvolution_backward_data_primitive_desc_create: fn(
        *mut Handle, Handle, c_int, ConstHandle, ConstHandle, ConstHandle,
        *const Dim, *const Dim, *const Dim, *const Dim, ConstHandle, ConstHandle,
    ) -> Status;
    dnnl_deconvolution_backward_weights_primitive_desc_create: fn(
        *mut Handle, Handle, c_int, ConstHandle, ConstHandle, ConstHandle, ConstHandle,
        *const Dim, *const Dim, *const Dim, *const Dim, ConstHandle, ConstHandle,
    ) -> Status;
    dnnl_inner_product_forward_primitive_desc_create: fn(
        *mut Handle, Handle, c_int, ConstHandle, ConstHandle, ConstHandle, ConstHandle, ConstHandle,
    ) -> Status;
    dnnl_inner_product_backward_data_primitive_desc_create: fn(
        *mut Handle, Handle, ConstHandle, ConstHandle, ConstHandle, ConstHandle, ConstHandle,
    ) -> Status;
    dnnl_inner_product_backward_weights_primitive_desc_create: fn(
        *mut Handle, Handle, ConstHandle, ConstHandle, ConstHandle, ConstHandle, ConstHandle,
        ConstHandle,
    ) -> Status;
    dnnl_primitive_attr_create: fn(*mut Handle) -> Status;
    dnnl_primitive_attr_destroy: fn(Handle) -> Status;
    dnnl_primitive_attr_set_post_ops: fn(Handle, ConstHandle) -> Status;
    dnnl_post_ops_create: fn(*mut Handle) -> Status;
    dnnl_post_ops_destroy: fn(Handle) -> Status;
    dnnl_post_ops_append_sum: fn(Handle, f32, i32, c_int) -> Status;
    dnnl_matmul_primitive_desc_create: fn(
        *mut Handle, Handle, ConstHandle, ConstHandle, ConstHandle, ConstHandle, ConstHandle,
    ) -> Status;
    dnnl_eltwise_forward_primitive_desc_create: fn(
        *mut Handle, Handle, c_int, c_int, ConstHandle, ConstHandle, f32, f32, ConstHandle,
    ) -> Status;
    dnnl_eltwise_backward_primitive_desc_create: fn(
        *mut Handle, Handle, c_int, ConstHandle, ConstHandle, ConstHandle, f32, f32, ConstHandle,
        ConstHandle,
    ) -> Status;
    dnnl_pooling_forward_primitive_desc_create: fn(
        *mut Handle, Handle, c_int, c_int, ConstHandle, ConstHandle,
        *const Dim, *const Dim, *const Dim, *const Dim, *const Dim, ConstHandle,
    ) -> Status;
    dnnl_pooling_backward_primitive_desc_create: fn(
        *mut Handle, Handle, c_int, ConstHandle, ConstHandle,
        *const Dim, *const Dim, *const Dim, *const Dim, *const Dim, ConstHandle, ConstHandle,
    ) -> Status;
    dnnl_softmax_forward_primitive_desc_create: fn(
        *mut Handle, Handle, c_int, c_int, ConstHandle, ConstHandle, c_int, ConstHandle,
    ) -> Status;
    dnnl_softmax_backward_primitive_desc_create: fn(
        *mut Handle, Handle, c_int, ConstHandle, ConstHandle, ConstHandle, c_int, ConstHandle,
        ConstHandle,
    ) -> Status;
    dnnl_lrn_forward_primitive_desc_create: fn(
        *mut Handle, Handle, c_int, c_int, ConstHandle, ConstHandle, Dim, f32, f32, f32,
        ConstHandle,
    ) -> Status;
    dnnl_lrn_backward_primitive_desc_create: fn(
        *mut Handle, Handle, c_int, ConstHandle, ConstHandle, ConstHandle, Dim, f32, f32, f32,
        ConstHandle, ConstHandle,
    ) -> Status;
    dnnl_batch_normalization_forward_primitive_desc_create: fn(
        *mut Handle, Handle, c_int, ConstHandle, ConstHandle, f32, c_uint, ConstHandle,
    ) -> Status;
    dnnl_batch_normalization_backward_primitive_desc_create: fn(
        *mut Handle, Handle, c_int, ConstHandle, ConstHandle, ConstHandle, f32, c_uint,
        ConstHandle, ConstHandle,
    ) -> Status;
}
