"""MXNet's ``LeakyReLU`` operator family: leaky, elu, selu, prelu (a learned slope), rrelu (at
inference: the mean slope) and gelu, each a primitive op with its own gradient."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..base import MXNetError
from .core.array import ArrayT
from .core.op import Op, apply, unbroadcast

__all__ = ["LeakyReLU"]


class _Leaky(Op):
    def forward(self, x, slope):
        self.x, self.slope = x, slope
        return self.xp.where(x > 0, x, x * slope)

    def backward(self, g):
        return self.xp.where(self.x > 0, g, g * self.slope)


class _Elu(Op):
    def forward(self, x, slope, scale):
        xp = self.xp
        self.x, self.slope, self.scale = x, slope, scale
        self.neg = slope * xp.expm1(xp.minimum(x, 0))
        return scale * xp.where(x > 0, x, self.neg)

    def backward(self, g):
        return (self.scale * g) * self.xp.where(self.x > 0, 1, self.neg + self.slope)


class _Prelu(Op):
    def forward(self, x, gamma):
        self.x, self.gshape = x, gamma.shape
        shape = [1] * x.ndim
        if x.ndim > 1:
            shape[1] = -1
        self.gamma = gamma.reshape(shape) if gamma.size > 1 else gamma
        return self.xp.where(x > 0, x, x * self.gamma)

    def backward(self, g):
        x, xp = self.x, self.xp
        pos = x > 0
        gx = xp.where(pos, g, g * self.gamma) if self.needs[0] else None
        gg = None
        if self.needs[1]:
            gg = unbroadcast(xp.where(pos, 0, g * x), self.gamma.shape).reshape(self.gshape)
        return gx, gg


_SELU_ALPHA = 1.6732632423543772
_SELU_LAMBDA = 1.0507009873554805

# Coefficients of the erfc approximation ``t * exp(-z*z + P(t))`` with ``t = 1 / (1 + z/2)``,
# whose relative error is below 1.2e-7 for every ``z >= 0`` (neither NumPy nor CuPy has erf).
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


def _erf(xp: Any, x: Any) -> Any:
    """Return erf(x) elementwise, accurate to about 1e-7, for a floating array ``x``."""
    z = xp.abs(x)
    t = 1.0 / (1.0 + 0.5 * z)
    poly = xp.zeros_like(t)
    for c in reversed(_ERFC_COEFFS[1:]):
        poly = (poly + c) * t
    erfc = t * xp.exp(poly + _ERFC_COEFFS[0] - z * z)
    return xp.sign(x) * (1.0 - erfc)


class _Gelu(Op):
    """``x * Phi(x)`` with the normal CDF ``Phi`` written with erf (float16 is computed in
    float32)."""

    def forward(self, x):
        xp = self.xp
        self.dtype = x.dtype
        xf = x.astype(np.float32) if x.dtype == np.float16 else x
        self.x = xf
        self.cdf = 0.5 * (1.0 + _erf(xp, xf * (1.0 / np.sqrt(2.0))))
        return (xf * self.cdf).astype(x.dtype, copy=False)

    def backward(self, g):
        xp, x = self.xp, self.x
        pdf = xp.exp(-0.5 * x * x) * (1.0 / np.sqrt(2.0 * np.pi))
        return (g * (self.cdf + x * pdf)).astype(self.dtype, copy=False)


def LeakyReLU(
    data: ArrayT,
    gamma: ArrayT | None = None,
    act_type: str = "leaky",
    slope: float = 0.25,
    lower_bound: float = 0.125,
    upper_bound: float = 0.334,
    **kwargs: Any,
) -> ArrayT:
    """Leaky rectified linear units and relatives.

    Parameters
    ----------
    data : NDArray
    gamma : NDArray, optional
        Learned slopes for ``act_type='prelu'`` (one per channel of axis 1, or one in all).
    act_type : {'leaky', 'elu', 'selu', 'gelu', 'prelu', 'rrelu'}, default 'leaky'
        'leaky': ``x`` if ``x > 0`` else ``slope * x``; 'elu': ``slope * (exp(x) - 1)`` for
        negatives; 'selu': scaled ELU with the fixed SELU constants; 'gelu':
        ``0.5 * x * (1 + erf(x / sqrt(2)))``; 'rrelu' uses the mean of ``lower_bound`` and
        ``upper_bound`` as its slope.
    slope : float, default 0.25
    """
    if act_type == "leaky":
        return apply(_Leaky, (data,), slope=float(slope))
    if act_type == "elu":
        return apply(_Elu, (data,), slope=float(slope), scale=1.0)
    if act_type == "selu":
        return apply(_Elu, (data,), slope=_SELU_ALPHA, scale=_SELU_LAMBDA)
    if act_type == "gelu":
        return apply(_Gelu, (data,))
    if act_type == "prelu":
        if gamma is None:
            raise MXNetError("LeakyReLU(act_type='prelu') needs gamma")
        return apply(_Prelu, (data, gamma))
    if act_type == "rrelu":
        return apply(_Leaky, (data,), slope=(lower_bound + upper_bound) / 2.0)
    raise MXNetError(f"unknown LeakyReLU act_type {act_type!r}")
