"""Adam's update operators: ``adam_update``, FTML's ``ftml_update`` (Adam-like moments) and
``mx.nd.contrib``'s AdamW family: ``adamw_update``, ``mp_adamw_update``,
``multi_adamw_update``, ``multi_mp_adamw_update`` (and MXNet's flat ``_multi_adamw_update``,
``_multi_mp_adamw_update``)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from ...base import MXNetError
from ..core.array import ArrayCore, ArrayT
from ._common import (
    Kernel,
    Named,
    _arrays,
    _check_groups,
    _clipped,
    _Elementwise,
    _f32,
    _host,
    _multi,
    _p,
    _per_weight,
    _required,
    _rescaled_wd,
    _split,
)


# ----------------------------------------------------------------- Adam, FTML
def adam_update(
    weight: ArrayT,
    grad: ArrayCore,
    mean: ArrayCore,
    var: ArrayCore,
    lr: float,
    beta1: float = 0.9,
    beta2: float = 0.999,
    epsilon: float = 1e-8,
    wd: float = 0.0,
    rescale_grad: float = 1.0,
    clip_gradient: float = -1.0,
    lazy_update: bool = True,
    out: ArrayCore | None = None,
    name: str | None = None,
) -> ArrayT:
    """Adam (without bias correction, which the caller folds into ``lr``); ``mean`` and
    ``var`` are updated in place::

        g = clip(rescale_grad * grad + wd * weight)
        mean = beta1 * mean + (1 - beta1) * g
        var = beta2 * var + (1 - beta2) * g**2
        weight = weight - lr * mean / (sqrt(var) + epsilon)

    With a ``row_sparse`` gradient, ``lazy_update`` and the states in the weight's storage
    type only the gradient's rows are updated.

    Raises
    ------
    MXNetError
        Also when ``mean`` and ``var`` have different storage types.
    """
    op = "adam_update"
    upd = _Elementwise(op, weight, grad, [("mean", mean), ("var", var)])
    if mean.stype != var.stype:
        raise MXNetError(
            f"{op}: inconsistent storage types of the states: mean is {mean.stype}, var is "
            f"{var.stype}"
        )
    lr, b1, b2, eps = _p(lr), _p(beta1), _p(beta2), _p(epsilon)
    wd, r, c = _p(wd), _p(rescale_grad), _p(clip_gradient)

    def kernel(xp: Any, w: Any, g: Any, m: Any, v: Any) -> Any:
        t = _rescaled_wd(xp, w, g, r, wd, c)
        m[...] = b1 * m + (1.0 - b1) * t
        v[...] = b2 * v + (1.0 - b2) * t * t
        return w - lr * m / (xp.sqrt(v) + eps)

    return upd.run(out, kernel, upd.lazy(lazy_update))


def ftml_update(
    weight: ArrayT,
    grad: ArrayCore,
    d: ArrayCore,
    v: ArrayCore,
    z: ArrayCore,
    lr: float,
    beta1: float = 0.6,
    beta2: float = 0.999,
    epsilon: float = 1e-8,
    t: int | None = None,
    wd: float = 0.0,
    rescale_grad: float = 1.0,
    clip_grad: float = -1.0,
    out: ArrayCore | None = None,
    name: str | None = None,
) -> ArrayT:
    """FTML (Follow the Moving Leader) at step ``t`` (required); ``d``, ``v`` and ``z`` are
    updated in place::

        g = clip(rescale_grad * grad + wd * weight)      (clip_grad >= 0 clips)
        v = beta2 * v + (1 - beta2) * g**2
        d_t = (1 - beta1**t) / lr * (sqrt(v / (1 - beta2**t)) + epsilon)
        z = beta1 * z + (1 - beta1) * g - (d_t - beta1 * d) * weight
        d = d_t;  weight = -z / d_t
    """
    op = "ftml_update"
    upd = _Elementwise(op, weight, grad, [("d", d), ("v", v), ("z", z)])
    step = _required(op, "t", t, int)
    lr, b1, b2, eps, wd = _p(lr), _p(beta1), _p(beta2), _p(epsilon), _p(wd)
    r, c = _p(rescale_grad), _p(clip_grad)

    def kernel(xp: Any, w: Any, g: Any, ds: Any, vs: Any, zs: Any) -> Any:
        gi = _rescaled_wd(xp, w, g, r, wd, c)
        vs[...] = b2 * vs + (1.0 - b2) * (gi * gi)
        d_t = (1.0 - _p(b1**step)) / lr * (xp.sqrt(vs / (1.0 - _p(b2**step))) + eps)
        zs[...] = b1 * zs + (1.0 - b1) * gi - (d_t - b1 * ds) * w
        ds[...] = d_t
        return -zs / d_t

    return upd.run(out, kernel)


# ----------------------------------------------------------------- contrib: AdamW
def _scale(op: str, rescale_grad: Any) -> float:
    """``rescale_grad`` (an array: its first element) as a number."""
    if isinstance(rescale_grad, ArrayCore):
        if rescale_grad.size < 1:
            raise MXNetError(f"{op}: rescale_grad is an empty array")
        return float(_host(rescale_grad)[0])
    return _p(rescale_grad)


def _skips(scale: float) -> bool:
    """Whether an AdamW update is skipped: the rescaling factor is 0, infinite or NaN."""
    return not math.isfinite(scale) or scale == 0.0


def _adamw_step(
    xp: Any,
    w: Any,
    g: Any,
    m: Any,
    v: Any,
    lr: float,
    eta: float,
    b1: float,
    b2: float,
    eps: float,
    wd: float,
    scale: float,
    clip: float,
    fused: bool,
) -> Any:
    t = _clipped(xp, g, scale, clip)
    if fused:  # the many-weight kernel's order of terms
        m[...] = b1 * (m - t) + t
        sq = t * t
        v[...] = b2 * (v - sq) + sq
    else:
        m[...] = b1 * m + (1.0 - b1) * t
        v[...] = b2 * v + (1.0 - b2) * (t * t)
    return w - eta * (lr * m / (xp.sqrt(v) + eps) + wd * w)


def _adamw(
    op: str,
    weight: Any,
    grad: Any,
    mean: Any,
    var: Any,
    weight32: Any,
    rescale_grad: Any,
    lr: float,
    eta: float,
    beta1: float,
    beta2: float,
    epsilon: float,
    wd: float,
    clip_gradient: float,
    out: Any,
) -> Any:
    """AdamW on one weight (``weight32`` its float32 master copy, or None); a skipped update
    returns ``out`` as it is, or a copy of the weight."""
    upd = _Elementwise(op, weight, grad, [("mean", mean), ("var", var)], weight32)
    scale = _scale(op, rescale_grad)
    if _skips(scale):
        return out if out is not None else weight.copy()
    lr_, eta_, b1, b2 = _p(lr), _p(eta), _p(beta1), _p(beta2)
    eps, wd_, c = _p(epsilon), _p(wd), _p(clip_gradient)

    def kernel(xp: Any, w: Any, g: Any, m: Any, v: Any) -> Any:
        return _adamw_step(xp, w, g, m, v, lr_, eta_, b1, b2, eps, wd_, scale, c, False)

    return upd.run(out, kernel)


def adamw_update(
    weight: ArrayT,
    grad: ArrayCore,
    mean: ArrayCore,
    var: ArrayCore,
    rescale_grad: ArrayCore | float,
    lr: float,
    eta: float,
    beta1: float = 0.9,
    beta2: float = 0.999,
    epsilon: float = 1e-8,
    wd: float = 0.0,
    clip_gradient: float = -1.0,
    out: ArrayCore | None = None,
    name: str | None = None,
) -> ArrayT:
    """AdamW (decoupled weight decay); ``mean`` and ``var`` are updated in place::

        g = clip(rescale_grad * grad)
        mean = beta1 * mean + (1 - beta1) * g;  var = beta2 * var + (1 - beta2) * g**2
        weight = weight - eta * (lr * mean / (sqrt(var) + epsilon) + wd * weight)

    ``rescale_grad`` is an array (its first element) or a number; when it is 0, infinite or
    NaN nothing is updated (``out`` is returned as it is, or a copy of the weight).
    """
    return _adamw("adamw_update", weight, grad, mean, var, None, rescale_grad, lr, eta, beta1,
                  beta2, epsilon, wd, clip_gradient, out)  # fmt: skip


def mp_adamw_update(
    weight: ArrayT,
    grad: ArrayCore,
    mean: ArrayCore,
    var: ArrayCore,
    weight32: ArrayCore,
    rescale_grad: ArrayCore | float,
    lr: float,
    eta: float,
    beta1: float = 0.9,
    beta2: float = 0.999,
    epsilon: float = 1e-8,
    wd: float = 0.0,
    clip_gradient: float = -1.0,
    out: ArrayCore | None = None,
    name: str | None = None,
) -> ArrayT:
    """:func:`adamw_update` in float32 on the master copy ``weight32``; the float32 ``mean``,
    ``var`` and ``weight32`` are updated in place, the result is cast to the weight's dtype."""
    return _adamw("mp_adamw_update", weight, grad, mean, var, weight32, rescale_grad, lr, eta,
                  beta1, beta2, epsilon, wd, clip_gradient, out)  # fmt: skip


