"""Row-sparse values in raw arrays: what a sparse gradient is while autograd carries it.

An embedding looked up with ``sparse_grad=True`` (or a weight multiplied by a CSR matrix) gets a
gradient that is zero outside the rows the batch touched. Its op's backward returns a
:class:`SparseRows`: the touched rows' ids and values, never a table-sized dense array. The tape
adds gradients with :func:`add_grads` (two sparse ones merge their rows; with a dense one the
result is dense) and the variable's ``.grad`` receives it as a ``row_sparse`` array, or
scattered into a dense one.

This module sits below autograd and the NDArray classes and knows only raw NumPy/CuPy arrays.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from . import _cuda_float, _threaded

__all__ = ["SparseRows", "add_grads", "as_dense", "lookup", "sum_rows", "unique_ids"]


class SparseRows:
    """Rows ``indices`` (sorted, unique, int64) of an array of ``shape`` hold ``values``.

    ``values`` has shape ``(len(indices),) + shape[1:]``; every other row is zero. ``be`` is the
    backend (``mxrs._backend``) of the arrays' library.
    """

    __slots__ = ("indices", "values", "shape", "be")
    __array_ufunc__ = None  # NumPy defers ``dense + SparseRows`` to us

    def __init__(self, indices: Any, values: Any, shape: tuple[int, ...], be: Any) -> None:
        self.indices = indices
        self.values = values
        self.shape = tuple(shape)
        self.be = be

    @property
    def dtype(self) -> Any:
        """The element type of the values."""
        return self.values.dtype

    def dense(self) -> Any:
        """A new dense array of ``shape`` holding these rows."""
        out = self.be.xp.zeros(self.shape, self.values.dtype)
        out[self.indices] = self.values
        return out

    def add_into(self, target: Any) -> None:
        """``target += self`` for a dense raw array ``target`` of ``shape``."""
        target[self.indices] += self.values.astype(target.dtype, copy=False)

    def __add__(self, other: Any) -> Any:
        return add_grads(self, other)

    __radd__ = __add__


def unique_ids(xp: Any, ids: Any) -> Any:
    """The distinct values of 1-D ``ids``, increasing (a sort and a mask: much cheaper than
    ``xp.unique``'s hashing for the ids of a batch)."""
    ids = xp.sort(ids)
    if ids.shape[0] < 2:
        return ids
    keep = xp.empty(ids.shape[0], dtype=bool)
    keep[0] = True
    xp.not_equal(ids[1:], ids[:-1], out=keep[1:])
    return ids[keep]


def lookup(xp: Any, table: Any, ids: Any) -> Any:
    """``xp.searchsorted(table, ids)`` for increasing ``table``, by searching the ids in sorted
    order (a search in order stays in cache; scattered ones miss at every step)."""
    order = xp.argsort(ids)
    pos = xp.empty(ids.shape[0], dtype=np.int64)
    pos[order] = xp.searchsorted(table, ids[order])
    return pos


def sum_rows(be: Any, indices: Any, values: Any) -> tuple[Any, Any]:
    """Sum the rows of ``values`` that share an id: ``(unique sorted ids, summed rows)``.

    ``indices`` is a 1-D integer array (any order, repeats allowed), ``values`` has one row per
    id. Ids already strictly increasing are returned as they are (no copy of the values).
    """
    xp = be.xp
    indices = indices.astype(np.int64, copy=False).reshape(-1)
    n = indices.shape[0]
    if n < 2 or bool((indices[1:] > indices[:-1]).all()):
        return indices, values
    # Sort once, keep the first row of each id and add the repeats onto it: a gather of n rows
    # plus a scatter of the repeats only, far cheaper than scattering all n rows. (Repeats are
    # added in the order the sort leaves them.)
    order = xp.argsort(indices)
    ids = indices[order]
    first = xp.empty(n, dtype=bool)
    first[0] = True
    xp.not_equal(ids[1:], ids[:-1], out=first[1:])
    uniq = ids[first]
    out = values[order[first]]
    if uniq.shape[0] < n:
        repeat = ~first
        group = xp.cumsum(first) - 1
        be.scatter_add(out, group[repeat], values[order[repeat]])
    return uniq, out


def _merge(a: SparseRows, b: SparseRows) -> SparseRows:
    if a.shape != b.shape:
        raise ValueError(f"cannot add row-sparse gradients of shapes {a.shape} and {b.shape}")
    xp = a.be.xp
    dtype = np.result_type(a.values.dtype, b.values.dtype)
    idx = xp.concatenate([a.indices, b.indices])
    vals = xp.concatenate([a.values.astype(dtype, copy=False), b.values.astype(dtype, copy=False)])
    uniq, summed = sum_rows(a.be, idx, vals)
    return SparseRows(uniq, summed, a.shape, a.be)


def add_grads(a: Any, b: Any) -> Any:
    """``a + b`` for gradients that may be :class:`SparseRows` or dense raw arrays."""
    sa, sb = type(a) is SparseRows, type(b) is SparseRows
    if sa and sb:
        return _merge(a, b)
    if sa:
        out = b.copy()
        a.add_into(out)
        return out
    if sb:
        out = a.copy()
        b.add_into(out)
        return out
    return _threaded.add(a, b) if isinstance(a, np.ndarray) else _cuda_float.add(a, b)


def as_dense(g: Any) -> Any:
    """``g`` as a dense raw array (a :class:`SparseRows` is scattered into zeros)."""
    return g.dense() if type(g) is SparseRows else g
