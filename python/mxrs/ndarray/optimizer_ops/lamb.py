"""LAMB's update operators: ``lamb_update_phase1`` (the moments and the step direction) and
``lamb_update_phase2`` (the step scaled by the trust ratio), and their float32-master
``mp_*`` forms."""

from __future__ import annotations

from typing import Any

from ...base import InvalidShapeError
from ..core.array import ArrayCore, ArrayT
from ._common import _check_weighted, _clipped, _Elementwise, _f32, _p, _required, _update


def _lamb_direction(
    xp: Any,
    w: Any,
    g: Any,
    m: Any,
    v: Any,
    b1: float,
    b2: float,
    eps: float,
    step: int,
    bias_correction: bool,
    wd: float,
    r: float,
    c: float,
) -> Any:
    t = _clipped(xp, g, r, c)
    m[...] = b1 * m + (1.0 - b1) * t
    v[...] = b2 * v + (1.0 - b2) * t * t
    if bias_correction:
        m_hat = m / (1.0 - _p(b1**step))
        v_hat = v / (1.0 - _p(b2**step))
        return m_hat / (xp.sqrt(v_hat) + eps) + wd * w
    return m / (xp.sqrt(v) + eps) + wd * w


def _phase1(
    op: str,
    weight: Any,
    grad: Any,
    mean: Any,
    var: Any,
    weight32: Any,
    beta1: float,
    beta2: float,
    epsilon: float,
    t: int | None,
    bias_correction: bool,
    wd: float | None,
    rescale_grad: float,
    clip_gradient: float,
    out: Any,
) -> Any:
    """LAMB's first phase; with a master copy ``weight32`` the direction is float32, from the
    master copy and a float32 gradient (the master copy is only read)."""
    upd = _Elementwise(op, weight, grad, [("mean", mean), ("var", var)], weight32)
    step, wd_ = _required(op, "t", t, int), _required(op, "wd", wd, float)
    b1, b2, eps = _p(beta1), _p(beta2), _p(epsilon)
    r, c, bc = _p(rescale_grad), _p(clip_gradient), bool(bias_correction)

    def kernel(xp: Any, w: Any, g: Any, m: Any, v: Any) -> Any:
        g = g if weight32 is None else _f32(g)
        return _lamb_direction(xp, w, g, m, v, b1, b2, eps, step, bc, wd_, r, c)

    if weight32 is None:
        return upd.run(out, kernel)
    return _update(upd.backend, weight32, grad, upd.states, out, kernel)


def lamb_update_phase1(
    weight: ArrayT,
    grad: ArrayCore,
    mean: ArrayCore,
    var: ArrayCore,
    beta1: float = 0.9,
    beta2: float = 0.999,
    epsilon: float = 1e-6,
    t: int | None = None,
    bias_correction: bool = True,
    wd: float | None = None,
    rescale_grad: float = 1.0,
    clip_gradient: float = -1.0,
    out: ArrayCore | None = None,
    name: str | None = None,
) -> ArrayT:
    """LAMB's first phase at step ``t``: updates ``mean`` and ``var`` in place and returns the
    step direction ``g`` (``t`` and ``wd`` are required)::

        grad' = clip(rescale_grad * grad)
        mean = beta1 * mean + (1 - beta1) * grad';  var = beta2 * var + (1 - beta2) * grad'**2
        g = mean_hat / (sqrt(var_hat) + epsilon) + wd * weight

    (``mean_hat = mean / (1 - beta1**t)``, ``var_hat = var / (1 - beta2**t)`` with
    ``bias_correction``, else ``mean`` and ``var``).
    """
    return _phase1("lamb_update_phase1", weight, grad, mean, var, None, beta1, beta2, epsilon,
                   t, bias_correction, wd, rescale_grad, clip_gradient, out)  # fmt: skip


