"""Comparing arrays with tolerances that follow their dtypes, random arrays and shapes
(dense and sparse), the default test context and temporary environment variables."""

from __future__ import annotations

import contextlib
import os
import sys
import types
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import numpy as np
import numpy.testing as npt

from .. import ndarray as nd
from ..context import Context, current_context
from ..ndarray import NDArray, array
from .reference import assign_each
from .tolerances import get_atol, get_etol, get_rtol, get_tols

__all__ = [
    "default_context",
    "set_default_context",
    "checkShapes",
    "locationError",
    "almost_equal",
    "assert_almost_equal",
    "assert_allclose",
    "assert_almost_equal_with_err",
    "assert_almost_equal_ignore_nan",
    "same",
    "same_array",
    "assert_exception",
    "random_arrays",
    "random_uniform_arrays",
    "random_sample",
    "rand_shape_2d",
    "rand_shape_3d",
    "rand_shape_nd",
    "rand_coord_2d",
    "rand_ndarray",
    "rand_sparse_ndarray",
    "create_sparse_array",
    "create_sparse_array_zd",
    "shuffle_csr_column_indices",
    "environment",
    "discard_stderr",
    "compare_ndarray_tuple",
]

_default_ctx: Context | None = None


def default_context() -> Context:
    """The context tests create arrays on: the one :func:`set_default_context` set, else the
    current context (``cpu(0)`` outside any ``with ctx:`` block)."""
    return _default_ctx if _default_ctx is not None else current_context()


def set_default_context(ctx: Context | None) -> None:
    """Make ``ctx`` what :func:`default_context` returns (None: the current context again)."""
    global _default_ctx
    _default_ctx = ctx


def _numpy(a: Any) -> np.ndarray:
    if isinstance(a, NDArray):
        return a.asnumpy()
    return np.asarray(a)


def _widened(a: np.ndarray) -> np.ndarray:
    """float16 as float32 (exact), as NumPy compares half floats many times slower."""
    return a.astype(np.float32) if a.dtype == np.float16 else a


def _shape(a: Any) -> tuple[int, ...]:
    return tuple(a.shape) if hasattr(a, "shape") else np.shape(a)


def checkShapes(a: Any, b: Any) -> None:  # noqa: N802 (MXNet's name)
    """Raise ``AssertionError`` (with both arrays in the message) unless ``a`` and ``b`` have
    the same shape."""
    if _shape(a) != _shape(b):
        raise AssertionError(
            npt.build_err_msg(
                [a, b], err_msg=f"a.shape = {_shape(a)} and b.shape = {_shape(b)} are not equal"
            )
        )


def locationError(a: Any, b: Any, index: Any, names: Sequence[str], maxError: bool = False) -> str:  # noqa: N802, N803 (MXNet's names)
    """The line an element mismatch is reported with:
    ``'Location of [maximum ]error: <index>, <name a>=<a[index]>, <name b>=<b[index]>'``.

    Parameters
    ----------
    a, b : numpy.ndarray
    index : tuple
        The element's index.
    names : (str, str)
    maxError : bool, default False
        Say "maximum error".
    """
    maximum = "maximum " if maxError else ""
    return "Location of %serror: %s, %s=%.8f, %s=%.8f" % (  # noqa: UP031
        maximum, str(index), names[0], a[index], names[1], b[index],
    )  # fmt: skip


def almost_equal(
    a: Any,
    b: Any,
    rtol: float | None = None,
    atol: float | None = None,
    equal_nan: bool = False,
    use_broadcast: bool = True,
) -> bool:
    """Whether every element of ``a`` and ``b`` (NDArrays, NumPy arrays or numbers) satisfies
    ``|a - b| <= atol + rtol * |b|``; ``rtol`` defaults to 1e-5 and ``atol`` to 1e-20.
    With ``use_broadcast=False`` different shapes raise ``AssertionError``."""
    if not use_broadcast:
        checkShapes(a, b)
    x, y = _numpy(a), _numpy(b)
    return bool(
        np.allclose(_widened(x), _widened(y), rtol=get_rtol(rtol), atol=get_atol(atol),
                    equal_nan=equal_nan)
    )  # fmt: skip


