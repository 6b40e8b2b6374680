"""SGD with momentum and weight decay: MXNet's ``sgd_update`` and ``sgd_mom_update`` kernels.

The gradient is rescaled and clipped first; weight decay enters after clipping::

    momentum 0:  w = (1 - lr*wd) * w - lr * clip(rescale_grad * g)
    momentum m:  mom = m * mom - lr*wd * w - lr * clip(rescale_grad * g);  w = w + mom

``mom`` is MXNet's (negative-direction) momentum buffer, so saved states carry over. With a
``row_sparse`` gradient and ``lazy_update`` (the default) only the gradient's rows are updated.
Dense float32 arrays on the CPU are updated in one pass by the loop the servers run
(``mxrs._native.sgd_update``), float32 and float16 arrays on GPUs by one CUDA kernel
(:func:`mxrs.kernels.cuda.sgd_update`), other arrays with NumPy or CuPy operations.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy

from .. import _native
from ..kernels import cuda
from . import _sparse
from .optimizer import Optimizer, _zeros_state, register

if TYPE_CHECKING:
    from ..ndarray import NDArray

__all__ = ["SGD"]


def _native_sgd(
    xp: Any, opt: Optimizer, w: Any, g: Any, mom: Any, mu: float, lr: float, wd: float
) -> bool:
    """Update ``w`` (and ``mom``) in one pass where all are C-contiguous float32 NumPy arrays,
    or float32/float16 CuPy arrays (one CUDA kernel); False where they are not (the caller
    computes with array operations)."""
    c = opt.clip_gradient
    clip = float(c) if c is not None and c > 0 else None
    if xp is not numpy:
        return cuda.sgd_update(w, g, mom, lr, wd, mu, float(opt.rescale_grad), clip)
    for a in (w, g) if mom is None else (w, g, mom):
        if a.dtype != numpy.float32 or not a.flags.c_contiguous:
            return False
    _native.sgd_update(w, g, mom, lr, wd, mu, float(opt.rescale_grad), clip)
    return True


def _sgd_plain(xp: Any, opt: Optimizer, w: Any, g: Any, lr: float, wd: float) -> None:
    """``w = (1 - lr*wd) * w - lr * clip(r*g)`` with one temporary."""
    t = opt._rescaled(xp, g, w)
    t *= lr
    if wd:
        w *= 1.0 - lr * wd
    w -= t


@register
class SGD(Optimizer):
    """Stochastic gradient descent with momentum and weight decay.

    Parameters
    ----------
    momentum : float, default 0.0
        The momentum; 0 keeps no state.
    lazy_update : bool, default True
        With a ``row_sparse`` gradient, update only the rows it stores, in the weight and in
        the momentum (MXNet's lazy update: weight decay and momentum decay skip the other
        rows); False updates every row as with the dense gradient. The momentum is then kept
        in the weight's storage type, else dense. Multi-precision (float16) updates are always
        standard, as MXNet's ``mp_sgd_update`` has no sparse form.
    **kwargs
        The :class:`~mxrs.optimizer.Optimizer` parameters (``learning_rate`` defaults to 0.01).

    Examples
    --------
    >>> opt = mx.optimizer.SGD(learning_rate=0.1, momentum=0.9, wd=1e-4)
    """

    _server_name = "sgd"

    def __init__(self, momentum: float = 0.0, lazy_update: bool = True, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.momentum = momentum
        self.lazy_update = lazy_update

    def create_state(self, index: int | str, weight: NDArray) -> Any:
        """A zero momentum buffer like ``weight`` (in its storage type with ``lazy_update``,
        else dense), or None when ``momentum`` is 0."""
        if self.momentum == 0.0:
            return None
        return _zeros_state(weight, weight.stype if self.lazy_update else "default")

    def create_state_multi_precision(self, index: int | str, weight: NDArray) -> Any:
        """With ``multi_precision`` and a float16 weight, ``(momentum, master)``: a float32
        momentum (or None) and a float32 master copy of the weight, as MXNet's SGD keeps them;
        otherwise :meth:`create_state`'s."""
        return _momentum_and_master(self, index, weight)

    def _master_and_state(self, state: Any) -> tuple[NDArray, Any]:
        mom, master = state
        return master, mom

    def _updates_lazily(self, weight: NDArray, state: Any) -> bool:
        return bool(self.lazy_update) and _sparse.states_match(weight, state)

    def _update_master(
        self, index: int | str, weight: NDArray, grad: NDArray, master: NDArray, state: Any
    ) -> None:
        # MXNet's mp_sgd_update and mp_sgd_mom_update have no sparse kernel: a sparse gradient
        # updates every row (storage fallback), whatever lazy_update says.
        if grad._sparse:
            grad = grad.tostype("default")
        mom = state  # the float32 momentum, or None
        dense = not (weight._sparse or master._sparse or (mom is not None and mom._sparse))
        if dense and weight._ctx.backend.name == "cupy":
            raw = (weight._data, grad._data, master._data, None if mom is None else mom._data)
            if cuda.mp_sgd_accepts(*raw) and grad._ctx == weight._ctx:
                lr, wd = self._begin_update(index, master, grad)
                mu = float(self.momentum) if self.momentum > 0 else 0.0
                c = self.clip_gradient
                clip = float(c) if c is not None and c > 0 else None
                ctx = weight._ctx
                with ctx.backend.guard(ctx.device_id):
                    cuda.mp_sgd_update(*raw, lr, wd, mu, float(self.rescale_grad), clip)
                return
        super()._update_master(index, weight, grad, master, state)

    def _step(
        self, xp: Any, index: int | str, w: Any, g: Any, state: Any, lr: float, wd: float
    ) -> None:
        mom = None if state is None else state._data
        mu = float(self.momentum) if self.momentum > 0 else 0.0
        if _native_sgd(xp, self, w, g, mom, mu, lr, wd):
            return
        if mom is None:
            _sgd_plain(xp, self, w, g, lr, wd)
            return
        # mom = mu*mom - lr*wd*w - lr*clip(r*g);  w += mom  (the kernel's order of terms)
        mom *= mu
        if wd:
            t = xp.multiply(w, lr * wd)
            mom -= t
            xp.multiply(g, float(self.rescale_grad), out=t)
        else:
            t = xp.multiply(g, float(self.rescale_grad))
        c = self.clip_gradient
        if c is not None and c > 0:
            c = float(c)
            xp.clip(t, -c, c, out=t)
        t *= lr
        mom -= t
        w += mom

    def _spec_params(self) -> list[tuple[str, float]]:
        return [
            ("momentum", float(self.momentum)),
            ("lazy_update", 1.0 if self.lazy_update else 0.0),
        ]


def _momentum_and_master(opt: Optimizer, index: int | str, weight: NDArray) -> Any:
    """SGD's and NAG's multi-precision state: ``(momentum or None, float32 master copy)``."""
    if not opt._keeps_master(weight):
        return opt.create_state(index, weight)
    master = weight.astype(numpy.float32)
    return (opt.create_state(index, master), master)
