"""Making sparse arrays: ``row_sparse_array``, ``csr_matrix``, ``zeros``, ``empty``, ``array``
and ``cast_storage`` (``tostype``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

import numpy as np

from ...base import MXNetError
from ...context import Context, current_context
from ..core.transfer import move_data
from ..ndarray import NDArray, _wrap
from . import _storage as st
from ._arrays import (
    BaseSparseNDArray,
    CSRNDArray,
    RowSparseNDArray,
    empty_sparse,
    make_csr,
    make_rsp,
)

if TYPE_CHECKING:
    from ..._typing import CtxLike, DTypeLike

__all__ = ["row_sparse_array", "csr_matrix", "zeros", "empty", "array", "cast_storage"]

_STYPES = ("default", "row_sparse", "csr")


def _ctx(ctx: CtxLike | None) -> Context:
    if ctx is None:
        return current_context()
    return ctx if isinstance(ctx, Context) else Context(ctx)


def _is_shape(arg: Any) -> bool:
    return (
        isinstance(arg, tuple)
        and len(arg) > 0
        and all(isinstance(s, (int, np.integer)) for s in arg)
    )


def _default_dtype(src: Any, dtype: DTypeLike | None) -> np.dtype:
    """MXNet's rule: ``dtype`` if given, else an NDArray's or NumPy array's own, else float32."""
    if dtype is not None:
        return np.dtype(dtype)
    if isinstance(src, NDArray):
        return np.dtype(src.dtype)
    if isinstance(src, np.ndarray):
        return src.dtype
    return np.dtype(np.float32)


def _raw(src: Any, ctx: Context, dtype: Any) -> Any:
    """``src`` (NDArray, array_like) as a raw array of ``ctx`` with element type ``dtype``."""
    be = ctx.backend
    if isinstance(src, NDArray):
        return be.asarray(move_data(src._data, src._ctx, ctx), dtype, ctx.device_id)
    return be.asarray(np.asarray(src), dtype, ctx.device_id)


def _is_scipy(arg: Any) -> bool:
    return type(arg).__module__.startswith("scipy.sparse")


def cast_storage(data: NDArray, stype: str) -> NDArray:
    """Return ``data`` converted to storage type ``stype`` (a new array).

    Raises
    ------
    MXNetError
        For an unknown ``stype``, a non-2-D array to 'csr', or row_sparse <-> csr.
    """
    if stype not in _STYPES:
        raise MXNetError(f"unknown storage type {stype!r}; use one of {', '.join(_STYPES)}")
    if isinstance(data, BaseSparseNDArray):
        return data.tostype(stype)
    if stype == "default":
        return data.copy()
    ctx, be = data._ctx, data._ctx.backend
    dense = data._data
    with be.guard(ctx.device_id):
        if stype == "row_sparse":
            idx, vals = st.rsp_from_dense(be, dense)
            return make_rsp(idx, vals.copy(), dense.shape, ctx)
        vals, idx, ptr = st.csr_from_dense(be, dense)
        return make_csr(vals, idx, ptr, dense.shape, ctx)


def zeros(
    stype: str,
    shape: Any,
    ctx: CtxLike | None = None,
    dtype: DTypeLike | None = None,
    **kwargs: Any,
) -> NDArray:
    """Return an all-zero array of storage type ``stype`` (``'default'`` gives a dense one).

    Examples
    --------
    >>> mx.nd.sparse.zeros('row_sparse', (4, 3)).stype
    'row_sparse'
    """
    c = _ctx(ctx)
    dt = np.dtype(np.float32 if dtype is None else dtype)
    shape = (int(shape),) if isinstance(shape, (int, np.integer)) else tuple(int(s) for s in shape)
    be = c.backend
    with be.guard(c.device_id):
        if stype == "default":
            return _wrap(be.xp.zeros(shape, dt), c)
        return empty_sparse(stype, shape, c, dt, be.xp)


def empty(stype: str, shape: Any, ctx: CtxLike | None = None, dtype: DTypeLike | None = None):
    """Return an array of storage type ``stype`` with nothing stored (all zeros)."""
    return zeros(stype, shape, ctx, dtype)


def row_sparse_array(
    arg1: Any, shape: Any = None, ctx: CtxLike | None = None, dtype: DTypeLike | None = None
) -> RowSparseNDArray:
    """Make a row_sparse array.

    Parameters
    ----------
    arg1 : tuple or array_like
        ``(data, indices)``: the stored rows and their ids (sorted here if they are not;
        repeated ids are an error); or a shape ``(D0, D1, ...)`` for all zeros; or a dense
        array_like/NDArray, or a RowSparseNDArray to copy.
    shape : tuple of int, optional
        Needed with ``(data, indices)`` unless row ``max(indices)`` is the last one.
    ctx : Context, optional
    dtype : str or numpy.dtype, optional
        Defaults to the data's own dtype when it is an NDArray or NumPy array, else float32.

    Raises
    ------
    MXNetError
        For out-of-range or repeated row ids, or data whose rows do not fit the shape.
    """
    c = _ctx(ctx)
    if isinstance(arg1, RowSparseNDArray):
        out = arg1.copyto(c)
        return cast(RowSparseNDArray, out.astype(dtype) if dtype is not None else out)
    if _is_shape(arg1):
        return cast(RowSparseNDArray, zeros("row_sparse", arg1, c, dtype))
    if isinstance(arg1, tuple) and len(arg1) == 2:
        data, indices = arg1
        dt = _default_dtype(data, dtype)
        be = c.backend
        with be.guard(c.device_id):
            vals = _raw(data, c, dt)
            idx = _raw(indices, c, np.int64).reshape(-1)
            if vals.ndim == 0 or vals.shape[0] != idx.shape[0]:
                raise MXNetError(
                    f"row_sparse_array: {idx.shape[0]} indices for data of shape "
                    f"{tuple(vals.shape)}; data needs one row per index"
                )
            if shape is None:
                rows = int(idx.max()) + 1 if idx.shape[0] else 0
                shape = (rows,) + tuple(vals.shape[1:])
            shape = tuple(int(s) for s in shape)
            if idx.shape[0] > 1 and not bool((idx[1:] > idx[:-1]).all()):
                order = be.xp.argsort(idx, kind="stable") if be.xp is np else be.xp.argsort(idx)
                idx, vals = idx[order], vals[order]
                if bool((idx[1:] == idx[:-1]).any()):
                    raise MXNetError("row_sparse_array: repeated row ids in indices")
            st.check_rsp(be, idx, vals, shape)
            return make_rsp(idx, vals.copy(), shape, c)
    dense = arg1 if isinstance(arg1, NDArray) else None
    dt = _default_dtype(arg1, dtype)
    src = dense if dense is not None else np.asarray(arg1)
    return cast(RowSparseNDArray, cast_storage(_wrap(_raw(src, c, dt), c), "row_sparse"))


