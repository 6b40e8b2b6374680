"""Convolution and its relatives over 1, 2 or 3 spatial dimensions: ``Convolution``,
``Pooling``, ``Deconvolution`` (transposed convolution) and ``UpSampling``, MXNet's operators.

This module checks shapes and attributes and keeps MXNet's semantics (its output sizes,
pooling conventions and layouts); the arithmetic is a kernel of :mod:`mxrs.kernels`, oneDNN's
on float32 CPU arrays or the portable NumPy/CuPy code otherwise. Channel-last pooling layouts
(``NWC``, ``NHWC``, ``NDHWC``) run as the channels-first op between two transposes. Inputs are
``(N, C, *spatial)``.

Deconvolution is the gradient of Convolution with respect to its input (its output size is
``stride*(size-1) + dilate*(kernel-1) + 1 - 2*pad + adj``).

``UpSampling`` of ``(N, C, H, W)`` images: nearest upsampling repeats every pixel ``scale``
times along H and W. Several inputs are upsampled to the first one's size times ``scale`` (each
by its own whole factor) and then concatenated along the channels or summed. Bilinear upsampling
is MXNet's: a grouped transposed convolution by the given weight (one ``(1, k, k)`` filter per
channel, ``k = 2 scale - scale % 2``, stride ``scale``, padding ``ceil((scale - 1) / 2)``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from .. import kernels
from ..base import MXNetError
from ..kernels import ConvGeometry
from ..kernels._types import PoolGeometry
from . import shape
from .core.array import ArrayT
from .core.op import Op, apply, with_out
from .elementwise import add_n

__all__ = ["Convolution", "Pooling", "Deconvolution", "deconvolution", "UpSampling"]

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


class _Conv(Op):
    def forward(self, x, w, *b, stride, pad, dilate, groups):
        c = x.shape[1]
        f, cg = w.shape[:2]
        kernel = w.shape[2:]
        if c != cg * groups or f % groups:
            raise MXNetError(
                f"Convolution: input has {c} channels, weight {w.shape} with "
                f"num_group={groups} expects {cg * groups}"
            )
        padded = tuple(s + 2 * p for s, p in zip(x.shape[2:], pad, strict=True))
        out = tuple(
            (p - d * (k - 1) - 1) // s + 1
            for p, k, s, d in zip(padded, kernel, stride, dilate, strict=True)
        )
        if min(out) <= 0:
            raise MXNetError(f"Convolution: kernel {kernel} larger than padded input {padded}")
        k = kernels.select("Convolution", self.be, x.dtype)
        geom = ConvGeometry(stride, pad, dilate, groups)
        y, self.grad = k.convolution(x, w, b[0] if b else None, geom, out, True in self.needs)
        return y

    def backward(self, g):
        gx, gw, gb = self.grad(g, self.needs)
        return (gx, gw, gb) if len(self.needs) == 3 else (gx, gw)


def Convolution(
    data: ArrayT,
    weight: ArrayT,
    bias: ArrayT | None = None,
    kernel: int | Sequence[int] | None = None,
    stride: int | Sequence[int] | None = None,
    dilate: int | Sequence[int] | None = None,
    pad: int | Sequence[int] | None = None,
    num_filter: int | None = None,
    num_group: int = 1,
    no_bias: bool = False,
    layout: str | None = None,
    **kwargs: Any,
) -> ArrayT:
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


class _Pool(Op):
    def forward(self, x, kernel, stride, pad, pool_type, full, count_include_pad):
        sizes = x.shape[2:]
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
        geom = PoolGeometry(kernel, stride, pad, extra, pool_type, count_include_pad)
        k = kernels.select("Pooling", self.be, x.dtype)
        y, self.grad = k.pooling(x, geom, out, True in self.needs)
        return y

    def backward(self, g):
        return self.grad(g, self.needs)[0]


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
    data: ArrayT,
    kernel: int | Sequence[int] | None = None,
    pool_type: str = "max",
    global_pool: bool = False,
    stride: int | Sequence[int] | None = None,
    pad: int | Sequence[int] | None = None,
    pooling_convention: str = "valid",
    count_include_pad: bool = True,
    layout: str | None = None,
    **kwargs: Any,
) -> ArrayT:
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


class _Deconv(Op):
    def forward(self, x, w, *b, stride, pad, dilate, adj, groups):
        c, insz = x.shape[1], x.shape[2:]
        cw, kernel = w.shape[0], w.shape[2:]
        if c != cw or c % groups:
            raise MXNetError(
                f"Deconvolution: input has {c} channels but weight {w.shape} expects {cw} "
                f"(num_group={groups})"
            )
        out = tuple(
            s * (i - 1) + d * (k - 1) + 1 - 2 * p + a
            for i, k, s, d, p, a in zip(insz, kernel, stride, dilate, pad, adj, strict=True)
        )
        if min(out) <= 0:
            raise MXNetError(f"Deconvolution: padding {pad} leaves an empty output {out}")
        k = kernels.select("Deconvolution", self.be, x.dtype)
        geom = ConvGeometry(stride, pad, dilate, groups)
        y, self.grad = k.deconvolution(
            x, w, b[0] if b else None, geom, adj, out, True in self.needs
        )
        return y

    def backward(self, g):
        gx, gw, gb = self.grad(g, self.needs)
        return (gx, gw, gb) if len(self.needs) == 3 else (gx, gw)


def _target_pad(target, insz, kernel, stride, dilate):
    """The ``(pad, adj)`` giving output size ``target``, as MXNet derives them."""
    pad, adj = [], []
    for t, i, k, s, d in zip(target, insz, kernel, stride, dilate, strict=True):
        full = s * (i - 1) + d * (k - 1) + 1
        if t > full:
            raise MXNetError(f"Deconvolution: target_shape {tuple(target)} is too big")
        total = full - t
        pad.append((total + 1) // 2)
        adj.append(total % 2)
    return tuple(pad), tuple(adj)


@with_out
def Deconvolution(
    data: ArrayT,
    weight: ArrayT,
    bias: ArrayT | None = None,
    kernel: int | Sequence[int] | None = None,
    stride: int | Sequence[int] | None = None,
    dilate: int | Sequence[int] | None = None,
    pad: int | Sequence[int] | None = None,
    adj: int | Sequence[int] | None = None,
    target_shape: int | Sequence[int] | None = None,
    num_filter: int | None = None,
    num_group: int = 1,
    no_bias: bool = True,
    layout: str | None = None,
    **kwargs: Any,
) -> ArrayT:
    """1-, 2- or 3-D transposed convolution of ``(N, C, *spatial)`` data.

    Parameters
    ----------
    data : NDArray
        ``(N, C, W)``, ``(N, C, H, W)`` or ``(N, C, D, H, W)``.
    weight : NDArray
        ``(C, num_filter // num_group, *kernel)``.
    bias : NDArray, optional
        ``(num_filter,)``; ignored when ``no_bias`` (the default, as MXNet's).
    kernel : tuple of int
        One size per spatial axis; must match ``weight`` (taken from it when omitted).
    stride, dilate, pad : tuple of int, optional
        Those of the convolution this op transposes; defaults 1, 1 and 0. Output size is
        ``stride*(size-1) + dilate*(kernel-1) + 1 - 2*pad + adj``.
    adj : tuple of int, optional
        Extra output size at the high end, each below its stride (default 0).
    target_shape : tuple of int, optional
        Output spatial size; when given, ``pad`` and ``adj`` are derived from it.
    num_filter : int
        Number of output channels (taken from ``weight`` when omitted).
    num_group : int, default 1
    layout : {None, 'NCW', 'NCHW', 'NCDHW'}
        Channel-last layouts are refused (MXNet runs them only on GPU).

    Examples
    --------
    >>> x = mx.nd.ones((1, 2, 3, 3)); w = mx.nd.ones((2, 4, 3, 3))
    >>> mx.nd.Deconvolution(x, w, kernel=(3, 3), stride=(2, 2), num_filter=4).shape
    (1, 4, 7, 7)
    """
    nd = _spatial_dims("Deconvolution", data)
    _check_conv_layout("Deconvolution", layout, nd)
    if weight.ndim != data.ndim:
        raise MXNetError(f"Deconvolution: weight {weight.shape} does not fit data {data.shape}")
    kshape = tuple(weight.shape[2:])
    if kernel is not None and _tuple(kernel, nd, "kernel") != kshape:
        raise MXNetError(f"Deconvolution: kernel {kernel} does not match weight {weight.shape}")
    groups = int(num_group)
    if num_filter is not None and int(num_filter) != weight.shape[1] * groups:
        raise MXNetError(
            f"Deconvolution: num_filter={num_filter} with num_group={groups} does not match "
            f"weight {weight.shape}"
        )
    st = _tuple(stride, nd, "stride") or (1,) * nd
    dl = _tuple(dilate, nd, "dilate") or (1,) * nd
    target = _tuple(target_shape, nd, "target_shape")
    if target is not None:
        pd, aj = _target_pad(target, data.shape[2:], kshape, st, dl)
    else:
        pd = _tuple(pad, nd, "pad") or (0,) * nd
        aj = _tuple(adj, nd, "adj") or (0,) * nd
        if any(a >= s for a, s in zip(aj, st, strict=True)):
            raise MXNetError(f"Deconvolution: adj {aj} must be smaller than stride {st}")
    arrays = (data, weight) if (bias is None or no_bias) else (data, weight, bias)
    return apply(_Deconv, arrays, stride=st, pad=pd, dilate=dl, adj=aj, groups=groups)


deconvolution = Deconvolution


def _nearest(x: ArrayT, out_hw: tuple[int, int], i: int) -> ArrayT:
    h, w = x.shape[2], x.shape[3]
    if out_hw[0] % h or out_hw[1] % w:
        raise MXNetError(
            f"UpSampling: input {i} of size {h}x{w} does not divide the output size "
            f"{out_hw[0]}x{out_hw[1]}"
        )
    sh, sw = out_hw[0] // h, out_hw[1] // w
    if sh > 1:
        x = shape.repeat(x, sh, axis=2)
    if sw > 1:
        x = shape.repeat(x, sw, axis=3)
    return x


def UpSampling(
    *data: ArrayT,
    scale: int,
    sample_type: str,
    num_filter: int = 0,
    multi_input_mode: str = "concat",
    num_args: int | None = None,
    workspace: int = 512,
    **kwargs: Any,
) -> ArrayT:
    """Upsample 4-d ``(N, C, H, W)`` arrays by the whole factor ``scale``.

    Parameters
    ----------
    *data : NDArray
        The images; for ``sample_type='bilinear'``, one image and its weight of shape
        ``(num_filter, 1, k, k)``.
    scale : int
    sample_type : {'nearest', 'bilinear'}
    num_filter : int, default 0
        The number of channels, for 'bilinear'.
    multi_input_mode : {'concat', 'sum'}, default 'concat'
        How several nearest-upsampled inputs are joined.
    num_args : int, optional
        The number of inputs, checked against ``data`` when given.

    Examples
    --------
    >>> mx.nd.UpSampling(mx.nd.ones((1, 1, 2, 2)), scale=2, sample_type='nearest').shape
    (1, 1, 4, 4)
    """
    if not data:
        raise MXNetError("UpSampling needs at least one input")
    if num_args is not None and int(num_args) != len(data):
        raise MXNetError(f"UpSampling: num_args={num_args} but {len(data)} inputs were given")
    s = int(scale)
    if s < 1:
        raise MXNetError(f"UpSampling: scale must be a positive integer, not {scale!r}")
    if sample_type == "bilinear":
        if len(data) != 2:
            raise MXNetError("UpSampling: 'bilinear' takes the data and a weight, two inputs")
        x, weight = data
        k, p = 2 * s - s % 2, int(math.ceil((s - 1) / 2.0))
        nf = int(num_filter) or x.shape[1]
        return Deconvolution(
            x,
            weight,
            kernel=(k, k),
            stride=(s, s),
            pad=(p, p),
            num_filter=nf,
            num_group=nf,
            no_bias=True,
        )
    if sample_type != "nearest":
        raise MXNetError(
            f"UpSampling: unknown sample_type {sample_type!r}; expected 'nearest' or 'bilinear'"
        )
    if multi_input_mode not in ("concat", "sum"):
        raise MXNetError(f"UpSampling: unknown multi_input_mode {multi_input_mode!r}")
    for i, x in enumerate(data):
        if x.ndim != 4:
            raise MXNetError(f"UpSampling: input {i} must be 4-d (N, C, H, W), not {x.ndim}-d")
    out_hw = (data[0].shape[2] * s, data[0].shape[3] * s)
    ups = [_nearest(x, out_hw, i) for i, x in enumerate(data)]
    if len(ups) == 1:
        return ups[0]
    if multi_input_mode == "sum":
        return add_n(*ups)
    return shape.concat(*ups, dim=1)
