"""More shape and layout ops: ``diag``, ``moveaxis``, ``broadcast_axis``, ``slice_like``,
``shape_array``/``size_array``, ``split_v2`` and the ``depth_to_space``/``space_to_depth`` pair.

All are linear in their data input; those built from :mod:`.shape` ops (moveaxis, broadcast_axis,
slice_like, depth_to_space, space_to_depth) inherit those ops' gradients, and ``diag`` and
``split_v2`` have their own.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ..base import InvalidShapeError, MXNetError
from . import shape
from .core.array import ArrayCore, ArrayT
from .core.op import Op, apply, as_method, axis_index
from .padding import pad as _pad

__all__ = [
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
    return shape.transpose(tensor, tuple(order))


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
    return shape.broadcast_to(data, tuple(target))


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
    return shape.slice(data, begin=(None,) * data.ndim, end=tuple(end))


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
            p = x[(slice(None),) * axis + (slice(lo, hi),)]
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
    x = shape.reshape(data, (n, b, b, c // (b * b), h, w))
    x = shape.transpose(x, (0, 3, 4, 1, 5, 2))
    return shape.reshape(x, (n, c // (b * b), h * b, w * b))


def space_to_depth(data: ArrayT, block_size: int) -> ArrayT:
    """The inverse of :func:`depth_to_space`: ``(N, C, H, W)`` becomes
    ``(N, C * b^2, H / b, W / b)``."""
    b = _check_4d("space_to_depth", data, block_size)
    n, c, h, w = data.shape
    if h % b or w % b:
        raise MXNetError(
            f"space_to_depth: the spatial size {h}x{w} is not a multiple of block_size {b}"
        )
    x = shape.reshape(data, (n, c, h // b, b, w // b, b))
    x = shape.transpose(x, (0, 3, 5, 1, 2, 4))
    return shape.reshape(x, (n, c * b * b, h // b, w // b))


class LayoutMethods(ArrayCore):
    """The layout ops MXNet's NDArray has as methods, with ``pad``."""

    __slots__ = ()
    diag = as_method(diag)
    broadcast_axes = as_method(broadcast_axes)
    slice_like = as_method(slice_like)
    shape_array = as_method(shape_array)
    size_array = as_method(size_array)
    split_v2 = as_method(split_v2)
    depth_to_space = as_method(depth_to_space)
    space_to_depth = as_method(space_to_depth)
    pad = as_method(_pad)