def mp_lamb_update_phase1(
    weight: ArrayT,
    grad: ArrayCore,
    mean: ArrayCore,
    var: ArrayCore,
    weight32: ArrayCore,
    beta1: float = 0.9,
    beta2: float = 0.999,
    epsilon: float = 1e-6,
    t: int | None = None,
    bias_correction: bool = True,
    wd: float | None = None,
    rescale_grad: float = 1.0,
    clip_gradient: float = -1.0,
    out: ArrayCore | None = None,
    name: str | None = None,
) -> ArrayT:
    """:func:`lamb_update_phase1` in float32: the float32 ``mean`` and ``var`` are updated in
    place, the weight decay reads the master copy ``weight32`` and the direction is float32."""
    return _phase1("mp_lamb_update_phase1", weight, grad, mean, var, weight32, beta1, beta2,
                   epsilon, t, bias_correction, wd, rescale_grad, clip_gradient, out)  # fmt: skip


def _trust_lr(xp: Any, r1: Any, r2: Any, lr: float, lower: float, upper: float) -> float:
    """LAMB's learning rate scaled by the trust ratio ``r1 / r2`` (``r1`` within the bounds
    that are >= 0), or ``lr`` when either norm is 0."""
    n1 = float(r1.reshape(-1)[0])
    n2 = float(r2.reshape(-1)[0])
    if lower >= 0:
        n1 = max(n1, lower)
    if upper >= 0:
        n1 = min(n1, upper)
    return lr if n1 == 0.0 or n2 == 0.0 else lr * n1 / n2


def _phase2(
    op: str,
    weight: Any,
    g: Any,
    r1: Any,
    r2: Any,
    weight32: Any,
    lr: float,
    lower_bound: float,
    upper_bound: float,
    out: Any,
) -> Any:
    """LAMB's second phase from the weight, or in float32 from the master copy ``weight32``
    (which is left as it is)."""
    named = [("weight", weight), ("g", g), ("r1", r1), ("r2", r2)]
    if weight32 is None:
        be = _check_weighted(op, named, named[1:2], None)
    else:
        named.append(("weight32", weight32))
        be = _check_weighted(op, named, [named[1], named[4]], named[1:])
    for nm, a in (("r1", r1), ("r2", r2)):
        if len(a.shape) == 0 or a.shape[0] != 1:
            raise InvalidShapeError(f"{op}: {nm} must have shape (1,), got {tuple(a.shape)}")
    lo, hi = _p(lower_bound), _p(upper_bound)
    source = weight if weight32 is None else weight32

    def kernel(xp: Any, w: Any, gs: Any) -> Any:
        return source._data - _trust_lr(xp, r1._data, r2._data, _p(lr), lo, hi) * gs

    return _update(be, weight, g, (), out, kernel)


def lamb_update_phase2(
    weight: ArrayT,
    g: ArrayCore,
    r1: ArrayCore,
    r2: ArrayCore,
    lr: float,
    lower_bound: float = -1.0,
    upper_bound: float = -1.0,
    out: ArrayCore | None = None,
    name: str | None = None,
) -> ArrayT:
    """LAMB's second phase: ``weight - lr * r1 / r2 * g`` from the direction ``g`` of
    :func:`lamb_update_phase1` and the norms ``r1`` (of the weight, clamped into
    ``[lower_bound, upper_bound]``, each bound when >= 0) and ``r2`` (of ``g``), arrays of shape
    ``(1,)``; the ratio is 1 when either norm is 0."""
    return _phase2("lamb_update_phase2", weight, g, r1, r2, None, lr, lower_bound, upper_bound,
                   out)  # fmt: skip


def mp_lamb_update_phase2(
    weight: ArrayT,
    g: ArrayCore,
    r1: ArrayCore,
    r2: ArrayCore,
    weight32: ArrayCore,
    lr: float,
    lower_bound: float = -1.0,
    upper_bound: float = -1.0,
    out: ArrayCore | None = None,
    name: str | None = None,
) -> ArrayT:
    """:func:`lamb_update_phase2` on the master copy: ``weight32 - lr * r1 / r2 * g`` in
    float32, cast to the weight's dtype. ``weight32`` itself is left as it is, as MXNet's
    kernel leaves it (copy the result into it to keep the two in step)."""
    return _phase2("mp_lamb_update_phase2", weight, g, r1, r2, weight32, lr, lower_bound,
                   upper_bound, out)  # fmt: skip
