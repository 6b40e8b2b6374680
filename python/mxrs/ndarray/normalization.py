"""Normalisation layers: ``BatchNorm`` (and ``contrib.BatchNormWithReLU``), ``LayerNorm``,
``InstanceNorm``, ``GroupNorm``, ``L2Normalization`` and ``LRN`` (local response normalisation
across channels).

BatchNorm normalises with batch statistics in training mode and uses the running statistics
otherwise; as in MXNet 1.9.1, the running statistics move toward the batch's in the backward
pass, so only a recorded forward that is differentiated updates them. Its arithmetic is a kernel
of :mod:`mxrs.kernels`. ``BatchNormWithReLU`` is the same operator with a ReLU on its output,
which the oneDNN kernel computes in the same pass (a hybridized ``HybridSequential`` runs a
``BatchNorm`` followed by ``Activation('relu')`` this way).

InstanceNorm and GroupNorm normalise each sample on its own (no batch statistics, no running
state), with the biased variance and ``eps`` inside the square root. InstanceNorm normalises each
(sample, channel) over the spatial axes and scales with one ``gamma``/``beta`` per channel;
GroupNorm splits the channels into ``num_groups`` groups, normalises each (sample, group) over
its channels and spatial axes, and scales with one ``gamma``/``beta`` per group (the parameter
shape is ``(num_groups,)``, as in MXNet 1.9.1). Float16 inputs are normalised in float32 and the
result is cast back.

LRN's window around channel ``c`` covers channels ``c - h .. c + h`` with ``h = (nsize - 1) // 2``
(so an even ``nsize`` covers ``nsize - 1`` channels, as MXNet's kernel does) while the scale
still divides ``alpha`` by ``nsize``: ``out = x / (knorm + alpha / nsize * sum(x^2))^beta``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import kernels
from ..autograd import _state
from ..base import ContextError, MXNetError
from .core.array import ArrayT
from .core.op import Op, apply, axis_index

# BatchNormWithReLU is public as mx.nd.contrib.BatchNormWithReLU, as in MXNet
__all__ = [
    "BatchNorm",
    "BatchNorm_v1",
    "LayerNorm",
    "InstanceNorm",
    "GroupNorm",
    "L2Normalization",
    "LRN",
]


class _BatchNorm(Op):
    def forward(
        self,
        x,
        gamma,
        beta,
        *residual,
        axis,
        eps,
        momentum,
        fix_gamma,
        use_global,
        mm,
        mv,
        output_mean_var,
        relu,
    ):
        # An empty batch (a device's share of a short last batch) has no statistics of its
        # own: it is normalised with the moving ones, which it leaves as they are.
        use_global = use_global or x.size == 0
        self.fix = fix_gamma
        g = self.xp.ones_like(gamma) if fix_gamma else gamma
        k = kernels.select("BatchNorm", self.be, x.dtype)
        stats = (mm._data, mv._data) if use_global else None
        train = True in self.needs
        if residual:  # _BatchNormAddRelu
            y, mean, var, self.grad = k.batch_norm_add_relu(
                x, g, beta, residual[0], stats, eps, train
            )
        else:
            y, mean, var, self.grad = k.batch_norm(x, g, beta, stats, eps, axis, train, relu)
        self.provider = k  # its kernels move the running statistics in backward
        if not use_global and momentum is not None:
            self.update = (momentum, ((mm, mean), (mv, var)))
        if output_mean_var:
            return y, mean, var
        return y

    def backward(self, gy, *unused):
        update = getattr(self, "update", None)
        if update is not None:  # as MXNet 1.9.1: the running statistics move in backward
            momentum, pairs = update
            for aux, stat in pairs:
                self.provider.moving_average(aux._data, stat, momentum)
        if gy is None:
            return (None,) * len(self.needs)
        gx, ggamma, gbeta, *gresidual = self.grad(gy, self.needs)
        if self.fix:
            ggamma = self.xp.zeros_like(ggamma)
        return gx, ggamma, gbeta, *gresidual


class _BatchNormAddRelu(_BatchNorm):
    """``relu(BatchNorm(x) + residual)``, a residual unit's end, as one operator: its fourth
    input is the residual, which gets the ReLU's gradient (so does the normalisation). The
    kernel adds the output's gradient parts (the output feeds the next unit's body and
    shortcut) in its first backward pass."""

    sums_gradients = True
    # the kernel's gradient keeps the data it needs (the input and the output), so the tape
    # lets go of a residual that nothing else holds (a projected shortcut)
    keeps_inputs = False


def BatchNorm(
    data: ArrayT,
    gamma: ArrayT,
    beta: ArrayT,
    moving_mean: ArrayT,
    moving_var: ArrayT,
    eps: float = 1e-3,
    momentum: float = 0.9,
    fix_gamma: bool = True,
    use_global_stats: bool = False,
    output_mean_var: bool = False,
    axis: int = 1,
    **kwargs: Any,
) -> ArrayT | list[ArrayT]:
    """Batch normalisation over every axis but ``axis``.

    In training mode (and without ``use_global_stats``) normalises with the batch mean and
    (biased) variance; otherwise uses the moving values. As MXNet 1.9.1 does, the backward pass of
    a training-mode call updates ``moving_mean``/``moving_var`` in place:
    ``moving = momentum * moving + (1 - momentum) * batch``. A call that is not recorded, or
    whose output never gets a gradient, leaves them as they are.

    Parameters
    ----------
    gamma, beta : NDArray
        Scale and shift, one per channel.
    moving_mean, moving_var : NDArray
        Running statistics (auxiliary state, not differentiated).
    eps : float, default 1e-3
    momentum : float, default 0.9
    fix_gamma : bool, default True
        Treat gamma as 1 (its gradient is 0), as MXNet's operator does by default.
    use_global_stats : bool, default False
    output_mean_var : bool, default False
        Also return the mean and variance used.
    axis : int, default 1
    """
    return _batch_norm(
        data, gamma, beta, moving_mean, moving_var, eps, momentum, fix_gamma,
        use_global_stats, output_mean_var, axis, relu=False,
    )  # fmt: skip


def BatchNormWithReLU(
    data: ArrayT,
    gamma: ArrayT,
    beta: ArrayT,
    moving_mean: ArrayT,
    moving_var: ArrayT,
    eps: float = 1e-3,
    momentum: float = 0.9,
    fix_gamma: bool = True,
    use_global_stats: bool = False,
    output_mean_var: bool = False,
    axis: int = 1,
    **kwargs: Any,
) -> ArrayT | list[ArrayT]:
    """:func:`BatchNorm` followed by a ReLU, in one operator (``mx.nd.contrib``).

    The output is ``max(BatchNorm(data, ...), 0)`` (NaN stays NaN) and the gradient flows only
    where it is positive; the running statistics, ``fix_gamma``, ``use_global_stats`` and
    ``output_mean_var`` behave as in :func:`BatchNorm` (the mean and variance returned are the
    normalisation's). On the CPU, oneDNN computes the ReLU in the normalisation's own pass.
    """
    return _batch_norm(
        data, gamma, beta, moving_mean, moving_var, eps, momentum, fix_gamma,
        use_global_stats, output_mean_var, axis, relu=True,
    )  # fmt: skip


def _batch_norm(
    data: ArrayT,
    gamma: ArrayT,
    beta: ArrayT,
    moving_mean: ArrayT,
    moving_var: ArrayT,
    eps: float,
    momentum: float,
    fix_gamma: bool,
    use_global_stats: bool,
    output_mean_var: bool,
    axis: int,
    relu: bool,
    residual: ArrayT | None = None,
) -> ArrayT | list[ArrayT]:
    for aux in (moving_mean, moving_var):
        if aux._ctx != data._ctx:
            raise ContextError(
                f"BatchNorm: running statistics on {aux._ctx} for data on {data._ctx}"
            )
    use_global = bool(use_global_stats) or not _state.training
    op: type[_BatchNorm] = _BatchNorm
    inputs: tuple[ArrayT, ...] = (data, gamma, beta)
    if residual is not None:
        op, inputs = _BatchNormAddRelu, (*inputs, residual)
    return apply(
        op,
        inputs,
        axis=axis_index(axis, data.ndim),
        eps=float(eps),
        momentum=None if use_global else float(momentum),
        fix_gamma=bool(fix_gamma),
        use_global=use_global,
        mm=moving_mean,
        mv=moving_var,
        output_mean_var=output_mean_var,
        relu=relu,
    )


def _batch_norm_add_relu(
    data: ArrayT,
    gamma: ArrayT,
    beta: ArrayT,
    moving_mean: ArrayT,
    moving_var: ArrayT,
    residual: ArrayT,
    eps: float = 1e-3,
    momentum: float = 0.9,
    fix_gamma: bool = True,
    use_global_stats: bool = False,
    axis: int = 1,
    **kwargs: Any,
) -> ArrayT:
    """``relu(BatchNorm(data, ...) + residual)`` in one operator, for a ``residual`` of
    ``data``'s shape and dtype and the channel axis 1: the same numbers as the three
    operators (the running statistics too), with one pass over the data after the statistics
    (on oneDNN's CPU provider, channels-last data). A hybridized residual unit of the model zoo
    ends this way."""
    if axis_index(axis, data.ndim) != 1:
        raise MXNetError(f"BatchNorm with a residual sum normalises over axis 1, not {axis}")
    if residual.shape != data.shape or residual.dtype != data.dtype:
        raise MXNetError(
            f"BatchNorm with a residual sum: the residual {residual.shape} "
            f"{np.dtype(residual.dtype).name} is not the data's {data.shape} "
            f"{np.dtype(data.dtype).name}"
        )
    y = _batch_norm(
        data, gamma, beta, moving_mean, moving_var, eps, momentum, fix_gamma,
        use_global_stats, False, 1, relu=True, residual=residual,
    )  # fmt: skip
    assert not isinstance(y, list)  # one output without output_mean_var
    return y


class _LayerNorm(Op):
    def forward(self, x, gamma, beta, axis, eps):
        xp = self.xp
        mean = x.mean(axis=axis, keepdims=True)
        xc = x - mean
        inv = 1.0 / xp.sqrt((xc * xc).mean(axis=axis, keepdims=True) + eps)
        bshape = tuple(-1 if i == axis else 1 for i in range(x.ndim))
        self.xhat, self.inv, self.axis, self.bshape = xc * inv, inv, axis, bshape
        self.gamma = gamma.reshape(bshape)
        return self.xhat * self.gamma + beta.reshape(bshape)

    def backward(self, g):
        axis, xhat = self.axis, self.xhat
        red = tuple(i for i in range(g.ndim) if i != axis)
        gg = (g * xhat).sum(axis=red)
        gb = g.sum(axis=red)
        dxh = g * self.gamma
        gx = self.inv * (
            dxh
            - dxh.mean(axis=axis, keepdims=True)
            - xhat * (dxh * xhat).mean(axis=axis, keepdims=True)
        )
        return gx, gg, gb


def BatchNorm_v1(
    data: ArrayT,
    gamma: ArrayT,
    beta: ArrayT,
    moving_mean: ArrayT | None = None,
    moving_var: ArrayT | None = None,
    eps: float = 1e-3,
    momentum: float = 0.9,
    fix_gamma: bool = True,
    use_global_stats: bool = False,
    output_mean_var: bool = False,
    **kwargs: Any,
) -> ArrayT | list[ArrayT]:
    """MXNet's first batch normalisation operator (deprecated there): :func:`BatchNorm` over
    the channel axis 1, with the same defaults. ``moving_mean`` and ``moving_var`` are its
    auxiliary states, given by keyword in ``mx.nd`` as MXNet takes them.

    Raises
    ------
    MXNetError
        Without ``moving_mean`` and ``moving_var``.
    """
    if moving_mean is None or moving_var is None:
        raise MXNetError(
            "BatchNorm_v1: moving_mean and moving_var (its auxiliary states) are required"
        )
    return BatchNorm(
        data,
        gamma,
        beta,
        moving_mean,
        moving_var,
        eps=eps,
        momentum=momentum,
        fix_gamma=fix_gamma,
        use_global_stats=use_global_stats,
        output_mean_var=output_mean_var,
        axis=1,
    )


def LayerNorm(
    data: ArrayT,
    gamma: ArrayT,
    beta: ArrayT,
    axis: int = -1,
    eps: float = 1e-5,
    output_mean_var: bool = False,
) -> ArrayT | list[ArrayT]:
    """Layer normalisation along ``axis`` with per-feature ``gamma`` and ``beta``."""
    if output_mean_var:
        raise MXNetError("LayerNorm(output_mean_var=True) is not supported")
    return apply(_LayerNorm, (data, gamma, beta), axis=axis_index(axis, data.ndim), eps=float(eps))


class _GroupedNorm(Op):
    """Normalise ``x`` viewed as ``(N, G, M)`` over its last axis, then scale and shift per
    group ``G``; InstanceNorm is the case of one channel per group."""

    def forward(self, x, gamma, beta, groups, eps):
        xp = self.xp
        self.shape, self.dtype = x.shape, x.dtype
        low = x.dtype == np.float16
        if low:
            x, gamma, beta = (a.astype(np.float32) for a in (x, gamma, beta))
        xg = x.reshape(x.shape[0], groups, int(np.prod(x.shape[1:])) // groups)
        mean = xg.mean(axis=2, keepdims=True)
        xc = xg - mean
        inv = 1.0 / xp.sqrt((xc * xc).mean(axis=2, keepdims=True) + eps)
        self.xhat, self.inv = xc * inv, inv
        self.gamma = gamma.reshape(1, groups, 1)
        y = self.xhat * self.gamma + beta.reshape(1, groups, 1)
        return y.reshape(self.shape).astype(self.dtype, copy=False)

    def backward(self, g):
        xhat, dtype = self.xhat, self.dtype
        g = g.astype(xhat.dtype, copy=False).reshape(xhat.shape)
        gx = ggamma = gbeta = None
        if self.needs[0]:
            dxh = g * self.gamma
            gx = self.inv * (
                dxh
                - dxh.mean(axis=2, keepdims=True)
                - xhat * (dxh * xhat).mean(axis=2, keepdims=True)
            )
            gx = gx.reshape(self.shape).astype(dtype, copy=False)
        if self.needs[1]:
            ggamma = (g * xhat).sum(axis=(0, 2)).astype(dtype, copy=False)
        if self.needs[2]:
            gbeta = g.sum(axis=(0, 2)).astype(dtype, copy=False)
        return gx, ggamma, gbeta


def _check_param(op: str, name: str, param: ArrayT, size: int, what: str) -> None:
    if tuple(param.shape) != (size,):
        raise MXNetError(
            f"{op}: {name} must have shape ({size},), one value per {what}, got "
            f"{tuple(param.shape)}"
        )


def _check_data(op: str, data: ArrayT) -> None:
    if data.ndim < 3:
        raise MXNetError(
            f"{op} needs data of rank >= 3, (batch, channel, spatial...), got shape "
            f"{tuple(data.shape)}"
        )


def InstanceNorm(
    data: ArrayT, gamma: ArrayT, beta: ArrayT, eps: float = 1e-3, **kwargs: Any
) -> ArrayT:
    """Instance normalisation: each (sample, channel) of ``data`` is normalised over the
    spatial axes, ``(x - mean) / sqrt(var + eps) * gamma + beta``.

    Parameters
    ----------
    data : NDArray
        Shape ``(N, C, ...)`` with at least one spatial axis; float32 only, as MXNet 1.9.1.
    gamma, beta : NDArray
        Scale and shift, shape ``(C,)``.
    eps : float, default 1e-3

    Raises
    ------
    MXNetError
        For data of rank below 3, a dtype other than float32, or ``gamma``/``beta`` not of
        shape ``(C,)``.
    """
    _check_data("InstanceNorm", data)
    if np.dtype(data.dtype) != np.float32:
        raise MXNetError(f"InstanceNorm supports float32 data only, got {np.dtype(data.dtype)}")
    channels = data.shape[1]
    _check_param("InstanceNorm", "gamma", gamma, channels, "channel")
    _check_param("InstanceNorm", "beta", beta, channels, "channel")
    return apply(_GroupedNorm, (data, gamma, beta), groups=channels, eps=float(eps))


def GroupNorm(
    data: ArrayT,
    gamma: ArrayT,
    beta: ArrayT,
    num_groups: int = 1,
    eps: float = 1e-5,
    output_mean_var: bool = False,
    **kwargs: Any,
) -> ArrayT:
    """Group normalisation: the channels of each sample are split into ``num_groups`` groups,
    each normalised over its channels and spatial axes, then scaled by ``gamma`` and shifted
    by ``beta`` of its group.

    Parameters
    ----------
    data : NDArray
        Shape ``(N, C, ...)`` with at least one spatial axis; float16, float32 or float64.
    gamma, beta : NDArray
        Scale and shift, shape ``(num_groups,)`` (one per group, as MXNet 1.9.1).
    num_groups : int, default 1
        Must divide ``C``.
    eps : float, default 1e-5
    output_mean_var : bool, default False
        Only False is supported.

    Raises
    ------
    MXNetError
        For data of rank below 3, ``num_groups`` not dividing the channels, or
        ``gamma``/``beta`` not of shape ``(num_groups,)``.
    """
    if output_mean_var:
        raise MXNetError("GroupNorm(output_mean_var=True) is not supported")
    _check_data("GroupNorm", data)
    groups = int(num_groups)
    channels = data.shape[1]
    if groups < 1 or channels % groups:
        raise MXNetError(
            f"GroupNorm: the number of channels ({channels}) must be divisible by num_groups "
            f"({num_groups})"
        )
    _check_param("GroupNorm", "gamma", gamma, groups, "group")
    _check_param("GroupNorm", "beta", beta, groups, "group")
    return apply(_GroupedNorm, (data, gamma, beta), groups=groups, eps=float(eps))


_L2_MODES = ("instance", "channel", "spatial")


class _L2Norm(Op):
    def forward(self, x, axes, eps):
        xp = self.xp
        self.axes = axes
        self.norm = xp.sqrt((x * x).sum(axis=axes, keepdims=True) + eps)
        self.y = x / self.norm
        return self.y

    def backward(self, g):
        y = self.y
        return (g - y * (g * y).sum(axis=self.axes, keepdims=True)) / self.norm


def L2Normalization(data: ArrayT, eps: float = 1e-10, mode: str = "instance") -> ArrayT:
    """Divide ``data`` by its L2 norm: ``x / sqrt(sum(x^2) + eps)``.

    Parameters
    ----------
    eps : float, default 1e-10
    mode : {'instance', 'channel', 'spatial'}, default 'instance'
        Sum over every axis but the first (each instance), over axis 1 (the channels at each
        position), or over the axes after the first two (each channel's spatial map; needs at
        least 3 dimensions).
    """
    if mode not in _L2_MODES:
        raise MXNetError(f"L2Normalization: unknown mode {mode!r}; expected one of {_L2_MODES}")
    ndim = data.ndim
    if mode == "instance":
        axes: tuple[int, ...] = tuple(range(1, ndim))
    elif mode == "channel":
        if ndim < 2:
            raise MXNetError("L2Normalization: mode 'channel' needs at least 2 dimensions")
        axes = (1,)
    else:
        if ndim < 3:
            raise MXNetError("L2Normalization: mode 'spatial' needs at least 3 dimensions")
        axes = tuple(range(2, ndim))
    return apply(_L2Norm, (data,), axes=axes, eps=float(eps))


class _LRN(Op):
    def forward(self, x, alpha, beta, knorm, nsize):
        k = kernels.select("LRN", self.be, x.dtype)
        y, self.grad = k.lrn(x, alpha, beta, knorm, nsize, True in self.needs)
        return y

    def backward(self, g):
        return self.grad(g, self.needs)[0]


def LRN(
    data: ArrayT,
    alpha: float = 1e-4,
    beta: float = 0.75,
    knorm: float = 2.0,
    nsize: int | None = None,
) -> ArrayT:
    """Local response normalisation across the channels (axis 1) of ``(N, C, ...)`` data.

    Parameters
    ----------
    alpha : float, default 1e-4
    beta : float, default 0.75
    knorm : float, default 2
    nsize : int
        The window width in channels (required).
    """
    if nsize is None or int(nsize) < 1:
        raise MXNetError(f"LRN: nsize must be a positive window width, not {nsize!r}")
    if data.ndim < 3:
        raise MXNetError(f"LRN needs (N, C, ...) data of at least 3 dimensions, not {data.ndim}")
    return apply(
        _LRN, (data,), alpha=float(alpha), beta=float(beta), knorm=float(knorm), nsize=int(nsize)
    )
