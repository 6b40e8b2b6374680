"""Comparing arrays with tolerances that follow their dtypes, random arrays and shapes
(dense and sparse), the default test context and temporary environment variables."""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator, Mapping
from typing import Any

import numpy as np

from .. import ndarray as nd
from ..context import Context, current_context
from ..ndarray import NDArray, array

__all__ = [
    "default_context",
    "set_default_context",
    "effective_dtype",
    "almost_equal",
    "assert_almost_equal",
    "assert_allclose",
    "same",
    "assert_exception",
    "random_arrays",
    "rand_shape_2d",
    "rand_shape_3d",
    "rand_shape_nd",
    "rand_ndarray",
    "rand_sparse_ndarray",
    "create_sparse_array",
    "environment",
    "discard_stderr",
    "compare_ndarray_tuple",
]

_default_ctx: Context | None = None

#: Relative and absolute tolerances by dtype when a comparison names none (the larger of the
#: two arrays' wins): float16 is compared loosely, integers and booleans exactly.
_RTOL = {np.dtype(np.float16): 1e-2, np.dtype(np.float32): 1e-4, np.dtype(np.float64): 1e-5}
_ATOL = {np.dtype(np.float16): 1e-1, np.dtype(np.float32): 1e-3, np.dtype(np.float64): 1e-20}


def default_context() -> Context:
    """The context tests create arrays on: the one :func:`set_default_context` set, else the
    current context (``cpu(0)`` outside any ``with ctx:`` block)."""
    return _default_ctx if _default_ctx is not None else current_context()


def set_default_context(ctx: Context | None) -> None:
    """Make ``ctx`` what :func:`default_context` returns (None: the current context again)."""
    global _default_ctx
    _default_ctx = ctx


def effective_dtype(dat: Any) -> np.dtype:
    """The precision ``dat``'s values were computed in, for choosing comparison tolerances:
    float16 for float32 data on a GPU of compute capability 8.0 or later, where matrix
    products and convolutions round their inputs to TF32 (unless ``MXRS_CUDNN_TF32=0`` or
    ``NVIDIA_TF32_OVERRIDE=0``); otherwise ``dat``'s own dtype."""
    dtype = np.dtype(dat.dtype)
    ctx = getattr(dat, "ctx", None)
    if dtype != np.float32 or ctx is None or ctx.device_type != "gpu":
        return dtype
    off = ("0", "false", "no")
    if os.environ.get("MXRS_CUDNN_TF32", "1").strip() in off:
        return dtype
    if os.environ.get("NVIDIA_TF32_OVERRIDE") == "0":
        return dtype
    try:
        import cupy

        major = int(cupy.cuda.Device(ctx.device_id).compute_capability) // 10
    except Exception:  # no CuPy or no such device: nothing rounds to TF32
        return dtype
    return np.dtype(np.float16) if major >= 8 else dtype


def _numpy(a: Any) -> np.ndarray:
    if isinstance(a, NDArray):
        return a.asnumpy()
    return np.asarray(a)


def _widened(a: np.ndarray) -> np.ndarray:
    """float16 as float32 (exact), as NumPy compares half floats many times slower."""
    return a.astype(np.float32) if a.dtype == np.float16 else a


def _tolerances(a: np.ndarray, b: np.ndarray, rtol: float | None, atol: float | None):
    def pick(table: dict, given: float | None) -> float:
        if given is not None:
            return given
        return max(table.get(a.dtype, 0.0), table.get(b.dtype, 0.0))

    return pick(_RTOL, rtol), pick(_ATOL, atol)


def almost_equal(
    a: Any,
    b: Any,
    rtol: float | None = None,
    atol: float | None = None,
    equal_nan: bool = False,
    use_broadcast: bool = True,
) -> bool:
    """Whether every element of ``a`` and ``b`` (NDArrays, NumPy arrays or numbers) satisfies
    ``|a - b| <= atol + rtol * |b|``; ``rtol`` defaults to 1e-5 and ``atol`` to 1e-20."""
    x, y = _numpy(a), _numpy(b)
    if not use_broadcast and x.shape != y.shape:
        return False
    rtol = 1e-5 if rtol is None else rtol
    atol = 1e-20 if atol is None else atol
    return bool(np.allclose(_widened(x), _widened(y), rtol=rtol, atol=atol, equal_nan=equal_nan))