def _mismatch_message(x, y, rtol, atol, names, equal_nan, mismatches) -> str:
    """MXNet's report of a failed comparison (the largest violation, its place, the share of
    elements off), then the count, the worst element and the first ``mismatches[0]`` ones."""
    x64, y64 = np.broadcast_arrays(
        np.asarray(x).astype(np.float64), np.asarray(y).astype(np.float64)
    )
    close = np.isclose(x64, y64, rtol=rtol, atol=atol, equal_nan=equal_nan)
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        diff = np.where(np.equal(x64, y64), 0, np.abs(x64 - y64))
        excess = np.asarray(diff / (atol + rtol * np.abs(y64) + 1e-20))
    excess[np.isnan(excess)] = np.inf
    if equal_nan:
        excess[np.isnan(x64) & np.isnan(y64)] = 0
    worst = tuple(int(i) for i in np.unravel_index(int(np.argmax(excess)), excess.shape))
    rel, bad = float(excess[worst]), int((~close).sum())
    if worst:
        head = "Error %f exceeds tolerance rtol=%e, atol=%e (mismatch %f%%).\n%s" % (  # noqa: UP031
            rel, rtol, atol, 100 * bad / close.size,
            locationError(x64, y64, worst, names, maxError=True),
        )  # fmt: skip
    else:
        head = "Error %f exceeds tolerance rtol=%e, atol=%e." % (rel, rtol, atol)  # noqa: UP031
    shown = "; ".join(
        f"{tuple(int(i) for i in at)}: {x64[tuple(at)]!r} vs {y64[tuple(at)]!r}"
        for at in np.argwhere(~close)[: max(int(mismatches[0]), 0)]
    )
    detail = (
        f"{names[0]} and {names[1]} differ at {bad} of {close.size} elements "
        f"(rtol={rtol}, atol={atol}); worst at {worst}: {names[0]}={x64[worst]!r}, "
        f"{names[1]}={y64[worst]!r}; first ones: {shown}"
    )
    with np.printoptions(threshold=4, suppress=True):
        return npt.build_err_msg([x, y], err_msg=f"{head}\n{detail}", names=tuple(names))


def assert_almost_equal(
    a: Any,
    b: Any,
    rtol: Any = None,
    atol: Any = None,
    names: tuple[str, str] = ("a", "b"),
    equal_nan: bool = False,
    use_broadcast: bool = True,
    mismatches: tuple[int, int] = (10, 10),
) -> None:
    """Raise ``AssertionError`` unless ``a`` and ``b`` are equal within the tolerances.

    Parameters
    ----------
    a, b : NDArray, numpy.ndarray or number
    rtol, atol : float, dict of dtype to float, or None
        By default (and for dtypes a dict lacks) the larger of the two data's defaults
        (:func:`default_rtols`, :func:`default_atols`).
    names : (str, str)
        What the message calls ``a`` and ``b``.
    equal_nan : bool, default False
        NaNs in the same places compare equal.
    use_broadcast : bool, default True
        Compare arrays of broadcast-compatible shapes; False requires equal shapes.
    mismatches : (int, int), default (10, 10)
        How many mismatching elements the message lists.

    Boolean arrays are compared exactly. The message gives the largest violation
    ``|a - b| / (atol + rtol |b|)``, its place and the share of elements off.
    """
    if not use_broadcast:
        checkShapes(a, b)
    rtol, atol = get_tols(_with_dtype(a), _with_dtype(b), rtol, atol)
    x, y = _numpy(a), _numpy(b)
    if x.dtype == np.bool_ and y.dtype == np.bool_:
        np.testing.assert_equal(x, y)
        return
    if np.allclose(_widened(x), _widened(y), rtol=rtol, atol=atol, equal_nan=equal_nan):
        return
    raise AssertionError(_mismatch_message(x, y, rtol, atol, names, equal_nan, mismatches))


def _with_dtype(a: Any) -> Any:
    """NDArrays and NumPy arrays as they are (their context matters to the tolerance), other
    data as NumPy arrays."""
    return a if isinstance(a, NDArray | np.ndarray | np.generic) else np.asarray(a)


def assert_allclose(
    a: Any, b: Any, rtol: float = 1e-07, atol: float = 0, equal_nan: bool = True
) -> None:
    """:func:`assert_almost_equal` with NumPy's ``assert_allclose`` defaults (``rtol=1e-7``,
    ``atol=0``, NaNs equal)."""
    assert_almost_equal(a, b, rtol=rtol, atol=atol, equal_nan=equal_nan)


