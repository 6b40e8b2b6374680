"""Gradient control and the smooth L1 loss: ``identity``, ``BlockGrad``/``stop_gradient`` and
``smooth_l1`` (``MakeLoss`` and the regression outputs live in :mod:`.output`).

``identity`` copies and passes the gradient unchanged; ``BlockGrad`` copies and passes none.
``smooth_l1`` is quadratic near zero and linear beyond ``1 / sigma^2``.
"""

from __future__ import annotations

from ..base import MXNetError
from .core.array import ArrayT
from .core.op import Op, apply
from .unary import _Identity

__all__ = ["identity", "BlockGrad", "stop_gradient", "smooth_l1"]


def identity(data: ArrayT) -> ArrayT:
    """Return a copy of ``data`` (the gradient passes unchanged)."""
    return apply(_Identity, (data,))


class _BlockGrad(Op):
    def forward(self, x):
        return x.copy()

    def backward(self, g):
        return None


def BlockGrad(data: ArrayT) -> ArrayT:
    """Return a copy of ``data`` that passes no gradient back (also ``stop_gradient``).

    Examples
    --------
    >>> x = mx.nd.array([1.0, 2.0]); x.attach_grad()
    >>> with mx.autograd.record():
    ...     y = (mx.nd.BlockGrad(x) * x).sum()
    >>> y.backward(); x.grad.asnumpy()
    array([1., 2.], dtype=float32)
    """
    return apply(_BlockGrad, (data,))


stop_gradient = BlockGrad


class _SmoothL1(Op):
    def forward(self, x, scalar):
        xp = self.xp
        s2 = scalar * scalar
        ax = xp.abs(x)
        self.inner = ax < 1.0 / s2
        self.x, self.s2 = x, s2
        return xp.where(self.inner, (0.5 * s2) * x * x, ax - 0.5 / s2).astype(x.dtype, copy=False)

    def backward(self, g):
        d = self.xp.where(self.inner, self.s2 * self.x, self.xp.sign(self.x))
        return g * d.astype(g.dtype, copy=False)


def smooth_l1(data: ArrayT, scalar: float) -> ArrayT:
    """The smooth L1 function with ``sigma = scalar``, elementwise.

    ``0.5 * (sigma * x)^2`` where ``|x| < 1 / sigma^2``, else ``|x| - 0.5 / sigma^2``.

    Examples
    --------
    >>> mx.nd.smooth_l1(mx.nd.array([-2, 0.1]), scalar=1.0).asnumpy()
    array([1.5  , 0.005], dtype=float32)
    """
    if scalar == 0:
        raise MXNetError("smooth_l1: scalar (sigma) must be non-zero")
    return apply(_SmoothL1, (data,), scalar=float(scalar))
