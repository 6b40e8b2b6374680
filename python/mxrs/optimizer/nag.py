"""Nesterov accelerated gradient: MXNet's ``nag_mom_update`` kernel (``sgd_update`` at momentum 0).

With ``g' = clip(rescale_grad * g) + wd * w``::

    mom = momentum * mom - lr * g'
    w   = w + momentum * mom - lr * g'
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .optimizer import Optimizer, _zeros_state, register
from .sgd import _sgd_plain

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

    def _step(
        self, xp: Any, index: int | str, w: Any, g: Any, state: Any, lr: float, wd: float
    ) -> None:
        if state is None:
            _sgd_plain(xp, self, w, g, lr, wd)
            return
        mom = state._data
        mu = float(self.momentum) if self.momentum > 0 else 0.0
        step = self._rescaled(xp, g, w)
        if wd:
            step += xp.multiply(w, wd)
        step *= lr  # lr * (clip(r*g) + wd*w)
        mom *= mu
        mom -= step
        t = xp.multiply(mom, mu)
        w += t
        w -= step

    def _spec_params(self) -> list[tuple[str, float]]:
        return [("momentum", float(self.momentum))]
