"""Shape and layout ops: reshape, transpose, moveaxis, axis insertion and removal, broadcasting,
joining, splitting, slicing, tiling, flipping, diag, and the depth/space rearrangements.

``reshape`` understands MXNet's special codes: 0 copies a dimension, -1 infers one, -2 copies all
remaining ones, -3 merges two, -4 splits one into the next two values (one of which may be -1).

All are linear in their data input; those built from other ops of this module (moveaxis,
broadcast_axis, slice_like, depth_to_space, space_to_depth) inherit those ops' gradients.
``shape_array`` and ``size_array`` give an array's shape and size as arrays.
"""

from __future__ import annotations

import builtins
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..autograd import _state as _autograd_state
from ..base import InvalidShapeError, MXNetError
from .core.array import ArrayCore, ArrayT
from .core.op import Op, apply, as_method, axis_index, unbroadcast
from .padding import pad as _pad

__all__ = [
    "reshape",
    "Reshape",
    "reshape_like",
    "flatten",
    "Flatten",
    "transpose",
    "swapaxes",
    "expand_dims",
    "squeeze",
    "broadcast_to",
    "broadcast_like",
    "concat",
    "Concat",
    "stack",
    "split",
    "SliceChannel",
    "slice",
    "crop",
    "slice_axis",
    "tile",
    "repeat",
    "flip",
    "reverse",
    "diag",
    "moveaxis",
    "broadcast_axis",
    "broadcast_axes",
    "slice_like",
    "shape_array",
    "size_array",
    "split_v2",
    "depth_to_space",
    "space_to_depth",
]


class _Reshape(Op):
    def forward(self, x, shape):
        self.shape = x.shape
        return x.reshape(shape)

    def backward(self, g):
        return g.reshape(self.shape)


def _infer_shape(src: Sequence[int], spec: Sequence[int], reverse: bool = False) -> tuple[int, ...]:
    """Resolve MXNet reshape codes in ``spec`` against source shape ``src``."""
    if reverse:
        return tuple(reversed(_infer_shape(tuple(reversed(src)), tuple(reversed(spec)))))
    out: list[int] = []
    i, j = 0, 0
    spec = list(spec)
    while j < len(spec):
        s = spec[j]
        if s == 0:
            out.append(src[i])
            i += 1
        elif s == -1:
            out.append(-1)
            i += 1
        elif s == -2:
            out.extend(src[i:])
            i = len(src)
        elif s == -3:
            out.append(src[i] * src[i + 1])
            i += 2
        elif s == -4:
            a, b = spec[j + 1], spec[j + 2]
            if a == -1:
                a = src[i] // b
            if b == -1:
                b = src[i] // a
            out.extend([a, b])
            i += 1
            j += 2
        else:
            out.append(int(s))
            i += 1
        j += 1
    if out.count(-1) > 1:
        raise MXNetError(f"reshape {tuple(spec)}: at most one dimension can be inferred")
    return tuple(out)


def reshape(
    data: ArrayT, shape: int | Sequence[int], reverse: bool = False, **kwargs: Any
) -> ArrayT:
    """Return ``data`` with a new shape (a view where possible).

    Parameters
    ----------
    shape : tuple of int
        The new shape; may use the special codes 0, -1, -2, -3, -4 (see the module docstring).
    reverse : bool, default False
        Resolve the special codes from right to left.

    Examples
    --------
    >>> mx.nd.ones((2, 3, 4)).reshape((0, -1)).shape
    (2, 12)
    """
    if isinstance(shape, (int, np.integer)):
        shape = (int(shape),)
    if any(s < -1 or s == 0 for s in shape):
        shape = _infer_shape(data.shape, shape, reverse)
    # A shape of another size raises InvalidShapeError (a ValueError, as in MXNet) naming both.
    return apply(_Reshape, (data,), shape=tuple(shape))


Reshape = reshape


def reshape_like(lhs: ArrayT, rhs: ArrayT) -> ArrayT:
    """Return ``lhs`` reshaped to ``rhs``'s shape."""
    return reshape(lhs, rhs.shape)


