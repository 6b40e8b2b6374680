"""MXNet 1.9.1's ``mx.optimizer.contrib``: ``GroupAdaGrad``, AdaGrad with one adaptive rate
per row of a 2-D weight::

    g' = clip(rescale_grad * g)
    history += mean(g'**2, axis=1, keepdims=True)      (history has shape (rows, 1))
    w -= lr * g' / sqrt(history + eps)

A ``row_sparse`` gradient changes only its rows (MXNet's ``group_adagrad_update``), where only
a positive ``clip_gradient`` clips; a dense one clips with any ``clip_gradient`` that is set.
Weight decay is not supported.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..base import MXNetError
from ..ndarray import zeros
from ..ndarray.optimizer_ops import group_adagrad_rows
from .optimizer import Optimizer, register

if TYPE_CHECKING:
    from ..ndarray import NDArray

__all__ = ["GroupAdaGrad"]


@register
class GroupAdaGrad(Optimizer):
    """AdaGrad with a single learning rate for each row of the weight.

    Parameters
    ----------
    eps : float, default 1e-5
        Added to the accumulated history inside the square root.
    **kwargs
        The :class:`~mxrs.optimizer.Optimizer` parameters; ``wd`` must be 0.
    """

    def __init__(self, eps: float = 1e-5, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.float_stable_eps = eps

    def create_state(self, index: int | str, weight: NDArray) -> Any:
        """The history: zeros of shape ``(rows, 1)`` in the weight's storage type.

        Raises
        ------
        MXNetError
            If the weight is not 2-D.
        """
        if len(weight.shape) != 2:
            raise MXNetError(f"GroupAdaGrad needs 2-D weights, got shape {tuple(weight.shape)}")
        return zeros((weight.shape[0], 1), ctx=weight._ctx, dtype=weight.dtype, stype=weight.stype)

    def _updates_lazily(self, weight: NDArray, state: Any) -> bool:
        return True  # MXNet sends every row_sparse gradient to group_adagrad_update

    def _check_wd(self, index: int | str, wd: float) -> None:
        if wd:
            raise MXNetError(
                f"GroupAdaGrad update of parameter {index!r}: weight decay is not supported "
                f"(wd is {wd}); set wd (or this parameter's wd_mult) to 0"
            )

    def _step(
        self, xp: Any, index: int | str, w: Any, g: Any, state: Any, lr: float, wd: float
    ) -> None:
        self._check_wd(index, wd)
        self._apply(xp, w, g, state._data, lr, self.clip_gradient)

    def _lazy_step(
        self, xp: Any, index: int | str, w: Any, g: Any, state: Any, lr: float, wd: float
    ) -> None:
        self._check_wd(index, wd)
        c = self.clip_gradient
        self._apply(xp, w, g, state._data, lr, c if c is not None and c > 0 else None)

    def _apply(self, xp: Any, w: Any, g: Any, history: Any, lr: float, clip: float | None) -> None:
        """The update, with the gradient clipped into ``[-clip, clip]`` unless ``clip`` is None
        (the arithmetic of ``mx.nd.contrib.group_adagrad_update``)."""
        eps = float(self.float_stable_eps)
        group_adagrad_rows(xp, w, g, history, lr, float(self.rescale_grad), clip, eps)
