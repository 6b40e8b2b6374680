"""The CUDA provider: cuDNN's convolutions and fused CUDA kernels for float32 and float16
arrays on GPU contexts.

- Convolution and deconvolution run cuDNN Frontend graphs (:mod:`mxrs.kernels.cudnn`); a
  geometry cuDNN has no engine for, or a process without the frontend, computes them with the
  portable CuPy kernel (im2col + GEMM), and says why in :func:`mxrs.kernels.describe`.
- Batch normalisation is three passes over the data forward (the per-channel sum and squared
  deviation, then one fused normalise-scale-shift(-ReLU) kernel) and two backward (the
  gradient's sum and its dot product with the centred data in one pass, then one fused kernel
  for the data gradient), accumulating in float32 whatever the data's type. The frontend's
  normalisation graphs need channels-last tensors, and mxrs's arrays are channels-first.
- ReLU, sigmoid and tanh are one kernel forward and one backward; these, the residual
  ``relu(a + b)``, convolution biases, gradient sums and batch norm's elementwise passes run
  vectorized (:mod:`mxrs._cuda_float`).
- 2-D max, average and sum pooling are one kernel each way: the forward pass keeps each
  window's first maximum (row-major, as MXNet picks), the backward pass gathers, for each input
  element, the gradients of the windows over it, so it needs no atomics and gives the same
  result on every run.
- :func:`sgd_update` is SGD's step (momentum, weight decay, rescaling and clipping) in one
  kernel; :func:`mp_sgd_update` the same on a float32 master copy of a float16 weight, which
  it then writes; BatchNorm's running statistics move in one kernel too.

Kernels compile (NVRTC, through CuPy) the first time each is used. Nothing here waits for the
device: a step's kernels are queued on CuPy's current stream.
"""

from __future__ import annotations

from typing import Any

import numpy

from .._cuda_float import FloatKernel
from ..base import KernelError, KernelUnsupportedError
from . import portable
from ._residual import composed
from ._types import ConvGeometry, Grad, PoolGeometry

__all__ = [
    "CudaKernels",
    "CUDA_DTYPES",
    "sgd_update",
    "mp_sgd_accepts",
    "mp_sgd_update",
]

#: Element types the CUDA provider serves (others use the portable CuPy kernels).
CUDA_DTYPES = frozenset({numpy.dtype(numpy.float32), numpy.dtype(numpy.float16)})

_F32 = numpy.float32

_kernels: dict[str, Any] = {}


def _ew(name: str, params: str, outs: str, body: str) -> Any:
    k = _kernels.get(name)
    if k is None:
        import cupy

        k = _kernels[name] = cupy.ElementwiseKernel(params, outs, body, "mxrs_" + name)
    return k


def _red(name: str, params: str, expr: str, out: str = "float32") -> Any:
    """A per-channel sum of ``expr`` (a ReductionKernel) of type ``out``."""
    k = _kernels.get(name)
    if k is None:
        import cupy

        k = _kernels[name] = cupy.ReductionKernel(
            params, out + " s", expr, "a + b", "s = a", "0", "mxrs_" + name
        )
    return k


# -- activations ---------------------------------------------------------------------------

# NaN stays NaN, as MXNet's ReLU gives.
_RELU = "(v > 0.f || v != v) ? v : 0.f"
_ACT = {
    kind: (
        FloatKernel("act_" + kind, ("x",), ("y",), fwd),
        FloatKernel("act_bwd_" + kind, ("y", "g"), ("gx",), bwd),
    )
    for kind, fwd, bwd in (
        # the backward passes: NaN in, NaN gradient out (the portable kernel's rule)
        ("relu", f"float v = x; y = {_RELU};", "gx = (y != y) ? y : (y > 0.f ? g : 0.f);"),
        ("sigmoid", "y = 0.5f * (tanhf(0.5f * x) + 1.f);", "gx = g * y * (1.f - y);"),
        ("tanh", "y = tanhf(x);", "gx = g * (1.f - y * y);"),
    )
}
# The residual addition and its ReLU (NaN kept, as the forward ReLU above).
_ADD_RELU = FloatKernel("add_relu", ("a", "b"), ("y",), f"float v = a + b; y = {_RELU};")