def flatten(data: ArrayT) -> ArrayT:
    """Collapse all axes but the first: shape ``(N, d1 * d2 * ...)``."""
    n = data.shape[0] if data.ndim else 1
    rest = int(np.prod(data.shape[1:], dtype=np.int64))  # not -1: an empty batch has no size
    return apply(_Reshape, (data,), shape=(n, rest))


Flatten = flatten


class _Transpose(Op):
    def forward(self, x, axes):
        self.inv = tuple(np.argsort(axes))
        return x.transpose(axes)

    def backward(self, g):
        return g.transpose(self.inv)


def transpose(data: ArrayT, axes: Sequence[int] | None = None) -> ArrayT:
    """Permute axes (reverse them when ``axes`` is None or empty)."""
    if not axes:
        axes = tuple(range(data.ndim))[::-1]
    else:
        axes = tuple(axis_index(a, data.ndim) for a in axes)
    return apply(_Transpose, (data,), axes=axes)


def swapaxes(data: ArrayT, dim1: int = 0, dim2: int = 0) -> ArrayT:
    """Exchange axes ``dim1`` and ``dim2``."""
    axes = list(range(data.ndim))
    axes[dim1], axes[dim2] = axes[dim2], axes[dim1]
    return transpose(data, tuple(axes))


def expand_dims(data: ArrayT, axis: int) -> ArrayT:
    """Insert a length-1 axis at position ``axis``."""
    ndim = data.ndim + 1
    axis = axis_index(axis, ndim)
    shape = data.shape[:axis] + (1,) + data.shape[axis:]
    return apply(_Reshape, (data,), shape=shape)


def squeeze(data: ArrayT, axis: int | Sequence[int] | None = None) -> ArrayT:
    """Remove length-1 axes (only those in ``axis`` when given); a result of no axes is (1,)."""
    if axis is None:
        shape = tuple(s for s in data.shape if s != 1)
    else:
        axes = {axis_index(a, data.ndim) for a in ((axis,) if isinstance(axis, int) else axis)}
        for a in axes:
            if data.shape[a] != 1:
                raise MXNetError(f"squeeze: axis {a} has length {data.shape[a]}, not 1")
        shape = tuple(s for i, s in enumerate(data.shape) if i not in axes)
    return apply(_Reshape, (data,), shape=shape or (1,))


class _BroadcastTo(Op):
    def forward(self, x, shape):
        self.shape = x.shape
        return self.xp.broadcast_to(x, shape)

    def backward(self, g):
        return unbroadcast(g, self.shape)


def broadcast_to(data: ArrayT, shape: Sequence[int]) -> ArrayT:
    """Broadcast ``data`` to ``shape``; a 0 in ``shape`` keeps that dimension."""
    shape = tuple(d if s == 0 else s for s, d in zip(shape, data.shape, strict=False)) + tuple(
        shape[data.ndim :]
    )
    return apply(_BroadcastTo, (data,), shape=shape)


def broadcast_like(lhs: ArrayT, rhs: ArrayT) -> ArrayT:
    """Broadcast ``lhs`` to ``rhs``'s shape."""
    return apply(_BroadcastTo, (lhs,), shape=rhs.shape)


class _Concat(Op):
    def forward(self, *xs, axis):
        self.axis = axis
        self.bounds = np.cumsum([x.shape[axis] for x in xs])[:-1]
        return self.xp.concatenate(xs, axis=axis)

    def backward(self, g):
        parts = self.xp.split(g, self.bounds, axis=self.axis)
        return tuple(p if n else None for p, n in zip(parts, self.needs, strict=True))


def concat(*data: ArrayT, dim: int = 1, **kwargs: Any) -> ArrayT:
    """Join arrays along axis ``dim`` (default 1, as MXNet).

    Examples
    --------
    >>> mx.nd.concat(mx.nd.ones((2, 2)), mx.nd.zeros((2, 1))).shape
    (2, 3)
    """
    if len(data) == 1 and isinstance(data[0], (list, tuple)):
        data = tuple(data[0])
    return apply(_Concat, tuple(data), axis=axis_index(dim, data[0].ndim))


