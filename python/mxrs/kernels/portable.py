"""The portable kernels: NumPy or CuPy code, written once for both array libraries.

Convolution gathers every receptive field with one strided view of the (padded) input and one
copy into a ``(C*prod(K), N*prod(O))`` column matrix, then does one GEMM per group (a single
batched matmul). The backward pass is two GEMMs and a scatter of the column gradient back onto
the input, looping only over the kernel offsets, each step a strided add over the whole batch.
Deconvolution reuses the same gather and scatter the other way round.

Pooling is separable: each window is reduced along its last axis (K strided passes over the
whole batch), then along the axis before it, and so on. Max pooling's gradient goes to the
first maximum of each window in row-major order, as MXNet's does.

Softmax subtracts the maximum along its axis first, so it does not overflow. LRN sums the
squares over its channel window with one shifted add per offset. GELU's erf is a rational
approximation (neither NumPy nor CuPy has erf), accurate to about 1e-7.
"""

from __future__ import annotations

import itertools
import math
from typing import Any

import numpy

from .._grad_parts import total
from ._residual import composed
from ._types import ConvGeometry, Grad, PoolGeometry

__all__ = [
    "FLOAT32",
    "Portable",
    "for_backend",
    "padded",
    "windows",
    "scatter",
    "to_first",
    "log_softmax",
    "erf",
    "SELU_ALPHA",
    "SELU_LAMBDA",
]

FLOAT32 = numpy.dtype(numpy.float32)

#: SELU's fixed ELU slope and output scale.
SELU_ALPHA = 1.6732632423543772
SELU_LAMBDA = 1.0507009873554805

# Coefficients of the erfc approximation ``t * exp(-z*z + P(t))`` with ``t = 1 / (1 + z/2)``,
# whose relative error is below 1.2e-7 for every ``z >= 0``.
_ERFC_COEFFS = (
    -1.26551223,
    1.00002368,
    0.37409196,
    0.09678418,
    -0.18628806,
    0.27886807,
    -1.13520398,
    1.48851587,
    -0.82215223,
    0.17087277,
)


def erf(xp, x):
    """erf(x) elementwise, accurate to about 1e-7, for a floating array ``x``."""
    z = xp.abs(x)
    t = 1.0 / (1.0 + 0.5 * z)
    poly = xp.zeros_like(t)
    for c in reversed(_ERFC_COEFFS[1:]):
        poly = (poly + c) * t
    erfc = t * xp.exp(poly + _ERFC_COEFFS[0] - z * z)
    return xp.sign(x) * (1.0 - erfc)


def log_softmax(xp, x, axis):
    """The logarithm of the softmax of ``x`` along ``axis``, its maximum subtracted first."""
    z = x - x.max(axis=axis, keepdims=True)
    z -= xp.log(xp.exp(z).sum(axis=axis, keepdims=True))
    return z


def _window_sum(v, half):
    """Sum of ``v`` over channels ``c - half .. c + half`` (axis 1), zero beyond the ends."""
    c = v.shape[1]
    out = v.copy()
    for off in range(1, min(half, c - 1) + 1):
        out[:, off:] += v[:, :-off]
        out[:, :-off] += v[:, off:]
    return out


def padded(xp, x, pads, fill, extra=None):
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


def windows(be, xpad, kernel, stride, dilate, out):
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


def scatter(xp, dcols, shape, stride, dilate, out):
    """Add the columns ``dcols`` ``(C, *kernel, N, *out)`` back into zeros of ``shape``
    ``(C, N, *padded)``: the adjoint of :func:`windows`."""
    kernel = dcols.shape[1 : 1 + len(out)]
    dst = xp.zeros(shape, dtype=dcols.dtype)
    for tap in itertools.product(*(range(k) for k in kernel)):
        key = tuple(
            slice(t * d, t * d + s * (o - 1) + 1, s)
            for t, d, s, o in zip(tap, dilate, stride, out, strict=True)
        )
        dst[(slice(None), slice(None)) + key] += dcols[(slice(None),) + tap]
    return dst