#: A convolution's bias, added per output channel.
_BIAS = FloatKernel("bias", ("x",), ("y",), "y = x + b;", channel=("b",))

# -- batch normalisation -------------------------------------------------------------------

_BN_APPLY = {
    relu: FloatKernel(
        "bn_apply" + "_relu" * relu,
        ("x",),
        ("y",),
        f"float v = x * a + b; y = {_RELU};" if relu else "y = x * a + b;",
        channel=("a", "b"),
    )
    for relu in (False, True)
}
# The output gradient, masked by a fused ReLU where the output is positive (NaN gives 0).
_BN_G = {False: "g", True: "(y > 0.f ? g : 0.f)"}
_BN_DX = {
    (relu, batch): FloatKernel(
        "bn_dx" + "_global" * (not batch) + "_relu" * relu,
        ("g",) + ("y",) * relu + ("x",) * batch,
        ("gx",),
        f"gx = a * ({_BN_G[relu]} - k1 - (x - m) * k2);" if batch else f"gx = a * {_BN_G[relu]};",
        channel=("a", "m", "k1", "k2") if batch else ("a",),
    )
    for relu in (False, True)
    for batch in (False, True)
}
_MASKED = "((float)y > 0.f ? (float)g : 0.f)"

# Folds of the per-sample, per-channel sums (N, C) over the batch: thread i is channel i.
_FOLD_MEAN = "float acc = 0.f; for (int k = 0; k < N; ++k) acc += s[k * C + i]; m = acc * r"
_FOLD_VAR_SCALE = """
    float acc = 0.f;
    for (int k = 0; k < N; ++k) acc += s[k * C + i];
    v = acc * r; inv = rsqrtf(v + eps); a = g * inv; b = bt - m * a;
"""
# The backward pass's two sums travel as one complex64 (real: the gradient's sum, imaginary:
# its dot product with the centred data), so one pass over the data computes both.
_FOLD_TERMS = """
    float s = 0.f, d = 0.f;
    for (int k = 0; k < N; ++k) { complex<float> t = gs[k * C + i]; s += t.real(); d += t.imag(); }
    gbeta = s; ggamma = d * inv; k1 = s * rcount; k2 = ggamma * inv * rcount;
"""

# -- pooling -------------------------------------------------------------------------------

