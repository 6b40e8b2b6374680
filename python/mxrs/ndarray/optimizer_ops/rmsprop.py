"""RMSProp's update operators: ``rmsprop_update`` and the centered ``rmspropalex_update``."""

from __future__ import annotations

from typing import Any

from ..core.array import ArrayCore, ArrayT
from ._common import _Elementwise, _p, _rescaled_wd


def _clip_weights(xp: Any, w: Any, clip_weights: float) -> Any:
    if clip_weights >= 0:
        xp.clip(w, -clip_weights, clip_weights, out=w)
    return w


def rmsprop_update(
    weight: ArrayT,
    grad: ArrayCore,
    n: ArrayCore,
    lr: float,
    gamma1: float = 0.95,
    epsilon: float = 1e-8,
    wd: float = 0.0,
    rescale_grad: float = 1.0,
    clip_gradient: float = -1.0,
    clip_weights: float = -1.0,
    out: ArrayCore | None = None,
    name: str | None = None,
) -> ArrayT:
    """RMSProp (Tieleman & Hinton); ``n`` is updated in place::

        g = clip(rescale_grad * grad + wd * weight)
        n = (1 - gamma1) * g**2 + gamma1 * n
        weight = clip_weights(weight - lr * g / sqrt(n + epsilon))

    (the weights are clipped into ``[-clip_weights, clip_weights]`` when it is >= 0).
    """
    upd = _Elementwise("rmsprop_update", weight, grad, [("n", n)])
    lr, g1, eps, wd = _p(lr), _p(gamma1), _p(epsilon), _p(wd)
    r, c, cw = _p(rescale_grad), _p(clip_gradient), _p(clip_weights)

    def kernel(xp: Any, w: Any, g: Any, ns: Any) -> Any:
        t = _rescaled_wd(xp, w, g, r, wd, c)
        ns[...] = (1.0 - g1) * (t * t) + g1 * ns
        return _clip_weights(xp, w - lr * (t / xp.sqrt(ns + eps)), cw)

    return upd.run(out, kernel)


def rmspropalex_update(
    weight: ArrayT,
    grad: ArrayCore,
    n: ArrayCore,
    g: ArrayCore,
    delta: ArrayCore,
    lr: float,
    gamma1: float = 0.95,
    gamma2: float = 0.9,
    epsilon: float = 1e-8,
    wd: float = 0.0,
    rescale_grad: float = 1.0,
    clip_gradient: float = -1.0,
    clip_weights: float = -1.0,
    out: ArrayCore | None = None,
    name: str | None = None,
) -> ArrayT:
    """Centered RMSProp (Graves, 2013); ``n``, ``g`` and ``delta`` are updated in place::

    grad' = clip(rescale_grad * grad + wd * weight)
    n = (1 - gamma1) * grad'**2 + gamma1 * n
    g = (1 - gamma1) * grad' + gamma1 * g
    delta = gamma2 * delta - lr * grad' / sqrt(n - g**2 + epsilon)
    weight = clip_weights(weight + delta)
    """
    states = [("n", n), ("g", g), ("delta", delta)]
    upd = _Elementwise("rmspropalex_update", weight, grad, states)
    lr, g1, g2, eps, wd = _p(lr), _p(gamma1), _p(gamma2), _p(epsilon), _p(wd)
    r, c, cw = _p(rescale_grad), _p(clip_gradient), _p(clip_weights)

    def kernel(xp: Any, w: Any, gr: Any, ns: Any, gs: Any, ds: Any) -> Any:
        t = _rescaled_wd(xp, w, gr, r, wd, c)
        ns[...] = (1.0 - g1) * t * t + g1 * ns
        gs[...] = (1.0 - g1) * t + g1 * gs
        ds[...] = g2 * ds - lr * t / xp.sqrt(ns - gs * gs + eps)
        return _clip_weights(xp, w + ds, cw)

    return upd.run(out, kernel)
