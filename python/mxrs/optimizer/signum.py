"""Signum and signSGD: MXNet's ``signum_update`` (momentum > 0) and ``signsgd_update`` kernels.

Signum takes the sign of a momentum of the regularised gradient; ``wd`` enters the momentum and
``wd_lh`` decays the weight directly (decoupled, Loshchilov & Hutter)::

    mom = momentum * mom - (1 - momentum) * (wd * w + clip(rescale_grad * g))
    w   = (1 - lr * wd_lh) * w + lr * sign(mom)

signSGD (momentum 0) steps by the sign of the raw gradient, ``wd`` as a direct decay::

    w = (1 - lr * wd) * w - lr * sign(g)
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .optimizer import Optimizer, _zeros_state, register

if TYPE_CHECKING:
    from ..ndarray import NDArray

__all__ = ["Signum"]


@register
class Signum(Optimizer):
    """Signum (Bernstein et al., 2018): SGD on the sign of the momentum.

    Parameters
    ----------
    learning_rate : float, default 0.01
    momentum : float, default 0.9
        The momentum; 0 gives signSGD (no state).
    wd_lh : float, default 0.0
        Decoupled weight decay.
    **kwargs
        The :class:`~mxrs.optimizer.Optimizer` parameters.
    """

    _server_name = "signum"

    def __init__(
        self, learning_rate: float = 0.01, momentum: float = 0.9, wd_lh: float = 0.0, **kwargs: Any
    ) -> None:
        super().__init__(learning_rate=learning_rate, **kwargs)
        self.momentum = momentum
        self.wd_lh = wd_lh

    def create_state(self, index: int | str, weight: NDArray) -> Any:
        """A zero momentum buffer like ``weight`` (in its storage type), or None when
        ``momentum`` is 0."""
        return _zeros_state(weight, weight.stype) if self.momentum != 0.0 else None

    def _step(
        self, xp: Any, index: int | str, w: Any, g: Any, state: Any, lr: float, wd: float
    ) -> None:
        if state is None:
            t = xp.sign(g)
            t *= lr
            if wd:
                w *= 1.0 - lr * wd
            w -= t
            return
        mom = state._data
        mu = float(self.momentum) if self.momentum > 0 else 0.0
        t = self._rescaled(xp, g, w)
        if wd:
            t += xp.multiply(w, wd)  # wd enters after clipping: clip(r*g) + wd*w
        t *= 1.0 - mu
        mom *= mu
        mom -= t
        if self.wd_lh:
            w *= 1.0 - lr * float(self.wd_lh)
        xp.sign(mom, out=t)
        t *= lr
        w += t

    def _spec_params(self) -> list[tuple[str, float]]:
        return [("momentum", float(self.momentum)), ("wd_lh", float(self.wd_lh))]