_POOL_PARAMS = (
    "int32 H, int32 W, int32 OH, int32 OW, int32 KH, int32 KW, int32 SH, int32 SW, "
    "int32 PH, int32 PW"
)
# The window count an average divides by: taps inside [lo, hi) on each axis.
_POOL_DIV = """
    int lh = CIP ? -PH : 0, hh = CIP ? H + PH : H, lw = CIP ? -PW : 0, hw = CIP ? W + PW : W;
    int ch = min(h0 + KH, hh) - max(h0, lh), cw = min(w0 + KW, hw) - max(w0, lw);
    float div = AVG ? (float)(max(ch, 0) * max(cw, 0)) : 1.f;
"""
_POOL_MAX_FWD = """
    long long ow = i % OW, t = i / OW, oh = t % OH, nc = t / OH;
    int h0 = (int)oh * SH - PH, w0 = (int)ow * SW - PW;
    float best = __int_as_float(0xff800000); int bi = -1;  // -inf
    for (int kh = 0; kh < KH; ++kh) {
        int h = h0 + kh;
        if (h < 0 || h >= H) continue;
        for (int kw = 0; kw < KW; ++kw) {
            int w = w0 + kw;
            if (w < 0 || w >= W) continue;
            float v = (float)x[(nc * H + h) * W + w];
            if (bi < 0 || v > best) { best = v; bi = h * W + w; }
        }
    }
    y = (T)best; arg = bi;
"""
_POOL_SUM_FWD = (
    """
    long long ow = i % OW, t = i / OW, oh = t % OH, nc = t / OH;
    int h0 = (int)oh * SH - PH, w0 = (int)ow * SW - PW;
    float s = 0.f;
    for (int kh = 0; kh < KH; ++kh) {
        int h = h0 + kh;
        if (h < 0 || h >= H) continue;
        for (int kw = 0; kw < KW; ++kw) {
            int w = w0 + kw;
            if (w >= 0 && w < W) s += (float)x[(nc * H + h) * W + w];
        }
    }
"""
    + _POOL_DIV
    + "    y = (T)(div > 0.f ? s / div : 0.f);\n"
)
# Each input element gathers the gradients of the windows that cover it.
_POOL_BWD_HEAD = """
    long long w = i % W, t = i / W, h = t % H, nc = t / H;
    int oh0 = (int)h + PH - KH + 1, ow0 = (int)w + PW - KW + 1;
    oh0 = oh0 <= 0 ? 0 : (oh0 + SH - 1) / SH;
    ow0 = ow0 <= 0 ? 0 : (ow0 + SW - 1) / SW;
    int oh1 = min(((int)h + PH) / SH, OH - 1), ow1 = min(((int)w + PW) / SW, OW - 1);
    float s = 0.f;
    for (int oh = oh0; oh <= oh1; ++oh) {
        for (int ow = ow0; ow <= ow1; ++ow) {
            long long o = (nc * OH + oh) * OW + ow;
"""
_POOL_MAX_BWD = (
    _POOL_BWD_HEAD
    + """
            if (arg[o] == (int)(h * W + w)) s += (float)g[o];
        }
    }
    gx = (T)s;
"""
)
_POOL_SUM_BWD = (
    _POOL_BWD_HEAD
    + """
            int h0 = oh * SH - PH, w0 = ow * SW - PW;
"""
    + _POOL_DIV
    + """
            if (div > 0.f) s += (float)g[o] / div;
        }
    }
    gx = (T)s;
"""
)

# -- SGD -----------------------------------------------------------------------------------

#: SGD's kernels share the rescaled, clipped gradient ``t``; then each updates the weight (or
#: the float32 master copy, which it writes back into the weight), with momentum or without.
_SGD_GRAD = """
    float t = (float)g * rescale;
    if (clip > 0.f) t = fminf(fmaxf(t, -clip), clip);
"""
_SGD_STEP = {
    # (master copy, momentum): the update
    (False, False): "w = (T)((float)w * decay - t * lr);",
    (False, True): "float m = mu * (float)mom - (float)w * lrwd - t * lr; "
    "mom = (T)m; w = (T)((float)w + m);",
    (True, False): "master = master * decay - t * lr; w = (T)master;",
    (True, True): "float m = mu * mom - master * lrwd - t * lr; "
    "mom = m; master = master + m; w = (T)master;",
}


def _sgd(
    g: Any,
    outs: tuple,
    master: bool,
    momentum: bool,
    lr: float,
    wd: float,
    mu: float,
    rescale: float,
    clip: float | None,
) -> None:
    """Run SGD's kernel for ``(master, momentum)`` on gradient ``g`` and ``outs`` (the weight
    and momentum, or the master copy, momentum and weight)."""
    rate = "float32 lrwd, float32 mu" if momentum else "float32 decay"
    if master:
        written = ["float32 master"] + ["float32 mom"] * momentum + ["T w"]
    else:
        written = ["T w"] + ["T mom"] * momentum
    name = "mp_" * master + "sgd" + "_mom" * momentum
    params = f"T g, float32 lr, {rate}, float32 rescale, float32 clip"
    k = _ew(name, params, ", ".join(written), _SGD_GRAD + _SGD_STEP[(master, momentum)])
    rates = (_F32(lr * wd), _F32(mu)) if momentum else (_F32(1.0 - lr * wd),)
    c = _F32(clip if clip is not None and clip > 0 else 0.0)
    k(g, _F32(lr), *rates, _F32(rescale), c, *outs)