Concat = concat


class _Stack(Op):
    def forward(self, *xs, axis):
        self.axis = axis
        return self.xp.stack(xs, axis=axis)

    def backward(self, g):
        xp = self.xp
        return tuple(xp.take(g, i, axis=self.axis) if n else None for i, n in enumerate(self.needs))


def stack(*data: ArrayT, axis: int = 0, **kwargs: Any) -> ArrayT:
    """Join arrays of one shape along a new axis ``axis``."""
    if len(data) == 1 and isinstance(data[0], (list, tuple)):
        data = tuple(data[0])
    return apply(_Stack, tuple(data), axis=axis_index(axis, data[0].ndim + 1))


class _Split(Op):
    def forward(self, x, num, axis, squeeze):
        if x.shape[axis] % num:
            raise MXNetError(
                f"split: axis {axis} of length {x.shape[axis]} is not divisible into {num} parts"
            )
        self.axis, self.squeeze, self.shape, self.dtype = axis, squeeze, x.shape, x.dtype
        parts = self.xp.split(x, num, axis=axis)
        if squeeze:
            parts = [p.squeeze(axis) for p in parts]
        self.nparts = num
        return tuple(parts)

    def backward(self, *gs):
        xp = self.xp
        step = self.shape[self.axis] // self.nparts
        pshape = self.shape[: self.axis] + (step,) + self.shape[self.axis + 1 :]
        full = [
            xp.zeros(pshape, self.dtype)
            if g is None
            else (g.reshape(pshape) if self.squeeze else g)
            for g in gs
        ]
        return xp.concatenate(full, axis=self.axis)


def split(
    data: ArrayT, num_outputs: int, axis: int = 1, squeeze_axis: bool = False
) -> ArrayT | list[ArrayT]:
    """Split into ``num_outputs`` equal parts along ``axis`` (default 1, as MXNet).

    Returns a list of arrays, or the array itself when ``num_outputs`` is 1.
    """
    out = apply(
        _Split,
        (data,),
        num=int(num_outputs),
        axis=axis_index(axis, data.ndim),
        squeeze=squeeze_axis,
    )
    return out[0] if len(out) == 1 else out


SliceChannel = split


class _Slice(Op):
    def forward(self, x, key):
        self.shape, self.key, self.dtype = x.shape, key, x.dtype
        return x[key]

    def backward(self, g):
        dx = self.xp.zeros(self.shape, self.dtype)
        dx[self.key] = g
        return dx


def slice(
    data: ArrayT,
    begin: Sequence[int | None],
    end: Sequence[int | None],
    step: Sequence[int | None] | None = None,
) -> ArrayT:
    """Take ``data[begin:end:step]`` per axis; ``None`` entries mean the whole axis.

    Examples
    --------
    >>> mx.nd.slice(mx.nd.ones((4, 5)), begin=(1, None), end=(3, None)).shape
    (2, 5)
    """
    step = step or (None,) * len(begin)
    key = tuple(np.s_[b:e:s] for b, e, s in zip(begin, end, step, strict=True))
    return apply(_Slice, (data,), key=key)


#: MXNet's deprecated name of :func:`slice`.
crop = slice


def slice_axis(data: ArrayT, axis: int, begin: int, end: int | None) -> ArrayT:
    """Take ``begin:end`` along one axis (``end=None`` means to the end)."""
    axis = axis_index(axis, data.ndim)
    key = (np.s_[:],) * axis + (np.s_[begin:end],)
    return apply(_Slice, (data,), key=key)


class _Tile(Op):
    def forward(self, x, reps):
        reps = (1,) * (x.ndim - len(reps)) + tuple(reps)
        self.shape, self.reps = x.shape, reps
        return self.xp.tile(x, reps)

    def backward(self, g):
        shape = (1,) * (len(self.reps) - len(self.shape)) + self.shape
        split = []
        for r, s in zip(self.reps, shape, strict=True):
            split += [r, s]
        return g.reshape(split).sum(axis=tuple(range(0, len(split), 2))).reshape(self.shape)


