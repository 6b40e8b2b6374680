"""AdaDelta (Zeiler, 2012) with MXNet 1.x's Python update rule, on workers or on the parameter
servers; the learning rate is not used, and weight decay is subtracted after the step::

    g'      = clip(rescale_grad * g)
    acc_g   = rho * acc_g + (1 - rho) * g'**2
    delta   = sqrt(acc_delta + epsilon) / sqrt(acc_g + epsilon) * g'
    acc_delta = rho * acc_delta + (1 - rho) * delta**2
    w       = w - (delta + wd * w)
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .optimizer import Optimizer, _zeros_state, register

if TYPE_CHECKING:
    from ..ndarray import NDArray

__all__ = ["AdaDelta"]


@register
class AdaDelta(Optimizer):
    """The AdaDelta optimizer.

    Parameters
    ----------
    rho : float, default 0.9
        Decay rate of both running averages.
    epsilon : float, default 1e-5
    **kwargs
        The :class:`~mxrs.optimizer.Optimizer` parameters.
    """

    _server_name = "adadelta"

    def __init__(self, rho: float = 0.90, epsilon: float = 1e-5, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.rho = rho
        self.epsilon = epsilon

    def create_state(self, index: int | str, weight: NDArray) -> Any:
        """``(acc_g, acc_delta)``: two zero buffers like ``weight``."""
        return (_zeros_state(weight), _zeros_state(weight))

    def _step(
        self, xp: Any, index: int | str, w: Any, g: Any, state: Any, lr: float, wd: float
    ) -> None:
        rho, eps = float(self.rho), float(self.epsilon)
        acc_g, acc_delta = state[0]._data, state[1]._data
        gr = self._rescaled(xp, g, w)
        acc_g *= rho
        acc_g += xp.multiply(xp.multiply(gr, gr), 1.0 - rho)
        delta = xp.sqrt(acc_delta + eps) / xp.sqrt(acc_g + eps) * gr
        acc_delta *= rho
        acc_delta += xp.multiply(xp.multiply(delta, delta), 1.0 - rho)
        delta += xp.multiply(w, wd)
        w -= delta

    def _spec_params(self) -> list[tuple[str, float]]:
        return [("rho", float(self.rho)), ("epsilon", float(self.epsilon))]
