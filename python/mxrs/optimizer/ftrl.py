"""FTRL-Proximal: MXNet's ``ftrl_update`` kernel (McMahan et al., *Ad Click Prediction*, 2013).

With ``g' = clip(rescale_grad * g)``::

    z += g' - (sqrt(n + g'**2) - sqrt(n)) * w / lr
    n += g'**2
    w  = (sign(z) * lamda1 - z) / ((beta + sqrt(n)) / lr + wd) * (abs(z) > lamda1)

When the weight, ``z`` and ``n`` are ``row_sparse`` (the states take the weight's storage type), a
``row_sparse`` gradient updates only its rows of the three (MXNet's sparse ``ftrl_update``); with
a dense weight every row is updated.

The parameter servers do not run FTRL: train with ``update_on_kvstore=False`` so that the
servers sum gradients and the workers update.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..base import MXNetError
from . import _sparse
from .optimizer import Optimizer, _zeros_state, register

if TYPE_CHECKING:
    from ..ndarray import NDArray

__all__ = ["FTRL", "Ftrl"]


@register
class FTRL(Optimizer):
    """FTRL-Proximal with L1 (``lamda1``) and L2 (``wd``) regularisation.

    Parameters
    ----------
    lamda1 : float, default 0.01
        L1 regularisation strength: weights whose ``|z|`` stays below it are exactly 0.
    learning_rate : float, default 0.1
    beta : float, default 1
        Smoothing term of the per-coordinate learning rate.
    **kwargs
        The :class:`~mxrs.optimizer.Optimizer` parameters.
    """

    def __init__(
        self, lamda1: float = 0.01, learning_rate: float = 0.1, beta: float = 1, **kwargs: Any
    ) -> None:
        super().__init__(learning_rate=learning_rate, **kwargs)
        self.lamda1 = lamda1
        self.beta = beta

    def create_state(self, index: int | str, weight: NDArray) -> Any:
        """``(z, n)``: two zero buffers like ``weight``, in its storage type."""
        return (_zeros_state(weight, weight.stype), _zeros_state(weight, weight.stype))

    def _updates_lazily(self, weight: NDArray, state: Any) -> bool:
        # MXNet's sparse ftrl_update needs the weight, z and n all row_sparse; with any of them
        # dense it falls back to the standard update of every row.
        return weight.stype == "row_sparse" and _sparse.states_match(weight, state)

    def _step(
        self, xp: Any, index: int | str, w: Any, g: Any, state: Any, lr: float, wd: float
    ) -> None:
        z, n = state[0]._data, state[1]._data
        gr = self._rescaled(xp, g, w)
        sq = xp.multiply(gr, gr)
        s = xp.add(n, sq)
        xp.sqrt(s, out=s)
        s -= xp.sqrt(n)
        s *= w
        s /= lr
        gr -= s
        z += gr
        n += sq
        xp.sqrt(n, out=s)
        s += float(self.beta)
        s /= lr
        s += wd
        xp.sign(z, out=gr)
        l1 = float(self.lamda1)
        gr *= l1
        gr -= z
        gr /= s
        xp.multiply(gr, xp.abs(z) > l1, out=w)

    def to_spec(self) -> tuple[str, list[tuple[str, float]]]:
        """FTRL has no server implementation.

        Raises
        ------
        MXNetError
            Always: FTRL runs only on workers (``update_on_kvstore=False``).
        """
        raise MXNetError(
            "optimizer FTRL runs only on workers: the parameter servers do not "
            "implement it; use update_on_kvstore=False"
        )


Ftrl = FTRL
