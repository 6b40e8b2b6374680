"""The oneDNN provider: oneDNN's CPU primitives for float32 convolution, pooling, batch
normalisation, activations, softmax and LRN.

oneDNN is loaded from the ``onednn-cpu-gomp`` package (``libdnnl.so.3``, found through the
package's installed files, else in the environment's ``lib``), or from ``MXRS_ONEDNN_LIBRARY``,
by the Rust extension (``mxrs._native``), which builds each kernel's primitives once per shape
and attributes and runs them without the GIL. Its OpenMP threads follow ``OMP_NUM_THREADS``,
capped by MXNet's ``MXNET_OMP_MAX_THREADS`` where that is set.
Kernels are cached here, at most :data:`CACHE_SIZE` of them, least recently used first out.
A shape oneDNN has no implementation for is computed by the portable kernel, and remembered.

Where oneDNN's arithmetic parts from MXNet's on NaN or infinities (its max and exp treat them
their own way), an input that holds any is computed by the portable kernel: one sum over the
input tells (it is finite exactly when every element is, barring an overflow, which only
costs the fallback).
"""

from __future__ import annotations

import importlib.metadata
import os
import sys
from collections import OrderedDict
from typing import Any

import numpy

from .. import _native
from .._backend import NUMPY
from .._grad_parts import GradParts, total
from ..base import KernelError, KernelUnsupportedError
from . import portable
from ._layout import channels_last, dense, in_layout_of, is_channels_last, strides_of
from ._residual import composed
from ._types import ConvGeometry, Grad, PoolGeometry

__all__ = ["OnednnKernels", "CACHE_SIZE", "library_candidates"]

#: Kernels kept built at once (each holds its primitives; a model has a few dozen shapes).
CACHE_SIZE = 512

#: Activations of smaller arrays run on NumPy (a oneDNN call costs a few microseconds).
ACTIVATION_MIN = 4096

#: Softmax, LRN and the LeakyReLU family of smaller arrays run on NumPy (measured break-even
#: points on one thread; GELU's NumPy erf is slow).
SOFTMAX_MIN = 2048
LRN_MIN = 1024
LEAKY_MIN = {"leaky": 8192, "elu": 2048, "gelu": 512}

#: ``MXRS_CONV_WINOGRAD``'s values and what the extension calls them: 3×3 convolutions of
#: stride 1 by Winograd's F(4×4, 3×3) where it is faster (the default), never, or wherever it
#: can compute them.
_WINOGRAD = {"auto": "auto", "1": "auto", "0": "off", "off": "off", "always": "always"}

_LIB = "libdnnl.so.3"
_PACKAGE = "onednn-cpu-gomp"


def library_candidates() -> list[str]:
    """Where oneDNN is looked for, in order: ``MXRS_ONEDNN_LIBRARY`` alone when set; else the
    library the ``onednn-cpu-gomp`` package installed (wherever pip put it: ``--target``,
    ``--user``, a layered environment), the environments' ``lib`` directories, then the
    system's loader path."""
    env = os.environ.get("MXRS_ONEDNN_LIBRARY")
    if env:
        return [env]
    found = _installed_library()
    for prefix in (sys.prefix, sys.base_prefix, sys.exec_prefix):
        path = os.path.join(prefix, "lib", _LIB)
        if os.path.exists(path):
            found.append(path)
    found.append(_LIB)
    return list(dict.fromkeys(os.path.normpath(p) if os.sep in p else p for p in found))


def _installed_library() -> list[str]:
    """``libdnnl.so.3`` as recorded among the installed files of ``onednn-cpu-gomp``."""
    try:
        dist = importlib.metadata.distribution(_PACKAGE)
    except importlib.metadata.PackageNotFoundError:
        return []
    paths = []
    for f in dist.files or ():
        if f.name == _LIB:
            path = str(dist.locate_file(f))
            if os.path.exists(path):
                paths.append(path)
    return paths


def _max_threads() -> int:
    """MXNet's ``MXNET_OMP_MAX_THREADS`` cap on ``OMP_NUM_THREADS`` (or the cores): the
    threads oneDNN is to run on, or 0 where the variable is not set.

    Raises
    ------
    KernelError
        When a variable is not a whole number of at least 1.
    """
    cap = _threads_var("MXNET_OMP_MAX_THREADS")
    if cap is None:
        return 0
    omp = _threads_var("OMP_NUM_THREADS")
    return min(cap, omp if omp is not None else (os.cpu_count() or 1))