def assert_almost_equal(
    a: Any,
    b: Any,
    rtol: float | None = None,
    atol: float | None = None,
    names: tuple[str, str] = ("a", "b"),
    equal_nan: bool = False,
    use_broadcast: bool = True,
    mismatches: tuple[int, int] = (10, 10),
) -> None:
    """Raise ``AssertionError`` unless ``a`` and ``b`` are equal within the tolerances (by
    default those of their dtypes); the message gives the worst element and a few others."""
    x, y = _numpy(a), _numpy(b)
    if not use_broadcast and x.shape != y.shape:
        raise AssertionError(f"shapes differ: {names[0]} {x.shape}, {names[1]} {y.shape}")
    rtol, atol = _tolerances(x, y, rtol, atol)
    if np.allclose(_widened(x), _widened(y), rtol=rtol, atol=atol, equal_nan=equal_nan):
        return
    x64, y64 = np.broadcast_arrays(x.astype(np.float64), y.astype(np.float64))
    close = np.isclose(x64, y64, rtol=rtol, atol=atol, equal_nan=equal_nan)
    with np.errstate(invalid="ignore", divide="ignore"):
        excess = np.abs(x64 - y64) / (atol + rtol * np.abs(y64))
    excess[np.isnan(excess)] = np.inf
    excess[close] = 0
    worst = np.unravel_index(int(np.argmax(excess)), excess.shape)
    bad = np.argwhere(~close)[: mismatches[0]]
    shown = "; ".join(
        f"{tuple(int(i) for i in at)}: {x64[tuple(at)]!r} vs {y64[tuple(at)]!r}" for at in bad
    )
    raise AssertionError(
        f"{names[0]} and {names[1]} differ at {int((~close).sum())} of {close.size} elements "
        f"(rtol={rtol}, atol={atol}); worst at {tuple(int(i) for i in worst)}: "
        f"{names[0]}={x64[worst]!r}, {names[1]}={y64[worst]!r}; first ones: {shown}"
    )


def assert_allclose(
    a: Any, b: Any, rtol: float = 1e-07, atol: float = 0, equal_nan: bool = True
) -> None:
    """:func:`assert_almost_equal` with NumPy's ``assert_allclose`` defaults (``rtol=1e-7``,
    ``atol=0``, NaNs equal)."""
    assert_almost_equal(a, b, rtol=rtol, atol=atol, equal_nan=equal_nan)


def same(a: Any, b: Any) -> bool:
    """Whether ``a`` and ``b`` have the same shape and exactly the same elements."""
    return bool(np.array_equal(_numpy(a), _numpy(b)))


def assert_exception(f, exception_type: type[BaseException], *args, **kwargs) -> None:
    """Raise ``AssertionError`` unless ``f(*args, **kwargs)`` raises ``exception_type``."""
    try:
        f(*args, **kwargs)
    except exception_type:
        return
    raise AssertionError(f"{getattr(f, '__name__', f)} did not raise {exception_type.__name__}")


def random_arrays(*shapes) -> np.ndarray | list[np.ndarray]:
    """Standard-normal float32 NumPy arrays of ``shapes`` (one array for one shape)."""
    arrays = [np.array(np.random.randn(*s), dtype=np.float32) for s in shapes]
    return arrays[0] if len(arrays) == 1 else arrays


def rand_shape_2d(dim0: int = 10, dim1: int = 10) -> tuple[int, int]:
    """A random 2-d shape with sides in 1..dim0 and 1..dim1."""
    return int(np.random.randint(1, dim0 + 1)), int(np.random.randint(1, dim1 + 1))


def rand_shape_3d(dim0: int = 10, dim1: int = 10, dim2: int = 10) -> tuple[int, int, int]:
    """A random 3-d shape with sides in 1..dim0, 1..dim1 and 1..dim2."""
    return rand_shape_2d(dim0, dim1) + (int(np.random.randint(1, dim2 + 1)),)


def rand_shape_nd(num_dim: int, dim: int = 10) -> tuple[int, ...]:
    """A random ``num_dim``-d shape with every side in 1..dim."""
    return tuple(int(s) for s in np.random.randint(1, dim + 1, size=num_dim))


def rand_ndarray(
    shape,
    stype: str = "default",
    density: float | None = None,
    dtype=None,
    modifier_func=None,
    shuffle_csr_indices: bool = False,
    distribution=None,
    ctx: Context | None = None,
) -> NDArray:
    """A random NDArray of ``shape`` and storage type ``stype`` on ``ctx`` (default:
    :func:`default_context`): dense ones are standard normal (``modifier_func`` applied to each
    element if given); sparse ones come from :func:`rand_sparse_ndarray`."""
    ctx = ctx or default_context()
    if stype != "default":
        arr, _ = rand_sparse_ndarray(
            shape,
            stype,
            density=density,
            dtype=dtype,
            distribution=distribution,
            modifier_func=modifier_func,
            shuffle_csr_indices=shuffle_csr_indices,
            ctx=ctx,
        )
        return arr
    values = np.random.randn(*shape) if len(shape) else np.array(np.random.randn())
    if modifier_func is not None:
        values = np.vectorize(modifier_func)(values)
    return array(values, ctx=ctx, dtype=dtype if dtype is not None else np.float32)


