"""Shape ops: reshape, transpose, axis insertion and removal, broadcasting, joining, splitting,
slicing, tiling and flipping.

``reshape`` understands MXNet's special codes: 0 copies a dimension, -1 infers one, -2 copies all
remaining ones, -3 merges two, -4 splits one into the next two values (one of which may be -1).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ..autograd import _state as _autograd_state
from ..base import MXNetError
from .core.array import ArrayCore, ArrayT
from .core.op import Op, apply, as_method, axis_index, unbroadcast

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
    "slice_axis",
    "tile",
    "repeat",
    "flip",
    "reverse",
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
