"""2-D convolution and pooling, vectorised.

Convolution gathers every receptive field with one strided view of the (padded) input and one
copy into a ``(C*KH*KW, N*OH*OW)`` column matrix, then does one GEMM per group (a single batched
matmul). The backward pass is two GEMMs and a scatter of the column gradient back onto the input,
looping only over the KH*KW kernel offsets, each step a strided add over the whole batch.

Pooling is separable: each window is reduced over its columns (KW strided passes over the whole
batch), then over its rows (KH passes). Max pooling's gradient goes to the first maximum of each
window in row-major order, as MXNet's does.

The same code runs on NumPy and CuPy; inputs are ``(N, C, H, W)`` (or ``(N, C, W)`` for 1-D,
run as a height-1 2-D op).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ..base import MXNetError
from ._op import Op, apply

if TYPE_CHECKING:
    from .ndarray import NDArray

__all__ = ["Convolution", "Pooling"]


def _tuple(v, n, name):
    if v is None or v == ():
        return None
    if isinstance(v, int):
        return (v,) * n
    v = tuple(int(i) for i in v)
    if len(v) != n:
        raise MXNetError(f"{name} needs {n} values, got {v}")
    return v


def _lift(v, fill):
    """Turn a 1-D kernel/stride/pad/dilate value into its height-1 2-D form."""
    if v is None or v == ():
        return None
    if isinstance(v, int):
        return (fill, v)
    v = tuple(v)
    return (fill,) + v if len(v) == 1 else v


def _padded(xp, x, ph, pw, fill, extra_h=0, extra_w=0):
    """Return ``x`` padded by ``ph``/``pw`` (plus ``extra`` at the bottom/right) with ``fill``."""
    if not (ph or pw or extra_h or extra_w):
        return x
    n, c, h, w = x.shape
    out = xp.full((n, c, h + 2 * ph + extra_h, w + 2 * pw + extra_w), fill, dtype=x.dtype)
    out[:, :, ph : ph + h, pw : pw + w] = x
    return out


class _Conv(Op):
    def forward(self, x, w, *b, stride, pad, dilate, groups):
        xp = self.xp
        n, c, h, wd = x.shape
        f, cg, kh, kw = w.shape
        (sh, sw), (ph, pw), (dh, dw) = stride, pad, dilate
        if c != cg * groups or f % groups:
            raise MXNetError(
                f"Convolution: input has {c} channels, weight {w.shape} with "
                f"num_group={groups} expects {cg * groups}"
            )
        xpad = _padded(xp, x, ph, pw, 0)
        hp, wp = xpad.shape[2:]
        oh = (hp - dh * (kh - 1) - 1) // sh + 1
        ow = (wp - dw * (kw - 1) - 1) // sw + 1
        if oh <= 0 or ow <= 0:
            raise MXNetError(f"Convolution: kernel {(kh, kw)} larger than padded input {(hp, wp)}")
        s0, s1, s2, s3 = xpad.strides
        view = self.be.as_strided(
            xpad, (c, kh, kw, n, oh, ow), (s1, s2 * dh, s3 * dw, s0, s2 * sh, s3 * sw)
        )
        cols = view.reshape(groups, cg * kh * kw, n * oh * ow)
        w3 = w.reshape(groups, f // groups, cg * kh * kw)
        y = xp.matmul(w3, cols).reshape(f, n, oh, ow)
        if b:
            y += b[0].reshape(f, 1, 1, 1)
        self.cols, self.w3, self.geom = (
            cols,
            w3,
            (x.shape, w.shape, stride, pad, dilate, (hp, wp, oh, ow)),
        )
        return xp.ascontiguousarray(y.transpose(1, 0, 2, 3))

    def backward(self, g):
        xp = self.xp
        (n, c, h, wd), wshape, (sh, sw), (ph, pw), (dh, dw), (hp, wp, oh, ow) = self.geom
        f, cg, kh, kw = wshape
        groups = self.w3.shape[0]
        g3 = xp.ascontiguousarray(g.transpose(1, 0, 2, 3)).reshape(groups, f // groups, n * oh * ow)
        needs = self.needs
        gx = gw = gb = None
        if needs[1]:
            gw = xp.matmul(g3, self.cols.transpose(0, 2, 1)).reshape(wshape)
        if len(needs) == 3 and needs[2]:
            gb = g3.reshape(f, -1).sum(axis=1)
        if needs[0]:
            dcols = xp.matmul(self.w3.transpose(0, 2, 1), g3).reshape(c, kh, kw, n, oh, ow)
            dxp = xp.zeros((c, n, hp, wp), dtype=g.dtype)
            for i in range(kh):
                hi = i * dh
                for j in range(kw):
                    wj = j * dw
                    dxp[
                        :, :, hi : hi + sh * (oh - 1) + 1 : sh, wj : wj + sw * (ow - 1) + 1 : sw
                    ] += dcols[:, i, j]
            gx = xp.ascontiguousarray(dxp[:, :, ph : ph + h, pw : pw + wd].transpose(1, 0, 2, 3))
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
    """2-D convolution (cross-correlation) of ``(N, C, H, W)`` data.

    Parameters
    ----------
    data : NDArray
        ``(N, C, H, W)``, or ``(N, C, W)`` for a 1-D convolution.
    weight : NDArray
        ``(num_filter, C // num_group, KH, KW)``.
    bias : NDArray, optional
        ``(num_filter,)``; ignored when ``no_bias``.
    kernel : tuple of int
        ``(KH, KW)``; must match ``weight`` (taken from it when omitted).
    stride, dilate, pad : tuple of int, optional
        Defaults 1, 1 and 0 per dimension. Output size is
        ``(H + 2*pad - dilate*(KH-1) - 1) // stride + 1``.
    num_filter : int
        Number of output channels (taken from ``weight`` when omitted).
    num_group : int, default 1
        Split channels into groups convolved separately.

    Examples
    --------
    >>> x = mx.nd.ones((1, 1, 5, 5)); w = mx.nd.ones((2, 1, 3, 3))
    >>> mx.nd.Convolution(x, w, kernel=(3, 3), num_filter=2, no_bias=True).shape
    (1, 2, 3, 3)
    """
    one_d = data.ndim == 3
    if one_d:
        data = data.expand_dims(2)
        weight = weight.expand_dims(2) if weight.ndim == 3 else weight
        kernel, stride, dilate, pad = (
            _lift(kernel, 1),
            _lift(stride, 1),
            _lift(dilate, 1),
            _lift(pad, 0),
        )
    if layout not in (None, "NCHW", "NCW"):
        raise MXNetError(f"Convolution supports layout NCHW, not {layout}")
    if kernel is not None and _tuple(kernel, 2, "kernel") != tuple(weight.shape[2:]):
        raise MXNetError(f"Convolution: kernel {kernel} does not match weight {weight.shape}")
    arrays = (data, weight) if (bias is None or no_bias) else (data, weight, bias)
    out = apply(
        _Conv,
        arrays,
        stride=_tuple(stride, 2, "stride") or (1, 1),
        pad=_tuple(pad, 2, "pad") or (0, 0),
        dilate=_tuple(dilate, 2, "dilate") or (1, 1),
        groups=int(num_group),
    )
    return out.squeeze(axis=2) if one_d else out


def _counts(size, k, s, out, lo, hi):
    """Per output position, how many of its ``k`` taps at stride ``s`` fall in ``[lo, hi)``."""
    return [max(0, min(o * s + k, hi) - max(o * s, lo)) for o in range(out)]


def _tap(axis, t, s, n):
    """Index selecting tap ``t`` of ``n`` windows at stride ``s`` along ``axis`` of a 4-D array."""
    key = [slice(None)] * 4
    key[axis] = slice(t, t + s * (n - 1) + 1, s)
    return tuple(key)


class _Pool(Op):
    """Separable pooling: reduce the window's columns, then its rows.

    A 2-D window's max (or sum) is the max (or sum) over rows of the per-row results, so the
    forward pass is KW strided passes over ``(N, C, Hp, OW)`` and KH over ``(N, C, OH, OW)``.
    Max pooling's backward pass routes the gradient to the first maximal row, then to the first
    maximal column in it: the first maximum in row-major order, as MXNet picks.
    """

    def forward(self, x, kernel, stride, pad, pool_type, full, count_include_pad):
        xp = self.xp
        n, c, h, w = x.shape
        (kh, kw), (sh, sw), (ph, pw) = kernel, stride, pad
        rnd = (lambda a, b: -(-a // b)) if full else (lambda a, b: a // b)
        oh = rnd(h + 2 * ph - kh, sh) + 1
        ow = rnd(w + 2 * pw - kw, sw) + 1
        if oh <= 0 or ow <= 0:
            raise MXNetError(
                f"Pooling: kernel {kernel} larger than padded input {(h + 2 * ph, w + 2 * pw)}"
            )
        eh = max(0, (oh - 1) * sh + kh - (h + 2 * ph))
        ew = max(0, (ow - 1) * sw + kw - (w + 2 * pw))
        is_max = pool_type == "max"
        xpad = _padded(xp, x, ph, pw, -xp.inf if is_max else 0, eh, ew)
        cols = self._reduce(xpad, 3, kw, sw, ow, is_max)
        out = self._reduce(cols, 2, kh, sh, oh, is_max)
        self.geom = (x.shape, kernel, stride, pad, oh, ow)
        self.is_max = is_max
        if self.needs[0] and is_max:
            self.xpad, self.cols, self.out = xpad, cols, out
        self.pshape, self.cshape = xpad.shape, cols.shape
        self.scale = None
        if pool_type == "avg":
            if count_include_pad:
                ch = _counts(h, kh, sh, oh, 0, h + 2 * ph)
                cw = _counts(w, kw, sw, ow, 0, w + 2 * pw)
            else:
                ch = _counts(h, kh, sh, oh, ph, ph + h)
                cw = _counts(w, kw, sw, ow, pw, pw + w)
            self.scale = 1 / xp.asarray([[a * b for b in cw] for a in ch], dtype=x.dtype)
            out *= self.scale
        return out

    def _reduce(self, x, axis, k, s, n, is_max):
        xp = self.xp
        if k == 1:
            return x[_tap(axis, 0, s, n)].copy()
        fn = xp.maximum if is_max else xp.add
        out = fn(x[_tap(axis, 0, s, n)], x[_tap(axis, 1, s, n)])
        for t in range(2, k):
            fn(out, x[_tap(axis, t, s, n)], out=out)
        return out

    def _route(self, g, shape, axis, k, s, n, src, best):
        """Spread ``g`` over the ``k`` taps along ``axis`` into a zero array of ``shape``."""
        xp = self.xp
        dx = xp.zeros(shape, dtype=g.dtype)
        overlap = s < k
        taken = None
        for t in range(k):
            key = _tap(axis, t, s, n)
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
        xshape, (kh, kw), (sh, sw), (ph, pw), oh, ow = self.geom
        if self.scale is not None:
            g = g * self.scale
        src = self.cols if self.is_max else None
        gcols = self._route(g, self.cshape, 2, kh, sh, oh, src, getattr(self, "out", None))
        src = self.xpad if self.is_max else None
        gx = self._route(gcols, self.pshape, 3, kw, sw, ow, src, getattr(self, "cols", None))
        h, w = xshape[2:]
        if self.pshape == xshape:
            return gx
        return xp.ascontiguousarray(gx[:, :, ph : ph + h, pw : pw + w])


class _GlobalPool(Op):
    def forward(self, x, pool_type):
        self.x, self.type = x, pool_type
        fn = {"max": x.max, "avg": x.mean, "sum": x.sum}[pool_type]
        self.y = fn(axis=(2, 3), keepdims=True)
        return self.y

    def backward(self, g):
        if self.type == "max":
            return g * (self.x == self.y)
        if self.type == "avg":
            g = g / (self.x.shape[2] * self.x.shape[3])
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
    """2-D max, average or sum pooling of ``(N, C, H, W)`` data.

    Parameters
    ----------
    kernel : tuple of int
        ``(KH, KW)`` window.
    pool_type : {'max', 'avg', 'sum'}, default 'max'
    global_pool : bool, default False
        Pool each whole feature map to 1x1 (kernel, stride and pad are ignored).
    stride : tuple of int, optional
        Defaults to 1 per dimension (as MXNet's operator; Gluon's layers pass the window).
    pad : tuple of int, optional
        Defaults to 0; max pooling ignores padded positions.
    pooling_convention : {'valid', 'full'}, default 'valid'
        Output size rounds ``(H + 2*pad - KH) / stride`` down ('valid') or up ('full').
    count_include_pad : bool, default True
        For 'avg': whether padded positions count in each window's divisor.
    """
    if pool_type not in ("max", "avg", "sum"):
        raise MXNetError(f"Pooling supports pool_type max, avg and sum, not {pool_type!r}")
    if pooling_convention not in ("valid", "full"):
        raise MXNetError(f"unknown pooling_convention {pooling_convention!r}")
    one_d = data.ndim == 3
    if one_d:
        data = data.expand_dims(2)
    if global_pool:
        out = apply(_GlobalPool, (data,), pool_type=pool_type)
    else:
        if kernel is None:
            raise MXNetError("Pooling needs kernel unless global_pool=True")
        if one_d:
            kernel, stride, pad = _lift(kernel, 1), _lift(stride, 1), _lift(pad, 0)
        k = _tuple(kernel, 2, "kernel")
        s = _tuple(stride, 2, "stride") or (1, 1)
        p = _tuple(pad, 2, "pad") or (0, 0)
        out = apply(
            _Pool,
            (data,),
            kernel=k,
            stride=s,
            pad=p,
            pool_type=pool_type,
            full=pooling_convention == "full",
            count_include_pad=count_include_pad,
        )
    return out.squeeze(axis=2) if one_d else out
