"""The sign-based update operators: ``signsgd_update`` and ``signum_update``."""

from __future__ import annotations

from typing import Any

from ..core.array import ArrayCore, ArrayT
from ._common import _clipped, _Elementwise, _p, _sign


def signsgd_update(
    weight: ArrayT,
    grad: ArrayCore,
    lr: float,
    wd: float = 0.0,
    rescale_grad: float = 1.0,
    clip_gradient: float = -1.0,
    out: ArrayCore | None = None,
    name: str | None = None,
) -> ArrayT:
    """signSGD: ``weight = (1 - lr*wd) * weight - lr * sign(grad)`` (``rescale_grad`` and
    ``clip_gradient`` have no effect on a sign, as in MXNet)."""
    upd = _Elementwise("signsgd_update", weight, grad)
    lr, wd = _p(lr), _p(wd)

    def kernel(xp: Any, w: Any, g: Any) -> Any:
        return (1.0 - lr * wd) * w - lr * _sign(xp, g)

    return upd.run(out, kernel)


def signum_update(
    weight: ArrayT,
    grad: ArrayCore,
    mom: ArrayCore,
    lr: float,
    momentum: float = 0.0,
    wd: float = 0.0,
    rescale_grad: float = 1.0,
    clip_gradient: float = -1.0,
    wd_lh: float = 0.0,
    out: ArrayCore | None = None,
    name: str | None = None,
) -> ArrayT:
    """Signum; ``mom`` is updated in place::

    mom = momentum * mom - (1 - momentum) * (wd * weight + clip(rescale_grad * grad))
    weight = (1 - lr * wd_lh) * weight + lr * sign(mom)
    """
    upd = _Elementwise("signum_update", weight, grad, [("mom", mom)])
    lr, mu, wd, lh = _p(lr), _p(momentum), _p(wd), _p(wd_lh)
    r, c = _p(rescale_grad), _p(clip_gradient)

    def kernel(xp: Any, w: Any, g: Any, m: Any) -> Any:
        m[...] = mu * m - (1.0 - mu) * wd * w - (1.0 - mu) * _clipped(xp, g, r, c)
        return (1.0 - lr * lh) * w + lr * _sign(xp, m)

    return upd.run(out, kernel)
