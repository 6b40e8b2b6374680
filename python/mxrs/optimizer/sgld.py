"""Stochastic Gradient Langevin Dynamics (Welling & Teh, 2011) and Delay-Compensated ASGD
(Zheng et al., 2016), as MXNet 1.x's Python update rules (workers only).

SGLD adds Gaussian noise of variance ``lr`` to half a gradient step::

    w = w - lr / 2 * (clip(rescale_grad * g) + wd * w) + N(0, lr)

DCASGD compensates a stale gradient with the change of the weight since it was last updated::

    g'  = clip(rescale_grad * g)
    mom = momentum * mom - lr * (g' + wd * w + lamda * g'**2 * (w - w_prev))
    w_prev = w;  w = w + mom
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from .optimizer import Optimizer, _zeros_state, register

if TYPE_CHECKING:
    from ..ndarray import NDArray

__all__ = ["SGLD", "DCASGD"]


@register
class SGLD(Optimizer):
    """The SGLD optimizer: noisy gradient steps that sample from the posterior. It takes the
    :class:`~mxrs.optimizer.Optimizer` parameters."""

    def _step(
        self, xp: Any, index: int | str, w: Any, g: Any, state: Any, lr: float, wd: float
    ) -> None:
        from ..ndarray import random as nd_random

        gr = self._rescaled(xp, g, w)
        gr += xp.multiply(w, wd)
        noise = nd_random.normal(
            0.0, math.sqrt(lr), shape=w.shape, dtype=w.dtype, ctx=self._noise_ctx
        )
        w -= xp.multiply(gr, lr / 2)
        w += noise._data

    def update(self, index: int | str, weight: NDArray, grad: NDArray, state: Any) -> None:
        """See :meth:`Optimizer.update`; the noise is drawn from the weight's context's
        generator (so ``mx.random.seed`` makes it repeat)."""
        if not isinstance(index, (list, tuple)):
            self._noise_ctx = weight._ctx
        super().update(index, weight, grad, state)


@register
class DCASGD(Optimizer):
    """The DCASGD optimizer.

    Parameters
    ----------
    momentum : float, default 0.0
    lamda : float, default 0.04
        Strength of the delay compensation.
    **kwargs
        The :class:`~mxrs.optimizer.Optimizer` parameters.
    """

    def __init__(self, momentum: float = 0.0, lamda: float = 0.04, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.momentum = momentum
        self.lamda = lamda

    def create_state(self, index: int | str, weight: NDArray) -> Any:
        """``(momentum or None, previous weight)``."""
        mom = _zeros_state(weight) if self.momentum != 0.0 else None
        return (mom, weight.copy())

    def _step(
        self, xp: Any, index: int | str, w: Any, g: Any, state: Any, lr: float, wd: float
    ) -> None:
        mom, prev = state[0], state[1]._data
        gr = self._rescaled(xp, g, w)
        step = gr + xp.multiply(w, wd)
        step += xp.multiply(gr * gr * (w - prev), float(self.lamda))
        step *= -lr
        if mom is not None:
            m = mom._data
            m *= float(self.momentum)
            m += step
            step = m
        prev[...] = w
        w += step
