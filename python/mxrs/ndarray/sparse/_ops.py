"""The operators of ``mx.nd.sparse`` that are not plain ``mx.nd`` ones with sparse rules:
``retain``, ``dot``, ``add_n``, ``elemwise_*``, ``sum``/``mean``, ``square_sum``."""

from __future__ import annotations

from typing import Any, cast

from ... import _sparse_rows as sr
from ...base import MXNetError
from .. import elementwise as ew
from .. import matmul as mm
from .. import reduce as rd
from ..ndarray import NDArray, _wrap
from ._arrays import BaseSparseNDArray, RowSparseNDArray, make_rsp
from ._create import cast_storage

__all__ = [
    "retain",
    "dot",
    "add_n",
    "elemwise_add",
    "elemwise_sub",
    "elemwise_mul",
    "add",
    "subtract",
    "multiply",
    "divide",
    "sum",
    "mean",
    "square_sum",
    "zeros_like",
]


def retain(data: RowSparseNDArray, indices: Any) -> RowSparseNDArray:
    """Return the rows of row_sparse ``data`` whose ids are in ``indices``; others become zero.

    Raises
    ------
    MXNetError
        When ``data`` is not row_sparse.
    """
    if not isinstance(data, RowSparseNDArray):
        raise MXNetError(f"retain takes a row_sparse array, not a {data.stype} one")
    return data.retain(indices)


def dot(
    lhs: NDArray,
    rhs: NDArray,
    transpose_a: bool = False,
    transpose_b: bool = False,
    forward_stype: str | None = None,
) -> NDArray:
    """Matrix product with sparse operands: ``dot(csr, dense)`` is dense, ``dot(csr.T, dense)``
    row_sparse (as MXNet gives them), other combinations dense; ``forward_stype`` forces the
    output's storage type."""
    out = mm.dot(lhs, rhs, transpose_a=transpose_a, transpose_b=transpose_b)
    if forward_stype is not None and out.stype != forward_stype:
        out = cast_storage(out, forward_stype)
    return out


def add_n(*args: NDArray) -> NDArray:
    """Sum of the arrays ``args``; row_sparse ones only are summed without densifying."""
    if args and all(isinstance(a, RowSparseNDArray) for a in args):
        be = args[0]._ctx.backend
        total: Any = None
        for a in cast("tuple[RowSparseNDArray, ...]", args):
            rows = sr.SparseRows(a._sp_idx, a._sp_vals, a._sp_shape, be)
            total = rows if total is None else sr.add_grads(total, rows)
        return make_rsp(total.indices, total.values.copy(), total.shape, args[0]._ctx)
    return ew.add_n(*args)


def elemwise_add(lhs: NDArray, rhs: NDArray) -> NDArray:
    """``lhs + rhs`` for arrays of one shape; two row_sparse or two csr arrays stay sparse."""
    return ew.add(lhs, rhs)


def elemwise_sub(lhs: NDArray, rhs: NDArray) -> NDArray:
    """``lhs - rhs`` for arrays of one shape; two row_sparse or two csr arrays stay sparse."""
    return ew.subtract(lhs, rhs)


def elemwise_mul(lhs: NDArray, rhs: NDArray) -> NDArray:
    """``lhs * rhs`` for arrays of one shape; a row_sparse operand keeps the result sparse."""
    return ew.multiply(lhs, rhs)


add = elemwise_add
subtract = elemwise_sub
multiply = elemwise_mul


def divide(lhs: Any, rhs: Any) -> NDArray:
    """``lhs / rhs``; a sparse array divided by a scalar stays sparse."""
    return ew.divide(lhs, rhs)


def sum(data: NDArray, axis: Any = None, keepdims: bool = False, **kwargs: Any) -> NDArray:
    """Sum of a (sparse) array's elements over ``axis``, from its stored values; dense result."""
    if isinstance(data, RowSparseNDArray) and axis in (0, (0,)) and not keepdims:
        xp = data._ctx.backend.xp
        total = data._sp_vals.sum(axis=0) if data._sp_idx.shape[0] else None
        if total is None:
            total = xp.zeros(data._sp_shape[1:], data._sp_vals.dtype)
        return _wrap(total.astype(data._sp_vals.dtype), data._ctx)
    return rd.sum(data, axis=axis, keepdims=keepdims, **kwargs)


def mean(data: NDArray, axis: Any = None, keepdims: bool = False, **kwargs: Any) -> NDArray:
    """Mean of a (sparse) array's elements over ``axis``, zeros included; dense result."""
    return rd.mean(data, axis=axis, keepdims=keepdims, **kwargs)


def square_sum(data: NDArray, axis: Any = None, keepdims: bool = False) -> NDArray:
    """Sum of squares over ``axis``, read from the stored values only (MXNet's
    ``_square_sum``); a row_sparse input summed over axis 1 gives a row_sparse result."""
    if not isinstance(data, BaseSparseNDArray):
        return rd.sum(data * data, axis=axis, keepdims=keepdims)
    ctx, be = data._ctx, data._ctx.backend
    vals = data._sp_vals
    with be.guard(ctx.device_id):
        if isinstance(data, RowSparseNDArray) and axis in (1, (1,), -1) and data.ndim == 2:
            sq = (vals * vals).sum(axis=1, keepdims=True)
            if keepdims:
                return make_rsp(data._sp_idx, sq, (data._sp_shape[0], 1), ctx)
            dense = be.xp.zeros(data._sp_shape[0], vals.dtype)
            dense[data._sp_idx] = sq[:, 0]
            return _wrap(dense, ctx)
        if axis is None:
            total = (vals * vals).sum().astype(vals.dtype).reshape(1)
            return _wrap(total, ctx)
    return rd.sum(_wrap(data._dense() ** 2, ctx), axis=axis, keepdims=keepdims)


def zeros_like(data: NDArray) -> NDArray:
    """Zeros of ``data``'s shape, dtype, context and storage type."""
    return data.zeros_like()
