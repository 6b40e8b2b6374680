"""RMSProp: MXNet's ``rmsprop_update`` (Tieleman & Hinton) and, with ``centered=True``,
``rmspropalex_update`` (Graves, 2013) kernels. With ``g' = clip(rescale_grad * g + wd * w)``::

    plain:     n = (1 - gamma1) * g'**2 + gamma1 * n
               w = w - lr * g' / sqrt(n + epsilon)
    centered:  n = (1 - gamma1) * g'**2 + gamma1 * n
               gbar = (1 - gamma1) * g' + gamma1 * gbar
               delta = gamma2 * delta - lr * g' / sqrt(n - gbar**2 + epsilon)
               w = w + delta

and then, when ``clip_weights`` is positive, ``w = clip(w, -clip_weights, clip_weights)``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .optimizer import Optimizer, _zeros_state, register

if TYPE_CHECKING:
    from ..ndarray import NDArray

__all__ = ["RMSProp"]


@register
class RMSProp(Optimizer):
    """RMSProp, plain or centered.

    Parameters
    ----------
    learning_rate : float, default 0.001
    gamma1 : float, default 0.9
        Decay rate of the mean square (and, centered, of the mean gradient).
    gamma2 : float, default 0.9
        Momentum of the centered variant's step.
    epsilon : float, default 1e-8
        Added inside the square root.
    centered : bool, default False
        Use Graves' centered variant (three state buffers instead of one).
    clip_weights : float, optional
        Clip the weights into ``[-clip_weights, clip_weights]`` after each update.
    **kwargs
        The :class:`~mxrs.optimizer.Optimizer` parameters.
    """

    _server_name = "rmsprop"

    def __init__(
        self,
        learning_rate: float = 0.001,
        gamma1: float = 0.9,
        gamma2: float = 0.9,
        epsilon: float = 1e-8,
        centered: bool = False,
        clip_weights: float | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(learning_rate=learning_rate, **kwargs)
        self.gamma1 = gamma1
        self.gamma2 = gamma2
        self.centered = centered
        self.epsilon = epsilon
        self.clip_weights = clip_weights

    def create_state(self, index: int | str, weight: NDArray) -> Any:
        """``(n,)``, or ``(n, gbar, delta)`` when centered: zero buffers like ``weight``, in
        its storage type."""
        st = weight.stype  # MXNet keeps them in the weight's storage type
        if self.centered:
            return (_zeros_state(weight, st), _zeros_state(weight, st), _zeros_state(weight, st))
        return (_zeros_state(weight, st),)

    def _step(
        self, xp: Any, index: int | str, w: Any, g: Any, state: Any, lr: float, wd: float
    ) -> None:
        g1, eps = float(self.gamma1), float(self.epsilon)
        gr = self._rescaled(xp, g, w, wd)
        n = state[0]._data
        tmp = xp.multiply(gr, 1.0 - g1)
        tmp *= gr
        n *= g1
        n += tmp
        if not self.centered:
            xp.add(n, eps, out=tmp)
            xp.sqrt(tmp, out=tmp)
            gr /= tmp
            gr *= lr
            w -= gr
        else:
            gbar, delta = state[1]._data, state[2]._data
            xp.multiply(gr, 1.0 - g1, out=tmp)
            gbar *= g1
            gbar += tmp
            xp.multiply(gbar, gbar, out=tmp)
            xp.subtract(n, tmp, out=tmp)
            tmp += eps
            xp.sqrt(tmp, out=tmp)
            gr *= lr
            gr /= tmp
            delta *= float(self.gamma2)
            delta -= gr
            w += delta
        cw = self.clip_weights
        if cw is not None and cw > 0:
            cw = float(cw)
            xp.clip(w, -cw, cw, out=w)

    def _spec_params(self) -> list[tuple[str, float]]:
        params = [
            ("gamma1", float(self.gamma1)),
            ("gamma2", float(self.gamma2)),
            ("epsilon", float(self.epsilon)),
            ("centered", 1.0 if self.centered else 0.0),
        ]
        if self.clip_weights is not None:
            params.append(("clip_weights", float(self.clip_weights)))
        return params
