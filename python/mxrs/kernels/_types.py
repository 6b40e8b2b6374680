"""What a kernel provider offers, as the operators see it: narrow protocols over raw arrays."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple, Protocol

#: ``grad(out_grad, needs) -> per-input gradients`` (None where not needed), the closure a
#: forward kernel returns for the backward pass.
Grad = Callable[[Any, tuple[bool, ...]], tuple[Any, ...]]


class ConvGeometry(NamedTuple):
    """A convolution's attributes, one value per spatial axis (MXNet's dilation: 1 is dense)."""

    stride: tuple[int, ...]
    pad: tuple[int, ...]
    dilate: tuple[int, ...]
    groups: int


class PoolGeometry(NamedTuple):
    """A pooling window's attributes; ``extra`` pads the high end ('full' convention)."""

    kernel: tuple[int, ...]
    stride: tuple[int, ...]
    pad: tuple[int, ...]
    extra: tuple[int, ...]
    pool_type: str
    count_include_pad: bool


class ConvKernels(Protocol):
    """A provider of convolution."""

    name: str

    def convolution(
        self, x: Any, w: Any, b: Any | None, geom: ConvGeometry, out: tuple[int, ...], train: bool
    ) -> tuple[Any, Grad]:
        """``(N, F, *out)`` output of ``x`` (N, C, *spatial) and ``w`` (F, C/groups, *kernel)
        (plus bias ``b``), and the closure giving ``(gx, gw, gb)``."""
        ...


class DeconvKernels(Protocol):
    """A provider of deconvolution (transposed convolution)."""

    name: str

    def deconvolution(
        self,
        x: Any,
        w: Any,
        b: Any | None,
        geom: ConvGeometry,
        adj: tuple[int, ...],
        out: tuple[int, ...],
        train: bool,
    ) -> tuple[Any, Grad]:
        """``(N, F, *out)`` output of ``x`` (N, C, *spatial) and ``w`` (C, F/groups, *kernel)
        (plus bias ``b``): the transpose of the convolution ``geom`` describes, with ``adj``
        extra output at the high end; and the closure giving ``(gx, gw, gb)``."""
        ...


class PoolKernels(Protocol):
    """A provider of windowed pooling."""

    name: str

    def pooling(
        self, x: Any, geom: PoolGeometry, out: tuple[int, ...], train: bool
    ) -> tuple[Any, Grad]:
        """Pooled ``(N, C, *out)`` output of ``x`` and the closure giving ``(gx,)``."""
        ...


class NormKernels(Protocol):
    """A provider of batch normalisation."""

    name: str

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
        """``(y, mean, var, grad)``: ``x`` normalised over every axis but ``axis`` with the
        given ``stats`` (mean, variance), or with the batch's mean and biased variance when
        ``stats`` is None, then scaled by ``gamma`` and shifted by ``beta`` (and passed through
        a ReLU with ``relu``, NaN kept); ``grad`` gives ``(gx, ggamma, gbeta)``."""
        ...

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
        """A residual unit's end, ``relu(batch_norm(x) + residual)`` over axis 1, for
        ``residual`` of ``x``'s shape and dtype: ``(y, mean, var, grad)`` as
        :meth:`batch_norm`, ``grad`` giving ``(gx, ggamma, gbeta, gresidual)``. The closure
        also takes the output's gradient in parts (a ``mxrs._grad_parts.GradParts``)."""
        ...

    def moving_average(self, avg: Any, stat: Any, momentum: float) -> None:
        """``avg = momentum * avg + (1 - momentum) * stat`` in place (the running
        statistics)."""
        ...


class ActKernels(Protocol):
    """A provider of elementwise activations: 'relu', 'sigmoid', 'tanh', 'softrelu', and
    ReLU after an addition."""

    name: str

    def activation(self, x: Any, kind: str, train: bool) -> tuple[Any, Grad]:
        """``kind(x)`` and the closure giving ``(gx,)``."""
        ...

    def add_relu(self, a: Any, b: Any, train: bool) -> tuple[Any, Grad]:
        """``relu(a + b)`` for ``a`` and ``b`` of one shape (a residual block's end), and the
        closure giving ``(ga, gb)``, both the ReLU's gradient. The closure also takes the
        output's gradient in parts (a ``mxrs._grad_parts.GradParts`` of NumPy arrays, which the
        tape passes to ops that add them themselves)."""
        ...


class SoftmaxKernels(Protocol):
    """A provider of softmax and log-softmax along one axis."""

    name: str

    def softmax(
        self, x: Any, axis: int, temperature: float, log: bool, train: bool
    ) -> tuple[Any, Grad]:
        """``softmax(x / temperature)`` along ``axis`` (an index in ``[0, x.ndim)``), or its
        logarithm when ``log``, and the closure giving ``(gx,)``."""
        ...


class LrnKernels(Protocol):
    """A provider of local response normalisation across channels, as MXNet defines it."""

    name: str

    def lrn(
        self, x: Any, alpha: float, beta: float, knorm: float, nsize: int, train: bool
    ) -> tuple[Any, Grad]:
        """``x / (knorm + alpha / nsize * sum(x^2))^beta`` for ``x`` (N, C, ...), the sum over
        channels ``c - h .. c + h``, ``h = (nsize - 1) // 2``; and the closure giving
        ``(gx,)``."""
        ...


class LeakyKernels(Protocol):
    """A provider of the LeakyReLU family without learned parameters: 'leaky' (``slope * x``
    below zero), 'elu' (``slope * (exp(x) - 1)`` below zero), 'selu' (ELU with the SELU
    constants; ``slope`` unused) and 'gelu' (erf form; ``slope`` unused)."""

    name: str

    def leaky_relu(self, x: Any, kind: str, slope: float, train: bool) -> tuple[Any, Grad]:
        """``kind(x)`` and the closure giving ``(gx,)``."""
        ...


class DenseKernels(Protocol):
    """A provider of the fully connected layer on 2-D data."""

    name: str

    def fully_connected(self, x: Any, w: Any, b: Any | None, train: bool) -> tuple[Any, Grad]:
        """``x @ w.T + b`` for ``x`` (N, IC) and ``w`` (OC, IC), and the closure giving
        ``(gx, gw, gb)``."""
        ...
