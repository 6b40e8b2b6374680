"""Adamax and Nadam, Adam's variants (MXNet 1.x's Python update rules). Adamax also runs on the
parameter servers; Nadam runs on workers only, as its momentum schedule is shared by all keys.

Adamax (Kingma & Ba, 2014, §7) replaces the second moment by an infinity norm::

    t  = this parameter's update count
    g' = clip(rescale_grad * g + wd * w)
    m  = beta1 * m + (1 - beta1) * g'
    u  = max(beta2 * u, |g'|)
    w  = w - lr / (1 - beta1**t) * m / u

Nadam (Dozat, 2016) is Adam with Nesterov momentum under a warming momentum schedule; the
running product of the schedule is kept on the optimizer, shared by every parameter, as MXNet::

    mu_t   = beta1 * (1 - 0.5 * 0.96**(t * schedule_decay)), mu_t1 the same at t + 1
    prod   = prod * mu_t;  prod1 = prod * mu_t1
    m      = beta1 * m + (1 - beta1) * g';  v = beta2 * v + (1 - beta2) * g'**2
    m_bar  = (1 - mu_t) * g' / (1 - prod) + mu_t1 * m / (1 - prod1)
    w      = w - lr * m_bar / (sqrt(v / (1 - beta2**t)) + epsilon)
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .optimizer import Optimizer, _zeros_state, register

if TYPE_CHECKING:
    from ..ndarray import NDArray

__all__ = ["Adamax", "Nadam"]


@register
class Adamax(Optimizer):
    """The Adamax optimizer: Adam with the infinity norm of past gradients.

    Parameters
    ----------
    learning_rate : float, default 0.002
    beta1 : float, default 0.9
    beta2 : float, default 0.999
    **kwargs
        The :class:`~mxrs.optimizer.Optimizer` parameters.
    """

    _server_name = "adamax"

    def __init__(
        self, learning_rate: float = 0.002, beta1: float = 0.9, beta2: float = 0.999, **kwargs: Any
    ) -> None:
        super().__init__(learning_rate=learning_rate, **kwargs)
        self.beta1 = beta1
        self.beta2 = beta2

    def create_state(self, index: int | str, weight: NDArray) -> Any:
        """``(mean, u)``: two zero buffers like ``weight``."""
        return (_zeros_state(weight), _zeros_state(weight))

    def _step(
        self, xp: Any, index: int | str, w: Any, g: Any, state: Any, lr: float, wd: float
    ) -> None:
        t = self._index_update_count[index]
        b1, b2 = float(self.beta1), float(self.beta2)
        lr /= 1.0 - b1**t
        mean, u = state[0]._data, state[1]._data
        gr = self._rescaled(xp, g, w, wd)
        mean *= b1
        mean += xp.multiply(gr, 1.0 - b1)
        u *= b2
        xp.maximum(u, xp.abs(gr), out=u)
        w -= xp.multiply(mean, lr) / u

    def _spec_params(self) -> list[tuple[str, float]]:
        return [("beta1", float(self.beta1)), ("beta2", float(self.beta2))]


@register
class Nadam(Optimizer):
    """The Nadam optimizer: Adam with Nesterov momentum.

    Parameters
    ----------
    learning_rate : float, default 0.001
    beta1 : float, default 0.9
    beta2 : float, default 0.999
    epsilon : float, default 1e-8
    schedule_decay : float, default 0.004
        How fast the momentum schedule warms up.
    **kwargs
        The :class:`~mxrs.optimizer.Optimizer` parameters.
    """

    def __init__(
        self,
        learning_rate: float = 0.001,
        beta1: float = 0.9,
        beta2: float = 0.999,
        epsilon: float = 1e-8,
        schedule_decay: float = 0.004,
        **kwargs: Any,
    ) -> None:
        super().__init__(learning_rate=learning_rate, **kwargs)
        self.beta1 = beta1
        self.beta2 = beta2
        self.epsilon = epsilon
        self.schedule_decay = schedule_decay
        self.m_schedule = 1.0

    def create_state(self, index: int | str, weight: NDArray) -> Any:
        """``(mean, var)``: two zero buffers like ``weight``."""
        return (_zeros_state(weight), _zeros_state(weight))

    def _step(
        self, xp: Any, index: int | str, w: Any, g: Any, state: Any, lr: float, wd: float
    ) -> None:
        t = self._index_update_count[index]
        b1, b2, decay = float(self.beta1), float(self.beta2), float(self.schedule_decay)
        mu_t = b1 * (1.0 - 0.5 * 0.96 ** (t * decay))
        mu_t1 = b1 * (1.0 - 0.5 * 0.96 ** ((t + 1) * decay))
        self.m_schedule = self.m_schedule * mu_t
        next_schedule = self.m_schedule * mu_t1
        mean, var = state[0]._data, state[1]._data
        gr = self._rescaled(xp, g, w, wd)
        mean *= b1
        mean += xp.multiply(gr, 1.0 - b1)
        var *= b2
        var += xp.multiply(xp.multiply(gr, gr), 1.0 - b2)
        m_bar = xp.multiply(gr, (1.0 - mu_t) / (1.0 - self.m_schedule))
        m_bar += xp.multiply(mean, mu_t1 / (1.0 - next_schedule))
        denom = xp.sqrt(var / (1.0 - b2**t))
        denom += float(self.epsilon)
        w -= xp.multiply(m_bar, lr) / denom