def tile(data: ArrayT, reps: Sequence[int]) -> ArrayT:
    """Repeat the whole array ``reps`` times per axis."""
    return apply(_Tile, (data,), reps=tuple(reps))


class _Repeat(Op):
    def forward(self, x, repeats, axis):
        self.shape, self.repeats, self.axis = x.shape, repeats, axis
        return self.xp.repeat(x, repeats, axis=axis)

    def backward(self, g):
        if self.axis is None:
            return g.reshape(-1, self.repeats).sum(axis=1).reshape(self.shape)
        a = self.axis
        shape = self.shape[:a] + (self.shape[a], self.repeats) + self.shape[a + 1 :]
        return g.reshape(shape).sum(axis=a + 1)


def repeat(data: ArrayT, repeats: int, axis: int | None = None) -> ArrayT:
    """Repeat each element ``repeats`` times along ``axis`` (of the flattened array if None)."""
    return apply(
        _Repeat,
        (data,),
        repeats=int(repeats),
        axis=None if axis is None else axis_index(axis, data.ndim),
    )


class _Flip(Op):
    def forward(self, x, axes):
        self.axes = axes
        return self.xp.flip(x, axis=axes)

    def backward(self, g):
        return self.xp.flip(g, axis=self.axes)


def flip(data: ArrayT, axis: int | Sequence[int]) -> ArrayT:
    """Reverse the order of elements along ``axis`` (an int or a tuple)."""
    axes = (axis,) if isinstance(axis, int) else tuple(axis)
    return apply(_Flip, (data,), axes=tuple(axis_index(a, data.ndim) for a in axes))


reverse = flip


def _ints(v: int | Sequence[int]) -> tuple[int, ...]:
    return (int(v),) if isinstance(v, (int, np.integer)) else tuple(int(a) for a in v)


# ----------------------------------------------------------------- diag
def _diag_index(xp: Any, n1: int, n2: int, k: int) -> tuple[Any, Any]:
    """Row and column positions of diagonal ``k`` of an ``n1 x n2`` matrix."""
    n = max(0, min(n1 - max(-k, 0), n2 - max(k, 0)))
    i = xp.arange(n)
    return i + max(-k, 0), i + max(k, 0)


class _DiagMake(Op):
    """1-D ``x`` onto diagonal ``k`` of a square matrix."""

    def forward(self, x, k):
        self.k = k
        return self.xp.diag(x, k)

    def backward(self, g):
        rows, cols = _diag_index(self.xp, g.shape[0], g.shape[1], self.k)
        return g[rows, cols]


class _DiagTake(Op):
    """Diagonal ``k`` of the planes spanned by ``axis1`` and ``axis2``, as the last axis."""

    def forward(self, x, k, axis1, axis2):
        self.shape, self.dtype = x.shape, x.dtype
        self.k, self.axes = k, (axis1, axis2)
        xm = self.xp.moveaxis(x, (axis1, axis2), (-2, -1))
        rows, cols = _diag_index(self.xp, xm.shape[-2], xm.shape[-1], k)
        return xm[..., rows, cols]

    def backward(self, g):
        xp = self.xp
        dx = xp.zeros(self.shape, self.dtype)
        view = xp.moveaxis(dx, self.axes, (-2, -1))
        rows, cols = _diag_index(xp, view.shape[-2], view.shape[-1], self.k)
        view[..., rows, cols] = g
        return dx


