"""Reductions, scans and sorting: sum, mean, max, min, prod, nansum/nanprod, norm, moments,
argmax/argmin, argmax_channel, cumsum, topk, sort and argsort.

``axis`` is None (all axes), an int or a tuple; ``exclude=True`` reduces over every axis *not*
listed, and ``keepdims`` keeps reduced axes with length 1. A reduction to a single value returns
shape ``(1,)``, as MXNet 1.x has no zero-dimensional arrays. Index results are float32.

``moments`` is built from recorded ops, so it differentiates (to any order) through them;
``nanprod`` and ``cumsum`` have their own gradients. ``argmax_channel`` (the argmax over axis 1)
has none, as in MXNet.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import TYPE_CHECKING, cast

import numpy as np

from ..base import MXNetError
from . import elementwise, shape, unary
from .core.array import ArrayCore, ArrayT
from .core.op import Op, apply, as_method, axis_index

if TYPE_CHECKING:
    from .._typing import DTypeLike

__all__ = [
    "sum",
    "nansum",
    "mean",
    "max",
    "min",
    "prod",
    "norm",
    "argmax",
    "argmin",
    "topk",
    "sort",
    "argsort",
    "nanprod",
    "moments",
    "argmax_channel",
    "cumsum",
    "all_finite",
    "multi_all_finite",
    "histogram",
]


def _axes(ndim, axis, exclude=False):
    if axis is None or axis == ():
        axes = tuple(range(ndim))
    elif isinstance(axis, (int, np.integer)):
        axes = (axis_index(axis, ndim),)
    else:
        axes = tuple(sorted(axis_index(a, ndim) for a in axis))
    if exclude:
        axes = tuple(i for i in range(ndim) if i not in axes)
    return axes


def _finish(y):
    return y if y.ndim else y.reshape(1)


class _Reduce(Op):
    """Common forward bookkeeping: input shape and the shape with reduced axes kept."""

    def _setup(self, x, axes):
        self.shape = x.shape
        self.kshape = tuple(1 if i in axes else s for i, s in enumerate(x.shape))

    def _expand(self, g):
        return self.xp.broadcast_to(g.reshape(self.kshape), self.shape)


class _Sum(_Reduce):
    def forward(self, x, axes, keepdims):
        self._setup(x, axes)
        return _finish(x.sum(axis=axes, keepdims=keepdims))

    def backward(self, g):
        return self._expand(g)


class _NanSum(_Reduce):
    def forward(self, x, axes, keepdims):
        self._setup(x, axes)
        self.ok = ~self.xp.isnan(x)
        return _finish(self.xp.nansum(x, axis=axes, keepdims=keepdims))

    def backward(self, g):
        return self._expand(g) * self.ok


class _Mean(_Reduce):
    def forward(self, x, axes, keepdims):
        self._setup(x, axes)
        n = 1
        for a in axes:
            n *= x.shape[a]
        self.n = n
        return _finish(x.mean(axis=axes, keepdims=keepdims))

    def backward(self, g):
        return self._expand(g / self.n)


class _Extreme(_Reduce):
    def forward(self, x, axes, keepdims, fn):
        self._setup(x, axes)
        y = getattr(x, fn)(axis=axes, keepdims=True)
        self.x, self.y = x, y
        return _finish(
            y if keepdims else y.reshape(tuple(s for i, s in enumerate(x.shape) if i not in axes))
        )

    def backward(self, g):
        return (self.x == self.y) * g.reshape(self.kshape)


class _Prod(_Reduce):
    def forward(self, x, axes, keepdims):
        self._setup(x, axes)
        y = x.prod(axis=axes, keepdims=True)
        self.x, self.y = x, y
        return _finish(
            y if keepdims else y.reshape(tuple(s for i, s in enumerate(x.shape) if i not in axes))
        )

    def backward(self, g):
        return g.reshape(self.kshape) * self.y / self.x


class _Norm(_Reduce):
    def forward(self, x, axes, keepdims, ord):
        self._setup(x, axes)
        xp = self.xp
        self.x, self.ord = x, ord
        if ord == 1:
            y = xp.abs(x).sum(axis=axes, keepdims=True)
        else:
            y = xp.sqrt((x * x).sum(axis=axes, keepdims=True))
        self.y = y
        return _finish(
            y if keepdims else y.reshape(tuple(s for i, s in enumerate(x.shape) if i not in axes))
        )

    def backward(self, g):
        g = g.reshape(self.kshape)
        if self.ord == 1:
            return g * self.xp.sign(self.x)
        return g * self.x / self.y


class _ArgExtreme(Op):
    def forward(self, x, axis, keepdims, fn):
        if axis is None:
            return getattr(x.reshape(-1), fn)().reshape(1).astype(np.float32)
        y = getattr(x, fn)(axis=axis)
        if keepdims:
            y = self.xp.expand_dims(y, axis)
        return _finish(y).astype(np.float32)

    def backward(self, g):
        return None


def sum(
    data: ArrayT,
    axis: int | Sequence[int] | None = None,
    keepdims: bool = False,
    exclude: bool = False,
) -> ArrayT:
    """Sum over ``axis`` (all axes when None).

    Parameters
    ----------
    data : NDArray
    axis : int or tuple of int, optional
    keepdims : bool, default False
        Keep the reduced axes with length 1.
    exclude : bool, default False
        Reduce over the axes *not* in ``axis``.

    Examples
    --------
    >>> mx.nd.sum(mx.nd.ones((2, 3)), axis=1).asnumpy()
    array([3., 3.], dtype=float32)
    """
    return apply(_Sum, (data,), axes=_axes(data.ndim, axis, exclude), keepdims=keepdims)


def nansum(
    data: ArrayT,
    axis: int | Sequence[int] | None = None,
    keepdims: bool = False,
    exclude: bool = False,
) -> ArrayT:
    """Sum over ``axis`` treating NaN as zero; parameters as :func:`sum`."""
    return apply(_NanSum, (data,), axes=_axes(data.ndim, axis, exclude), keepdims=keepdims)


def mean(
    data: ArrayT,
    axis: int | Sequence[int] | None = None,
    keepdims: bool = False,
    exclude: bool = False,
) -> ArrayT:
    """Average over ``axis``; parameters as :func:`sum`."""
    return apply(_Mean, (data,), axes=_axes(data.ndim, axis, exclude), keepdims=keepdims)


def max(
    data: ArrayT,
    axis: int | Sequence[int] | None = None,
    keepdims: bool = False,
    exclude: bool = False,
) -> ArrayT:
    """Maximum over ``axis``; every tied maximum receives the gradient. Parameters as
    :func:`sum`."""
    return apply(
        _Extreme, (data,), axes=_axes(data.ndim, axis, exclude), keepdims=keepdims, fn="max"
    )


def min(
    data: ArrayT,
    axis: int | Sequence[int] | None = None,
    keepdims: bool = False,
    exclude: bool = False,
) -> ArrayT:
    """Minimum over ``axis``; parameters as :func:`max`."""
    return apply(
        _Extreme, (data,), axes=_axes(data.ndim, axis, exclude), keepdims=keepdims, fn="min"
    )


def prod(
    data: ArrayT,
    axis: int | Sequence[int] | None = None,
    keepdims: bool = False,
    exclude: bool = False,
) -> ArrayT:
    """Product over ``axis``; parameters as :func:`sum`."""
    return apply(_Prod, (data,), axes=_axes(data.ndim, axis, exclude), keepdims=keepdims)


def norm(
    data: ArrayT, ord: int = 2, axis: int | Sequence[int] | None = None, keepdims: bool = False
) -> ArrayT:
    """The L2 (``ord=2``) or L1 (``ord=1``) norm over ``axis`` (all elements when None)."""
    if ord not in (1, 2):
        raise MXNetError(f"norm supports ord=1 and ord=2, not {ord!r}")
    return apply(_Norm, (data,), axes=_axes(data.ndim, axis), keepdims=keepdims, ord=ord)


def argmax(data: ArrayT, axis: int | None = None, keepdims: bool = False) -> ArrayT:
    """Index of the maximum along ``axis`` (of the flattened array when None), as float32."""
    return apply(_ArgExtreme, (data,), axis=axis, keepdims=keepdims, fn="argmax")


def argmin(data: ArrayT, axis: int | None = None, keepdims: bool = False) -> ArrayT:
    """Index of the minimum along ``axis`` (of the flattened array when None), as float32."""
    return apply(_ArgExtreme, (data,), axis=axis, keepdims=keepdims, fn="argmin")


class _TopK(Op):
    """Values and indices of the k largest (or smallest) entries along one axis."""

    def forward(self, x, axis, k, ret_typ, is_ascend, dtype):
        xp = self.xp
        xt = xp.moveaxis(x, axis, -1)
        n = xt.shape[-1]
        order = self.be.argsort(xt if is_ascend else -xt)[..., :k]
        self.axis, self.shape, self.order, self.ret = axis, x.shape, order, ret_typ
        if ret_typ == "mask":
            mask = xp.zeros(xt.shape, dtype=x.dtype)
            self._scatter(mask, xp.ones(order.shape, dtype=x.dtype))
            return xp.moveaxis(mask, -1, axis)
        idx = xp.moveaxis(order, -1, axis).astype(dtype)
        if ret_typ == "indices":
            return idx
        vals = xp.moveaxis(xp.take_along_axis(xt, order, axis=-1), -1, axis)
        self.n = n
        if ret_typ == "value":
            return vals
        return vals, idx

    def _scatter(self, target_t, values_t):
        xp = self.xp
        n, k = target_t.shape[-1], self.order.shape[-1]
        rows = xp.arange(target_t.size // n).reshape(-1, 1) * n
        flat = (rows + self.order.reshape(-1, k)).reshape(-1)
        target_t.reshape(-1)[flat] = values_t.reshape(-1)

    def backward(self, gv, gi=None):
        if self.ret not in ("value", "both") or gv is None:
            return None
        xp = self.xp
        shape_t = self.shape[: self.axis] + self.shape[self.axis + 1 :] + (self.shape[self.axis],)
        dx = xp.zeros(shape_t, dtype=gv.dtype)
        self._scatter(dx, xp.ascontiguousarray(xp.moveaxis(gv, self.axis, -1)))
        return xp.moveaxis(dx, -1, self.axis)


def topk(
    data: ArrayT,
    axis: int = -1,
    k: int = 1,
    ret_typ: str = "indices",
    is_ascend: bool = False,
    dtype: DTypeLike = "float32",
) -> ArrayT | list[ArrayT]:
    """The ``k`` largest (or, with ``is_ascend``, smallest) entries along ``axis``.

    Parameters
    ----------
    ret_typ : {'indices', 'value', 'both', 'mask'}, default 'indices'
        What to return: indices (as ``dtype``), values, ``[values, indices]``, or a 0/1 mask of
        ``data``'s shape marking the chosen entries.

    Examples
    --------
    >>> mx.nd.topk(mx.nd.array([[3, 1, 2]]), k=2, ret_typ='value').asnumpy()
    array([[3., 2.]], dtype=float32)
    """
    if ret_typ not in ("indices", "value", "both", "mask"):
        raise MXNetError(f"unknown topk ret_typ {ret_typ!r}")
    if axis is None:
        data, axis = data.reshape((-1,)), 0
    axis = axis_index(axis, data.ndim)
    k = int(k) if k > 0 else data.shape[axis]
    return apply(
        _TopK, (data,), axis=axis, k=k, ret_typ=ret_typ, is_ascend=is_ascend, dtype=np.dtype(dtype)
    )


def sort(data: ArrayT, axis: int = -1, is_ascend: bool = True) -> ArrayT:
    """Sort along ``axis`` (ascending by default); differentiable."""
    return cast("ArrayT", topk(data, axis=axis, k=0, ret_typ="value", is_ascend=is_ascend))


def argsort(
    data: ArrayT, axis: int = -1, is_ascend: bool = True, dtype: DTypeLike = "float32"
) -> ArrayT:
    """Indices that sort ``data`` along ``axis``, as ``dtype``."""
    return cast(
        "ArrayT", topk(data, axis=axis, k=0, ret_typ="indices", is_ascend=is_ascend, dtype=dtype)
    )


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
    axes = _axes(data.ndim, axis, exclude)
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
    mu = mean(x, axis=axes, keepdims=True)
    if dtype.kind != "f":  # MXNet's integer mean is truncated before the variance uses it
        mu = unary.cast(unary.cast(mu, dtype), np.float64)
    dev = elementwise.subtract(x, mu)
    var = mean(dev * dev, axis=axes, keepdims=keepdims)
    if not keepdims:
        mu = shape.reshape(mu, var.shape)
    if dtype.kind != "f":
        mu, var = unary.cast(mu, dtype), unary.cast(var, dtype)
    return [mu, var]


def argmax_channel(data: ArrayT) -> ArrayT:
    """Index of the maximum along axis 1, as float32 (no gradient).

    Examples
    --------
    >>> mx.nd.argmax_channel(mx.nd.array([[0, 1, 2], [5, 4, 3]])).asnumpy()
    array([2., 0.], dtype=float32)
    """
    if data.ndim < 2:
        raise MXNetError(f"argmax_channel needs at least 2 dimensions, not {data.ndim}")
    return argmax(data, axis=1)


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


class ReduceMethods(ArrayCore):
    """The reductions as NDArray methods: ``x.sum(axis=1)`` is ``nd.sum(x, axis=1)``."""

    __slots__ = ()

    sum = as_method(sum)
    mean = as_method(mean)
    max = as_method(max)
    min = as_method(min)
    prod = as_method(prod)
    norm = as_method(norm)
    argmax = as_method(argmax)
    argmin = as_method(argmin)
    topk = as_method(topk)
    nansum = as_method(nansum)
    sort = as_method(sort)
    argsort = as_method(argsort)

    nanprod = as_method(nanprod)
    argmax_channel = as_method(argmax_channel)


class _AllFinite(Op):
    """1 where every element of every input is finite, else 0, shape ``(1,)`` float32; no
    gradient, as in MXNet."""

    def forward(self, *arrays):
        # on the device, without waiting for it: AMP checks every step's gradients
        xp = self.xp
        flag = xp.ones(1, dtype=np.float32)
        for a in arrays:
            if a.dtype.kind == "f":
                flag *= xp.isfinite(a).all()
        return flag

    def backward(self, g):
        return None


def all_finite(data: ArrayT, init_output: bool = True, out: ArrayT | None = None) -> ArrayT:
    """``[1.]`` when every element of ``data`` is finite, else ``[0.]`` (float32, shape
    ``(1,)``; AMP's overflow check). With ``init_output=False`` the result starts from
    ``out``'s value, so a 0 already there stays 0."""
    return multi_all_finite(data, init_output=init_output, out=out)


def multi_all_finite(
    *data: ArrayT,
    num_arrays: int | None = None,
    init_output: bool = True,
    out: ArrayT | None = None,
) -> ArrayT:
    """:func:`all_finite` over several arrays at once (``num_arrays``: how many, MXNet's
    count of them; any number when None).

    Raises
    ------
    MXNetError
        When ``num_arrays`` is not the number of arrays given (MXNet refuses that too).
    """
    if num_arrays is not None and num_arrays != len(data):
        raise MXNetError(f"multi_all_finite: num_arrays={num_arrays} but {len(data)} arrays given")
    result = apply(_AllFinite, data)
    if out is not None:
        out[:] = result if init_output else result * elementwise.not_equal(out, 0)
        return out
    return result


def histogram(
    a: ArrayT, bins: int | ArrayCore = 10, range: tuple[float, float] | None = None
) -> tuple[ArrayT, ArrayT]:
    """``(counts, bin_edges)`` of the flattened ``a``, as NumPy's ``histogram`` counts them
    (each bin half-open but the last, which holds its right edge; values outside are left out).

    ``bins`` is a number of equal bins over ``range`` (``(a.min(), a.max())`` when None) or an
    NDArray of edges. As in MXNet 1.9.1: with a number of bins and no range the result is
    NumPy's, counts in float32 (MXNet warns); otherwise counts are int64 and the edges are
    float32 (computed in float32).

    Raises
    ------
    MXNetError
        For a range whose low end is above its high end, or fewer than one bin.
    """
    be, ctx = a._ctx.backend, a._ctx

    def made(values, dtype=None):
        v = np.asarray(values, dtype=dtype)
        return a._new(be.asarray(v, v.dtype, ctx.device_id), ctx)

    host = np.asarray(be.to_host(a._data)).reshape(-1)
    if isinstance(bins, ArrayCore):
        edges = np.asarray(bins._ctx.backend.to_host(bins._data))
        counts, _ = np.histogram(host, bins=edges)
        return made(counts, np.int64), made(edges)
    nbins = int(bins)
    if nbins < 1:
        raise MXNetError(f"histogram: bins must be at least 1, got {bins}")
    if range is None:
        warnings.warn(
            "histogram: range is not specified, using numpy's result to ensure consistency "
            "with numpy (as MXNet does)",
            UserWarning,
            stacklevel=2,
        )
        counts, edges = np.histogram(host, bins=nbins)
        return made(counts, np.float32), made(edges, np.float32)
    lo, hi = (np.float32(v) for v in range)
    if lo > hi:
        raise MXNetError(f"histogram: range {range} must have its low end first")
    edges = lo + (hi - lo) * np.arange(nbins + 1, dtype=np.float32) / np.float32(nbins)
    x = host.astype(np.float32)
    inside = x[(x >= lo) & (x <= hi)]
    width = hi - lo if hi > lo else np.float32(1)
    idx = np.minimum(((inside - lo) * np.float32(nbins) / width).astype(np.int64), nbins - 1)
    counts = np.bincount(idx, minlength=nbins).astype(np.int64)
    return made(counts, np.int64), made(edges, np.float32)