def csr_matrix(
    arg1: Any, shape: Any = None, ctx: CtxLike | None = None, dtype: DTypeLike | None = None
) -> CSRNDArray:
    """Make a CSR array.

    Parameters
    ----------
    arg1 : tuple, array_like or scipy.sparse matrix
        ``(data, indices, indptr)`` CSR components; ``(data, (row, col))`` coordinates
        (repeated coordinates add up); a shape ``(M, N)`` for all zeros; a dense 2-D
        array_like/NDArray; a ``scipy.sparse`` matrix; or a CSRNDArray to copy.
    shape : tuple of int, optional
        Inferred from the components when omitted.
    ctx : Context, optional
    dtype : str or numpy.dtype, optional
        Defaults to the data's own dtype when it is an NDArray or NumPy array, else float32.

    Raises
    ------
    MXNetError
        For inconsistent components (offsets, out-of-range column ids).
    """
    c = _ctx(ctx)
    be = c.backend
    if isinstance(arg1, CSRNDArray):
        out = arg1.copyto(c)
        return cast(CSRNDArray, out.astype(dtype) if dtype is not None else out)
    if _is_shape(arg1):
        if len(arg1) != 2:
            raise MXNetError(f"csr_matrix: a csr array is 2-dimensional, not of shape {arg1}")
        return cast(CSRNDArray, zeros("csr", arg1, c, dtype))
    if _is_scipy(arg1):
        m = arg1.tocsr()
        m.sum_duplicates()
        m.sort_indices()
        dt = np.dtype(m.dtype if dtype is None else dtype)
        return _from_components(c, m.data.astype(dt), m.indices, m.indptr, m.shape)
    if isinstance(arg1, tuple) and len(arg1) == 3:
        data, indices, indptr = arg1
        dt = _default_dtype(data, dtype)
        with be.guard(c.device_id):
            vals = _raw(data, c, dt).reshape(-1)
            idx = _raw(indices, c, np.int64).reshape(-1)
            ptr = _raw(indptr, c, np.int64).reshape(-1)
        if shape is None:
            cols = int(idx.max()) + 1 if idx.shape[0] else 0
            shape = (ptr.shape[0] - 1, cols)
        return _from_components(c, vals, idx, ptr, shape)
    if isinstance(arg1, tuple) and len(arg1) == 2 and isinstance(arg1[1], tuple):
        data, (row, col) = arg1
        dt = _default_dtype(data, dtype)
        cvals, crows, ccols = (np.asarray(_host(x)) for x in (data, row, col))
        if shape is None:
            shape = tuple(int(x.max()) + 1 if x.size else 0 for x in (crows, ccols))
        dense = np.zeros(tuple(shape), dt)
        np.add.at(dense, (crows.astype(np.int64), ccols.astype(np.int64)), cvals.astype(dt))
        return cast(CSRNDArray, cast_storage(_wrap(be.asarray(dense, dt, c.device_id), c), "csr"))
    dt = _default_dtype(arg1, dtype)
    src = arg1 if isinstance(arg1, NDArray) else np.asarray(arg1)
    return cast(CSRNDArray, cast_storage(_wrap(_raw(src, c, dt), c), "csr"))


def _host(x: Any) -> Any:
    return x.asnumpy() if isinstance(x, NDArray) else x


def _from_components(c: Context, vals: Any, idx: Any, ptr: Any, shape: Any) -> CSRNDArray:
    be = c.backend
    with be.guard(c.device_id):
        vals, idx, ptr = (be.asarray(a, a.dtype, c.device_id) for a in (vals, idx, ptr))
        shape = tuple(int(s) for s in shape)
        st.check_csr(be, vals, idx.astype(np.int64), ptr.astype(np.int64), shape)
        return make_csr(vals.copy(), idx.astype(np.int64), ptr.astype(np.int64), shape, c)


def array(source_array: Any, ctx: CtxLike | None = None, dtype: DTypeLike | None = None):
    """Make a sparse array from a sparse NDArray or a ``scipy.sparse`` matrix (CSR)."""
    if isinstance(source_array, BaseSparseNDArray):
        out = source_array.copyto(_ctx(ctx))
        return out.astype(dtype) if dtype is not None else out
    if _is_scipy(source_array):
        return csr_matrix(source_array, ctx=ctx, dtype=dtype)
    raise MXNetError(
        f"sparse.array takes a sparse NDArray or a scipy.sparse matrix, "
        f"not {type(source_array).__name__}"
    )