def assert_almost_equal_with_err(
    a: Any,
    b: Any,
    rtol: Any = None,
    atol: Any = None,
    etol: float | None = None,
    names: tuple[str, str] = ("a", "b"),
    equal_nan: bool = False,
    mismatches: tuple[int, int] = (10, 10),
) -> None:
    """:func:`assert_almost_equal` that lets a share of the elements differ.

    Parameters
    ----------
    a, b, rtol, atol, names, equal_nan, mismatches
        As for :func:`assert_almost_equal`.
    etol : float, optional
        The largest share of elements (0..1) allowed outside the tolerances; by default 0,
        which is :func:`assert_almost_equal` itself.

    Raises
    ------
    AssertionError
        If more than ``etol`` of the elements differ.
    """
    etol = get_etol(etol)
    if not etol > 0:
        assert_almost_equal(a, b, rtol=rtol, atol=atol, names=names, equal_nan=equal_nan)
        return
    rtol, atol = get_tols(_with_dtype(a), _with_dtype(b), rtol, atol)
    x, y = _numpy(a), _numpy(b)
    equals = np.isclose(_widened(x), _widened(y), rtol=rtol, atol=atol)
    err = 1 - np.count_nonzero(equals) / equals.size
    if err > etol:
        raise AssertionError(
            f"{err:.2%} of the elements differ, more than etol={etol}:\n"
            + _mismatch_message(x, y, rtol, atol, names, False, mismatches)
        )


def assert_almost_equal_ignore_nan(
    a: Any, b: Any, rtol: Any = None, atol: Any = None, names: tuple[str, str] = ("a", "b")
) -> None:
    """:func:`assert_almost_equal`, skipping the elements that are NaN in either array."""
    x, y = np.copy(_numpy(a)), np.copy(_numpy(b))
    nan = np.logical_or(np.isnan(x), np.isnan(y))
    x[nan] = 0
    y[nan] = 0
    assert_almost_equal(x, y, rtol, atol, names)


def same(a: Any, b: Any) -> bool:
    """Whether ``a`` and ``b`` have the same shape and exactly the same elements."""
    return bool(np.array_equal(_numpy(a), _numpy(b)))


def same_array(array1: NDArray, array2: NDArray) -> bool:
    """Whether two NDArrays share their memory: ``array1`` is incremented (and restored) and
    ``array2`` must follow."""
    array1[:] += 1
    if not same(array1.asnumpy(), array2.asnumpy()):
        array1[:] -= 1
        return False
    array1[:] -= 1
    return same(array1.asnumpy(), array2.asnumpy())


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


def random_uniform_arrays(*shapes, **kwargs) -> list[np.ndarray]:
    """Uniform NumPy arrays of ``shapes`` (always a list).

    Parameters
    ----------
    *shapes : tuple of int
    low : float, default 0.0
    high : float, default 1.0
    dtype : dtype, default float32

    Raises
    ------
    TypeError
        For another keyword argument.
    """
    low = kwargs.pop("low", 0.0)
    high = kwargs.pop("high", 1.0)
    dtype = kwargs.pop("dtype", np.float32)
    if kwargs:
        raise TypeError("Got unexpected argument/s : " + str(kwargs.keys()))
    return [np.random.uniform(low, high, size=s).astype(dtype) for s in shapes]


def random_sample(population: Any, k: int) -> Any:
    """``k`` elements of the sequence ``population`` in random order, without repeats (the
    first ``k`` of a shuffled copy).

    Raises
    ------
    AssertionError
        Unless ``0 <= k <= len(population)``.
    """
    if not 0 <= k <= len(population):
        raise AssertionError(f"random_sample: k={k} is not within [0, {len(population)}]")
    shuffled = population[:]
    np.random.shuffle(shuffled)
    return shuffled[0:k]


def rand_shape_2d(dim0: int = 10, dim1: int = 10, allow_zero_size: bool = False) -> tuple[int, int]:
    """A random 2-d shape with sides in 1..dim0 and 1..dim1 (from 0 with
    ``allow_zero_size``)."""
    low = 0 if allow_zero_size else 1
    return int(np.random.randint(low, dim0 + 1)), int(np.random.randint(low, dim1 + 1))


