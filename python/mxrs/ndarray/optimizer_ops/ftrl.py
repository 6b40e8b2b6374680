"""FTRL-Proximal's update operator, ``ftrl_update``."""

from __future__ import annotations

from typing import Any

from ..core.array import ArrayCore, ArrayT
from ._common import _clipped, _Elementwise, _is_rsp, _p, _sign


def ftrl_update(
    weight: ArrayT,
    grad: ArrayCore,
    z: ArrayCore,
    n: ArrayCore,
    lr: float,
    lamda1: float = 0.01,
    beta: float = 1.0,
    wd: float = 0.0,
    rescale_grad: float = 1.0,
    clip_gradient: float = -1.0,
    out: ArrayCore | None = None,
    name: str | None = None,
) -> ArrayT:
    """FTRL-Proximal; ``z`` and ``n`` are updated in place. With ``g = clip(rescale_grad *
    grad)``::

        z += g - (sqrt(n + g**2) - sqrt(n)) * weight / lr
        n += g**2
        weight = (sign(z) * lamda1 - z) / ((beta + sqrt(n)) / lr + wd) * (|z| > lamda1)

    When the weight, gradient, ``z`` and ``n`` are all ``row_sparse``, only the gradient's rows
    are updated.
    """
    upd = _Elementwise("ftrl_update", weight, grad, [("z", z), ("n", n)])
    lr, l1, beta_, wd = _p(lr), _p(lamda1), _p(beta), _p(wd)
    r, c = _p(rescale_grad), _p(clip_gradient)
    lazy = all(_is_rsp(a) for a in (weight, grad, z, n))

    def kernel(xp: Any, w: Any, g: Any, zs: Any, ns: Any) -> Any:
        t = _clipped(xp, g, r, c)
        sq = t * t
        zs += t - (xp.sqrt(ns + sq) - xp.sqrt(ns)) * w / lr
        ns += sq
        keep = (xp.abs(zs) > l1).astype(zs.dtype)
        return (_sign(xp, zs) * l1 - zs) / ((beta_ + xp.sqrt(ns)) / lr + wd) * keep

    return upd.run(out, kernel, lazy)