def sgd_update(
    w: Any,
    g: Any,
    mom: Any | None,
    lr: float,
    wd: float,
    mu: float,
    rescale: float,
    clip: float | None,
) -> bool:
    """SGD's step on CuPy arrays in one kernel, in place: ``mom = mu*mom - lr*wd*w -
    lr*clip(rescale*g); w += mom`` (or ``w = (1 - lr*wd)*w - lr*clip(rescale*g)`` without
    momentum). False where the arrays are not float32/float16 of one type and shape (the
    caller computes with array operations)."""
    arrays = (w, g) if mom is None else (w, g, mom)
    if w.dtype not in CUDA_DTYPES or any(a.dtype != w.dtype or a.shape != w.shape for a in arrays):
        return False
    outs = (w,) if mom is None else (w, mom)
    _sgd(g, outs, False, mom is not None, lr, wd, mu, rescale, clip)
    return True


def mp_sgd_accepts(w: Any, g: Any, master: Any, mom: Any | None) -> bool:
    """Whether :func:`mp_sgd_update` takes these arrays: a float16 weight and gradient, a
    float32 master copy (and momentum), all of one shape."""
    f16 = numpy.float16
    if w.dtype != f16 or g.dtype != f16 or master.dtype != _F32:
        return False
    arrays = (g, master) if mom is None else (g, master, mom)
    return (mom is None or mom.dtype == _F32) and all(a.shape == w.shape for a in arrays)


def mp_sgd_update(
    w: Any,
    g: Any,
    master: Any,
    mom: Any | None,
    lr: float,
    wd: float,
    mu: float,
    rescale: float,
    clip: float | None,
) -> None:
    """Multi-precision SGD in one kernel, in place: the float32 ``master`` (and ``mom``) updated
    from the float16 gradient ``g`` as :func:`sgd_update` does, then copied into the float16
    weight ``w`` (MXNet's ``mp_sgd_update`` / ``mp_sgd_mom_update``). Check the arrays with
    :func:`mp_sgd_accepts` first."""
    outs = (master, w) if mom is None else (master, mom, w)
    _sgd(g, outs, True, mom is not None, lr, wd, mu, rescale, clip)


