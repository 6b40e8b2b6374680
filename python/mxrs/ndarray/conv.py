"""Convolution and pooling over 1, 2 or 3 spatial dimensions, vectorised.

Convolution gathers every receptive field with one strided view of the (padded) input and one
copy into a ``(C*prod(K), N*prod(O))`` column matrix, then does one GEMM per group (a single
batched matmul). The backward pass is two GEMMs and a scatter of the column gradient back onto the
input, looping only over the kernel offsets, each step a strided add over the whole batch.
Deconvolution (``deconv.py``) reuses the same gather and scatter the other way round.

Pooling is separable: each window is reduced along its last axis (K strided passes over the whole
batch), then along the axis before it, and so on. Max pooling's gradient goes to the first
maximum of each window in row-major order, as MXNet's does. Channel-last pooling layouts
(``NWC``, ``NHWC``, ``NDHWC``) run as the channels-first op between two transposes.

The same code runs on NumPy and CuPy; inputs are ``(N, C, *spatial)``.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ..base import MXNetError
from ._op import Op, apply

if TYPE_CHECKING:
    from .ndarray import NDArray

__all__ = ["Convolution", "Pooling"]

#: Channels-first and channel-last layout names by number of spatial dimensions.
_FIRST = {1: "NCW", 2: "NCHW", 3: "NCDHW"}
_LAST = {1: "NWC", 2: "NHWC", 3: "NDHWC"}


def _tuple(v, n, name):
    if v is None or v == ():
        return None
    if isinstance(v, int):
        return (v,) * n
    v = tuple(int(i) for i in v)
    if len(v) != n:
        raise MXNetError(f"{name} needs {n} values, got {v}")
    return v


def _spatial_dims(op, data):
    """Number of spatial dimensions of ``data`` (1, 2 or 3), else a clear error."""
    nd = data.ndim - 2
    if nd not in (1, 2, 3):
        raise MXNetError(f"{op} needs 3-D, 4-D or 5-D data (N, C, *spatial), got {data.shape}")
    return nd


def _check_conv_layout(op, layout, nd):
    """Refuse layouts other than the channels-first one for ``nd`` spatial dimensions."""
    if layout in (None, _FIRST[nd]):
        return
    if layout == _LAST.get(nd) and nd > 1:
        raise MXNetError(
            f"{op}: layout {layout} is not supported (MXNet runs channel-last {op} only on GPU); "
            f"use {_FIRST[nd]}"
        )
    raise MXNetError(f"{op} of {nd + 2}-D data supports layout {_FIRST[nd]}, not {layout}")


def _padded(xp, x, pads, fill, extra=None):
    """Return ``x`` padded by ``pads`` on each spatial side (plus ``extra`` at the high end)."""
    extra = extra or (0,) * len(pads)
    if not (any(pads) or any(extra)):
        return x
    shape = x.shape[:2] + tuple(
        s + 2 * p + e for s, p, e in zip(x.shape[2:], pads, extra, strict=True)
    )
    out = xp.full(shape, fill, dtype=x.dtype)
    out[
        (slice(None),) * 2 + tuple(slice(p, p + s) for p, s in zip(pads, x.shape[2:], strict=True))
    ] = x
    return out


def _windows(be, xpad, kernel, stride, dilate, out):
    """Strided view ``(C, *kernel, N, *out)`` of every receptive field of ``xpad``."""
    s = xpad.strides
    n, c = xpad.shape[:2]
    shape = (c, *kernel, n, *out)
    strides = (
        s[1],
        *(si * d for si, d in zip(s[2:], dilate, strict=True)),
        s[0],
        *(si * st for si, st in zip(s[2:], stride, strict=True)),
    )
    return be.as_strided(xpad, shape, strides)


def _scatter(xp, dcols, shape, stride, dilate, out):
    """Add the columns ``dcols`` ``(C, *kernel, N, *out)`` back into zeros of ``shape``
    ``(C, N, *padded)``: the adjoint of :func:`_windows`."""
    kernel = dcols.shape[1 : 1 + len(out)]
    dst = xp.zeros(shape, dtype=dcols.dtype)
    for tap in itertools.product(*(range(k) for k in kernel)):
        key = tuple(
            slice(t * d, t * d + s * (o - 1) + 1, s)
            for t, d, s, o in zip(tap, dilate, stride, out, strict=True)
        )
        dst[(slice(None), slice(None)) + key] += dcols[(slice(None),) + tap]
    return dst


def _to_first(a, nd):
    """Move axis 0 of ``a`` to axis 1 (``(F, N, ...)`` -> ``(N, F, ...)``), contiguous."""
    return a.transpose((1, 0) + tuple(range(2, nd + 2)))


class _Conv(Op):
    def forward(self, x, w, *b, stride, pad, dilate, groups):
        xp = self.xp
        n, c = x.shape[:2]
        f, cg = w.shape[:2]
        kernel, nd = w.shape[2:], x.ndim - 2
        if c != cg * groups or f % groups:
            raise MXNetError(
                f"Convolution: input has {c} channels, weight {w.shape} with "
                f"num_group={groups} expects {cg * groups}"
            )
        xpad = _padded(xp, x, pad, 0)
        padded = xpad.shape[2:]
        out = tuple(
            (p - d * (k - 1) - 1) // s + 1
            for p, k, s, d in zip(padded, kernel, stride, dilate, strict=True)
        )
        if min(out) <= 0:
            raise MXNetError(f"Convolution: kernel {kernel} larger than padded input {padded}")
        ksize = cg * math.prod(kernel)
        view = _windows(self.be, xpad, kernel, stride, dilate, out)
        cols = view.reshape(groups, ksize, n * math.prod(out))
        w3 = w.reshape(groups, f // groups, ksize)
        y = xp.matmul(w3, cols).reshape((f, n) + out)
        if b:
            y += b[0].reshape((f,) + (1,) * (nd + 1))
        self.cols, self.w3 = cols, w3
        self.geom = (x.shape, w.shape, stride, pad, dilate, padded, out)
        return xp.ascontiguousarray(_to_first(y, nd))

    def backward(self, g):
        xp = self.xp
        xshape, wshape, stride, pad, dilate, padded, out = self.geom
        (n, c), nd, f = xshape[:2], len(out), wshape[0]
        groups = self.w3.shape[0]
        g3 = xp.ascontiguousarray(_to_first(g, nd)).reshape(groups, f // groups, -1)
        needs = self.needs
        gx = gw = gb = None
        if needs[1]:
            gw = xp.matmul(g3, self.cols.transpose(0, 2, 1)).reshape(wshape)
        if len(needs) == 3 and needs[2]:
            gb = g3.reshape(f, -1).sum(axis=1)
        if needs[0]:
            dcols = xp.matmul(self.w3.transpose(0, 2, 1), g3)
            dcols = dcols.reshape((c,) + wshape[2:] + (n,) + out)
            dxp = _scatter(xp, dcols, (c, n) + padded, stride, dilate, out)
            crop = tuple(slice(p, p + s) for p, s in zip(pad, xshape[2:], strict=True))
            gx = xp.ascontiguousarray(_to_first(dxp[(slice(None),) * 2 + crop], nd))
        return (gx, gw, gb) if len(needs) == 3 else (gx, gw)


def Convolution(
    data: NDArray,
    weight: NDArray,
    bias: NDArray | None = None,
    kernel: int | Sequence[int] | None = None,
    stride: int | Sequence[int] | None = None,
    dilate: int | Sequence[int] | None = None,
    pad: int | Sequence[int] | None = None,
    num_filter: int | None = None,
    num_group: int = 1,
    no_bias: bool = False,
    layout: str | None = None,
    **kwargs: Any,
) -> NDArray:
    """1-, 2- or 3-D convolution (cross-correlation) of ``(N, C, *spatial)`` data.

    Parameters
    ----------
    data : NDArray
        ``(N, C, W)``, ``(N, C, H, W)`` or ``(N, C, D, H, W)``.
    weight : NDArray
        ``(num_filter, C // num_group, *kernel)``.
    bias : NDArray, optional
        ``(num_filter,)``; ignored when ``no_bias``.
    kernel : tuple of int
        One size per spatial axis; must match ``weight`` (taken from it when omitted).
    stride, dilate, pad : tuple of int, optional
        Defaults 1, 1 and 0 per dimension. Output size is
        ``(size + 2*pad - dilate*(kernel-1) - 1) // stride + 1``.
    num_filter : int
        Number of output channels (taken from ``weight`` when omitted).
    num_group : int, default 1
        Split channels into groups convolved separately.
    layout : {None, 'NCW', 'NCHW', 'NCDHW'}
        Channel-last layouts are refused (MXNet runs them only on GPU).

    Examples
    --------
    >>> x = mx.nd.ones((1, 1, 5, 5)); w = mx.nd.ones((2, 1, 3, 3))
    >>> mx.nd.Convolution(x, w, kernel=(3, 3), num_filter=2, no_bias=True).shape
    (1, 2, 3, 3)
    """
    nd = _spatial_dims("Convolution", data)
    _check_conv_layout("Convolution", layout, nd)
    if weight.ndim != data.ndim:
        raise MXNetError(f"Convolution: weight {weight.shape} does not fit data {data.shape}")
    if kernel is not None and _tuple(kernel, nd, "kernel") != tuple(weight.shape[2:]):
        raise MXNetError(f"Convolution: kernel {kernel} does not match weight {weight.shape}")
    if num_filter is not None and int(num_filter) != weight.shape[0]:
        raise MXNetError(f"Convolution: num_filter={num_filter} but weight is {weight.shape}")
    arrays = (data, weight) if (bias is None or no_bias) else (data, weight, bias)
    return apply(
        _Conv,
        arrays,
        stride=_tuple(stride, nd, "stride") or (1,) * nd,
        pad=_tuple(pad, nd, "pad") or (0,) * nd,
        dilate=_tuple(dilate, nd, "dilate") or (1,) * nd,
        groups=int(num_group),
    )


def _counts(size, k, s, out, lo, hi):
    """Per output position, how many of its ``k`` taps at stride ``s`` fall in ``[lo, hi)``."""
    return [max(0, min(o * s + k, hi) - max(o * s, lo)) for o in range(out)]


def _tap(ndim, axis, t, s, n):
    """Index selecting tap ``t`` of ``n`` windows at stride ``s`` along ``axis``."""
    key = [slice(None)] * ndim
    key[axis] = slice(t, t + s * (n - 1) + 1, s)
    return tuple(key)


class _Pool(Op):
    """Separable pooling: reduce each window along its last axis, then the one before, ...

    A window's max (or sum) is the max (or sum) over its rows of the per-row results, so the
    forward pass is ``K`` strided passes per spatial axis. Max pooling's backward pass routes the
    gradient, axis by axis, to the first maximal entry: the first maximum in row-major order, as
    MXNet picks.
    """

    def forward(self, x, kernel, stride, pad, pool_type, full, count_include_pad):
        xp = self.xp
        nd, sizes = len(kernel), x.shape[2:]
        rnd = (lambda a, b: -(-a // b)) if full else (lambda a, b: a // b)
        out = tuple(
            rnd(h + 2 * p - k, s) + 1 for h, k, s, p in zip(sizes, kernel, stride, pad, strict=True)
        )
        if min(out) <= 0:
            raise MXNetError(
                f"Pooling: kernel {kernel} larger than padded input "
                f"{tuple(h + 2 * p for h, p in zip(sizes, pad, strict=True))}"
            )
        extra = tuple(
            max(0, (o - 1) * s + k - (h + 2 * p))
            for o, s, k, h, p in zip(out, stride, kernel, sizes, pad, strict=True)
        )
        is_max = pool_type == "max"
        stages = [_padded(xp, x, pad, -xp.inf if is_max else 0, extra)]
        for axis in range(nd + 1, 1, -1):
            i = axis - 2
            stages.append(self._reduce(stages[-1], axis, kernel[i], stride[i], out[i], is_max))
        res = stages[-1]
        self.geom = (x.shape, kernel, stride, pad, out)
        self.is_max = is_max
        self.shapes = [a.shape for a in stages]
        self.stages = stages if (self.needs[0] and is_max) else None
        self.scale = None
        if pool_type == "avg":
            lo, hi = (0, 2) if count_include_pad else (1, 1)
            prod = 1
            for i, (h, k, s, o, p) in enumerate(zip(sizes, kernel, stride, out, pad, strict=True)):
                c = _counts(h, k, s, o, lo * p, hi * p + h)
                prod = prod * xp.asarray(c).reshape((-1,) + (1,) * (nd - 1 - i))
            self.scale = 1 / xp.asarray(prod, dtype=x.dtype)
            res *= self.scale
        return res

    def _reduce(self, x, axis, k, s, n, is_max):
        xp = self.xp
        if k == 1:
            return x[_tap(x.ndim, axis, 0, s, n)].copy()
        fn = xp.maximum if is_max else xp.add
        out = fn(x[_tap(x.ndim, axis, 0, s, n)], x[_tap(x.ndim, axis, 1, s, n)])
        for t in range(2, k):
            fn(out, x[_tap(x.ndim, axis, t, s, n)], out=out)
        return out

    def _route(self, g, shape, axis, k, s, n, src, best):
        """Spread ``g`` over the ``k`` taps along ``axis`` into a zero array of ``shape``."""
        xp = self.xp
        dx = xp.zeros(shape, dtype=g.dtype)
        overlap = s < k
        taken = None
        for t in range(k):
            key = _tap(len(shape), axis, t, s, n)
            if not self.is_max:
                if overlap:
                    dx[key] += g
                else:
                    dx[key] = g
                continue
            if t == k - 1:
                m = None if taken is None else ~taken
            else:
                m = src[key] == best
                if taken is not None:
                    m &= ~taken
                    taken |= m
                else:
                    taken = m
            if overlap:
                dx[key] += g if m is None else g * m
            elif m is None:
                dx[key] = g
            else:
                xp.multiply(g, m, out=dx[key])
        return dx

    def backward(self, g):
        xp = self.xp
        xshape, kernel, stride, pad, out = self.geom
        nd = len(kernel)
        if self.scale is not None:
            g = g * self.scale
        # Stage j was reduced along axis nd + 1 - j into stage j + 1; undo them last to first.
        for j in range(nd - 1, -1, -1):
            i = nd - 1 - j
            src = best = None
            if self.stages is not None:
                src, best = self.stages[j], self.stages[j + 1]
            g = self._route(g, self.shapes[j], i + 2, kernel[i], stride[i], out[i], src, best)
        if self.shapes[0] == xshape:
            return g
        crop = tuple(slice(p, p + h) for p, h in zip(pad, xshape[2:], strict=True))
        return xp.ascontiguousarray(g[(slice(None),) * 2 + crop])


class _GlobalPool(Op):
    def forward(self, x, pool_type):
        self.x, self.type = x, pool_type
        fn = {"max": x.max, "avg": x.mean, "sum": x.sum}[pool_type]
        self.y = fn(axis=tuple(range(2, x.ndim)), keepdims=True)
        return self.y

    def backward(self, g):
        if self.type == "max":
            return g * (self.x == self.y)
        if self.type == "avg":
            g = g / math.prod(self.x.shape[2:])
        return self.xp.broadcast_to(g, self.x.shape)


def Pooling(
    data: NDArray,
    kernel: int | Sequence[int] | None = None,
    pool_type: str = "max",
    global_pool: bool = False,
    stride: int | Sequence[int] | None = None,
    pad: int | Sequence[int] | None = None,
    pooling_convention: str = "valid",
    count_include_pad: bool = True,
    layout: str | None = None,
    **kwargs: Any,
) -> NDArray:
    """1-, 2- or 3-D max, average or sum pooling of ``(N, C, *spatial)`` data.

    Parameters
    ----------
    kernel : tuple of int
        Window, one size per spatial axis.
    pool_type : {'max', 'avg', 'sum'}, default 'max'
    global_pool : bool, default False
        Pool each whole feature map to size 1 (kernel, stride and pad are ignored).
    stride : tuple of int, optional
        Defaults to 1 per dimension (as MXNet's operator; Gluon's layers pass the window).
    pad : tuple of int, optional
        Defaults to 0; max pooling ignores padded positions.
    pooling_convention : {'valid', 'full'}, default 'valid'
        Output size rounds ``(size + 2*pad - kernel) / stride`` down ('valid') or up ('full').
    count_include_pad : bool, default True
        For 'avg': whether padded positions count in each window's divisor.
    layout : str, optional
        ``NCW``/``NCHW``/``NCDHW`` (the default) or channel-last ``NWC``/``NHWC``/``NDHWC``.
    """
    if pool_type not in ("max", "avg", "sum"):
        raise MXNetError(f"Pooling supports pool_type max, avg and sum, not {pool_type!r}")
    if pooling_convention not in ("valid", "full"):
        raise MXNetError(f"unknown pooling_convention {pooling_convention!r}")
    nd = _spatial_dims("Pooling", data)
    if layout not in (None, _FIRST[nd], _LAST[nd]):
        raise MXNetError(
            f"Pooling of {data.ndim}-D data supports layouts {_FIRST[nd]} and {_LAST[nd]}, "
            f"not {layout}"
        )
    last = layout == _LAST[nd]
    if last:
        data = data.transpose((0, nd + 1) + tuple(range(1, nd + 1)))
    if global_pool:
        out = apply(_GlobalPool, (data,), pool_type=pool_type)
    else:
        if kernel is None:
            raise MXNetError("Pooling needs kernel unless global_pool=True")
        out = apply(
            _Pool,
            (data,),
            kernel=_tuple(kernel, nd, "kernel"),
            stride=_tuple(stride, nd, "stride") or (1,) * nd,
            pad=_tuple(pad, nd, "pad") or (0,) * nd,
            pool_type=pool_type,
            full=pooling_convention == "full",
            count_include_pad=count_include_pad,
        )
    if last:
        out = out.transpose((0,) + tuple(range(2, nd + 2)) + (1,))
    return out
