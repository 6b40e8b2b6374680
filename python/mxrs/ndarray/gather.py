"""N-dimensional gathers and scatters and index arithmetic: ``gather_nd``, ``scatter_nd``,
``ravel_multi_index``, ``unravel_index``, ``batch_take`` and ``onehot_encode``.

The index array of ``gather_nd`` and ``scatter_nd`` has shape ``(M, Y0, Y1, ...)``: column ``y``
addresses ``data[idx[0, y], ..., idx[M-1, y]]`` (a slice when ``M < data.ndim``); negative
indices count from the end and out-of-range ones are refused. The indices become an attribute of
the op, so ``gather_nd`` is an advanced index (gradient: scatter-add) and ``scatter_nd`` a
linear op whose gradient gathers.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ..base import MXNetError
from . import indexing, shape
from .core.array import ArrayT
from .core.op import Op, apply

__all__ = [
    "gather_nd",
    "scatter_nd",
    "ravel_multi_index",
    "unravel_index",
    "batch_take",
    "onehot_encode",
]


def _nd_key(op: str, data_shape: Sequence[int], indices: ArrayT) -> tuple[Any, ...]:
    """The index tuple of ``indices`` (shape ``(M, ...)``) into an array of ``data_shape``."""
    if indices.ndim == 0:
        raise MXNetError(f"{op}: indices must have at least one dimension")
    m = indices.shape[0]
    if m > len(data_shape):
        raise MXNetError(f"{op}: indices address {m} axes but the array has only {len(data_shape)}")
    ctx = indices._ctx
    be = ctx.backend
    with be.guard(ctx.device_id):
        raw = indices._data
        idx = raw if raw.dtype == np.int64 else raw.astype(np.int64)
        if idx.size:
            lens = np.asarray(data_shape[:m], dtype=np.int64).reshape((m,) + (1,) * (idx.ndim - 1))
            lens = be.xp.asarray(lens)
            bad = (idx < -lens) | (idx >= lens)
            if bool(bad.any()):
                pos = int(be.xp.argmax(bad.reshape(m, -1).any(axis=1)))
                raise MXNetError(
                    f"{op}: an index on axis {pos} is out of range for its length {data_shape[pos]}"
                )
        return tuple(idx[i] for i in range(m))


def gather_nd(data: ArrayT, indices: ArrayT) -> ArrayT:
    """Gather elements or slices of ``data`` at the columns of ``indices``.

    The output has shape ``indices.shape[1:] + data.shape[M:]`` with ``M = indices.shape[0]``.

    Examples
    --------
    >>> data = mx.nd.array([[0, 1], [2, 3]])
    >>> mx.nd.gather_nd(data, mx.nd.array([[1, 1, 0], [0, 1, 0]])).asnumpy()
    array([2., 3., 0.], dtype=float32)
    """
    if data._ctx != indices._ctx:
        raise MXNetError(f"gather_nd: indices on {indices._ctx} for data on {data._ctx}")
    key = _nd_key("gather_nd", data.shape, indices)
    return apply(indexing._AdvancedIndex, (data,), key=key)


class _ScatterNd(Op):
    def forward(self, x, key, shape):
        self.key = key
        out = self.xp.zeros(shape, x.dtype)
        out[key] = x
        return out

    def backward(self, g):
        return g[self.key]


def scatter_nd(data: ArrayT, indices: ArrayT, shape: Sequence[int]) -> ArrayT:
    """Scatter ``data`` into a new zero array of ``shape`` at the columns of ``indices``.

    The inverse of :func:`gather_nd`: ``data`` has shape ``indices.shape[1:] + shape[M:]``.
    Where indices repeat, one of the values is kept.

    Examples
    --------
    >>> mx.nd.scatter_nd(mx.nd.array([2, 3]), mx.nd.array([[1, 1], [0, 1]]), shape=(2, 2))
    <BLANKLINE>
    [[0. 0.]
     [2. 3.]]
    <NDArray 2x2 @cpu(0)>
    """
    if data._ctx != indices._ctx:
        raise MXNetError(f"scatter_nd: indices on {indices._ctx} for data on {data._ctx}")
    shape_t = tuple(int(s) for s in shape)
    key = _nd_key("scatter_nd", shape_t, indices)
    want = tuple(indices.shape[1:]) + shape_t[len(key) :]
    if tuple(data.shape) != want:
        raise MXNetError(
            f"scatter_nd: data of shape {data.shape} does not fit; indices {indices.shape} "
            f"into shape {shape_t} need data of shape {want}"
        )
    return apply(_ScatterNd, (data,), key=key, shape=shape_t)


class _IndexMath(Op):
    """Flat indices from multi-indices and back, in the input's dtype; no gradient."""

    def forward(self, x, shape, to_flat):
        xp = self.xp
        idx = x.astype(np.int64)
        if to_flat:
            flat = xp.zeros(idx.shape[1:], np.int64)
            for i, s in enumerate(shape):
                flat = flat * s + idx[i]
            return flat.astype(x.dtype)
        coords = []
        for s in reversed(shape[1:]):
            r = xp.fmod(idx, s)  # C's remainder: the sign of the dividend
            coords.append(r)
            idx = (idx - r) // s
        coords.append(idx)
        return xp.stack(coords[::-1]).astype(x.dtype)

    def backward(self, g):
        return None


