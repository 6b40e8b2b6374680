"""SGD's update operators: ``sgd_update``, ``sgd_mom_update`` and Nesterov's
``nag_mom_update``, their float32-master ``mp_*`` forms and the many-weight ``multi_*`` and
``preloaded_multi_*`` forms of SGD with and without momentum."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..core.array import ArrayCore, ArrayT
from ._common import Kernel, _clipped, _Elementwise, _multi, _p, _split


# ----------------------------------------------------------------- the rules
def _sgd_step(xp: Any, w: Any, g: Any, lr: float, wd: float, rescale: float, clip: float) -> Any:
    """``(1 - lr*wd) * w - lr * clip(rescale * g)``."""
    if clip >= 0:
        step = _clipped(xp, g, rescale, clip)
        step *= lr
    else:
        step = g * (lr * rescale)
    return w * (1.0 - lr * wd) - step


def _momentum_step(
    xp: Any,
    w: Any,
    g: Any,
    mom: Any,
    lr: float,
    momentum: float,
    wd: float,
    rescale: float,
    clip: float,
) -> Any:
    """``mom = momentum*mom - lr*wd*w - lr*clip(rescale*g)`` (in place; no state when ``mom``
    is None); returns ``w + mom``."""
    step = w * (-lr * wd) if mom is None else mom * momentum - w * (lr * wd)
    if clip >= 0:
        t = _clipped(xp, g, rescale, clip)
        t *= lr
        step -= t
    else:
        step -= g * (lr * rescale)
    if mom is not None:
        mom[...] = step
    return w + step


def _nag_step(
    xp: Any,
    w: Any,
    g: Any,
    mom: Any,
    lr: float,
    momentum: float,
    wd: float,
    rescale: float,
    clip: float,
    decay_new: bool,
) -> Any:
    c = _clipped(xp, g, rescale, clip)
    mom *= momentum
    new = w - mom + (momentum + 1.0) * (mom - lr * (c + wd * w))
    # the momentum's decay term reads the weight after the update when the kernel writes the
    # weight in place (and always on the master copy), as MXNet's kernels do
    mom -= lr * (c + wd * (new if decay_new else w))
    return new


# ----------------------------------------------------------------- one weight
def _sgd(
    op: str,
    weight: Any,
    grad: Any,
    weight32: Any,
    lr: float,
    wd: float,
    rescale_grad: float,
    clip_gradient: float,
    lazy_update: bool,
    out: Any,
) -> Any:
    upd = _Elementwise(op, weight, grad, (), weight32)
    lr, wd, r, c = _p(lr), _p(wd), _p(rescale_grad), _p(clip_gradient)

    def kernel(xp: Any, w: Any, g: Any) -> Any:
        return _sgd_step(xp, w, g, lr, wd, r, c)

    return upd.run(out, kernel, upd.lazy(lazy_update))


def _sgd_mom(
    op: str,
    weight: Any,
    grad: Any,
    mom: Any,
    weight32: Any,
    lr: float,
    momentum: float,
    wd: float,
    rescale_grad: float,
    clip_gradient: float,
    lazy_update: bool,
    out: Any,
    nesterov: bool = False,
) -> Any:
    """SGD with momentum, or with ``nesterov`` NAG, on one weight (``weight32`` its float32
    master copy, or None)."""
    upd = _Elementwise(op, weight, grad, [("mom", mom)], weight32)
    lr, mu, wd = _p(lr), _p(momentum), _p(wd)
    r, c = _p(rescale_grad), _p(clip_gradient)
    decay_new = weight32 is not None or out is weight

    def kernel(xp: Any, w: Any, g: Any, m: Any) -> Any:
        if nesterov:
            return _nag_step(xp, w, g, m, lr, mu, wd, r, c, decay_new)
        return _momentum_step(xp, w, g, m, lr, mu, wd, r, c)

    return upd.run(out, kernel, not nesterov and upd.lazy(lazy_update))


def sgd_update(
    weight: ArrayT,
    grad: ArrayCore,
    lr: float,
    wd: float = 0.0,
    rescale_grad: float = 1.0,
    clip_gradient: float = -1.0,
    lazy_update: bool = True,
    out: ArrayCore | None = None,
    name: str | None = None,
) -> ArrayT:
    """SGD: ``weight = (1 - lr*wd) * weight - lr * clip(rescale_grad * grad)``.

    With a ``row_sparse`` gradient and ``lazy_update`` only the rows it stores are updated
    (weight decay included); without ``lazy_update`` every row decays.

    Raises
    ------
    MXNetError
        For inputs of different shapes or dtypes, or an integer weight.
    """
    return _sgd("sgd_update", weight, grad, None, lr, wd, rescale_grad, clip_gradient,
                lazy_update, out)  # fmt: skip


def sgd_mom_update(
    weight: ArrayT,
    grad: ArrayCore,
    mom: ArrayCore,
    lr: float,
    momentum: float = 0.0,
    wd: float = 0.0,
    rescale_grad: float = 1.0,
    clip_gradient: float = -1.0,
    lazy_update: bool = True,
    out: ArrayCore | None = None,
    name: str | None = None,
) -> ArrayT:
    """SGD with momentum; ``mom`` is updated in place::

        mom = momentum * mom - lr * wd * weight - lr * clip(rescale_grad * grad)
        weight = weight + mom

    With a ``row_sparse`` gradient, ``lazy_update`` and ``mom`` in the weight's storage type,
    only the gradient's rows of the weight and ``mom`` are updated.
    """
    return _sgd_mom("sgd_mom_update", weight, grad, mom, None, lr, momentum, wd, rescale_grad,
                    clip_gradient, lazy_update, out)  # fmt: skip


def mp_sgd_update(
    weight: ArrayT,
    grad: ArrayCore,
    weight32: ArrayCore,
    lr: float,
    wd: float = 0.0,
    rescale_grad: float = 1.0,
    clip_gradient: float = -1.0,
    lazy_update: bool = True,
    out: ArrayCore | None = None,
    name: str | None = None,
) -> ArrayT:
    """:func:`sgd_update` in float32 on the master copy ``weight32`` (updated in place); the
    result is cast to the weight's dtype. ``lazy_update`` is accepted and has no effect, as
    in MXNet (a sparse gradient updates every row)."""
    return _sgd("mp_sgd_update", weight, grad, weight32, lr, wd, rescale_grad, clip_gradient,
                lazy_update, out)  # fmt: skip


def mp_sgd_mom_update(
    weight: ArrayT,
    grad: ArrayCore,
    mom: ArrayCore,
    weight32: ArrayCore,
    lr: float,
    momentum: float = 0.0,
    wd: float = 0.0,
    rescale_grad: float = 1.0,
    clip_gradient: float = -1.0,
    lazy_update: bool = True,
    out: ArrayCore | None = None,
    name: str | None = None,
) -> ArrayT:
    """:func:`sgd_mom_update` in float32 on the master copy ``weight32``; ``mom`` (float32) and
    ``weight32`` are updated in place, the result is cast to the weight's dtype."""
    return _sgd_mom("mp_sgd_mom_update", weight, grad, mom, weight32, lr, momentum, wd,
                    rescale_grad, clip_gradient, lazy_update, out)  # fmt: skip