def rand_sparse_ndarray(
    shape,
    stype: str,
    density: float | None = None,
    dtype=None,
    distribution: str | None = None,
    data_init: float | None = None,
    rsp_indices=None,
    modifier_func=None,
    shuffle_csr_indices: bool = False,
    ctx: Context | None = None,
):
    """A random sparse array and its parts, as MXNet's helper of the same name gives them.

    row_sparse: each row is stored with probability ``density`` (random in [0, 1) when None),
    or the rows ``rsp_indices``; returns ``(array, (values, indices))``. csr (2-D): each element
    is stored with probability ``density`` (``distribution='powerlaw'``: row i holds about
    twice row i-1's count); returns ``(array, (indptr, indices, values))``. Values are uniform
    in [0, 1), or ``data_init``; ``modifier_func`` is applied to each.
    """
    ctx = ctx or default_context()
    dtype = np.dtype(np.float32 if dtype is None else dtype)
    density = float(np.random.rand()) if density is None else float(density)
    if not 0.0 <= density <= 1.0:
        raise ValueError(f"density must be within [0, 1], got {density}")

    def fill(n):
        vals = np.full(n, data_init, dtype) if data_init is not None else np.random.rand(*n)
        if modifier_func is not None and np.size(vals):
            vals = np.vectorize(modifier_func)(vals)
        return np.asarray(vals, dtype)

    if stype == "row_sparse":
        if rsp_indices is not None:
            indices = np.sort(np.asarray(rsp_indices, np.int64))
        else:
            indices = np.flatnonzero(np.random.rand(shape[0]) < density).astype(np.int64)
        values = fill((len(indices),) + tuple(shape[1:]))
        arr = nd.sparse.row_sparse_array((values, indices), shape=shape, ctx=ctx, dtype=dtype)
        return arr, (values, indices)
    if stype == "csr":
        if len(shape) != 2:
            raise ValueError(f"a csr array is 2-dimensional, not of shape {tuple(shape)}")
        if distribution == "powerlaw":
            mask = np.zeros(shape, bool)
            left, per_row = int(round(density * shape[0] * shape[1])), 1
            for r in range(shape[0]):
                k = min(per_row, left, shape[1])
                mask[r, :k] = True
                left -= k
                per_row *= 2
        elif distribution in (None, "uniform"):
            mask = np.random.rand(*shape) < density
        else:
            raise ValueError(f"unknown distribution {distribution!r}; use 'uniform' or 'powerlaw'")
        if shuffle_csr_indices:
            for r in range(shape[0]):
                mask[r] = mask[r][np.random.permutation(shape[1])]
        rows, cols = np.nonzero(mask)
        values = fill((len(rows),))
        indptr = np.concatenate([[0], np.cumsum(np.bincount(rows, minlength=shape[0]))])
        csr = nd.sparse.csr_matrix((values, cols, indptr), shape=shape, ctx=ctx, dtype=dtype)
        return csr, (indptr.astype(np.int64), cols.astype(np.int64), values)
    raise ValueError(f"unknown storage type {stype!r}; use 'row_sparse' or 'csr'")


def create_sparse_array(
    shape,
    stype: str,
    data_init: float | None = None,
    rsp_indices=None,
    dtype=None,
    modifier_func=None,
    density: float = 0.5,
    shuffle_csr_indices: bool = False,
):
    """A random sparse array of ``stype`` (see :func:`rand_sparse_ndarray`), without parts."""
    arr, _ = rand_sparse_ndarray(
        shape,
        stype,
        density=density,
        dtype=dtype,
        data_init=data_init,
        rsp_indices=rsp_indices,
        modifier_func=modifier_func,
        shuffle_csr_indices=shuffle_csr_indices,
    )
    return arr


@contextlib.contextmanager
def environment(*args) -> Iterator[None]:
    """Set environment variables for the ``with`` block and restore them after: either one
    ``(name, value)`` pair or a dict of them; a value of None unsets the variable."""
    if len(args) == 2:
        changes: Mapping[str, str | None] = {args[0]: args[1]}
    elif len(args) == 1 and isinstance(args[0], Mapping):
        changes = args[0]
    else:
        raise ValueError("environment() takes a name and a value, or one dict of them")
    saved = {k: os.environ.get(k) for k in changes}
    try:
        for k, v in changes.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = str(v)
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


@contextlib.contextmanager
def discard_stderr() -> Iterator[None]:
    """Discard what this process writes to its standard error (file descriptor 2, so native
    code's output too) during the ``with`` block."""
    sys.stderr.flush()
    saved = os.dup(2)
    try:
        with open(os.devnull, "w") as devnull:
            os.dup2(devnull.fileno(), 2)
        yield
    finally:
        sys.stderr.flush()
        os.dup2(saved, 2)
        os.close(saved)


def compare_ndarray_tuple(t1, t2, rtol: float | None = None, atol: float | None = None) -> None:
    """Assert that two (nested) tuples or lists of arrays, or two arrays, are almost equal
    element by element; None matches only None."""
    if t1 is None or t2 is None:
        assert t1 is None and t2 is None, f"{t1!r} vs {t2!r}"
        return
    if isinstance(t1, tuple | list):
        assert isinstance(t2, tuple | list) and len(t1) == len(t2), f"{t1!r} vs {t2!r}"
        for a, b in zip(t1, t2, strict=True):
            compare_ndarray_tuple(a, b, rtol, atol)
        return
    assert_almost_equal(t1, t2, rtol=rtol, atol=atol)