def _threads_var(name: str) -> int | None:
    raw = os.environ.get(name, "").strip()
    if not raw:
        return None
    # OpenMP allows a list for nested levels; the first is the outer one
    first = raw.split(",")[0].strip()
    if not first.isdigit() or int(first) < 1:
        raise KernelError(f"{name}={raw!r}: expected a whole number of threads, at least 1")
    return int(first)


def _winograd_choice() -> str:
    raw = os.environ.get("MXRS_CONV_WINOGRAD", "auto").strip().lower() or "auto"
    if raw not in _WINOGRAD:
        raise KernelError(f"MXRS_CONV_WINOGRAD={raw!r}: choose one of auto, 0 or always")
    return _WINOGRAD[raw]


def _load() -> tuple[str, int]:
    if not sys.platform.startswith("linux"):
        raise KernelError(f"oneDNN's wheel is built for Linux, not {sys.platform}")
    threads = _max_threads()
    errors = []
    for path in library_candidates():
        try:
            version = _native.onednn_load(path)
        except KernelError as err:
            errors.append(str(err))
            continue
        _native.onednn_set_threads(threads)
        return version, threads
    raise KernelError(
        "oneDNN could not be loaded (pip install onednn-cpu-gomp, or set MXRS_ONEDNN_LIBRARY): "
        + "; ".join(errors)
    )


def _finite(x: Any) -> bool:
    """True when every element of ``x`` is finite (one sum; an overflow reads as not)."""
    with numpy.errstate(over="ignore", invalid="ignore"):
        return bool(numpy.isfinite(numpy.sum(x)))


def _inference_only(what: str) -> Grad:
    """The gradient closure of a kernel that ran without recording: an error if called."""

    def grad(g: Any, needs: tuple[bool, ...]) -> tuple[Any, ...]:
        raise KernelError(f"this {what} ran for inference; record it to train")

    return grad


def _relu_grad(y: Any, inputs: int = 1) -> Grad:
    """The gradient closure of a ReLU whose output is ``y`` (over ``inputs`` addends, which
    share it): one native pass, NaN kept; an output gradient in parts (:class:`GradParts`)
    is added in the same pass."""

    def grad(g: Any, needs: tuple[bool, ...]) -> tuple[Any, ...]:
        gx = numpy.empty_like(y)
        if type(g) is GradParts:
            first, second = g[0], total(GradParts(g[1:]))
            _native.relu_backward_sum(y, in_layout_of(y, first), in_layout_of(y, second), gx)
        else:
            _native.relu_backward(y, in_layout_of(y, g), gx)
        return (gx,) * inputs

    return grad


def _channel_arrays(
    gamma: Any, beta: Any, stats: tuple[Any, Any] | None, channels: int
) -> tuple[Any, Any, Any, Any]:
    """A batch norm kernel's per-channel float32 arrays: gamma and beta, and the mean and
    variance it reads (copies of ``stats``) or writes (the batch's)."""
    f32 = numpy.float32
    gamma = numpy.ascontiguousarray(gamma, f32)
    beta = numpy.ascontiguousarray(beta, f32)
    if stats is not None:
        return gamma, beta, numpy.array(stats[0], f32), numpy.array(stats[1], f32)
    return gamma, beta, numpy.empty(channels, f32), numpy.empty(channels, f32)