def nag_mom_update(
    weight: ArrayT,
    grad: ArrayCore,
    mom: ArrayCore,
    lr: float,
    momentum: float = 0.0,
    wd: float = 0.0,
    rescale_grad: float = 1.0,
    clip_gradient: float = -1.0,
    out: ArrayCore | None = None,
    name: str | None = None,
) -> ArrayT:
    """Nesterov momentum; ``mom`` is updated in place. With ``c = clip(rescale_grad*grad)``::

        mom = momentum * mom
        weight' = weight - mom + (momentum + 1) * (mom - lr * (c + wd * weight))
        mom = mom - lr * (c + wd * w)

    where ``w`` is ``weight'`` when ``out`` is the weight (MXNet's kernel then reads the
    weight it has just written), else ``weight``.
    """
    return _sgd_mom("nag_mom_update", weight, grad, mom, None, lr, momentum, wd, rescale_grad,
                    clip_gradient, False, out, nesterov=True)  # fmt: skip


def mp_nag_mom_update(
    weight: ArrayT,
    grad: ArrayCore,
    mom: ArrayCore,
    weight32: ArrayCore,
    lr: float,
    momentum: float = 0.0,
    wd: float = 0.0,
    rescale_grad: float = 1.0,
    clip_gradient: float = -1.0,
    out: ArrayCore | None = None,
    name: str | None = None,
) -> ArrayT:
    """:func:`nag_mom_update` in float32 on the master copy ``weight32`` (the momentum's decay
    term reads the updated master copy); ``mom`` and ``weight32`` are updated in place."""
    return _sgd_mom("mp_nag_mom_update", weight, grad, mom, weight32, lr, momentum, wd,
                    rescale_grad, clip_gradient, False, out, nesterov=True)  # fmt: skip


