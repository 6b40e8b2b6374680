"""Nesterov accelerated gradient: MXNet's ``nag_mom_update`` kernel (``sgd_update`` at momentum 0).

With ``c = clip(rescale_grad * g)``::

    w   = w + momentum**2 * mom - (1 + momentum) * lr * (c + wd * w)
    mom = momentum * mom - lr * (c + wd * w)      (w: the weight just updated, as MXNet)
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .optimizer import Optimizer, _zeros_state, register
from .sgd import _momentum_and_master, _sgd_plain

if TYPE_CHECKING:
    from ..ndarray import NDArray

__all__ = ["NAG"]


@register
class NAG(Optimizer):
    """Nesterov accelerated SGD.

    Parameters
    ----------
    momentum : float, default 0.0
        The momentum; 0 makes NAG plain SGD (no state).
    **kwargs
        The :class:`~mxrs.optimizer.Optimizer` parameters (``learning_rate`` defaults to 0.01).
    """

    _server_name = "nag"

    def __init__(self, momentum: float = 0.0, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.momentum = momentum

    def create_state(self, index: int | str, weight: NDArray) -> Any:
        """A zero momentum buffer like ``weight``, or None when ``momentum`` is 0."""
        return _zeros_state(weight) if self.momentum != 0.0 else None

    def create_state_multi_precision(self, index: int | str, weight: NDArray) -> Any:
        """As :meth:`SGD.create_state_multi_precision`: ``(momentum, master)`` for float16."""
        return _momentum_and_master(self, index, weight)

    def _master_and_state(self, state: Any) -> tuple[NDArray, Any]:
        mom, master = state
        return master, mom

    def _step(
        self, xp: Any, index: int | str, w: Any, g: Any, state: Any, lr: float, wd: float
    ) -> None:
        if state is None:
            _sgd_plain(xp, self, w, g, lr, wd)
            return
        mom = state._data
        mu = float(self.momentum) if self.momentum > 0 else 0.0
        grad = self._rescaled(xp, g, w)  # clip(r*g)
        step = xp.multiply(w, wd) if wd else xp.zeros_like(w)
        step += grad
        step *= lr  # lr * (clip(r*g) + wd*w)
        # w += mu^2 mom - (1 + mu) step, then the momentum takes its decay term from the new
        # weight, as MXNet's kernel does.
        w += xp.multiply(mom, mu * mu)
        step *= 1.0 + mu
        w -= step
        mom *= mu
        if wd:
            grad += xp.multiply(w, wd)
        grad *= lr
        mom -= grad

    def _spec_params(self) -> list[tuple[str, float]]:
        return [("momentum", float(self.momentum))]