class OnednnKernels:
    """oneDNN's convolution, deconvolution, pooling, batch norm, activations, softmax and
    LRN on dense float32 NumPy arrays (any axis order: see :mod:`mxrs.kernels._layout`)."""

    name = "onednn"

    def __init__(self) -> None:
        self.winograd = _winograd_choice()
        self.version, self.max_threads = _load()
        self._cache: OrderedDict[tuple, Any] = OrderedDict()
        self._fallback = portable.for_backend(NUMPY)
        self._impls: set[str] = set()

    def describe(self) -> dict[str, Any]:
        """oneDNN's version, its thread cap (``MXNET_OMP_MAX_THREADS``; None: OpenMP's own
        choice), when convolutions use Winograd's algorithm (``MXRS_CONV_WINOGRAD``) and the
        implementations its kernels picked so far."""
        return {
            "version": self.version,
            "max_threads": self.max_threads or None,
            "winograd": self.winograd,
            "implementations": sorted(self._impls),
        }

    def _kernel(self, key: tuple, make: Any, fast: bool = False) -> Any:
        """The cached kernel of ``key``, built by ``make()``; None where oneDNN has none, or
        with ``fast`` where it has only its reference implementation (slower than NumPy)."""
        cache = self._cache
        if key in cache:
            cache.move_to_end(key)
            return cache[key]
        try:
            k = make()
            if fast and k.implementation.startswith("ref"):
                k = None
            else:
                self._impls.add(k.implementation)
        except KernelUnsupportedError:
            k = None
        cache[key] = k
        if len(cache) > CACHE_SIZE:
            cache.popitem(last=False)
        return k

    def convolution(
        self, x: Any, w: Any, b: Any, geom: ConvGeometry, out: tuple[int, ...], train: bool
    ) -> tuple[Any, Grad]:
        """oneDNN's direct convolution; see :class:`mxrs.kernels.ConvKernels`. The output is
        channels-last in memory."""
        k = self._conv_kernel(x, w, b, geom, None, train)
        if k is None:
            return self._fallback.convolution(x, w, b, geom, out, train)
        return self._run_conv(k, x, w, b, train, "convolution")

    def _conv_kernel(
        self, x: Any, w: Any, b: Any, geom: ConvGeometry, adj: Any, train: bool
    ) -> Any:
        """The cached convolution kernel, or deconvolution kernel when ``adj`` is given."""
        stride, pad, dilate, groups = geom
        key = ("conv", x.shape, w.shape, b is not None, geom, adj, train)
        return self._kernel(
            key,
            lambda: _native.OnednnConv(
                list(x.shape),
                list(w.shape),
                groups,
                b is not None,
                list(stride),
                list(dilate),
                list(pad),
                train,
                None if adj is None else list(adj),
                self.winograd,
            ),
        )

    def _run_conv(self, k: Any, x: Any, w: Any, b: Any, train: bool, what: str) -> Any:
        """Runs convolution or deconvolution kernel ``k``: the output and its gradient."""
        x = dense(x)
        w = numpy.ascontiguousarray(w, numpy.float32)
        if b is not None:
            b = numpy.ascontiguousarray(b, numpy.float32)
        # channels-last, the layout the convolution computes in; the next oneDNN op reads it
        # as it is, and NumPy ops see an ordinary (N, F, *out) array
        y = channels_last(tuple(k.dst_shape))
        k.forward(x, w, b, y)
        if not train:
            return y, _inference_only(what)
        # the closure keeps what the gradients read (x, w), never the output
        bias_len = y.shape[1] if b is not None else 0

        def grad(g, needs):
            gx = numpy.empty_like(x) if needs[0] else None
            gw = numpy.empty_like(w) if needs[1] else None
            gb = numpy.empty(bias_len, numpy.float32) if bias_len and needs[2] else None
            k.backward(x, w, dense(g), gx, gw, gb)
            return gx, gw, gb

        return y, grad

    def fully_connected(self, x: Any, w: Any, b: Any, train: bool) -> tuple[Any, Grad]:
        """oneDNN's inner product; see :class:`mxrs.kernels.DenseKernels`."""
        (n, i), o = x.shape, w.shape[0]
        if min(n, i, o) == 0:
            return self._fallback.fully_connected(x, w, b, train)
        key = ("fc", n, i, o, b is not None, train)
        k = self._kernel(key, lambda: _native.OnednnInnerProduct(n, i, o, b is not None, train))
        if k is None:
            return self._fallback.fully_connected(x, w, b, train)
        f32 = numpy.float32
        x = numpy.ascontiguousarray(x, f32)
        w = numpy.ascontiguousarray(w, f32)
        if b is not None:
            b = numpy.ascontiguousarray(b, f32)
        y = numpy.empty((n, o), f32)
        k.forward(x, w, b, y)
        if not train:
            return y, _inference_only("fully connected layer")
        has_bias = b is not None

        def grad(g, needs):
            gx = numpy.empty_like(x) if needs[0] else None
            gw = numpy.empty_like(w) if needs[1] else None
            gb = numpy.empty(o, f32) if has_bias and needs[2] else None
            k.backward(x, w, numpy.ascontiguousarray(g, f32), gx, gw, gb)
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
        """oneDNN's deconvolution; see :class:`mxrs.kernels.DeconvKernels`. An ``adj`` beyond
        ``pad`` (a negative high-end padding to oneDNN) runs on the portable kernel."""
        k = self._conv_kernel(x, w, b, geom, adj, train)
        if k is None:
            return self._fallback.deconvolution(x, w, b, geom, adj, out, train)
        return self._run_conv(k, x, w, b, train, "deconvolution")

    def pooling(
        self, x: Any, geom: PoolGeometry, out: tuple[int, ...], train: bool
    ) -> tuple[Any, Grad]:
        """oneDNN's pooling; see :class:`mxrs.kernels.PoolKernels`.

        MXNet's 'sum' pooling, and average pooling that counts padding under the 'full'
        convention (whose extra high-end cells MXNet does not count), run on the portable
        kernel."""
        kernel, stride, pad, extra, pool_type, include = geom
        kind = {"max": "max", "avg": "avg_include" if include else "avg_exclude"}.get(pool_type)
        if kind is None or (kind == "avg_include" and any(extra)):
            return self._fallback.pooling(x, geom, out, train)
        pad_r = [p + e for p, e in zip(pad, extra, strict=True)]
        x = dense(x)
        shape, strides = x.shape, strides_of(x)
        key = ("pool", shape, tuple(strides), geom, train)
        k = self._kernel(
            key,
            lambda: _native.OnednnPool(
                list(shape), strides, kind, list(kernel), list(stride), list(pad), pad_r, train
            ),
        )
        if k is None:
            return self._fallback.pooling(x, geom, out, train)
        dst = tuple(k.dst_shape)
        last = is_channels_last(x)
        y = channels_last(dst) if last else numpy.empty(dst, numpy.float32)
        ws = numpy.empty(k.workspace_bytes, numpy.uint8) if k.workspace_bytes else None
        k.forward(x, y, ws)
        del x

        def grad(g, needs):
            gx = channels_last(shape) if last else numpy.empty(shape, numpy.float32)
            k.backward(dense(g), ws, gx)
            return (gx,)

        return y, grad

    def activation(self, x: Any, kind: str, train: bool) -> tuple[Any, Grad]:
        """oneDNN's activation gradients (and sigmoid's forward pass) over the whole buffer;
        ReLU on mxrs's own loops.

        ReLU runs on the native loops of :func:`_relu` (oneDNN's turns NaN into 0; MXNet's
        passes it on, and a NaN output gets a NaN gradient). Tanh runs forward on NumPy, as
        fast on one thread. Softrelu, whose oneDNN form loses digits far into the negative
        tail, and arrays of fewer than :data:`ACTIVATION_MIN` elements stay on NumPy."""
        if kind not in ("relu", "sigmoid", "tanh") or x.size < ACTIVATION_MIN:
            return self._fallback.activation(x, kind, train)
        if kind == "relu":
            x = dense(x)
            y = numpy.empty_like(x)
            _native.relu_forward(x, y)
            return y, (_relu_grad(y) if train else _inference_only("activation"))
        n = x.size
        k = self._kernel(("act", kind, n, train), lambda: _native.OnednnActivation(kind, n, train))
        if k is None:
            return self._fallback.activation(x, kind, train)
        if kind == "sigmoid":
            x = dense(x)
            y = numpy.empty_like(x)
            k.forward(x, y)
        else:
            y = numpy.tanh(x)
        if not train:
            return y, _inference_only("activation")

        def grad(g, needs):
            # the kernel runs over raw buffers: the output, its gradient and the result share
            # one layout (a dense y, as NumPy's elementwise results keep their input's)
            data = dense(y)
            gx = numpy.empty_like(data)
            k.backward(data, in_layout_of(data, g), gx)
            return (gx,)

        return y, grad

    def add_relu(self, a: Any, b: Any, train: bool) -> tuple[Any, Grad]:
        """``relu(a + b)`` in one pass over the three buffers; see
        :class:`mxrs.kernels.ActKernels`. Addends of other shapes or layouts, and short
        ones, take the portable kernel."""
        if a.shape != b.shape or a.size < ACTIVATION_MIN:
            return self._fallback.add_relu(a, b, train)
        a = dense(a)
        b = in_layout_of(a, b)
        y = numpy.empty_like(a)
        _native.relu_add_forward(a, b, y)
        return y, (_relu_grad(y, 2) if train else _inference_only("activation"))

    def moving_average(self, avg: Any, stat: Any, momentum: float) -> None:
        """As the portable kernel (one pass over a vector of channels)."""
        self._fallback.moving_average(avg, stat, momentum)

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
        """oneDNN's batch normalisation over axis 1, with a fused ReLU when asked (its
        training pass keeps a one-byte-per-element workspace for the gradient); see
        :class:`mxrs.kernels.NormKernels`."""
        if axis != 1 or x.ndim < 2 or x.ndim > 6 or x.size == 0:
            return self._fallback.batch_norm(x, gamma, beta, stats, eps, axis, train, relu)
        glob = stats is not None
        x = dense(x)
        strides = strides_of(x)
        key = ("bnorm", x.shape, tuple(strides), float(eps), glob, train, relu)
        k = self._kernel(
            key,
            lambda: _native.OnednnBatchNorm(list(x.shape), strides, float(eps), glob, train, relu),
        )
        if k is None:
            return self._fallback.batch_norm(x, gamma, beta, stats, eps, axis, train, relu)
        gamma, beta, mean, var = _channel_arrays(gamma, beta, stats, x.shape[1])
        y = numpy.empty_like(x)
        ws = numpy.empty(k.workspace_bytes, numpy.uint8) if k.workspace_bytes else None
        k.forward(x, gamma, beta, mean, var, y, ws)
        if not train:
            return y, mean, var, _inference_only("batch norm")

        def grad(gy, needs):
            gx = numpy.empty_like(x)
            ggamma = numpy.empty_like(gamma)
            gbeta = numpy.empty_like(gamma)
            m, v = mean.copy(), var.copy()
            k.backward(x, in_layout_of(x, gy), gamma, m, v, gx, ggamma, gbeta, ws, beta)
            return (gx if needs[0] else None), ggamma, gbeta

        return y, mean, var, grad

    def batch_norm_add_relu(
        self,
        x: Any,
        gamma: Any,
        beta: Any,
        residual: Any,
        stats: tuple[Any, Any] | None,
        eps: float,
        train: bool,
    ) -> tuple[Any, Any, Any, Grad]:
        """A residual unit's end in one pass after the statistics (backward, the ReLU's mask,
        the output's gradient parts and the normalisation's sums in one pass, then the data
        gradient), on the channels-last loops of :meth:`batch_norm`; other layouts compose
        the two kernels. See :class:`mxrs.kernels.NormKernels`."""
        x = dense(x)
        if not is_channels_last(x) or x.size == 0 or residual.shape != x.shape:
            return composed(self, x, gamma, beta, residual, stats, eps, train)
        glob = stats is not None
        strides = strides_of(x)
        key = ("bnorm", x.shape, tuple(strides), float(eps), glob, train, True)
        k = self._kernel(
            key,
            lambda: _native.OnednnBatchNorm(list(x.shape), strides, float(eps), glob, train, True),
        )
        if k is None or k.implementation != "mxrs:channels_last":
            return composed(self, x, gamma, beta, residual, stats, eps, train)
        gamma, beta, mean, var = _channel_arrays(gamma, beta, stats, x.shape[1])
        y = numpy.empty_like(x)
        k.forward_residual(x, in_layout_of(x, residual), gamma, beta, mean, var, y)
        if not train:
            return y, mean, var, _inference_only("batch norm")

        def grad(g, needs):
            parts = g if type(g) is GradParts else (g,)
            first = in_layout_of(x, parts[0])
            second = in_layout_of(x, total(GradParts(parts[1:]))) if len(parts) > 1 else None
            gx, gr = numpy.empty_like(x), numpy.empty_like(x)
            ggamma, gbeta = numpy.empty_like(gamma), numpy.empty_like(gamma)
            m, v = mean.copy(), var.copy()
            k.backward_residual(x, y, first, second, gamma, m, v, gx, gr, ggamma, gbeta)
            return (gx if needs[0] else None), ggamma, gbeta, gr

        return y, mean, var, grad

    def softmax(
        self, x: Any, axis: int, temperature: float, log: bool, train: bool
    ) -> tuple[Any, Grad]:
        """oneDNN's softmax; see :class:`mxrs.kernels.SoftmaxKernels`. oneDNN has no
        temperature: the input is divided by it first and the gradient after. An axis that is
        not innermost in memory (oneDNN has only its reference implementation there, slower
        than NumPy), arrays of fewer than :data:`SOFTMAX_MIN` elements, and inputs with NaN or
        infinities (whose rows MXNet's arithmetic turns to NaN) run on NumPy."""
        if x.size < SOFTMAX_MIN:
            return self._fallback.softmax(x, axis, temperature, log, train)
        xs = dense(x / temperature if temperature != 1.0 else x)
        if not _finite(xs):
            return self._fallback.softmax(x, axis, temperature, log, train)
        shape, strides = xs.shape, strides_of(xs)
        key = ("softmax", shape, tuple(strides), axis, log, train)
        k = self._kernel(
            key, lambda: _native.OnednnSoftmax(list(shape), strides, axis, log, train), fast=True
        )
        if k is None:
            return self._fallback.softmax(x, axis, temperature, log, train)
        y = numpy.empty_like(xs)
        k.forward(xs, y)
        del x, xs
        if not train:
            return y, _inference_only("softmax")

        def grad(g, needs):
            gx = numpy.empty_like(y)
            k.backward(y, in_layout_of(y, g), gx)
            if temperature != 1.0:
                gx /= temperature
            return (gx,)

        return y, grad

    def lrn(
        self, x: Any, alpha: float, beta: float, knorm: float, nsize: int, train: bool
    ) -> tuple[Any, Grad]:
        """oneDNN's LRN across channels; see :class:`mxrs.kernels.LrnKernels`.

        MXNet's window holds ``2 * h + 1`` channels, ``h = (nsize - 1) // 2`` (one fewer than
        ``nsize`` when it is even), while its alpha is divided by ``nsize``; oneDNN's window
        holds ``local_size`` channels and divides its alpha by that, so the kernel runs with
        ``local_size = 2 * h + 1`` and ``alpha * local_size / nsize``. A window of one channel
        (``nsize`` 1 or 2), shapes oneDNN computes only with its reference implementation
        (other than 2 spatial axes), arrays of fewer than :data:`LRN_MIN` elements, and inputs
        with NaN or infinities run on NumPy."""
        if x.size < LRN_MIN or nsize < 3:
            return self._fallback.lrn(x, alpha, beta, knorm, nsize, train)
        x = dense(x)
        if not _finite(x):
            return self._fallback.lrn(x, alpha, beta, knorm, nsize, train)
        size = 2 * ((nsize - 1) // 2) + 1
        a = alpha * size / nsize
        shape = x.shape
        key = ("lrn", shape, size, a, beta, knorm, train)
        k = self._kernel(
            key, lambda: _native.OnednnLrn(list(shape), size, a, beta, knorm, train), fast=True
        )
        if k is None:
            return self._fallback.lrn(x, alpha, beta, knorm, nsize, train)
        y = numpy.empty_like(x)
        ws = numpy.empty(k.workspace_bytes, numpy.uint8) if k.workspace_bytes else None
        k.forward(x, y, ws)
        if not train:
            return y, _inference_only("LRN")

        def grad(g, needs):
            gx = numpy.empty_like(x)
            k.backward(x, in_layout_of(x, g), ws, gx)
            return (gx,)

        return y, grad

    def leaky_relu(self, x: Any, kind: str, slope: float, train: bool) -> tuple[Any, Grad]:
        """oneDNN's leaky ReLU, ELU and GELU (erf form) over the whole buffer; see
        :class:`mxrs.kernels.LeakyKernels`. SELU, arrays smaller than their kind's
        :data:`LEAKY_MIN`, and inputs with NaN or infinities run on NumPy."""
        if kind not in LEAKY_MIN or x.size < LEAKY_MIN[kind]:
            return self._fallback.leaky_relu(x, kind, slope, train)
        x = dense(x)
        if not _finite(x):
            return self._fallback.leaky_relu(x, kind, slope, train)
        n = x.size
        key = ("leaky", kind, n, float(slope), train)
        k = self._kernel(key, lambda: _native.OnednnActivation(kind, n, train, slope))
        if k is None:
            return self._fallback.leaky_relu(x, kind, slope, train)
        y = numpy.empty_like(x)
        k.forward(x, y)
        if not train:
            return y, _inference_only("activation")

        def grad(g, needs):
            # the kernel runs over raw buffers: the input, the gradients share one layout
            gx = numpy.empty_like(x)
            k.backward(x, in_layout_of(x, g), gx)
            return (gx,)

        return y, grad