def diag(data: ArrayT, k: int = 0, axis1: int = 0, axis2: int = 1) -> ArrayT:
    """Build a diagonal matrix from a 1-D array, or take a diagonal of an N-D array.

    Parameters
    ----------
    k : int, default 0
        Which diagonal: above the main one for ``k > 0``, below it for ``k < 0``.
    axis1, axis2 : int, default 0 and 1
        The plane whose diagonal is taken (N-D input); the diagonal becomes the last axis of the
        result and the two axes are removed.

    Examples
    --------
    >>> mx.nd.diag(mx.nd.array([1, 2])).asnumpy()
    array([[1., 0.],
           [0., 2.]], dtype=float32)
    """
    k = int(k)
    if data.ndim == 1:
        return apply(_DiagMake, (data,), k=k)
    if data.ndim == 0:
        raise MXNetError("diag: the input must have at least one dimension")
    a1, a2 = axis_index(axis1, data.ndim), axis_index(axis2, data.ndim)
    if a1 == a2:
        raise MXNetError(f"diag: axis1 and axis2 cannot refer to the same axis {a1}")
    n1, n2 = data.shape[a1], data.shape[a2]
    if not -n1 <= k <= n2:
        raise MXNetError(f"diag: diagonal k={k} does not exist in a {n1}x{n2} plane")
    return apply(_DiagTake, (data,), k=k, axis1=a1, axis2=a2)


# ----------------------------------------------------------------- axes
def moveaxis(
    tensor: ArrayT, source: int | Sequence[int], destination: int | Sequence[int]
) -> ArrayT:
    """Move axes ``source`` to positions ``destination`` (ints or sequences of one length).

    Examples
    --------
    >>> mx.nd.moveaxis(mx.nd.zeros((3, 4, 5)), [0, 1], [-1, -2]).shape
    (5, 4, 3)
    """
    ndim = tensor.ndim
    src = [axis_index(a, ndim) for a in _ints(source)]
    dst = [axis_index(a, ndim) for a in _ints(destination)]
    if len(src) != len(dst):
        raise MXNetError(
            f"moveaxis: source {tuple(src)} and destination {tuple(dst)} differ in length"
        )
    if len(set(src)) != len(src) or len(set(dst)) != len(dst):
        raise MXNetError("moveaxis: repeated axis in source or destination")
    order = [a for a in range(ndim) if a not in src]
    for d, s in sorted(zip(dst, src, strict=True)):
        order.insert(d, s)
    return transpose(tensor, tuple(order))


def broadcast_axis(
    data: ArrayT, axis: int | Sequence[int] = (), size: int | Sequence[int] = ()
) -> ArrayT:
    """Broadcast length-1 axes ``axis`` to the lengths ``size``.

    Examples
    --------
    >>> mx.nd.broadcast_axis(mx.nd.array([[1], [2]]), axis=1, size=3).asnumpy()
    array([[1., 1., 1.],
           [2., 2., 2.]], dtype=float32)
    """
    axes, sizes = _ints(axis), _ints(size)
    if len(axes) != len(sizes):
        raise MXNetError(f"broadcast_axis: {len(axes)} axes but {len(sizes)} sizes")
    target = list(data.shape)
    for a, s in zip(axes, sizes, strict=True):
        a = axis_index(a, data.ndim)
        if data.shape[a] != 1:
            raise MXNetError(
                f"broadcast_axis: axis {a} has length {data.shape[a]}; only length-1 axes "
                "can be broadcast"
            )
        target[a] = s
    return broadcast_to(data, tuple(target))


broadcast_axes = broadcast_axis


def slice_like(data: ArrayT, shape_like: ArrayT, axes: int | Sequence[int] = ()) -> ArrayT:
    """Slice ``data`` from the start to ``shape_like``'s lengths on ``axes`` (all axes when
    empty, which needs both arrays to have the same number of dimensions).

    Examples
    --------
    >>> mx.nd.slice_like(mx.nd.zeros((3, 4)), mx.nd.zeros((2, 3)), axes=(-1,)).shape
    (3, 3)
    """
    like = shape_like.shape
    picked = _ints(axes)
    if not picked:
        if data.ndim != len(like):
            raise MXNetError(
                f"slice_like: without axes the arrays need the same dimensions, not {data.ndim} "
                f"and {len(like)}"
            )
        picked = tuple(range(data.ndim))
    end: list[int | None] = [None] * data.ndim
    for a in picked:
        a = axis_index(a, data.ndim)
        if a >= len(like):
            raise MXNetError(f"slice_like: axis {a} exceeds the {len(like)}-d shape_like")
        if like[a] > data.shape[a]:
            raise MXNetError(
                f"slice_like: axis {a} of length {like[a]} exceeds the input's {data.shape[a]}"
            )
        end[a] = like[a]
    return slice(data, begin=(None,) * data.ndim, end=tuple(end))


