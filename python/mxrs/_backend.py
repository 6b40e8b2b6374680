"""Array-library backends: the one place that knows NumPy from CuPy.

Every operation gets ``xp`` (the array module) and, for the few things whose spelling differs
between the libraries (scatter-add, strided views, random generators, host transfer), the backend
object. CPU contexts share the NumPy backend; GPU contexts share the CuPy backend, created the
first time a GPU context holds data. CuPy is never imported before that.

Host memory: a training step allocates and frees the same large temporaries (activations,
gradients, workspaces) every iteration. With glibc's defaults each of them is a fresh ``mmap``
whose pages fault in on first touch, which costs as much as the arithmetic on them (a pooling
gradient of ResNet-18 at 224 pixels: 53 ms with the faults, 2.6 ms without). When the first CPU
array is made, mxrs therefore asks glibc (``mallopt``) to serve blocks of every size from the
heap and to keep freed memory for reuse, much as a pooled allocator would: a long job's memory
stays at its peak step's. glibc then hands out consecutive blocks 16 bytes past each other's
page offset, and a network's arrays are mostly whole pages long, so the arrays a pass reads and
writes would all start at about one offset in their pages, where their loads and stores collide
in the cache; NumPy's memory handler for the thread that made that first array therefore starts
each large array one cache line further on in its page than the last (a batch norm's gradient
pass over five 26 MB arrays: 12.3 ms aligned, 6.8 ms staggered). ``MXRS_HOST_ALLOCATOR``:
``staggered`` (the default) does both, ``pooled`` only the reuse, ``default`` neither.
"""

import contextlib
import ctypes
import os
import sys

import numpy

from .base import ContextError

_NULL_GUARD = contextlib.nullcontext()


class _NumpyBackend:
    """Host arrays through NumPy."""

    name = "numpy"
    xp = numpy

    def guard(self, device_id):
        """Context manager making ``device_id`` current (nothing to do on the host)."""
        return _NULL_GUARD

    def asarray(self, data, dtype, device_id):
        """Copy ``data`` (list, scalar, host or device array) into a new array of ``dtype``."""
        if isinstance(data, numpy.ndarray):
            return numpy.array(data, dtype=dtype, copy=True)
        if not isinstance(data, (list, tuple, int, float, bool, numpy.generic)):
            data = _to_host(data)
        return numpy.array(data, dtype=dtype)

    def to_host(self, arr):
        """Return ``arr`` as a NumPy array."""
        return arr

    def to_host_pinned(self, arr):
        """Return ``arr`` as a NumPy array (host memory needs no pinning on the host)."""
        return arr

    def synchronize(self, device_id):
        """Wait for the device's queued work."""
        pass

    def scatter_add(self, target, index, values):
        """``target[index] += values`` with repeated indices accumulating."""
        numpy.add.at(target, index, values)

    def argsort(self, arr):
        """Stable argsort along the last axis (ties keep their order)."""
        return numpy.argsort(arr, axis=-1, kind="stable")

    def as_strided(self, arr, shape, strides):
        """A read-only strided view of ``arr`` (receptive fields for im2col)."""
        return numpy.lib.stride_tricks.as_strided(arr, shape, strides, writeable=False)

    def make_rng(self, seed, device_id):
        """A new random generator (``seed`` None draws fresh entropy)."""
        return numpy.random.default_rng(seed)

    def uniform(self, rng, low, high, shape, dtype):
        """Samples from U[low, high) of ``dtype``."""
        dt = numpy.dtype(dtype)
        if dt.kind == "f" and dt.itemsize >= 4:
            out = rng.random(shape, dtype=dt)
        else:
            out = rng.random(shape).astype(dt)
        if low != 0.0 or high != 1.0:
            out *= high - low
            out += low
        return out

    def normal(self, rng, loc, scale, shape, dtype):
        """Samples from N(loc, scale^2) of ``dtype``."""
        dt = numpy.dtype(dtype)
        if dt.kind == "f" and dt.itemsize >= 4:
            out = rng.standard_normal(shape, dtype=dt)
        else:
            out = rng.standard_normal(shape).astype(dt)
        if scale != 1.0:
            out *= scale
        if loc != 0.0:
            out += loc
        return out

    def randint(self, rng, low, high, shape, dtype):
        """Integers from [low, high)."""
        return rng.integers(low, high, size=shape, dtype=dtype)

    def permutation(self, rng, n):
        """A random permutation of ``range(n)``."""
        return rng.permutation(n)

    def empty_cache(self, device_id):
        """Return cached device memory to the driver."""


def _to_host(data):
    """Turn a CuPy array (or anything with ``get``) into a NumPy array; pass others through."""
    get = getattr(data, "get", None)
    return get() if callable(get) and not isinstance(data, dict) else data