class CudaKernels:
    """The CUDA provider of one process (its cuDNN part loaded on first use)."""

    name = "cuda"

    def __init__(self, backend: Any) -> None:
        self.be = backend
        self.xp = backend.xp
        self.portable = portable.for_backend(backend)
        self._cudnn: Any = None
        self._why: str | None = None
        self._unsupported: set[tuple] = set()

    def cudnn(self) -> Any:
        """The cuDNN graphs, or None where the frontend cannot load (the reason is kept)."""
        if self._cudnn is None and self._why is None:
            from .cudnn import CudnnConv

            try:
                self._cudnn = CudnnConv()
            except KernelError as err:
                self._why = str(err)
        return self._cudnn

    def describe(self) -> dict[str, Any]:
        """Which library serves the convolutions, and cuDNN's details or why it is not used."""
        c = self.cudnn()
        if c is None:
            return {"convolution": "cupy", "why": self._why}
        return {"convolution": "cudnn", **c.describe()}

    def _conv(self, kind: str, a: Any, b: Any, out: tuple[int, ...], geom: Any) -> Any:
        """A cuDNN convolution graph, or None where cuDNN cannot run it."""
        c = self.cudnn()
        if c is None or a.ndim not in (3, 4, 5):
            return None
        stride, pad, dilate, _groups = geom
        device = getattr(a.device, "id", 0)  # a CuPy array's GPU (NumPy's, in tests: none)
        key = (kind, a.shape, b.shape, a.dtype.char, out, stride, pad, dilate, device)
        if key in self._unsupported:
            return None
        try:
            plan = c.plan(key)
        except KernelUnsupportedError:
            self._unsupported.add(key)
            return None
        xp = self.xp
        return c.execute(plan, xp.ascontiguousarray(a), xp.ascontiguousarray(b))

    # -- convolution ---------------------------------------------------------------------

    def convolution(
        self, x: Any, w: Any, b: Any, geom: ConvGeometry, out: tuple[int, ...], train: bool
    ) -> tuple[Any, Grad]:
        """cuDNN's fprop; its dgrad and wgrad for the gradients."""
        y = self._conv("fprop", x, w, (x.shape[0], w.shape[0], *out), geom)
        if y is None:
            return self.portable.convolution(x, w, b, geom, out, train)

        def portable_grad() -> Grad:
            return self.portable.convolution(x, w, None, geom, out, True)[1]

        grads = (("dgrad", w, False), ("wgrad", x, True))
        return self._biased(y, b), self._grad(x, w, geom, grads, portable_grad)

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
        """The transposed convolution: cuDNN's dgrad forward; fprop and wgrad backward."""
        y = self._conv("dgrad", x, w, (x.shape[0], w.shape[1] * geom.groups, *out), geom)
        if y is None:
            return self.portable.deconvolution(x, w, b, geom, adj, out, train)

        def portable_grad() -> Grad:
            return self.portable.deconvolution(x, w, None, geom, adj, out, True)[1]

        grads = (("fprop", w, False), ("wgrad", x, False))
        return self._biased(y, b), self._grad(x, w, geom, grads, portable_grad)

    @staticmethod
    def _biased(y: Any, b: Any) -> Any:
        """``y`` (channels on axis 1) plus the bias ``b`` of each channel."""
        if b is None or y.size == 0:
            return y
        if _BIAS.accepts((y,)):
            n, c = y.shape[:2]
            return _BIAS((y,), (b,), layout=(c, y.size // (n * c)))[0]
        y += b.reshape((-1,) + (1,) * (y.ndim - 2))
        return y

    def _grad(
        self,
        x: Any,
        w: Any,
        geom: ConvGeometry,
        grads: tuple[tuple[str, Any, bool], tuple[str, Any, bool]],
        portable_grad: Any,
    ) -> Grad:
        """The backward pass of a convolution or deconvolution of ``x`` by ``w``: the data
        and weight gradients are the cuDNN graphs ``grads`` names, each ``(kind, other
        operand, whether the output gradient comes second)``, the portable kernel's backward
        pass where cuDNN has no engine for one; the bias gradient sums ``g``."""
        shapes = (x.shape, w.shape)

        def grad(g, needs):
            found: list[Any] = [None, None]
            for i, (kind, other, g_second) in enumerate(grads):
                if needs[i]:
                    a, b = (other, g) if g_second else (g, other)
                    found[i] = self._conv(kind, a, b, shapes[i], geom)
            missing = tuple(bool(needs[i]) and found[i] is None for i in range(2))
            if any(missing):
                back = portable_grad()(g, missing)
                found = [back[i] if missing[i] else found[i] for i in range(2)]
            gb = _bias_grad(g, g.ndim - 2) if len(needs) == 3 and needs[2] else None
            return found[0], found[1], gb

        return grad

    # -- pooling ---------------------------------------------------------------------------

    def pooling(
        self, x: Any, geom: PoolGeometry, out: tuple[int, ...], train: bool
    ) -> tuple[Any, Grad]:
        """2-D max, average and sum pooling in one kernel each way; others are portable."""
        kernel, stride, pad, _extra, pool_type, cip = geom
        if x.ndim != 4 or pool_type not in ("max", "avg", "sum"):
            return self.portable.pooling(x, geom, out, train)
        xp = self.xp
        x = xp.ascontiguousarray(x)
        n, c, h, w = x.shape
        oh, ow = out
        dims = tuple(numpy.int32(v) for v in (h, w, oh, ow, *kernel, *stride, *pad))
        y = xp.empty((n, c, oh, ow), dtype=x.dtype)
        if pool_type == "max":
            return _max_pool(xp, x, dims, y)
        return _sum_pool(xp, x, dims, y, pool_type == "avg", bool(cip))

    # -- batch normalisation ---------------------------------------------------------------

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
        """Batch normalisation over the channel axis 1 in fused kernels; see the module
        docstring. Other axes are portable."""
        if axis != 1 or x.ndim < 2 or x.size == 0:
            return self.portable.batch_norm(x, gamma, beta, stats, eps, axis, train, relu)
        xp = self.xp
        shape = x.shape
        n, c = shape[:2]
        x3 = xp.ascontiguousarray(x).reshape(n, c, -1)
        count = n * x3.shape[2]
        batch = stats is None
        g32, b32 = _f32(gamma), _f32(beta)
        if stats is None:
            # per-channel sums per sample (one pass each), folded over the batch by the small
            # per-channel kernels
            nc = (numpy.int32(n), numpy.int32(c), _F32(1.0 / count))
            mean = xp.empty(c, dtype=_F32)
            sums = _red("bn_sum", "T x", "(float)x")(x3, axis=2)
            _ew("bn_mean", "raw float32 s, int32 N, int32 C, float32 r", "float32 m", _FOLD_MEAN)(
                sums, *nc, mean
            )
            sq = _red("bn_sqdev", "T x, float32 m", "((float)x - m) * ((float)x - m)")
            devs = sq(x3, mean.reshape(1, c, 1), axis=2)
            var, a, b, inv = _ew(
                "bn_var_scale",
                "raw float32 s, int32 N, int32 C, float32 r, float32 g, float32 bt, float32 m, "
                "float32 eps",
                "float32 v, float32 a, float32 b, float32 inv",
                _FOLD_VAR_SCALE,
            )(devs, *nc, g32, b32, mean, _F32(eps))
        else:
            mean, var = _f32(stats[0]), _f32(stats[1])
            a, b, inv = _ew(
                "bn_scale",
                "float32 g, float32 bt, float32 m, float32 v, float32 eps",
                "float32 a, float32 b, float32 inv",
                "inv = rsqrtf(v + eps); a = g * inv; b = bt - m * a",
            )(g32, b32, mean, var, _F32(eps))
        (y3,) = _BN_APPLY[relu]((x3,), (a, b), layout=(c, x3.shape[2]))
        pdt = gamma.dtype
        kept_y = y3 if relu else None  # the ReLU's mask
        if not train:
            x3 = kept_y = None

        def grad(gy, needs):
            g3 = xp.ascontiguousarray(gy, dtype=y3.dtype).reshape(n, c, -1)
            # the output gradient, masked by the ReLU where there is one, summed and dotted
            # with the centred data in one pass
            gin: tuple[Any, ...] = (g3, kept_y) if relu else (g3,)
            gv = _MASKED if relu else "(float)g"
            sums = _red(
                "bn_gsums" + "_relu" * relu,
                "T g, " + "T y, " * relu + "T x, float32 m",
                f"complex<float>({gv}, {gv} * ((float)x - m))",
                "complex64",
            )(*gin, x3, mean.reshape(1, c, 1), axis=2)
            # gbeta, ggamma and the two per-channel terms of the data gradient, folded over
            # the batch in one kernel
            gbeta, ggamma, k1, k2 = _ew(
                "bn_terms",
                "raw complex64 gs, int32 N, int32 C, float32 inv, float32 rcount",
                "float32 gbeta, float32 ggamma, float32 k1, float32 k2",
                _FOLD_TERMS,
            )(sums, numpy.int32(n), numpy.int32(c), inv, _F32(1.0 / count))
            gx = None
            if needs[0]:
                ins = (g3,) + (kept_y,) * relu + (x3,) * batch
                chans = (a, mean, k1, k2) if batch else (a,)
                (gx,) = _BN_DX[(relu, batch)](ins, chans, layout=(c, x3.shape[2]))
                gx = gx.reshape(shape)
            if pdt != _F32:
                ggamma, gbeta = ggamma.astype(pdt), gbeta.astype(pdt)
            return gx, ggamma, gbeta

        return y3.reshape(shape), mean, var, grad

    def moving_average(self, avg: Any, stat: Any, momentum: float) -> None:
        """``avg = momentum * avg + (1 - momentum) * stat`` in one kernel for float32 (the
        running statistics); the portable kernel otherwise."""
        if avg.dtype != _F32 or stat.dtype != _F32 or avg.shape != stat.shape:
            self.portable.moving_average(avg, stat, momentum)
            return
        params = "float32 s, float32 mom, float32 rest"
        k = _ew("moving_avg", params, "float32 a", "a = a * mom + rest * s")
        k(stat, _F32(momentum), _F32(1.0 - momentum), avg)

    # -- activations -----------------------------------------------------------------------

    def activation(self, x: Any, kind: str, train: bool) -> tuple[Any, Grad]:
        """ReLU, sigmoid and tanh in one kernel each way; softrelu is portable."""
        kernels = _ACT.get(kind)
        if kernels is None:
            return self.portable.activation(x, kind, train)
        (y,) = kernels[0]((x,))

        def grad(g, needs):
            return kernels[1]((y, self._like(g, y)))

        return y, grad

    #: A residual unit's end: this provider's batch norm, then its ``add_relu``.
    batch_norm_add_relu = composed

    def add_relu(self, a: Any, b: Any, train: bool) -> tuple[Any, Grad]:
        """``relu(a + b)`` in one kernel (float32 arithmetic), and ReLU's gradient kernel
        shared by both addends; addends of other shapes or dtypes are portable."""
        if not _ADD_RELU.accepts((a, b)):
            return self.portable.add_relu(a, b, train)
        (y,) = _ADD_RELU((a, b))

        def grad(g, needs):
            (gs,) = _ACT["relu"][1]((y, self._like(g, y)))
            return (gs, gs)

        return y, grad

    def _like(self, g: Any, y: Any) -> Any:
        """The output gradient ``g`` in ``y``'s dtype and shape."""
        return self.xp.asarray(g, dtype=y.dtype).reshape(y.shape)


def _max_pool(xp: Any, x: Any, dims: tuple, y: Any) -> tuple[Any, Grad]:
    """Max pooling into ``y``, keeping each window's first maximum for the gradient."""
    n, c, h, w = x.shape
    arg = xp.empty(y.shape, dtype=numpy.int32)
    fwd = _ew("pool_max", "raw T x, " + _POOL_PARAMS, "T y, int32 arg", _POOL_MAX_FWD)
    fwd(x, *dims, y, arg)

    def grad(g, needs):
        g = xp.ascontiguousarray(g)
        gx = xp.empty((n, c, h, w), dtype=g.dtype)
        params = "raw T g, raw int32 arg, " + _POOL_PARAMS
        _ew("pool_max_bwd", params, "T gx", _POOL_MAX_BWD)(g, arg, *dims, gx)
        return (gx,)

    return y, grad


def _sum_pool(xp: Any, x: Any, dims: tuple, y: Any, avg: bool, cip: bool) -> tuple[Any, Grad]:
    """Sum pooling into ``y``, divided by each window's count with ``avg``."""
    n, c, h, w = x.shape
    flags = (numpy.int32(avg), numpy.int32(cip))
    params = _POOL_PARAMS + ", int32 AVG, int32 CIP"
    _ew("pool_sum", "raw T x, " + params, "T y", _POOL_SUM_FWD)(x, *dims, *flags, y)

    def grad(g, needs):
        g = xp.ascontiguousarray(g)
        gx = xp.empty((n, c, h, w), dtype=g.dtype)
        _ew("pool_sum_bwd", "raw T g, " + params, "T gx", _POOL_SUM_BWD)(g, *dims, *flags, gx)
        return (gx,)

    return y, grad


def _f32(a: Any) -> Any:
    """``a`` as float32 (itself when it is)."""
    return a if a.dtype == _F32 else a.astype(_F32)


def _bias_grad(g: Any, nd: int) -> Any:
    """The bias gradient: ``g`` summed over the batch and the spatial axes, in ``g``'s type
    (accumulated in float32)."""
    n, f = g.shape[:2]
    total = g.reshape(n, f, -1).sum(axis=2, dtype=_F32).sum(axis=0)
    return total.astype(g.dtype, copy=False)
