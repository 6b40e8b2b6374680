"""``Test``: MXNet 1.9.1's optimizer for tests, ``weight += rescale_grad * grad``.

It keeps a state that becomes a copy of the weight after each update, and uses neither the
learning rate, nor weight decay, nor the update counts. The servers do not run it natively: a
distributed store sends it pickled, as MXNet does (:mod:`mxrs.kvstore.server_optimizer`).
"""

from __future__ import annotations

from typing import Any

from ..ndarray import NDArray, zeros
from .optimizer import Optimizer, register

__all__ = ["Test"]


@register
class Test(Optimizer):
    """The Test optimizer: ``weight += rescale_grad * grad``, and the state takes the new weight.

    Parameters
    ----------
    **kwargs
        The :class:`~mxrs.optimizer.Optimizer` parameters (only ``rescale_grad`` is used).

    Examples
    --------
    >>> opt = mx.optimizer.Test(rescale_grad=2.0)
    >>> w, g = mx.nd.ones((2,)), mx.nd.array([1.0, 2.0])
    >>> state = opt.create_state(0, w)
    >>> opt.update(0, w, g, state)
    >>> w.asnumpy(), state.asnumpy()
    (array([3., 5.], dtype=float32), array([3., 5.], dtype=float32))
    """

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)

    def create_state(self, index: int | str, weight: NDArray) -> NDArray:
        """A float32 array of zeros shaped like ``weight``, on its context (MXNet's
        ``zeros(weight.shape, weight.context)``), which each update overwrites."""
        return zeros(weight.shape, weight.context)

    def update(self, index: Any, weight: Any, grad: Any, state: Any) -> None:
        """``weight += rescale_grad * grad``, then ``state[:] = weight``."""
        weight[:] += grad * self.rescale_grad
        state[:] = weight
