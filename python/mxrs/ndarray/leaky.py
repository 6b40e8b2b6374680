"""MXNet's ``LeakyReLU`` operator family: leaky, elu, selu, prelu (a learned slope), rrelu (at
inference: the mean slope) and gelu, each a primitive op with its own gradient. The arithmetic
of all but prelu is a kernel of :mod:`mxrs.kernels`."""

from __future__ import annotations

from typing import Any

from .. import kernels
from ..base import MXNetError
from .core.array import ArrayT
from .core.op import Op, apply, unbroadcast

__all__ = ["LeakyReLU"]


class _Kernel(Op):
    """An activation of the family whose arithmetic a kernel provider serves."""

    kind = ""

    def forward(self, x, slope=0.0):
        k = kernels.select("LeakyReLU", self.be, x.dtype)
        y, self.grad = k.leaky_relu(x, self.kind, slope, True in self.needs)
        return y

    def backward(self, g):
        return self.grad(g, self.needs)[0]


class _Leaky(_Kernel):
    kind = "leaky"


class _Elu(_Kernel):
    kind = "elu"


class _Selu(_Kernel):
    kind = "selu"


class _Gelu(_Kernel):
    """``x * Phi(x)`` with the normal CDF ``Phi`` written with erf."""

    kind = "gelu"


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
        return apply(_Elu, (data,), slope=float(slope))
    if act_type == "selu":
        return apply(_Selu, (data,))
    if act_type == "gelu":
        return apply(_Gelu, (data,))
    if act_type == "prelu":
        if gamma is None:
            raise MXNetError("LeakyReLU(act_type='prelu') needs gamma")
        return apply(_Prelu, (data, gamma))
    if act_type == "rrelu":
        return apply(_Leaky, (data,), slope=(lower_bound + upper_bound) / 2.0)
    raise MXNetError(f"unknown LeakyReLU act_type {act_type!r}")