def _multi_adamw(
    op: str,
    data: Sequence[Any],
    lrs: Any,
    wds: Any,
    etas: Any,
    beta1: float,
    beta2: float,
    epsilon: float,
    clip_gradient: float,
    num_weights: Any,
    out: Any,
    master: bool,
) -> Any:
    """AdamW of several weights from the flat inputs ``w0, g0, mean0, var0, [weight32_0,]
    w1, ..., rescale_grad``."""
    names = ["weight", "grad", "mean", "var"] + (["weight32"] if master else [])
    n, lr_, wd_, body = _split(op, data, len(names), num_weights, lrs, wds, extra=1)
    eta_ = _per_weight(op, etas, n, "learning rate schedule multipliers")
    rescale = data[-1]
    if isinstance(rescale, ArrayCore):
        _arrays(op, [("weight_0", data[0]), ("rescale_grad", rescale)])
    scale = _scale(op, rescale)
    f32 = names[2:]
    if _skips(scale):
        _check_groups(op, body, n, names, 2, f32)
        return out if out is not None else [body[i * len(names)].copy() for i in range(n)]
    b1, b2, eps, c = _p(beta1), _p(beta2), _p(epsilon), _p(clip_gradient)

    def make(lr: float, wd: float, eta: float) -> Kernel:
        def kernel(xp: Any, w: Any, g: Any, m: Any, v: Any) -> Any:
            return _adamw_step(xp, w, _f32(g), m, v, lr, eta, b1, b2, eps, wd, scale, c, True)

        return kernel

    kernels = [make(*p) for p in zip(lr_, wd_, eta_, strict=True)]
    return _multi(op, body, n, names, out, kernels, master, 2, f32)


