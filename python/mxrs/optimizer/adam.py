"""Adam: MXNet's ``Adam.update`` folds the bias correction into the learning rate, then runs the
``adam_update`` kernel. Weight decay is added to the rescaled gradient before clipping::

    t    = this parameter's update count (from begin_num_update + 1)
    lr_t = lr * sqrt(1 - beta2**t) / (1 - beta1**t)
    g'   = clip(rescale_grad * g + wd * w)
    mean = beta1 * mean + (1 - beta1) * g'
    var  = beta2 * var + (1 - beta2) * g'**2
    w    = w - lr_t * mean / (sqrt(var) + epsilon)

With a ``row_sparse`` gradient and ``lazy_update`` (the default) only the gradient's rows of the
weight, mean and var are updated (``t`` still counts every update).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from . import _sparse
from .optimizer import Optimizer, _zeros_state, register

if TYPE_CHECKING:
    from ..ndarray import NDArray

__all__ = ["Adam"]


@register
class Adam(Optimizer):
    """The Adam optimizer (Kingma & Ba, 2014) with MXNet 1.x's update rule.

    Parameters
    ----------
    learning_rate : float, default 0.001
    beta1 : float, default 0.9
        Decay rate of the first-moment estimate.
    beta2 : float, default 0.999
        Decay rate of the second-moment estimate.
    epsilon : float, default 1e-8
        Added to the root of the second moment (outside the bias correction, as MXNet).
    lazy_update : bool, default True
        With a ``row_sparse`` gradient, update only the rows it stores, in the weight, mean and
        var (MXNet's lazy update); False updates every row as with the dense gradient. The
        mean and var are then kept in the weight's storage type, else dense.
    **kwargs
        The :class:`~mxrs.optimizer.Optimizer` parameters.
    """

    _server_name = "adam"

    def __init__(
        self,
        learning_rate: float = 0.001,
        beta1: float = 0.9,
        beta2: float = 0.999,
        epsilon: float = 1e-8,
        lazy_update: bool = True,
        **kwargs: Any,
    ) -> None:
        super().__init__(learning_rate=learning_rate, **kwargs)
        self.beta1 = beta1
        self.beta2 = beta2
        self.epsilon = epsilon
        self.lazy_update = lazy_update

    def create_state(self, index: int | str, weight: NDArray) -> Any:
        """``(mean, var)``: two zero buffers like ``weight`` (in its storage type with
        ``lazy_update``, else dense)."""
        stype = weight.stype if self.lazy_update else "default"
        return (_zeros_state(weight, stype), _zeros_state(weight, stype))

    def _updates_lazily(self, weight: NDArray, state: Any) -> bool:
        return bool(self.lazy_update) and _sparse.states_match(weight, state)

    def _step(
        self, xp: Any, index: int | str, w: Any, g: Any, state: Any, lr: float, wd: float
    ) -> None:
        t = self._index_update_count[index]
        b1, b2 = float(self.beta1), float(self.beta2)
        lr *= math.sqrt(1.0 - b2**t) / (1.0 - b1**t)
        mean, var = state[0]._data, state[1]._data
        gr = self._rescaled(xp, g, w, wd)
        tmp = xp.multiply(gr, 1.0 - b1)
        mean *= b1
        mean += tmp
        xp.multiply(gr, 1.0 - b2, out=tmp)
        tmp *= gr
        var *= b2
        var += tmp
        xp.sqrt(var, out=gr)
        gr += float(self.epsilon)
        xp.multiply(mean, lr, out=tmp)
        tmp /= gr
        w -= tmp

    def _spec_params(self) -> list[tuple[str, float]]:
        return [
            ("beta1", float(self.beta1)),
            ("beta2", float(self.beta2)),
            ("epsilon", float(self.epsilon)),
            ("lazy_update", 1.0 if self.lazy_update else 0.0),
        ]