class _SizeOf(Op):
    def forward(self, x, what):
        vals = x.shape if what == "shape" else (x.size,)
        return self.xp.asarray(vals, dtype=np.int64)

    def backward(self, g):
        return None


def shape_array(data: ArrayT) -> ArrayT:
    """Return ``data``'s shape as a 1-D int64 array."""
    return apply(_SizeOf, (data,), what="shape")


def size_array(data: ArrayT) -> ArrayT:
    """Return ``data``'s number of elements as a one-element int64 array."""
    return apply(_SizeOf, (data,), what="size")


# ----------------------------------------------------------------- split_v2
class _SplitAt(Op):
    def forward(self, x, bounds, axis, squeeze):
        self.shape, self.dtype, self.axis = x.shape, x.dtype, axis
        self.bounds, self.squeeze = bounds, squeeze
        parts = []
        for lo, hi in zip(bounds[:-1], bounds[1:], strict=True):
            p = x[(builtins.slice(None),) * axis + (builtins.slice(lo, hi),)]
            parts.append(p.squeeze(axis) if squeeze else p)
        return tuple(parts)

    def backward(self, *gs):
        xp, a = self.xp, self.axis
        full = []
        for g, lo, hi in zip(gs, self.bounds[:-1], self.bounds[1:], strict=True):
            pshape = self.shape[:a] + (hi - lo,) + self.shape[a + 1 :]
            full.append(xp.zeros(pshape, self.dtype) if g is None else g.reshape(pshape))
        return xp.concatenate(full, axis=a)


