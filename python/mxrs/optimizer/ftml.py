"""FTML, Follow the Moving Leader (Zheng & Kwok, ICML 2017), as MXNet 1.x's ``ftml_update``, on
workers or on the parameter servers::

    t   = this parameter's update count
    g'  = clip(rescale_grad * g + wd * w)
    v   = beta2 * v + (1 - beta2) * g'**2
    d_t = (1 - beta1**t) / lr * (sqrt(v / (1 - beta2**t)) + epsilon)
    z   = beta1 * z + (1 - beta1) * g' - (d_t - beta1 * d) * w
    w   = -z / d_t;  d = d_t

The rule divides by the learning rate: a zero one (``lr_mult`` 0) leaves the parameter and its
state unchanged, on the workers and on the servers alike.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .optimizer import Optimizer, _zeros_state, register

if TYPE_CHECKING:
    from ..ndarray import NDArray

__all__ = ["FTML"]


@register
class FTML(Optimizer):
    """The FTML optimizer.

    Parameters
    ----------
    beta1 : float, default 0.6
    beta2 : float, default 0.999
    epsilon : float, default 1e-8
    **kwargs
        The :class:`~mxrs.optimizer.Optimizer` parameters (``learning_rate`` 0.01 by default).
    """

    _server_name = "ftml"

    def __init__(
        self, beta1: float = 0.6, beta2: float = 0.999, epsilon: float = 1e-8, **kwargs: Any
    ) -> None:
        super().__init__(**kwargs)
        self.beta1 = beta1
        self.beta2 = beta2
        self.epsilon = epsilon

    def create_state(self, index: int | str, weight: NDArray) -> Any:
        """``(d, v, z)``: three zero buffers like ``weight``."""
        return (_zeros_state(weight), _zeros_state(weight), _zeros_state(weight))

    def _step(
        self, xp: Any, index: int | str, w: Any, g: Any, state: Any, lr: float, wd: float
    ) -> None:
        if lr == 0.0:
            return  # the limit of the rule as lr goes to 0: nothing moves
        t = self._index_update_count[index]
        b1, b2 = float(self.beta1), float(self.beta2)
        d, v, z = (s._data for s in state)
        gr = self._rescaled(xp, g, w, wd)
        v *= b2
        v += xp.multiply(xp.multiply(gr, gr), 1.0 - b2)
        d_t = xp.sqrt(v / (1.0 - b2**t))
        d_t += float(self.epsilon)
        d_t *= (1.0 - b1**t) / lr
        sigma = d_t - xp.multiply(d, b1)
        z *= b1
        z += xp.multiply(gr, 1.0 - b1)
        z -= sigma * w
        w[...] = -z / d_t
        d[...] = d_t

    def _spec_params(self) -> list[tuple[str, float]]:
        return [
            ("beta1", float(self.beta1)),
            ("beta2", float(self.beta2)),
            ("epsilon", float(self.epsilon)),
        ]