# ----------------------------------------------------------------- many weights at once
def _multi_sgd(
    op: str,
    data: Sequence[Any],
    num_weights: Any,
    lrs: Any,
    wds: Any,
    momentum: float | None,
    rescale_grad: float,
    clip_gradient: float,
    master: bool,
    out: Any,
) -> Any:
    """The ``multi_*`` and (``lrs`` None) ``preloaded_multi_*`` SGD updates: groups of weight,
    gradient, then ``mom`` when ``momentum`` is given, then with ``master`` ``weight32``."""
    names = ["weight", "grad"] + (["mom"] if momentum is not None else [])
    names += ["weight32"] if master else []
    n, lr_, wd_, body = _split(op, data, len(names), num_weights, lrs, wds)
    mu = 0.0 if momentum is None else _p(momentum)
    r, c = _p(rescale_grad), _p(clip_gradient)

    def make(lr: float, wd: float) -> Kernel:
        def kernel(xp: Any, w: Any, g: Any, m: Any = None) -> Any:
            return _momentum_step(xp, w, g, m, lr, mu, wd, r, c)

        return kernel

    kernels = [make(lr, wd) for lr, wd in zip(lr_, wd_, strict=True)]
    if master:
        return _multi(op, body, n, names, out, kernels, True, 2, names[2:])
    return _multi(op, body, n, names, out, kernels, False, len(names), ())


def multi_sgd_update(
    *data: ArrayCore,
    lrs: Sequence[float],
    wds: Sequence[float],
    rescale_grad: float = 1.0,
    clip_gradient: float = -1.0,
    num_weights: int = 1,
    out: Any = None,
    name: str | None = None,
) -> Any:
    """:func:`sgd_update` of ``num_weights`` weights: ``data`` is ``w0, g0, w1, g1, ...``,
    ``lrs`` and ``wds`` hold one learning rate and weight decay per weight. Returns the new
    weights (``out``, a list, when given).

    Raises
    ------
    MXNetError
        When ``data`` does not hold 2 arrays per weight, or ``lrs``/``wds`` one number per
        weight, or a group's arrays differ in shape or dtype.
    """
    return _multi_sgd("multi_sgd_update", data, num_weights, lrs, wds, None, rescale_grad,
                      clip_gradient, False, out)  # fmt: skip


def multi_sgd_mom_update(
    *data: ArrayCore,
    lrs: Sequence[float],
    wds: Sequence[float],
    momentum: float = 0.0,
    rescale_grad: float = 1.0,
    clip_gradient: float = -1.0,
    num_weights: int = 1,
    out: Any = None,
    name: str | None = None,
) -> Any:
    """:func:`sgd_mom_update` of ``num_weights`` weights: ``data`` is
    ``w0, g0, mom0, w1, g1, mom1, ...``; each ``mom`` is updated in place."""
    return _multi_sgd("multi_sgd_mom_update", data, num_weights, lrs, wds, momentum,
                      rescale_grad, clip_gradient, False, out)  # fmt: skip