def split_v2(
    ary: ArrayT,
    indices_or_sections: int | Sequence[int],
    axis: int = 0,
    squeeze_axis: bool = False,
) -> ArrayT | list[ArrayT]:
    """Split ``ary`` along ``axis`` into equal sections, or at the sorted ``indices``.

    Parameters
    ----------
    indices_or_sections : int or tuple of int
        A number of equal sections, or the positions where one section ends and the next
        begins (``(2, 3)`` gives ``ary[:2]``, ``ary[2:3]``, ``ary[3:]``).
    axis : int, default 0
    squeeze_axis : bool, default False
        Drop ``axis`` from the sections (each must then have length 1 there).

    Returns
    -------
    list of NDArray, or the one NDArray when there is a single section.

    Examples
    --------
    >>> [p.shape for p in mx.nd.split_v2(mx.nd.zeros((6, 2)), (2, 3))]
    [(2, 2), (1, 2), (3, 2)]
    """
    a = axis_index(axis, ary.ndim)
    n = ary.shape[a]
    if isinstance(indices_or_sections, (int, np.integer)):
        k = int(indices_or_sections)
        if k <= 0 or n % k:
            raise InvalidShapeError(
                f"split_v2: axis {a} of length {n} does not split into {k} equal sections"
            )
        bounds = [i * (n // k) for i in range(k + 1)]
    elif isinstance(indices_or_sections, (tuple, list)):
        bounds = [0, *(int(i) for i in indices_or_sections), n]
        for i, (lo, hi) in enumerate(zip(bounds[:-1], bounds[1:], strict=True)):
            if lo > hi:
                raise MXNetError(
                    f"split_v2: indices {tuple(indices_or_sections)} must be sorted and within "
                    f"the axis of length {n} (section {i} runs from {lo} to {hi})"
                )
    else:
        raise MXNetError("split_v2: indices_or_sections must be an int or a tuple of ints")
    if squeeze_axis and any(hi - lo != 1 for lo, hi in zip(bounds[:-1], bounds[1:], strict=True)):
        raise MXNetError("split_v2: squeeze_axis needs every section to have length 1")
    out = apply(_SplitAt, (ary,), bounds=tuple(bounds), axis=a, squeeze=bool(squeeze_axis))
    return out[0] if len(out) == 1 else out


# ----------------------------------------------------------------- depth and space
def _check_4d(op: str, data: ArrayT, block_size: int) -> int:
    if data.ndim != 4:
        raise MXNetError(f"{op} needs a 4-d (N, C, H, W) array, not {data.ndim}-d")
    b = int(block_size)
    if b <= 0:
        raise MXNetError(f"{op}: block_size must be positive, not {block_size}")
    return b


def depth_to_space(data: ArrayT, block_size: int) -> ArrayT:
    """Move blocks of ``block_size^2`` channels into ``block_size x block_size`` spatial blocks:
    ``(N, C, H, W)`` becomes ``(N, C / b^2, H * b, W * b)``."""
    b = _check_4d("depth_to_space", data, block_size)
    n, c, h, w = data.shape
    if c % (b * b):
        raise MXNetError(
            f"depth_to_space: the {c} channels are not a multiple of block_size^2 = {b * b}"
        )
    x = reshape(data, (n, b, b, c // (b * b), h, w))
    x = transpose(x, (0, 3, 4, 1, 5, 2))
    return reshape(x, (n, c // (b * b), h * b, w * b))


def space_to_depth(data: ArrayT, block_size: int) -> ArrayT:
    """The inverse of :func:`depth_to_space`: ``(N, C, H, W)`` becomes
    ``(N, C * b^2, H / b, W / b)``."""
    b = _check_4d("space_to_depth", data, block_size)
    n, c, h, w = data.shape
    if h % b or w % b:
        raise MXNetError(
            f"space_to_depth: the spatial size {h}x{w} is not a multiple of block_size {b}"
        )
    x = reshape(data, (n, c, h // b, b, w // b, b))
    x = transpose(x, (0, 3, 5, 1, 2, 4))
    return reshape(x, (n, c * b * b, h // b, w // b))


class ShapeMethods(ArrayCore):
    """The shape operations as NDArray methods, with ``x.T`` and ``x.reshape(*shape)``."""

    __slots__ = ()

    @property
    def T(self: ArrayT) -> ArrayT:
        """NDArray: the array with its axes reversed."""
        return transpose(self)

    def reshape(self: ArrayT, *shape: Any, **kwargs: Any) -> ArrayT:
        """Return the array with a new shape; see :func:`mxrs.nd.reshape` for special codes."""
        if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
            shape = tuple(shape[0])
        if "shape" in kwargs:
            shape = kwargs.pop("shape")
        return reshape(self, shape, **kwargs)

    transpose = as_method(transpose)
    flatten = as_method(flatten)
    expand_dims = as_method(expand_dims)

    def squeeze(self: Any, axis: int | Sequence[int] | None = None, inplace: bool = False) -> Any:
        """See :func:`mxrs.nd.squeeze`; with ``inplace`` this array itself takes the squeezed
        shape (same data) and is returned, as MXNet's ``squeeze(inplace=True)`` view."""
        out = squeeze(self, axis)
        if not inplace:
            return out
        if _autograd_state.recording:
            raise MXNetError(
                "squeeze(inplace=True) cannot be recorded by autograd; use inplace=False"
            )
        self._data = self._data.reshape(out.shape)
        return self

    broadcast_to = as_method(broadcast_to)
    broadcast_like = as_method(broadcast_like)
    split = as_method(split)
    slice = as_method(slice)
    slice_axis = as_method(slice_axis)
    tile = as_method(tile)
    repeat = as_method(repeat)
    flip = as_method(flip)
    swapaxes = as_method(swapaxes)
    reshape_like = as_method(reshape_like)

    diag = as_method(diag)
    broadcast_axes = as_method(broadcast_axes)
    slice_like = as_method(slice_like)
    shape_array = as_method(shape_array)
    size_array = as_method(size_array)
    split_v2 = as_method(split_v2)
    depth_to_space = as_method(depth_to_space)
    space_to_depth = as_method(space_to_depth)
    pad = as_method(_pad)
