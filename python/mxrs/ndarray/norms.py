"""Per-sample normalisation ops: InstanceNorm and GroupNorm.

Both normalise each sample on its own (no batch statistics, no running state), with the biased
variance and ``eps`` inside the square root. InstanceNorm normalises each (sample, channel) over
the spatial axes and scales with one ``gamma``/``beta`` per channel; GroupNorm splits the
channels into ``num_groups`` groups, normalises each (sample, group) over its channels and spatial
axes, and scales with one ``gamma``/``beta`` per group (the parameter shape is
``(num_groups,)``, as in MXNet 1.9.1). Float16 inputs are normalised in float32 and the result
is cast back.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..base import MXNetError
from .core.array import ArrayT
from .core.op import Op, apply

__all__ = ["InstanceNorm", "GroupNorm"]


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
