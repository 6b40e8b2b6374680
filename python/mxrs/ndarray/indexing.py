"""Indexing: ``x[key]`` and ``x[key] = v``, take/Embedding, pick and one_hot.

Basic indexing (ints, slices, None, Ellipsis) returns a view whose gradient is written back into
the indexed region; advanced indexing with integer arrays (NDArrays, lists) gathers, and its
gradient scatter-adds, so repeated indices accumulate. An integer index that selects a single
element gives shape ``(1,)``, as MXNet 1.x does.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from .._sparse_rows import SparseRows, sum_rows
from ..base import MXNetError
from .core.array import ArrayCore, ArrayT
from .core.op import Op, apply, as_method, axis_index
from .core.transfer import move_data

if TYPE_CHECKING:
    from .._typing import DTypeLike

__all__ = ["getitem", "setitem", "take", "Embedding", "pick", "one_hot"]


def _is_basic(key):
    return all(k is None or k is Ellipsis or isinstance(k, (int, np.integer, slice)) for k in key)


def _convert_key(x, key):
    """Turn NDArrays and lists inside an index into integer arrays of ``x``'s library."""
    xp = x._ctx.backend.xp
    if not isinstance(key, tuple):
        key = (key,)
    out = []
    for k in key:
        if isinstance(k, ArrayCore):
            if k._ctx != x._ctx:
                raise MXNetError(f"index array on {k._ctx} for an array on {x._ctx}")
            k = k._data.astype(np.int64) if k._data.dtype.kind != "b" else k._data
        elif isinstance(k, (list, np.ndarray)):
            k = xp.asarray(np.asarray(k))
            if k.dtype.kind == "f":
                k = k.astype(np.int64)
        out.append(k)
    return tuple(out)


class _BasicIndex(Op):
    def forward(self, x, key):
        self.shape, self.dtype, self.key = x.shape, x.dtype, key
        y = x[key]
        self.yshape = y.shape
        return y if y.ndim else y.reshape(1)

    def backward(self, g):
        dx = self.xp.zeros(self.shape, self.dtype)
        dx[self.key] = g.reshape(self.yshape)
        return dx


class _AdvancedIndex(Op):
    def forward(self, x, key):
        self.shape, self.dtype, self.key = x.shape, x.dtype, key
        y = x[key]
        self.yshape = y.shape
        return y if y.ndim else y.reshape(1)

    def backward(self, g):
        dx = self.xp.zeros(self.shape, self.dtype)
        self.be.scatter_add(dx, self.key, g.reshape(self.yshape))
        return dx


def getitem(x: ArrayT, key: Any) -> ArrayT:
    """Return ``x[key]`` (recorded by autograd)."""
    key = _convert_key(x, key)
    op = _BasicIndex if _is_basic(key) else _AdvancedIndex
    return apply(op, (x,), key=key)


def setitem(x: ArrayT, key: Any, value: Any) -> None:
    """Write ``value`` (scalar, array_like or NDArray, broadcast as needed) into ``x[key]``.

    An NDArray value on another context is copied over, as ``copyto`` would.
    """
    key = _convert_key(x, key)
    if len(key) == 1:
        key = key[0]
    if isinstance(value, ArrayCore):
        if value._ctx != x._ctx:
            v = move_data(value._data, value._ctx, x._ctx)
        else:
            v = value._data
    elif isinstance(value, (np.ndarray, list, tuple)):
        be = x._ctx.backend
        v = be.asarray(value, x._data.dtype, x._ctx.device_id)
    else:
        v = value
    x._data[key] = v


def _int_index(xp, idx, n, mode):
    idx = idx.astype(np.int64) if idx.dtype.kind != "i" else idx
    if mode == "clip":
        return xp.clip(idx, 0, n - 1)
    if mode == "wrap":
        return idx % n
    if mode == "raise":
        if idx.size and (int(idx.min()) < -n or int(idx.max()) >= n):
            raise MXNetError(f"take: index out of range for an axis of length {n}")
        return idx
    raise MXNetError(f"unknown index mode {mode!r}")


class _Take(Op):
    def forward(self, a, indices, axis, mode):
        xp = self.xp
        idx = _int_index(xp, indices, a.shape[axis], mode)
        self.idx, self.axis, self.shape, self.dtype = idx, axis, a.shape, a.dtype
        return xp.take(a, idx, axis=axis)

    def backward(self, g):
        if not self.needs[0]:
            return None, None
        a, shape = self.axis, self.shape
        pre = int(np.prod(shape[:a], dtype=np.int64))
        post = int(np.prod(shape[a + 1 :], dtype=np.int64))
        dx = self.xp.zeros((pre, shape[a], post), self.dtype)
        g3 = g.reshape(pre, self.idx.size, post)
        if pre == 1:  # rows of a table (an embedding): sum the repeats, then one assignment
            rows, sums = sum_rows(self.be, self.idx, g3[0])
            dx[0, rows] = sums
        else:
            self.be.scatter_add(dx, (slice(None), self.idx.reshape(-1)), g3)
        return dx.reshape(shape), None


