"""Conversions between dense raw arrays and the sparse formats' components.

Row-sparse: ``indices`` (int64, strictly increasing row ids) and ``values`` (one row each).
CSR: ``values`` and ``indices`` (int64 column ids, increasing within a row) of the non-zeros,
row by row, and ``indptr`` (int64, ``rows + 1`` offsets). Every function here takes the
backend ``be`` of the arrays' library (NumPy or CuPy) and works on raw arrays only.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..._sparse_rows import lookup
from ...base import MXNetError

__all__ = [
    "rsp_from_dense",
    "rsp_to_dense",
    "rsp_rows",
    "csr_from_dense",
    "csr_to_dense",
    "csr_rows",
    "check_rsp",
    "check_csr",
]


def rsp_from_dense(be: Any, dense: Any) -> tuple[Any, Any]:
    """The rows of ``dense`` holding a non-zero: ``(indices, values)``."""
    xp = be.xp
    if dense.ndim == 0:
        raise MXNetError("a row_sparse array needs at least one dimension")
    n = dense.shape[0]
    flat = dense.reshape(n, -1)
    keep = xp.flatnonzero((flat != 0).any(axis=1)) if flat.shape[1] else xp.zeros(0, np.int64)
    idx = keep.astype(np.int64, copy=False)
    return idx, dense[idx]


def rsp_to_dense(be: Any, indices: Any, values: Any, shape: tuple[int, ...]) -> Any:
    """A new dense array of ``shape`` with ``values`` in rows ``indices``, zeros elsewhere."""
    out = be.xp.zeros(shape, values.dtype)
    if indices.shape[0]:
        out[indices] = values
    return out


def rsp_rows(be: Any, indices: Any, values: Any, ids: Any) -> Any:
    """Rows ``ids`` (int64, any order) of a row-sparse array as a dense block; rows it does not
    store are zeros."""
    xp = be.xp
    if not (indices.shape[0] and ids.shape[0]):
        return xp.zeros((ids.shape[0],) + tuple(values.shape[1:]), values.dtype)
    pos = xp.minimum(lookup(xp, indices, ids), indices.shape[0] - 1)
    out = values[pos]
    absent = indices[pos] != ids
    if bool(absent.any()):
        out[absent] = 0
    return out


def csr_from_dense(be: Any, dense: Any) -> tuple[Any, Any, Any]:
    """The non-zeros of 2-D ``dense`` in CSR form: ``(values, indices, indptr)``."""
    xp = be.xp
    if dense.ndim != 2:
        raise MXNetError(f"a csr array is 2-dimensional, not of shape {dense.shape}")
    rows, cols = xp.nonzero(dense)
    counts = xp.bincount(rows, minlength=dense.shape[0]) if rows.size else None
    indptr = xp.zeros(dense.shape[0] + 1, np.int64)
    if counts is not None:
        xp.cumsum(counts, out=indptr[1:])
    return dense[rows, cols], cols.astype(np.int64, copy=False), indptr


def csr_rows(be: Any, indptr: Any) -> Any:
    """The row id of every stored element of a CSR array with offsets ``indptr``."""
    xp = be.xp
    counts = xp.diff(indptr)
    return xp.repeat(xp.arange(indptr.shape[0] - 1, dtype=np.int64), counts)


def csr_to_dense(be: Any, values: Any, indices: Any, indptr: Any, shape: tuple[int, ...]) -> Any:
    """A new dense 2-D array of ``shape`` from CSR components (repeated entries add up)."""
    out = be.xp.zeros(shape, values.dtype)
    if values.shape[0]:
        be.scatter_add(out, (csr_rows(be, indptr), indices), values)
    return out


def check_rsp(be: Any, indices: Any, values: Any, shape: tuple[int, ...]) -> None:
    """Raise MXNetError unless the components form a valid ``shape`` row-sparse array."""
    if indices.ndim != 1:
        raise MXNetError(f"row_sparse indices must be 1-dimensional, got shape {indices.shape}")
    if tuple(values.shape) != (indices.shape[0],) + tuple(shape[1:]):
        raise MXNetError(
            f"row_sparse data of shape {tuple(values.shape)} does not fit {indices.shape[0]} "
            f"indices of an array of shape {tuple(shape)}"
        )
    if indices.shape[0]:
        lo, hi = int(indices.min()), int(indices.max())
        if lo < 0 or hi >= shape[0]:
            bad = lo if lo < 0 else hi
            raise MXNetError(
                f"row_sparse index {bad} is out of range for an array of {shape[0]} rows"
            )
        if indices.shape[0] > 1 and not bool((indices[1:] > indices[:-1]).all()):
            raise MXNetError("row_sparse indices must be sorted in increasing order, unique")


def check_csr(be: Any, values: Any, indices: Any, indptr: Any, shape: tuple[int, ...]) -> None:
    """Raise MXNetError unless the components form a valid ``shape`` CSR array."""
    if len(shape) != 2:
        raise MXNetError(f"a csr array is 2-dimensional, not of shape {tuple(shape)}")
    if indptr.ndim != 1 or indptr.shape[0] != shape[0] + 1:
        raise MXNetError(
            f"csr indptr must hold rows + 1 = {shape[0] + 1} offsets, got {indptr.shape[0]}"
        )
    if values.shape != indices.shape or values.ndim != 1:
        raise MXNetError(
            f"csr data and indices must be 1-D of one length, got {values.shape} "
            f"and {indices.shape}"
        )
    if int(indptr[0]) != 0 or int(indptr[-1]) != indices.shape[0]:
        raise MXNetError(
            f"csr indptr must run from 0 to the number of stored elements ({indices.shape[0]})"
        )
    if indptr.shape[0] > 1 and bool((indptr[1:] < indptr[:-1]).any()):
        raise MXNetError("csr indptr must not decrease")
    if indices.shape[0]:
        lo, hi = int(indices.min()), int(indices.max())
        if lo < 0 or hi >= shape[1]:
            bad = lo if lo < 0 else hi
            raise MXNetError(f"csr column index {bad} is out of range for {shape[1]} columns")
