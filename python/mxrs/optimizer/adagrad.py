"""AdaGrad: MXNet's ``AdaGrad.update`` for dense gradients. ``eps`` sits inside the square root
and weight decay outside the adaptive step::

    g' = clip(rescale_grad * g)            (any clip_gradient >= 0 clips, 0 included)
    history += g'**2
    w = w - lr * (g' / sqrt(history + eps) + wd * w)
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .optimizer import Optimizer, _zeros_state, register

if TYPE_CHECKING:
    from ..ndarray import NDArray

__all__ = ["AdaGrad"]


@register
class AdaGrad(Optimizer):
    """AdaGrad (Duchi et al., 2011).

    Parameters
    ----------
    eps : float, default 1e-7
        Added to the accumulated squared gradients inside the square root.
    **kwargs
        The :class:`~mxrs.optimizer.Optimizer` parameters (``learning_rate`` defaults to 0.01).
    """

    _server_name = "adagrad"

    def __init__(self, eps: float = 1e-7, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.float_stable_eps = eps

    def create_state(self, index: int | str, weight: NDArray) -> Any:
        """The accumulated squared gradients: a zero buffer like ``weight``."""
        return _zeros_state(weight)

    def _step(
        self, xp: Any, index: int | str, w: Any, g: Any, state: Any, lr: float, wd: float
    ) -> None:
        history = state._data
        t = xp.multiply(g, float(self.rescale_grad))
        c = self.clip_gradient
        if c is not None and c >= 0:
            c = float(c)
            xp.clip(t, -c, c, out=t)
        tmp = xp.multiply(t, t)
        history += tmp
        xp.add(history, float(self.float_stable_eps), out=tmp)
        xp.sqrt(tmp, out=tmp)
        t /= tmp
        if wd:
            xp.multiply(w, wd, out=tmp)
            t += tmp
        t *= lr
        w -= t

    def _spec_params(self) -> list[tuple[str, float]]:
        return [("eps", float(self.float_stable_eps))]
