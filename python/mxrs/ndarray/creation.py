"""Creating arrays, waiting for them, saving and loading them.

Float32 is the default element type everywhere, as in MXNet 1.x: ``array`` of a Python list or
of a NumPy array gives float32 unless ``dtype`` says otherwise (an NDArray source keeps its dtype).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from .. import _backend, _failure
from .._bfloat16 import check_backend
from ..context import Context, current_context
from . import _pending
from . import serialize as _serialize
from . import sparse as _sparse
from .ndarray import NDArray, _wrap, to_raw

if TYPE_CHECKING:
    from .._typing import CtxLike, DTypeLike, ShapeLike

__all__ = [
    "array",
    "zeros",
    "ones",
    "full",
    "empty",
    "arange",
    "zeros_like",
    "ones_like",
    "full_like",
    "eye",
    "linspace",
    "waitall",
    "save",
    "load",
]


def _dtype(dtype: DTypeLike | None, default: DTypeLike = np.float32) -> np.dtype:
    return np.dtype(default if dtype is None else dtype)


def _shape(shape: ShapeLike) -> tuple[int, ...]:
    if isinstance(shape, (int, np.integer)):
        return (int(shape),)
    return tuple(int(s) for s in shape)


def _ctx(ctx: CtxLike | None) -> Context:
    if ctx is None:
        return current_context()
    return ctx if isinstance(ctx, Context) else Context(ctx)


def _out(result: NDArray, out: NDArray | None) -> NDArray:
    if out is None:
        return result
    out[:] = result
    return out


def array(source_array: Any, ctx: CtxLike | None = None, dtype: DTypeLike | None = None) -> NDArray:
    """Create an array from a list, tuple, NumPy array, scalar or NDArray (a SciPy sparse
    matrix gives a ``CSRNDArray``).

    Parameters
    ----------
    source_array : array_like or NDArray
    ctx : Context, optional
        Defaults to the current context.
    dtype : str or numpy.dtype, optional
        Defaults to float32, or the source's dtype when it is an NDArray.

    Examples
    --------
    >>> mx.nd.array([1, 2, 3], ctx=mx.cpu(1))
    <BLANKLINE>
    [1. 2. 3.]
    <NDArray 3 @cpu(1)>
    """
    if type(source_array).__module__.startswith("scipy.sparse") and hasattr(source_array, "tocsr"):
        # a SciPy sparse matrix becomes a CSRNDArray, as in MXNet
        return _sparse.csr_matrix(source_array.tocsr(), ctx=ctx, dtype=dtype)
    ctx = _ctx(ctx)
    raw = to_raw(source_array, ctx, dtype)
    if isinstance(source_array, np.ndarray) and source_array.ndim == 0:
        raw = raw.reshape(())  # a 0-d NumPy array keeps its shape (), as in MXNet
    return _wrap(raw, ctx)


def _filled(
    fill: float | None, shape: ShapeLike, ctx: CtxLike | None, dtype: DTypeLike | None
) -> NDArray:
    ctx = _ctx(ctx)
    be = ctx.backend
    check_backend(be.xp, _dtype(dtype), "creating an array")
    with be.guard(ctx.device_id):
        if fill is None:
            data = be.xp.empty(_shape(shape), dtype=_dtype(dtype))
        else:
            data = be.xp.full(_shape(shape), fill, dtype=_dtype(dtype))
    return _wrap(data, ctx)


def zeros(
    shape: ShapeLike,
    ctx: CtxLike | None = None,
    dtype: DTypeLike | None = None,
    out: NDArray | None = None,
    **kwargs: Any,
) -> NDArray:
    """Return an array of zeros.

    Parameters
    ----------
    shape : int or tuple of int
    ctx : Context, optional
        Defaults to the current context.
    dtype : str or numpy.dtype, default float32
    out : NDArray, optional
        Array to fill instead of allocating.
    **kwargs
        ``stype``: ``'default'``, ``'row_sparse'`` or ``'csr'``, the storage type; a sparse
        one stores nothing.
    """
    stype = kwargs.pop("stype", None)
    if stype not in (None, "default"):
        return _out(_sparse.zeros(stype, shape, ctx, dtype), out)
    return _out(_filled(0, shape, ctx, dtype), out)


def ones(
    shape: ShapeLike,
    ctx: CtxLike | None = None,
    dtype: DTypeLike | None = None,
    out: NDArray | None = None,
    **kwargs: Any,
) -> NDArray:
    """Return an array of ones; parameters as :func:`zeros`."""
    return _out(_filled(1, shape, ctx, dtype), out)


def full(
    shape: ShapeLike,
    val: float,
    ctx: CtxLike | None = None,
    dtype: DTypeLike | None = None,
    out: NDArray | None = None,
) -> NDArray:
    """Return an array filled with ``val``; parameters as :func:`zeros`."""
    return _out(_filled(val, shape, ctx, dtype), out)


def empty(
    shape: ShapeLike,
    ctx: CtxLike | None = None,
    dtype: DTypeLike | None = None,
    stype: str | None = None,
) -> NDArray:
    """Return an uninitialised array; parameters as :func:`zeros`."""
    if stype not in (None, "default"):
        return _sparse.zeros(stype, shape, ctx, dtype)
    return _filled(None, shape, ctx, dtype)


def zeros_like(data: NDArray, out: NDArray | None = None, name: str | None = None) -> NDArray:
    """Return zeros with the shape, dtype and context of ``data`` (written into ``out`` if
    given; ``name`` is accepted as MXNet's operators accept it)."""
    return _out(data._filled_like(0), out)


def ones_like(data: NDArray, out: NDArray | None = None, name: str | None = None) -> NDArray:
    """Return ones with the shape, dtype and context of ``data`` (see :func:`zeros_like`)."""
    return _out(data._filled_like(1), out)


def full_like(data: NDArray, fill_value: float) -> NDArray:
    """Return ``fill_value`` with the shape, dtype and context of ``data``."""
    return data._filled_like(fill_value)


def arange(
    start: float,
    stop: float | None = None,
    step: float = 1.0,
    repeat: int = 1,
    infer_range: bool = False,
    ctx: CtxLike | None = None,
    dtype: DTypeLike | None = None,
) -> NDArray:
    """Return evenly spaced values in ``[start, stop)``, each repeated ``repeat`` times.

    Examples
    --------
    >>> mx.nd.arange(2, 6, 2, repeat=2).asnumpy()
    array([2., 2., 4., 4.], dtype=float32)
    """
    if stop is None:
        start, stop = 0, start
    host = np.arange(start, stop, step, dtype=np.float64).astype(_dtype(dtype))
    if repeat != 1:
        host = np.repeat(host, int(repeat))
    return array(host, ctx=ctx, dtype=host.dtype)


def eye(
    N: int, M: int = 0, k: int = 0, ctx: CtxLike | None = None, dtype: DTypeLike | None = None
) -> NDArray:
    """Return a 2-D array with ones on diagonal ``k`` (``M=0`` means ``M=N``)."""
    return array(np.eye(N, M or N, k), ctx=ctx, dtype=_dtype(dtype))


def linspace(
    start: float,
    stop: float,
    num: int,
    endpoint: bool = True,
    ctx: CtxLike | None = None,
    dtype: DTypeLike | None = None,
) -> NDArray:
    """Return ``num`` evenly spaced values from ``start`` to ``stop``."""
    return array(np.linspace(start, stop, num, endpoint=endpoint), ctx=ctx, dtype=_dtype(dtype))


def waitall() -> None:
    """Block until all pending computation on every device, and every KVStore request, finished.

    Raises the oldest error not reported yet: of a KVStore request, else of a computation (an
    operator's error kept on its outputs, see :mod:`mxrs._failure`; the others are then let go
    of, as MXNet's waitall does, and the message counts them).
    """
    _pending.settle_all()

    be = _backend._cupy_backend
    if be is not None:
        for i in range(be.xp.cuda.runtime.getDeviceCount()):
            be.synchronize(i)
    _failure.raise_unreported()


# ----------------------------------------------------------------- save / load
def save(
    fname: str | os.PathLike[str], data: NDArray | Sequence[NDArray] | dict[str, NDArray]
) -> None:
    """Save an NDArray, a list of NDArrays or a dict of str to NDArray to file ``fname``.

    The file is in Apache MXNet 1.x's binary NDArray format (what ``mx.nd.save`` and
    ``save_parameters`` write), so MXNet can load it; see :mod:`.serialize`.
    """
    _serialize.save(fname, data)


def load(
    fname: str | os.PathLike[str], ctx: CtxLike | None = None
) -> list[NDArray] | dict[str, NDArray]:
    """Load a list or a dict of NDArrays (on ``ctx``, default cpu) from file ``fname``.

    Reads files of :func:`save` and of MXNet's ``mx.nd.save``, and the ``.npz`` archives of
    earlier mxrs versions.

    Raises
    ------
    MXNetError
        When the file is truncated or not an NDArray file, or holds sparse arrays.
    """
    hosts = _serialize.load(fname)
    if isinstance(hosts, dict):
        return {k: array(v, ctx=ctx, dtype=v.dtype) for k, v in hosts.items()}
    return [array(v, ctx=ctx, dtype=v.dtype) for v in hosts]