class _CupyBackend:
    """CUDA arrays through CuPy (imported when the first GPU array is made)."""

    name = "cupy"

    def __init__(self, cupy):
        self.xp = cupy
        # CuPy 13+ has ufunc.at; older releases only cupyx.scatter_add (deprecated since).
        add_at = getattr(cupy.add, "at", None)
        if add_at is None:
            import cupyx

            add_at = cupyx.scatter_add
        self._add_at = add_at

    def guard(self, device_id):
        return self.xp.cuda.Device(device_id)

    def asarray(self, data, dtype, device_id):
        with self.xp.cuda.Device(device_id):
            if isinstance(data, self.xp.ndarray):
                return self.xp.array(data, dtype=dtype, copy=True)
            return self.xp.asarray(numpy.asarray(data, dtype=dtype))

    def to_host(self, arr):
        return arr.get()

    def to_host_pinned(self, arr):
        """Copy ``arr`` into a new host array in page-locked memory (CuPy's pinned pool), the
        fastest way off the device; the memory returns to the pool with the array."""
        arr = self.xp.ascontiguousarray(arr)
        mem = self.xp.cuda.alloc_pinned_memory(max(arr.nbytes, 1))
        out = numpy.frombuffer(mem, arr.dtype, arr.size).reshape(arr.shape)
        arr.get(out=out)
        return out

    def synchronize(self, device_id):
        with self.xp.cuda.Device(device_id) as dev:
            dev.synchronize()

    def scatter_add(self, target, index, values):
        self._add_at(target, index, values)

    def argsort(self, arr):
        return self.xp.argsort(arr, axis=-1)  # CuPy's sort is a stable radix sort

    def as_strided(self, arr, shape, strides):
        return self.xp.lib.stride_tricks.as_strided(arr, shape, strides)

    def make_rng(self, seed, device_id):
        with self.xp.cuda.Device(device_id):
            return self.xp.random.RandomState(seed)

    def uniform(self, rng, low, high, shape, dtype):
        return rng.uniform(low, high, size=shape, dtype=dtype)

    def normal(self, rng, loc, scale, shape, dtype):
        return rng.normal(loc, scale, size=shape, dtype=dtype)

    def randint(self, rng, low, high, shape, dtype):
        return rng.randint(low, high, size=shape).astype(dtype)

    def permutation(self, rng, n):
        return rng.permutation(n)

    def empty_cache(self, device_id):
        self.xp.get_default_memory_pool().free_all_blocks()

    def memory_info(self, device_id):
        with self.xp.cuda.Device(device_id):
            return self.xp.cuda.runtime.memGetInfo()


NUMPY = _NumpyBackend()
_cupy_backend = None


_M_TRIM_THRESHOLD, _M_TOP_PAD, _M_MMAP_THRESHOLD, _M_MMAP_MAX = -1, -2, -3, -4
_allocator_tuned = [False]


def _tune_host_allocator():
    """Keep large host blocks in glibc's heap for reuse and stagger large arrays' offsets
    (see the module docstring)."""
    _allocator_tuned[0] = True
    how = os.environ.get("MXRS_HOST_ALLOCATOR", "staggered")
    if how == "default":
        return
    if not sys.platform.startswith("linux"):
        return
    try:
        libc = ctypes.CDLL("libc.so.6")
        mallopt = libc.mallopt
    except (OSError, AttributeError):  # not glibc
        return
    mallopt(_M_MMAP_THRESHOLD, 32 * 1024 * 1024)  # glibc's largest
    mallopt(_M_MMAP_MAX, 0)  # and larger blocks from the heap too
    mallopt(_M_TRIM_THRESHOLD, 1024 * 1024 * 1024)
    mallopt(_M_TOP_PAD, 64 * 1024 * 1024)
    if how == "pooled":
        return
    from . import _native

    _native.stagger_host_arrays()


def backend_for(ctx):
    """Return the backend serving context ``ctx``.

    Raises
    ------
    ContextError
        For a GPU context without CuPy, without a CUDA driver, or past the last device.
    """
    global _cupy_backend
    if ctx.device_typeid != 2:
        if not _allocator_tuned[0]:
            _tune_host_allocator()
        return NUMPY
    try:
        import cupy
    except ImportError:
        raise ContextError(
            f"{ctx} needs CuPy, which is not installed: install mxrs[gpu] (cupy-cuda12x) on a "
            "machine with a CUDA GPU, or use mx.cpu()"
        ) from None
    try:
        count = int(cupy.cuda.runtime.getDeviceCount())
    except Exception as err:  # CuPy raises its own runtime error types without a driver
        raise ContextError(f"{ctx} is unavailable: CUDA reports {err}") from None
    if not 0 <= ctx.device_id < count:
        raise ContextError(f"{ctx} does not exist: {count} GPU(s) are visible")
    if _cupy_backend is None:
        _cupy_backend = _CupyBackend(cupy)
    return _cupy_backend