def multi_mp_sgd_update(
    *data: ArrayCore,
    lrs: Sequence[float],
    wds: Sequence[float],
    rescale_grad: float = 1.0,
    clip_gradient: float = -1.0,
    num_weights: int = 1,
    out: Any = None,
    name: str | None = None,
) -> Any:
    """:func:`mp_sgd_update` of ``num_weights`` weights: ``data`` is
    ``w0, g0, weight32_0, w1, ...``; each float32 ``weight32`` is updated in place."""
    return _multi_sgd("multi_mp_sgd_update", data, num_weights, lrs, wds, None, rescale_grad,
                      clip_gradient, True, out)  # fmt: skip


def multi_mp_sgd_mom_update(
    *data: ArrayCore,
    lrs: Sequence[float],
    wds: Sequence[float],
    momentum: float = 0.0,
    rescale_grad: float = 1.0,
    clip_gradient: float = -1.0,
    num_weights: int = 1,
    out: Any = None,
    name: str | None = None,
) -> Any:
    """:func:`mp_sgd_mom_update` of ``num_weights`` weights: ``data`` is
    ``w0, g0, mom0, weight32_0, w1, ...``; each float32 ``mom`` and ``weight32`` is updated in
    place."""
    return _multi_sgd("multi_mp_sgd_mom_update", data, num_weights, lrs, wds, momentum,
                      rescale_grad, clip_gradient, True, out)  # fmt: skip


def preloaded_multi_sgd_update(
    *data: ArrayCore,
    rescale_grad: float = 1.0,
    clip_gradient: float = -1.0,
    num_weights: int = 1,
    out: Any = None,
    name: str | None = None,
) -> Any:
    """:func:`multi_sgd_update` with the learning rates and weight decays in two trailing
    float32 arrays: ``data`` is ``w0, g0, w1, g1, ..., lrs, wds``."""
    return _multi_sgd("preloaded_multi_sgd_update", data, num_weights, None, None, None,
                      rescale_grad, clip_gradient, False, out)  # fmt: skip


def preloaded_multi_sgd_mom_update(
    *data: ArrayCore,
    momentum: float = 0.0,
    rescale_grad: float = 1.0,
    clip_gradient: float = -1.0,
    num_weights: int = 1,
    out: Any = None,
    name: str | None = None,
) -> Any:
    """:func:`multi_sgd_mom_update` with the learning rates and weight decays in two trailing
    float32 arrays: ``data`` is ``w0, g0, mom0, ..., lrs, wds``."""
    return _multi_sgd("preloaded_multi_sgd_mom_update", data, num_weights, None, None,
                      momentum, rescale_grad, clip_gradient, False, out)  # fmt: skip


def preloaded_multi_mp_sgd_update(
    *data: ArrayCore,
    rescale_grad: float = 1.0,
    clip_gradient: float = -1.0,
    num_weights: int = 1,
    out: Any = None,
    name: str | None = None,
) -> Any:
    """:func:`multi_mp_sgd_update` with the learning rates and weight decays in two trailing
    float32 arrays: ``data`` is ``w0, g0, weight32_0, ..., lrs, wds``."""
    return _multi_sgd("preloaded_multi_mp_sgd_update", data, num_weights, None, None, None,
                      rescale_grad, clip_gradient, True, out)  # fmt: skip


def preloaded_multi_mp_sgd_mom_update(
    *data: ArrayCore,
    momentum: float = 0.0,
    rescale_grad: float = 1.0,
    clip_gradient: float = -1.0,
    num_weights: int = 1,
    out: Any = None,
    name: str | None = None,
) -> Any:
    """:func:`multi_mp_sgd_mom_update` with the learning rates and weight decays in two
    trailing float32 arrays: ``data`` is ``w0, g0, mom0, weight32_0, ..., lrs, wds``."""
    return _multi_sgd("preloaded_multi_mp_sgd_mom_update", data, num_weights, None, None,
                      momentum, rescale_grad, clip_gradient, True, out)  # fmt: skip