def rand_shape_3d(
    dim0: int = 10, dim1: int = 10, dim2: int = 10, allow_zero_size: bool = False
) -> tuple[int, int, int]:
    """A random 3-d shape with sides in 1..dim0, 1..dim1 and 1..dim2 (from 0 with
    ``allow_zero_size``)."""
    low = 0 if allow_zero_size else 1
    return rand_shape_2d(dim0, dim1, allow_zero_size) + (int(np.random.randint(low, dim2 + 1)),)


def rand_shape_nd(num_dim: int, dim: int = 10, allow_zero_size: bool = False) -> tuple[int, ...]:
    """A random ``num_dim``-d shape with every side in 1..dim (from 0 with
    ``allow_zero_size``)."""
    low = 0 if allow_zero_size else 1
    return tuple(int(s) for s in np.random.randint(low, dim + 1, size=num_dim))


def rand_coord_2d(x_low: int, x_high: int, y_low: int, y_high: int) -> tuple[Any, Any]:
    """A random point: ``x`` in ``[x_low, x_high)``, ``y`` in ``[y_low, y_high)`` (int64)."""
    x = np.random.randint(x_low, x_high, dtype=np.int64)
    y = np.random.randint(y_low, y_high, dtype=np.int64)
    return x, y


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
    twice row i-1's count); returns ``(array, (indptr, indices, values))``;
    ``shuffle_csr_indices`` leaves each row's column indices in random order. Values are
    uniform in [0, 1), or ``data_init``; ``modifier_func`` is applied to each.
    """
    ctx = ctx or default_context()
    dtype = np.dtype(np.float32 if dtype is None else dtype)
    density = float(np.random.rand()) if density is None else float(density)
    if not 0.0 <= density <= 1.0:
        raise ValueError(f"density must be within [0, 1], got {density}")

    def fill(n):
        vals = np.full(n, data_init, dtype) if data_init is not None else np.random.rand(*n)
        if modifier_func is not None and np.size(vals):
            vals = assign_each(np.asarray(vals), modifier_func)
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
        rows, cols = np.nonzero(mask)
        values = fill((len(rows),))
        indptr = np.concatenate([[0], np.cumsum(np.bincount(rows, minlength=shape[0]))])
        if shuffle_csr_indices:  # each row's column indices out of order, as CSR allows
            shuffle_csr_column_indices(types.SimpleNamespace(indptr=indptr, indices=cols))
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


def create_sparse_array_zd(
    shape,
    stype: str,
    density: float,
    data_init: float | None = None,
    rsp_indices=None,
    dtype=None,
    modifier_func=None,
    shuffle_csr_indices: bool = False,
):
    """:func:`create_sparse_array` where a row_sparse array stores exactly the rows
    ``rsp_indices`` (none when None: ``density`` is ignored for it); a csr one is drawn with
    ``density``."""
    if stype == "row_sparse":
        density = 0.0
        if rsp_indices is not None and len(rsp_indices) > shape[0]:
            raise AssertionError(f"{len(rsp_indices)} rows for an array of {shape[0]}")
    return create_sparse_array(
        shape,
        stype,
        data_init=data_init,
        rsp_indices=rsp_indices,
        dtype=dtype,
        modifier_func=modifier_func,
        density=density,
        shuffle_csr_indices=shuffle_csr_indices,
    )


def shuffle_csr_column_indices(csr: Any) -> None:
    """Shuffle, in place, the column indices within each row of a CSR matrix (anything with
    NumPy ``indptr`` and ``indices``, e.g. a ``scipy.sparse.csr_matrix``): its stored values
    move to other columns of their row and the indices come out of order, as CSR allows."""
    indptr = np.asarray(csr.indptr)
    for i in range(len(indptr) - 1):
        start, end = int(indptr[i]), int(indptr[i + 1])
        part = np.array(csr.indices[start:end])
        np.random.shuffle(part)
        csr.indices[start:end] = part


@contextlib.contextmanager
def environment(*args) -> Iterator[None]:
    """Set environment variables for the ``with`` block and restore them after (once queued
    work is done): either one ``(name, value)`` pair or a dict of them; a value of None unsets
    the variable."""
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
        nd.waitall()  # work still queued may read the variables
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
