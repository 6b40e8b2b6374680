"""Indexing, gathers and scatters: ``x[key]`` and ``x[key] = v``, take/Embedding, pick,
one_hot, ``gather_nd``, ``scatter_nd``, ``batch_take`` and index arithmetic
(``ravel_multi_index``, ``unravel_index``).

Basic indexing (ints, slices, None, Ellipsis) returns a view whose gradient is written back into
the indexed region; advanced indexing with integer arrays (NDArrays, lists) gathers, and its
gradient scatter-adds, so repeated indices accumulate. An integer index that selects a single
element gives shape ``(1,)``, as MXNet 1.x does.

The index array of ``gather_nd`` and ``scatter_nd`` has shape ``(M, Y0, Y1, ...)``: column ``y``
addresses ``data[idx[0, y], ..., idx[M-1, y]]`` (a slice when ``M < data.ndim``); negative
indices count from the end and out-of-range ones are refused. The indices become an attribute of
the op, so ``gather_nd`` is an advanced index (gradient: scatter-add) and ``scatter_nd`` a
linear op whose gradient gathers.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from .._failure import ComputeError, propagate
from .._sparse_rows import SparseRows, sum_rows
from ..base import MXNetError
from . import shape
from .core.array import ArrayCore, ArrayT, check_writable
from .core.op import Op, apply, as_method, axis_index
from .core.transfer import move_data

if TYPE_CHECKING:
    from .._typing import DTypeLike

__all__ = [
    "getitem",
    "setitem",
    "take",
    "Embedding",
    "pick",
    "one_hot",
    "gather_nd",
    "scatter_nd",
    "ravel_multi_index",
    "unravel_index",
    "batch_take",
    "onehot_encode",
]


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

    An NDArray value on another context is copied over, as ``copyto`` would. A failed value
    makes ``x`` fail with its failure; a failed ``x`` stays failed (see :mod:`mxrs._failure`).
    """
    check_writable(x)
    try:  # free while nothing fails
        k = _convert_key(x, key)
        if len(k) == 1:
            k = k[0]
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
        try:
            x._data[k] = v
        except ValueError:
            # MXNet broadcasts a value with extra leading 1s (``x[0] = nd.array([5])`` into a
            # 1-D ``x``); NumPy does not drop them
            target = x._data[k]
            extra = getattr(v, "ndim", 0) - getattr(target, "ndim", 0)
            if extra <= 0 or any(d != 1 for d in v.shape[:extra]):
                raise
            x._data[k] = v.reshape(v.shape[extra:])
    except ComputeError as err:
        _write_failed(err, x, key, value)


def _write_failed(err: ComputeError, x: Any, key: Any, value: Any) -> None:
    """:func:`setitem` read a failed array (``x`` or ``value``): ``x`` fails with it."""
    propagate(err, lambda: setitem(x, key, value), into=(x,))


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
    return apply(_AdvancedIndex, (data,), key=key)


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
    picked = pick(flat, shape.reshape(indices, (rows,)), axis=1, mode="clip")
    return shape.reshape(picked, indices.shape)


def onehot_encode(indices: ArrayT, out: ArrayT) -> ArrayT:
    """Write the one-hot rows of ``indices`` into ``out`` (shape ``(len(indices), depth)``) and
    return ``out``. MXNet's older spelling of :func:`one_hot`."""
    if out.ndim != 2 or indices.ndim != 1 or out.shape[0] != indices.shape[0]:
        raise MXNetError(
            f"onehot_encode: out of shape {out.shape} does not fit indices of shape "
            f"{indices.shape}; out needs shape (len(indices), depth)"
        )
    out[:] = one_hot(indices, out.shape[1], dtype=out._data.dtype)
    return out


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