def _multi_adamw_update(
    *data: ArrayCore,
    lrs: Sequence[float],
    wds: Sequence[float],
    etas: Sequence[float],
    beta1: float = 0.9,
    beta2: float = 0.999,
    epsilon: float = 1e-8,
    clip_gradient: float = -1.0,
    num_weights: int = 1,
    out: Any = None,
    name: str | None = None,
) -> Any:
    """MXNet's ``_multi_adamw_update``: :func:`multi_adamw_update` with its inputs flattened,
    ``w0, g0, mean0, var0, w1, ..., rescale_grad``."""
    return _multi_adamw("multi_adamw_update", data, lrs, wds, etas, beta1, beta2, epsilon,
                        clip_gradient, num_weights, out, False)  # fmt: skip


def _multi_mp_adamw_update(
    *data: ArrayCore,
    lrs: Sequence[float],
    wds: Sequence[float],
    etas: Sequence[float],
    beta1: float = 0.9,
    beta2: float = 0.999,
    epsilon: float = 1e-8,
    clip_gradient: float = -1.0,
    num_weights: int = 1,
    out: Any = None,
    name: str | None = None,
) -> Any:
    """MXNet's ``_multi_mp_adamw_update``: :func:`multi_mp_adamw_update` with its inputs
    flattened, ``w0, g0, mean0, var0, weight32_0, w1, ..., rescale_grad``."""
    return _multi_adamw("multi_mp_adamw_update", data, lrs, wds, etas, beta1, beta2, epsilon,
                        clip_gradient, num_weights, out, True)  # fmt: skip