def ravel_multi_index(data: ArrayT, shape: Sequence[int]) -> ArrayT:
    """Turn the columns of ``data`` (shape ``(len(shape), ...)``) into flat indices of an array
    of ``shape``, in ``data``'s dtype (indices are not checked against ``shape``).

    Examples
    --------
    >>> mx.nd.ravel_multi_index(mx.nd.array([[3, 6, 6], [4, 5, 1]]), shape=(7, 6)).asnumpy()
    array([22., 41., 37.], dtype=float32)
    """
    shape_t = tuple(int(s) for s in shape)
    if data.ndim == 0 or data.shape[0] != len(shape_t):
        raise MXNetError(
            f"ravel_multi_index: data of shape {data.shape} needs a first axis of length "
            f"{len(shape_t)}, one row per axis of shape {shape_t}"
        )
    return apply(_IndexMath, (data,), shape=shape_t, to_flat=True)


def unravel_index(data: ArrayT, shape: Sequence[int]) -> ArrayT:
    """Turn flat indices into multi-indices of an array of ``shape``: the result has shape
    ``(len(shape),) + data.shape`` and ``data``'s dtype.

    The first coordinate is not wrapped, and negative indices keep C's remainder sign, as in
    MXNet: ``unravel_index([50, -1], shape=(7, 6))`` gives columns ``(8, 2)`` and ``(0, -1)``.
    """
    shape_t = tuple(int(s) for s in shape)
    if not shape_t or any(s <= 0 for s in shape_t):
        raise MXNetError(f"unravel_index: shape must be non-empty and positive, not {shape_t}")
    return apply(_IndexMath, (data,), shape=shape_t, to_flat=False)


def batch_take(a: ArrayT, indices: ArrayT) -> ArrayT:
    """Take one element per row: ``out[i] = a[i, indices[i]]``, indices clipped into range.

    ``a`` is read as rows of its last axis, one row per index (``a.size / a.shape[-1]`` must
    equal ``indices.size``); the result has ``indices``' shape.

    Examples
    --------
    >>> mx.nd.batch_take(mx.nd.array([[1, 2], [3, 4], [5, 6]]), mx.nd.array([0, 1, 0])).asnumpy()
    array([1., 4., 5.], dtype=float32)
    """
    if a.ndim == 0:
        raise MXNetError("batch_take: a must have at least one dimension")
    last = a.shape[-1]
    rows = a.size // last if last else 0
    if rows != indices.size:
        raise MXNetError(
            f"batch_take: {indices.size} indices for the {rows} rows of an array of shape "
            f"{a.shape}; give one index per row"
        )
    flat = shape.reshape(a, (rows, last))
    picked = indexing.pick(flat, shape.reshape(indices, (rows,)), axis=1, mode="clip")
    return shape.reshape(picked, indices.shape)


def onehot_encode(indices: ArrayT, out: ArrayT) -> ArrayT:
    """Write the one-hot rows of ``indices`` into ``out`` (shape ``(len(indices), depth)``) and
    return ``out``. MXNet's older spelling of :func:`one_hot`."""
    if out.ndim != 2 or indices.ndim != 1 or out.shape[0] != indices.shape[0]:
        raise MXNetError(
            f"onehot_encode: out of shape {out.shape} does not fit indices of shape "
            f"{indices.shape}; out needs shape (len(indices), depth)"
        )
    out[:] = indexing.one_hot(indices, out.shape[1], dtype=out._data.dtype)
    return out