def to_first(a, nd):
    """Move axis 0 of ``a`` to axis 1 (``(F, N, ...)`` -> ``(N, F, ...)``), as a view."""
    return a.transpose((1, 0) + tuple(range(2, nd + 2)))


def _counts(k, s, out, lo, hi):
    """Per output position, how many of its ``k`` taps at stride ``s`` fall in ``[lo, hi)``."""
    return [max(0, min(o * s + k, hi) - max(o * s, lo)) for o in range(out)]


def _tap(ndim, axis, t, s, n):
    """Index selecting tap ``t`` of ``n`` windows at stride ``s`` along ``axis``."""
    key = [slice(None)] * ndim
    key[axis] = slice(t, t + s * (n - 1) + 1, s)
    return tuple(key)


class Portable:
    """The NumPy or CuPy kernels of one backend (``mxrs._backend``)."""

    def __init__(self, backend: Any) -> None:
        self.be = backend
        self.xp = backend.xp
        self.name = backend.name

    def convolution(
        self, x: Any, w: Any, b: Any, geom: ConvGeometry, out: tuple[int, ...], train: bool
    ) -> tuple[Any, Grad]:
        """im2col + one batched GEMM; see the module docstring."""
        xp = self.xp
        stride, pad, dilate, groups = geom
        n, c = x.shape[:2]
        f, cg = w.shape[:2]
        kernel, nd = w.shape[2:], x.ndim - 2
        xpad = padded(xp, x, pad, 0)
        pshape = xpad.shape[2:]
        ksize = cg * math.prod(kernel)
        cols = windows(self.be, xpad, kernel, stride, dilate, out).reshape(
            groups, ksize, n * math.prod(out)
        )
        w3 = w.reshape(groups, f // groups, ksize)
        y = xp.matmul(w3, cols).reshape((f, n) + out)
        if b is not None:
            y += b.reshape((f,) + (1,) * (nd + 1))
        y = xp.ascontiguousarray(to_first(y, nd))
        xshape, wshape = x.shape, w.shape
        del x, w, xpad

        def grad(g, needs):
            g3 = xp.ascontiguousarray(to_first(g, nd)).reshape(groups, f // groups, -1)
            gx = gw = gb = None
            if needs[1]:
                gw = xp.matmul(g3, cols.transpose(0, 2, 1)).reshape(wshape)
            if len(needs) == 3 and needs[2]:
                gb = g3.reshape(f, -1).sum(axis=1)
            if needs[0]:
                dcols = xp.matmul(w3.transpose(0, 2, 1), g3)
                dcols = dcols.reshape((c,) + wshape[2:] + (n,) + out)
                dxp = scatter(xp, dcols, (c, n) + pshape, stride, dilate, out)
                crop = tuple(slice(p, p + s) for p, s in zip(pad, xshape[2:], strict=True))
                gx = xp.ascontiguousarray(to_first(dxp[(slice(None),) * 2 + crop], nd))
            return gx, gw, gb

        return y, grad

    def fully_connected(self, x: Any, w: Any, b: Any, train: bool) -> tuple[Any, Grad]:
        """Two-dimensional ``x @ w.T + b`` on the array library's BLAS."""
        y = x @ w.T
        if b is not None:
            y += b

        def grad(g, needs):
            gx = g @ w if needs[0] else None
            gw = g.T @ x if needs[1] else None
            gb = g.sum(axis=0) if len(needs) == 3 and needs[2] else None
            return gx, gw, gb

        return y, grad

    def deconvolution(
        self,
        x: Any,
        w: Any,
        b: Any,
        geom: ConvGeometry,
        adj: tuple[int, ...],
        out: tuple[int, ...],
        train: bool,
    ) -> tuple[Any, Grad]:
        """One batched GEMM ``weight^T @ data`` per group, its columns scattered onto the padded
        output (the adjoint of the convolution's window gather), cropped by ``pad``; the
        backward pass is a convolution: the output gradient's windows gathered into columns,
        one GEMM for the data gradient and one for the weight's."""
        xp = self.xp
        stride, pad, dilate, groups = geom
        (n, c), insz, nd = x.shape[:2], x.shape[2:], x.ndim - 2
        fg, kernel = w.shape[1], w.shape[2:]
        f, cg = fg * groups, c // groups
        full = tuple(
            s * (i - 1) + d * (k - 1) + 1
            for i, k, s, d in zip(insz, kernel, stride, dilate, strict=True)
        )
        buf = tuple(max(fl, p + o) for fl, p, o in zip(full, pad, out, strict=True))
        x3 = xp.ascontiguousarray(to_first(x, nd)).reshape(groups, cg, -1)
        w3 = w.reshape(groups, cg, fg * math.prod(kernel))
        dcols = xp.matmul(w3.transpose(0, 2, 1), x3).reshape((f,) + kernel + (n,) + insz)
        ybuf = scatter(xp, dcols, (f, n) + buf, stride, dilate, insz)
        crop = tuple(slice(p, p + o) for p, o in zip(pad, out, strict=True))
        y = xp.ascontiguousarray(to_first(ybuf[(slice(None),) * 2 + crop], nd))
        if b is not None:
            y += b.reshape((f,) + (1,) * nd)
        wshape = w.shape
        del x, w, dcols, ybuf

        def grad(g, needs):
            gx = gw = gb = None
            if needs[0] or needs[1]:
                extra = tuple(bf - p - o for bf, p, o in zip(buf, pad, out, strict=True))
                gpad = padded(xp, g, pad, 0, extra)
                view = windows(self.be, gpad, wshape[2:], stride, dilate, insz)
                cols = view.reshape(groups, -1, n * math.prod(insz))
                if needs[0]:
                    gx3 = xp.matmul(w3, cols).reshape((c, n) + insz)
                    gx = xp.ascontiguousarray(to_first(gx3, nd))
                if needs[1]:
                    gw = xp.matmul(x3, cols.transpose(0, 2, 1)).reshape(wshape)
            if len(needs) == 3 and needs[2]:
                gb = g.sum(axis=(0,) + tuple(range(2, nd + 2)))
            return gx, gw, gb

        return y, grad

    def pooling(
        self, x: Any, geom: PoolGeometry, out: tuple[int, ...], train: bool
    ) -> tuple[Any, Grad]:
        """Separable pooling: reduce each window along its last axis, then the one before...

        A window's max (or sum) is the max (or sum) over its rows of the per-row results, so
        the forward pass is ``K`` strided passes per spatial axis. Max pooling's backward pass
        routes the gradient, axis by axis, to the first maximal entry: the first maximum in
        row-major order, as MXNet picks.
        """
        xp = self.xp
        kernel, stride, pad, extra, pool_type, count_include_pad = geom
        nd, sizes, xshape = len(kernel), x.shape[2:], x.shape
        is_max = pool_type == "max"
        stages = [padded(xp, x, pad, -xp.inf if is_max else 0, extra)]
        for axis in range(nd + 1, 1, -1):
            i = axis - 2
            stages.append(_reduce(xp, stages[-1], axis, kernel[i], stride[i], out[i], is_max))
        res = stages[-1]
        shapes = [a.shape for a in stages]
        scale = None
        if pool_type == "avg":
            lo, hi = (0, 2) if count_include_pad else (1, 1)
            prod = 1
            for i, (h, k, s, o, p) in enumerate(zip(sizes, kernel, stride, out, pad, strict=True)):
                c = _counts(k, s, o, lo * p, hi * p + h)
                prod = prod * xp.asarray(c).reshape((-1,) + (1,) * (nd - 1 - i))
            scale = 1 / xp.asarray(prod, dtype=x.dtype)
            res *= scale
        if not (train and is_max):
            stages = []
        del x

        def grad(g, needs):
            if scale is not None:
                g = g * scale
            # Stage j was reduced along axis nd + 1 - j into stage j + 1; undo them in reverse.
            for j in range(nd - 1, -1, -1):
                i = nd - 1 - j
                src = best = None
                if stages:
                    src, best = stages[j], stages[j + 1]
                g = _route(xp, is_max, g, shapes[j], i + 2, kernel[i], stride[i], out[i], src, best)
            if shapes[0] == xshape:
                return (g,)
            crop = tuple(slice(p, p + h) for p, h in zip(pad, xshape[2:], strict=True))
            return (xp.ascontiguousarray(g[(slice(None),) * 2 + crop]),)

        return res, grad

    def batch_norm(
        self,
        x: Any,
        gamma: Any,
        beta: Any,
        stats: tuple[Any, Any] | None,
        eps: float,
        axis: int,
        train: bool,
        relu: bool = False,
    ) -> tuple[Any, Any, Any, Grad]:
        """Batch normalisation in array operations; see :class:`mxrs.kernels.NormKernels`."""
        xp = self.xp
        axes = tuple(i for i in range(x.ndim) if i != axis)
        bshape = tuple(-1 if i == axis else 1 for i in range(x.ndim))
        if stats is not None:
            mean, var = stats
        else:
            mean = x.mean(axis=axes)
            xc = x - mean.reshape(bshape)
            var = (xc * xc).mean(axis=axes)
        inv = 1.0 / xp.sqrt(var + eps)
        xhat = (x - mean.reshape(bshape)) * inv.reshape(bshape)
        scale = (gamma * inv).reshape(bshape)
        y = xhat * gamma.reshape(bshape) + beta.reshape(bshape)
        if relu:
            y = xp.maximum(y, 0)  # NaN stays NaN
        batch = stats is None
        del x

        def grad(gy, needs):
            if relu:
                gy = gy * (y > 0)
            gbeta = gy.sum(axis=axes)
            ggamma = (gy * xhat).sum(axis=axes)
            gx = None
            if needs[0]:
                if not batch:
                    gx = gy * scale
                else:
                    m = gy.size // gbeta.size
                    gx = scale * (
                        gy - (gbeta / m).reshape(bshape) - xhat * (ggamma / m).reshape(bshape)
                    )
            return gx, ggamma, gbeta

        return y, mean, var, grad

    def moving_average(self, avg: Any, stat: Any, momentum: float) -> None:
        """``avg = momentum * avg + (1 - momentum) * stat`` in place."""
        avg *= momentum
        avg += (1 - momentum) * stat

    def activation(self, x: Any, kind: str, train: bool) -> tuple[Any, Grad]:
        """ReLU, sigmoid, tanh or softrelu in array operations."""
        xp = self.xp
        if kind == "relu":
            y = xp.maximum(x, 0)

            def grad(g, needs):
                # NaN in, NaN gradient out, as MXNet's kernel gives.
                return (xp.where(xp.isnan(y), y, g * (y > 0)),)

        elif kind == "sigmoid":
            y = xp.tanh(x * 0.5)
            y += 1
            y *= 0.5

            def grad(g, needs):
                return (g * (y * (1 - y)),)

        elif kind == "tanh":
            y = xp.tanh(x)

            def grad(g, needs):
                return (g * (1 - y * y),)

        elif kind == "softrelu":
            y = xp.logaddexp(0, x)

            def grad(g, needs):
                return (g * (0.5 * (1 + xp.tanh(x * 0.5))),)

        else:
            raise ValueError(f"unknown activation {kind!r}")
        return y, grad

    #: A residual unit's end: this provider's batch norm, then its ``add_relu``.
    batch_norm_add_relu = composed

    def add_relu(self, a: Any, b: Any, train: bool) -> tuple[Any, Grad]:
        """``relu(a + b)`` for addends of one shape; both get the ReLU's gradient."""
        xp = self.xp
        y = a + b
        xp.maximum(y, 0, out=y)

        def grad(g, needs):
            g = total(g)
            gs = xp.where(xp.isnan(y), y, g * (y > 0))
            return (gs, gs)

        return y, grad

    def softmax(
        self, x: Any, axis: int, temperature: float, log: bool, train: bool
    ) -> tuple[Any, Grad]:
        """Softmax (or log-softmax) in array operations; see
        :class:`mxrs.kernels.SoftmaxKernels`."""
        xp = self.xp
        if temperature != 1.0:
            x = x / temperature
        if log:
            y = log_softmax(xp, x, axis)

            def grad(g, needs):
                gx = g - xp.exp(y) * g.sum(axis=axis, keepdims=True)
                return (gx / temperature if temperature != 1.0 else gx,)

        else:
            y = xp.exp(x - x.max(axis=axis, keepdims=True))
            y /= y.sum(axis=axis, keepdims=True)

            def grad(g, needs):
                gx = y * (g - (g * y).sum(axis=axis, keepdims=True))
                return (gx / temperature if temperature != 1.0 else gx,)

        return y, grad

    def lrn(
        self, x: Any, alpha: float, beta: float, knorm: float, nsize: int, train: bool
    ) -> tuple[Any, Grad]:
        """MXNet's LRN in array operations; see :class:`mxrs.kernels.LrnKernels`."""
        half = (nsize - 1) // 2
        coef = alpha / nsize
        scale = knorm + coef * _window_sum(x * x, half)
        y = x * scale ** (-beta)

        def grad(g, needs):
            inner = _window_sum(g * y / scale, half)
            return (g * scale ** (-beta) - (2 * coef * beta) * x * inner,)

        return y, grad

    def leaky_relu(self, x: Any, kind: str, slope: float, train: bool) -> tuple[Any, Grad]:
        """Leaky ReLU, ELU, SELU or GELU in array operations (GELU of float16 in float32); see
        :class:`mxrs.kernels.LeakyKernels`."""
        xp = self.xp
        if kind == "leaky":
            y = xp.where(x > 0, x, x * slope)

            def grad(g, needs):
                return (xp.where(x > 0, g, g * slope),)

        elif kind in ("elu", "selu"):
            alpha, scale = (slope, 1.0) if kind == "elu" else (SELU_ALPHA, SELU_LAMBDA)
            neg = alpha * xp.expm1(xp.minimum(x, 0))
            y = scale * xp.where(x > 0, x, neg)

            def grad(g, needs):
                return ((scale * g) * xp.where(x > 0, 1, neg + alpha),)

        elif kind == "gelu":
            dtype = x.dtype
            xf = x.astype(numpy.float32) if dtype == numpy.float16 else x
            # NumPy's float64 constants: the erf runs in float64, its result cast back
            cdf = 0.5 * (1.0 + erf(xp, xf * (1.0 / numpy.sqrt(2.0))))
            y = (xf * cdf).astype(dtype, copy=False)

            def grad(g, needs):
                pdf = xp.exp(-0.5 * xf * xf) * (1.0 / numpy.sqrt(2.0 * numpy.pi))
                return ((g * (cdf + xf * pdf)).astype(dtype, copy=False),)

        else:
            raise ValueError(f"unknown LeakyReLU kind {kind!r}")
        return y, grad


def _reduce(xp, x, axis, k, s, n, is_max):
    if k == 1:
        return x[_tap(x.ndim, axis, 0, s, n)].copy()
    fn = xp.maximum if is_max else xp.add
    out = fn(x[_tap(x.ndim, axis, 0, s, n)], x[_tap(x.ndim, axis, 1, s, n)])
    for t in range(2, k):
        fn(out, x[_tap(x.ndim, axis, t, s, n)], out=out)
    return out


def _route(xp, is_max, g, shape, axis, k, s, n, src, best):
    """Spread ``g`` over the ``k`` taps along ``axis`` into a zero array of ``shape``."""
    dx = xp.zeros(shape, dtype=g.dtype)
    overlap = s < k
    taken = None
    for t in range(k):
        key = _tap(len(shape), axis, t, s, n)
        if not is_max:
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


_providers: dict[int, Portable] = {}


def for_backend(backend: Any) -> Portable:
    """The portable provider of ``backend`` (one per backend object)."""
    k = _providers.get(id(backend))
    if k is None:
        k = _providers[id(backend)] = Portable(backend)
    return k
