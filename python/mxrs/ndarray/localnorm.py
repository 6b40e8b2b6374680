"""Normalisation by local energy: ``L2Normalization`` and ``LRN`` (local response
normalisation across channels).

LRN's window around channel ``c`` covers channels ``c - h .. c + h`` with ``h = (nsize - 1) // 2``
(so an even ``nsize`` covers ``nsize - 1`` channels, as MXNet's kernel does) while the scale
still divides ``alpha`` by ``nsize``: ``out = x / (knorm + alpha / nsize * sum(x^2))^beta``.
"""

from __future__ import annotations

from typing import Any

from ..base import MXNetError
from .core.array import ArrayT
from .core.op import Op, apply

__all__ = ["L2Normalization", "LRN"]

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


def _window_sum(xp: Any, v: Any, half: int) -> Any:
    """Sum of ``v`` over channels ``c - half .. c + half`` (axis 1), zero beyond the ends."""
    c = v.shape[1]
    out = v.copy()
    for off in range(1, half + 1):
        if off >= c:
            break
        out[:, off:] += v[:, :-off]
        out[:, :-off] += v[:, off:]
    return out


class _LRN(Op):
    def forward(self, x, alpha, beta, knorm, nsize):
        xp = self.xp
        self.half = (nsize - 1) // 2
        self.coef, self.beta = alpha / nsize, beta
        self.scale = knorm + self.coef * _window_sum(xp, x * x, self.half)
        self.x = x
        self.y = x * self.scale ** (-beta)
        return self.y

    def backward(self, g):
        xp, x = self.xp, self.x
        inner = _window_sum(xp, g * self.y / self.scale, self.half)
        return g * self.scale ** (-self.beta) - (2 * self.coef * self.beta) * x * inner


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