def take(a: ArrayT, indices: ArrayT, axis: int = 0, mode: str = "clip") -> ArrayT:
    """Gather slices of ``a`` along ``axis`` at ``indices``.

    Parameters
    ----------
    mode : {'clip', 'wrap', 'raise'}, default 'clip'
        How out-of-range indices are treated.

    Examples
    --------
    >>> mx.nd.take(mx.nd.array([[1, 2], [3, 4]]), mx.nd.array([1, 5])).asnumpy()
    array([[3., 4.],
           [3., 4.]], dtype=float32)
    """
    return apply(_Take, (a, indices), axis=axis_index(axis, a.ndim), mode=mode)


class _TakeRows(Op):
    """An embedding lookup whose weight gradient is row-sparse: only the rows looked up."""

    def forward(self, w, indices, axis, mode):
        xp = self.xp
        self.flat = xp.clip(indices.reshape(-1).astype(np.int64), 0, w.shape[0] - 1)
        self.shape = w.shape
        return w[self.flat].reshape(indices.shape + w.shape[1:])

    def backward(self, g):
        if not self.needs[0]:
            return None, None
        g2 = g.reshape((self.flat.shape[0],) + self.shape[1:])
        idx, vals = sum_rows(self.be, self.flat, g2)
        return SparseRows(idx, vals, self.shape, self.be), None


def Embedding(
    data: ArrayT,
    weight: ArrayT,
    input_dim: int | None = None,
    output_dim: int | None = None,
    dtype: DTypeLike = "float32",
    sparse_grad: bool = False,
    **kwargs: Any,
) -> ArrayT:
    """Look up rows of ``weight`` (shape ``(input_dim, output_dim)``) at indices ``data``.

    The output has shape ``data.shape + (output_dim,)``; indices are clipped into range. With
    ``sparse_grad=True`` the weight's gradient is row_sparse: it holds only the rows looked up
    (summed over repeats), and no table-sized array is made.
    """
    op = _TakeRows if sparse_grad else _Take
    return apply(op, (weight, data), axis=0, mode="clip")


def _flat_positions(xp, idx_t, n):
    """Linear positions in a (..., n) array of one chosen entry per row, ``idx_t`` per row."""
    rows = idx_t.size
    return xp.arange(rows, dtype=np.int64) * n + idx_t.reshape(-1)


class _Pick(Op):
    def forward(self, x, index, axis, keepdims, mode):
        xp = self.xp
        n = x.shape[axis]
        idx = _int_index(xp, index, n, mode).reshape(x.shape[:axis] + x.shape[axis + 1 :])
        xt = xp.moveaxis(x, axis, -1)
        flat = _flat_positions(xp, idx, n)
        self.flat, self.shape, self.dtype, self.axis = flat, x.shape, x.dtype, axis
        y = (
            xt.reshape(-1)[flat]
            if xt.flags.c_contiguous
            else xt.reshape(-1, n)[xp.arange(idx.size), idx.reshape(-1)]
        )
        y = y.reshape(idx.shape)
        if keepdims:
            y = xp.expand_dims(y, axis)
        return y if y.ndim else y.reshape(1)

    def backward(self, g):
        if not self.needs[0]:
            return None, None
        xp, axis = self.xp, self.axis
        shape_t = self.shape[:axis] + self.shape[axis + 1 :] + (self.shape[axis],)
        dx = xp.zeros(shape_t, self.dtype)
        dx.reshape(-1)[self.flat] = g.reshape(-1)
        return xp.moveaxis(dx, -1, axis), None


def pick(
    data: ArrayT, index: ArrayT, axis: int = -1, keepdims: bool = False, mode: str = "clip"
) -> ArrayT:
    """Pick one entry per position along ``axis``: ``out[i] = data[i, index[i]]`` for 2-D.

    Parameters
    ----------
    index : NDArray
        Indices (any numeric dtype) shaped like ``data`` without ``axis``.
    keepdims : bool, default False
    mode : {'clip', 'wrap'}, default 'clip'
    """
    return apply(
        _Pick, (data, index), axis=axis_index(axis, data.ndim), keepdims=keepdims, mode=mode
    )


class _OneHot(Op):
    def forward(self, indices, depth, on, off, dtype):
        xp = self.xp
        idx = indices.astype(np.int64).reshape(-1)
        out = xp.full((idx.size, depth), off, dtype=dtype)
        ok = (idx >= 0) & (idx < depth)
        rows = xp.arange(idx.size)[ok]
        out[rows, idx[ok]] = on
        return out.reshape(indices.shape + (depth,))

    def backward(self, g):
        return None


def one_hot(
    indices: ArrayT,
    depth: int,
    on_value: float = 1.0,
    off_value: float = 0.0,
    dtype: DTypeLike = "float32",
) -> ArrayT:
    """Return one-hot rows of length ``depth`` for ``indices`` (out-of-range rows stay off)."""
    return apply(
        _OneHot, (indices,), depth=int(depth), on=on_value, off=off_value, dtype=np.dtype(dtype)
    )


class IndexingMethods(ArrayCore):
    """Indexing as NDArray methods: ``x[key]``, ``x[key] = v``, ``take``, ``pick``, ``one_hot``."""

    __slots__ = ()

    def __getitem__(self: ArrayT, key: Any) -> ArrayT:
        return getitem(self, key)

    def __setitem__(self: Any, key: Any, value: Any) -> None:
        setitem(self, key, value)

    take = as_method(take)
    pick = as_method(pick)
    one_hot = as_method(one_hot)
