"""LAMB, layer-wise adaptive moments (You et al., 2019), as MXNet 1.x's two-phase update
(workers only): an Adam step direction, scaled per parameter by the trust ratio of the weight's
norm to the step's::

    g'   = clip(rescale_grad * g)
    mean = beta1 * mean + (1 - beta1) * g';  var = beta2 * var + (1 - beta2) * g'**2
    step = mean_hat / (sqrt(var_hat) + epsilon) + wd * w      (hats: bias-corrected, optional)
    r1   = ||w|| (within lower_bound and upper_bound when given);  r2 = ||step||
    w    = w - lr * (r1 / r2 if both are non-zero else 1) * step
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from .optimizer import Optimizer, _zeros_state, register

if TYPE_CHECKING:
    from ..ndarray import NDArray

__all__ = ["LAMB"]


@register
class LAMB(Optimizer):
    """The LAMB optimizer.

    Parameters
    ----------
    learning_rate : float, default 0.001
    beta1 : float, default 0.9
    beta2 : float, default 0.999
    epsilon : float, default 1e-6
    lower_bound, upper_bound : float, optional
        Bounds on the weight's norm in the trust ratio.
    bias_correction : bool, default True
    **kwargs
        The :class:`~mxrs.optimizer.Optimizer` parameters.
    """

    def __init__(
        self,
        learning_rate: float = 0.001,
        beta1: float = 0.9,
        beta2: float = 0.999,
        epsilon: float = 1e-6,
        lower_bound: float | None = None,
        upper_bound: float | None = None,
        bias_correction: bool = True,
        **kwargs: Any,
    ) -> None:
        super().__init__(learning_rate=learning_rate, **kwargs)
        self.beta1 = beta1
        self.beta2 = beta2
        self.epsilon = epsilon
        self.lower_bound = lower_bound
        self.upper_bound = upper_bound
        self.bias_correction = bias_correction

    def create_state(self, index: int | str, weight: NDArray) -> Any:
        """``(mean, var)``: two zero buffers like ``weight``, in its storage type."""
        return (_zeros_state(weight, weight.stype), _zeros_state(weight, weight.stype))

    def _step(
        self, xp: Any, index: int | str, w: Any, g: Any, state: Any, lr: float, wd: float
    ) -> None:
        t = self._index_update_count[index]
        b1, b2 = float(self.beta1), float(self.beta2)
        mean, var = state[0]._data, state[1]._data
        gr = self._rescaled(xp, g, w)
        mean *= b1
        mean += xp.multiply(gr, 1.0 - b1)
        var *= b2
        var += xp.multiply(xp.multiply(gr, gr), 1.0 - b2)
        mean_hat, var_hat = mean, var
        if self.bias_correction:
            mean_hat = mean / (1.0 - b1**t)
            var_hat = var / (1.0 - b2**t)
        step = mean_hat / (xp.sqrt(var_hat) + float(self.epsilon))
        step += xp.multiply(w, wd)
        r1 = math.sqrt(float((w.astype(xp.float64) ** 2).sum()))
        if self.lower_bound:
            r1 = max(r1, float(self.lower_bound))
        if self.upper_bound:
            r1 = min(r1, float(self.upper_bound))
        r2 = math.sqrt(float((step.astype(xp.float64) ** 2).sum()))
        ratio = r1 / r2 if r1 != 0.0 and r2 != 0.0 else 1.0
        w -= xp.multiply(step, lr * ratio)
