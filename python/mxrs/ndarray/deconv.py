"""Deconvolution (transposed convolution): the gradient of Convolution with respect to its input.

The forward pass is one batched GEMM per group, ``weight^T @ data``, giving a column matrix that
is scattered (the adjoint of the convolution's window gather) onto the padded output, which is
then cropped by ``pad``. Its backward pass is therefore a convolution: the output gradient's
windows gathered into columns, then one GEMM for the data gradient and one for the weight's.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from ..base import MXNetError
from ..kernels.portable import padded, scatter, to_first, windows
from .conv import _check_conv_layout, _spatial_dims, _tuple
from .core.array import ArrayT
from .core.op import Op, apply, with_out

__all__ = ["Deconvolution", "deconvolution"]


class _Deconv(Op):
    def forward(self, x, w, *b, stride, pad, dilate, adj, groups):
        xp = self.xp
        (n, c), insz, nd = x.shape[:2], x.shape[2:], x.ndim - 2
        cw, fg = w.shape[:2]
        kernel = w.shape[2:]
        if c != cw or c % groups:
            raise MXNetError(
                f"Deconvolution: input has {c} channels but weight {w.shape} expects {cw} "
                f"(num_group={groups})"
            )
        f, cg = fg * groups, c // groups
        full = tuple(
            s * (i - 1) + d * (k - 1) + 1
            for i, k, s, d in zip(insz, kernel, stride, dilate, strict=True)
        )
        out = tuple(fl - 2 * p + a for fl, p, a in zip(full, pad, adj, strict=True))
        if min(out) <= 0:
            raise MXNetError(f"Deconvolution: padding {pad} leaves an empty output {out}")
        buf = tuple(max(fl, p + o) for fl, p, o in zip(full, pad, out, strict=True))
        x3 = xp.ascontiguousarray(to_first(x, nd)).reshape(groups, cg, -1)
        w3 = w.reshape(groups, cg, fg * math.prod(kernel))
        dcols = xp.matmul(w3.transpose(0, 2, 1), x3).reshape((f,) + kernel + (n,) + insz)
        ybuf = scatter(xp, dcols, (f, n) + buf, stride, dilate, insz)
        crop = tuple(slice(p, p + o) for p, o in zip(pad, out, strict=True))
        y = xp.ascontiguousarray(to_first(ybuf[(slice(None),) * 2 + crop], nd))
        if b:
            y += b[0].reshape((f,) + (1,) * nd)
        self.x3, self.w3 = x3, w3
        self.geom = (x.shape, w.shape, stride, pad, dilate, buf, out)
        return y

    def backward(self, g):
        xp = self.xp
        xshape, wshape, stride, pad, dilate, buf, out = self.geom
        (n, c), insz, nd = xshape[:2], xshape[2:], len(out)
        groups, cg, _ = self.w3.shape
        needs = self.needs
        gx = gw = gb = None
        if needs[0] or needs[1]:
            extra = tuple(b - p - o for b, p, o in zip(buf, pad, out, strict=True))
            gpad = padded(xp, g, pad, 0, extra)
            view = windows(self.be, gpad, wshape[2:], stride, dilate, insz)
            cols = view.reshape(groups, -1, n * math.prod(insz))
            if needs[0]:
                gx3 = xp.matmul(self.w3, cols).reshape((c, n) + insz)
                gx = xp.ascontiguousarray(to_first(gx3, nd))
            if needs[1]:
                gw = xp.matmul(self.x3, cols.transpose(0, 2, 1)).reshape(wshape)
        if len(needs) == 3 and needs[2]:
            gb = g.sum(axis=(0,) + tuple(range(2, nd + 2)))
        return (gx, gw, gb) if len(needs) == 3 else (gx, gw)


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