def _zip_lists(op: str, lists: Sequence[Named], size: int) -> list[Any]:
    """The per-weight lists interleaved into flat inputs, ``size`` weights (all when 0)."""
    n = int(size) if size else len(lists[0][1])
    for nm, lst in lists:
        if not isinstance(lst, list | tuple):
            raise MXNetError(f"{op}: {nm} must be a list of NDArrays, got {type(lst).__name__}")
        if len(lst) != n:
            counts = ", ".join(f"{k} {len(v)}" for k, v in lists)
            raise MXNetError(f"{op}: expects {n} arrays in each list, got {counts}")
    return [a for group in zip(*(lst for _, lst in lists), strict=True) for a in group]


def _multi_adamw_lists(
    op: str,
    lists: Sequence[Named],
    size: int,
    rescale_grad: Any,
    lrs: Any,
    wds: Any,
    etas: Any,
    beta1: float,
    beta2: float,
    epsilon: float,
    clip_gradient: float,
    out: Any,
) -> Any:
    """:func:`_multi_adamw` from per-weight lists (with a master copy when there are five)."""
    flat = _zip_lists(op, lists, size)
    return _multi_adamw(op, flat + [rescale_grad], lrs, wds, etas, beta1, beta2, epsilon,
                        clip_gradient, len(flat) // len(lists), out, len(lists) == 5)  # fmt: skip


def multi_adamw_update(
    weights: Sequence[ArrayCore],
    grads: Sequence[ArrayCore],
    mean: Sequence[ArrayCore],
    var: Sequence[ArrayCore],
    rescale_grad: ArrayCore | float,
    lrs: Sequence[float],
    wds: Sequence[float],
    etas: Sequence[float],
    out: Any = None,
    name: str | None = None,
    size: int = 0,
    beta1: float = 0.9,
    beta2: float = 0.999,
    epsilon: float = 1e-8,
    clip_gradient: float = -1.0,
) -> Any:
    """:func:`adamw_update` of several weights (lists of weights, gradients, means and
    variances; ``size`` weights, all by default), one learning rate, weight decay and ``eta``
    each. The means and variances are float32 and updated in place; the whole update is skipped
    when ``rescale_grad`` is 0, infinite or NaN. Returns the new weights (``out`` when given).

    Raises
    ------
    MXNetError
        When the lists differ in length, or ``lrs``, ``wds`` or ``etas`` do not hold one
        number per weight, or a weight's arrays differ in shape.
    """
    lists = [("weights", weights), ("grads", grads), ("mean", mean), ("var", var)]
    return _multi_adamw_lists("multi_adamw_update", lists, size, rescale_grad, lrs, wds, etas,
                              beta1, beta2, epsilon, clip_gradient, out)  # fmt: skip


def multi_mp_adamw_update(
    weights: Sequence[ArrayCore],
    grads: Sequence[ArrayCore],
    mean: Sequence[ArrayCore],
    var: Sequence[ArrayCore],
    weights32: Sequence[ArrayCore],
    rescale_grad: ArrayCore | float,
    lrs: Sequence[float],
    wds: Sequence[float],
    etas: Sequence[float],
    out: Any = None,
    name: str | None = None,
    size: int = 0,
    beta1: float = 0.9,
    beta2: float = 0.999,
    epsilon: float = 1e-8,
    clip_gradient: float = -1.0,
) -> Any:
    """:func:`mp_adamw_update` of several weights: :func:`multi_adamw_update` with float32
    master copies ``weights32``, updated in place."""
    lists = [("weights", weights), ("grads", grads), ("mean", mean), ("var", var),
             ("weights32", weights32)]  # fmt: skip
    return _multi_adamw_lists("multi_mp_adamw_update", lists, size, rescale_grad, lrs, wds,
                              etas, beta1, beta2, epsilon, clip_gradient, out)  # fmt: skip
