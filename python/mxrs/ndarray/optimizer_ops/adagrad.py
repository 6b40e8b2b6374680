"""Group AdaGrad's update: ``mx.nd.contrib.group_adagrad_update`` and the raw-array rule it
shares with ``mx.optimizer.contrib.GroupAdaGrad``, :func:`group_adagrad_rows`."""

from __future__ import annotations

from typing import Any

from ...base import InvalidShapeError
from ..core.array import ArrayCore, ArrayT
from ._common import _check_weighted, _is_rsp, _p, _update


def group_adagrad_rows(
    xp: Any,
    w: Any,
    g: Any,
    history: Any,
    lr: float,
    rescale_grad: float,
    clip: float | None,
    epsilon: float,
) -> None:
    """Group AdaGrad on raw arrays, in place: ``w`` and ``g`` of shape ``(rows, ...)``,
    ``history`` of shape ``(rows, 1)``; ``clip`` None turns clipping off::

        g' = clip(rescale_grad * g)
        history += mean(g'**2 over each row)
        w -= lr * g' / sqrt(history + epsilon)

    (``mx.optimizer.contrib.GroupAdaGrad`` runs the same arithmetic.)
    """
    t = xp.multiply(g, float(rescale_grad))
    if clip is not None:
        xp.clip(t, -float(clip), float(clip), out=t)
    flat = t.reshape(t.shape[0], -1)
    history += xp.mean(xp.multiply(flat, flat), axis=1, keepdims=True).astype(history.dtype)
    t *= lr
    t /= xp.sqrt(history + float(epsilon)).reshape((t.shape[0],) + (1,) * (t.ndim - 1))
    w -= t.astype(w.dtype, copy=False)


def group_adagrad_update(
    weight: ArrayT,
    grad: ArrayCore,
    history: ArrayCore,
    lr: float,
    rescale_grad: float = 1.0,
    clip_gradient: float = -1.0,
    epsilon: float = 1e-5,
    out: ArrayCore | None = None,
    name: str | None = None,
) -> ArrayT:
    """Group AdaGrad: one adaptive learning rate per row of the weight; ``history``, of shape
    ``(rows, 1)``, is updated in place::

        g = clip(rescale_grad * grad)
        history += mean(g**2, axis=1, keepdims=True)
        weight = weight - lr * g / sqrt(history + epsilon)

    A ``row_sparse`` gradient (with ``history`` in the weight's storage type) updates only its
    rows. Weight decay is not supported.
    """
    op = "group_adagrad_update"
    named = [("weight", weight), ("grad", grad), ("history", history)]
    be = _check_weighted(op, named, named[1:2], None)
    rows = weight.shape[0] if len(weight.shape) else 0
    if tuple(history.shape) != (rows, 1):
        raise InvalidShapeError(
            f"{op}: history must have shape ({rows}, 1) for a weight of shape "
            f"{tuple(weight.shape)}, got {tuple(history.shape)}"
        )
    lr_, r, eps = _p(lr), _p(rescale_grad), _p(epsilon)
    clip = _p(clip_gradient) if _p(clip_gradient) >= 0 else None
    lazy = _is_rsp(grad) and weight.stype in ("default", "row_sparse")
    lazy = lazy and history.stype == weight.stype

    def kernel(xp: Any, w: Any, g: Any, h: Any) -> Any:
        new = w.copy()
        group_adagrad_rows(xp, new, g, h, lr_, r, clip, eps)
        return new

    return _update(be, weight, grad, (history,), out, kernel, lazy=lazy)
