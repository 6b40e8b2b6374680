"""AdaGrad: MXNet's ``AdaGrad.update`` for dense gradients. ``eps`` sits inside the square root
and weight decay outside the adaptive step::

    g' = clip(rescale_grad * g)            (any clip_gradient >= 0 clips, 0 included)
    history += g'**2
    w = w - lr * (g' / sqrt(history + eps) + wd * w)

A ``row_sparse`` gradient takes MXNet's sparse ``adagrad_update`` instead: only its rows of the
weight and history change, only a positive ``clip_gradient`` clips, and weight decay is not
supported (a non-zero ``wd`` raises, as in MXNet).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..base import MXNetError
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
        """The accumulated squared gradients: a zero buffer like ``weight``, in its storage
        type."""
        return _zeros_state(weight, weight.stype)

    def _updates_lazily(self, weight: NDArray, state: Any) -> bool:
        return True  # MXNet's AdaGrad sends every row_sparse gradient to sparse.adagrad_update

    def _step(
        self, xp: Any, index: int | str, w: Any, g: Any, state: Any, lr: float, wd: float
    ) -> None:
        c = self.clip_gradient
        self._apply(xp, w, g, state._data, lr, wd, c if c is not None and c >= 0 else None)

    def _lazy_step(
        self, xp: Any, index: int | str, w: Any, g: Any, state: Any, lr: float, wd: float
    ) -> None:
        if wd:
            raise MXNetError(
                f"AdaGrad update of parameter {index!r}: a row_sparse gradient takes MXNet's "
                f"sparse adagrad_update, which does not support weight decay (wd is {wd}); "
                "set wd (or this parameter's wd_mult) to 0"
            )
        c = self.clip_gradient
        self._apply(xp, w, g, state._data, lr, 0.0, c if c is not None and c > 0 else None)

    def _apply(
        self, xp: Any, w: Any, g: Any, history: Any, lr: float, wd: float, clip: float | None
    ) -> None:
        """The update with the gradient clipped into ``[-clip, clip]`` unless ``clip`` is None."""
        t = xp.multiply(g, float(self.rescale_grad))
        if clip is not None:
            xp.clip(t, -float(clip), float(clip), out=t)
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
