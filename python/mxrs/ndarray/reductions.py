"""More reductions, a scan and a product: ``nanprod``, ``moments``, ``argmax_channel``,
``cumsum`` and ``khatri_rao``.

``moments`` and ``khatri_rao`` are built from recorded ops, so they differentiate (to any order)
through them; ``nanprod`` and ``cumsum`` have their own gradients. ``argmax_channel`` (the argmax
over axis 1) has none, as in MXNet.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from ..base import MXNetError
from . import elementwise, reduce, shape, unary
from .core.array import ArrayCore, ArrayT
from .core.op import Op, apply, as_method, axis_index
from .unary import _Identity

if TYPE_CHECKING:
    from .._typing import DTypeLike

__all__ = ["nanprod", "moments", "argmax_channel", "cumsum", "khatri_rao"]


class _NanProd(Op):
    def forward(self, x, axes, keepdims):
        xp = self.xp
        self.shape = x.shape
        self.kshape = tuple(1 if i in axes else s for i, s in enumerate(x.shape))
        self.ok = ~xp.isnan(x)
        self.xf = xp.where(self.ok, x, 1)
        self.y = self.xf.prod(axis=axes, keepdims=True)
        y = (
            self.y
            if keepdims
            else self.y.reshape(tuple(s for i, s in enumerate(x.shape) if i not in axes))
        )
        return y if y.ndim else y.reshape(1)

    def backward(self, g):
        return g.reshape(self.kshape) * self.y / self.xf * self.ok


def nanprod(
    data: ArrayT,
    axis: int | Sequence[int] | None = None,
    keepdims: bool = False,
    exclude: bool = False,
) -> ArrayT:
    """Product over ``axis`` treating NaN as one; parameters as :func:`sum`.

    Examples
    --------
    >>> mx.nd.nanprod(mx.nd.array([[1, float('nan'), 2], [3, 4, 5]]), axis=1).asnumpy()
    array([ 2., 60.], dtype=float32)
    """
    axes = reduce._axes(data.ndim, axis, exclude)
    return apply(_NanProd, (data,), axes=axes, keepdims=keepdims)


def moments(
    data: ArrayT, axes: int | Sequence[int] | None = None, keepdims: bool = False
) -> list[ArrayT]:
    """Mean and (biased) variance over ``axes``: ``[mean, var]``.

    Integer data gives integer moments, as in MXNet: the mean is truncated, and the variance
    is taken around that truncated mean.

    Parameters
    ----------
    axes : int or tuple of int
        The axes to reduce; required, as in MXNet (pass every axis for global moments).
    keepdims : bool, default False
    """
    if axes is None or (not isinstance(axes, (int, np.integer)) and len(axes) == 0):
        raise MXNetError(
            "moments: axes must be given; pass every axis for moments over the whole array"
        )
    dtype = data._data.dtype
    x = data if dtype.kind == "f" else unary.cast(data, np.float64)
    mean = reduce.mean(x, axis=axes, keepdims=True)
    if dtype.kind != "f":  # MXNet's integer mean is truncated before the variance uses it
        mean = unary.cast(unary.cast(mean, dtype), np.float64)
    dev = elementwise.subtract(x, mean)
    var = reduce.mean(dev * dev, axis=axes, keepdims=keepdims)
    if not keepdims:
        mean = shape.reshape(mean, var.shape)
    if dtype.kind != "f":
        mean, var = unary.cast(mean, dtype), unary.cast(var, dtype)
    return [mean, var]


def argmax_channel(data: ArrayT) -> ArrayT:
    """Index of the maximum along axis 1, as float32 (no gradient).

    Examples
    --------
    >>> mx.nd.argmax_channel(mx.nd.array([[0, 1, 2], [5, 4, 3]])).asnumpy()
    array([2., 0.], dtype=float32)
    """
    if data.ndim < 2:
        raise MXNetError(f"argmax_channel needs at least 2 dimensions, not {data.ndim}")
    return reduce.argmax(data, axis=1)


class _Cumsum(Op):
    def forward(self, x, axis, dtype):
        self.shape, self.dtype = x.shape, x.dtype
        if axis is None:
            x, axis = x.reshape(-1), 0
        self.axis = axis
        return self.xp.cumsum(x, axis=axis, dtype=dtype)

    def backward(self, g):
        xp, a = self.xp, self.axis
        rev = xp.flip(xp.cumsum(xp.flip(g, axis=a), axis=a), axis=a)
        return rev.reshape(self.shape).astype(self.dtype, copy=False)


def cumsum(a: ArrayT, axis: int | None = None, dtype: DTypeLike | None = None) -> ArrayT:
    """Cumulative sum along ``axis`` (of the flattened array when None).

    Parameters
    ----------
    dtype : str, optional
        The result's dtype, in which the sums accumulate; ``a``'s when None.

    Examples
    --------
    >>> mx.nd.cumsum(mx.nd.array([[1, 2], [3, 4]]), axis=0).asnumpy()
    array([[1., 2.],
           [4., 6.]], dtype=float32)
    """
    dt = np.dtype(dtype) if dtype is not None else a._data.dtype
    ax = None if axis is None else axis_index(axis, a.ndim)
    return apply(_Cumsum, (a,), axis=ax, dtype=dt)


def khatri_rao(*args: ArrayT) -> ArrayT:
    """The column-wise Kronecker product of matrices with one number of columns ``k``.

    For ``A`` of shape ``(m, k)`` and ``B`` of shape ``(n, k)`` the result has shape
    ``(m * n, k)`` with row ``i * n + j`` equal to ``A[i] * B[j]``.

    Examples
    --------
    >>> a, b = mx.nd.array([[1, -1], [2, -3]]), mx.nd.array([[1, 4], [2, 5], [3, 6]])
    >>> mx.nd.khatri_rao(a, b).shape
    (6, 2)
    """
    if not args:
        raise MXNetError("khatri_rao needs at least one matrix")
    if args[0].ndim != 2:
        raise MXNetError(f"khatri_rao: the inputs must be matrices, not of shape {args[0].shape}")
    k = args[0].shape[1]
    for i, m in enumerate(args):
        if m.ndim != 2 or m.shape[1] != k:
            raise MXNetError(
                f"khatri_rao: input {i} has shape {m.shape}; every input must be a matrix with "
                f"{k} columns, as the first"
            )
    out: Any = apply(_Identity, (args[0],))
    for m in args[1:]:
        prod = elementwise.multiply(shape.expand_dims(out, 1), shape.expand_dims(m, 0))
        out = shape.reshape(prod, (-1, k))
    return out


class ReductionMethods(ArrayCore):
    """``nanprod`` and ``argmax_channel`` as NDArray methods."""

    __slots__ = ()
    nanprod = as_method(nanprod)
    argmax_channel = as_method(argmax_channel)
