"""The optimizer update operators of MXNet 1.9.1: ``sgd_update``, ``adam_update``, ... and their
multi-precision (``mp_*``) and many-weight (``multi_*``, ``preloaded_multi_*``) forms, the LAMB
and LARS helpers, and ``mx.nd.contrib``'s ``adamw_update`` family and ``group_adagrad_update``.

Each operator takes the weight, the gradient and the optimizer's states as arrays and its
hyper-parameters as numbers; it updates the states in place (MXNet's mutable inputs: ``mom``,
``mean``, ``var``, ``weight32``...) and returns the new weight. Passing the weight as ``out``
makes the update in place, as MXNet's optimizers call them::

    mx.nd.sgd_mom_update(w, g, mom, lr=0.1, momentum=0.9, wd=1e-4, out=w)

What the kernels share, as MXNet 1.9.1's:

- the gradient is multiplied by ``rescale_grad``, then clipped into
  ``[-clip_gradient, clip_gradient]`` when ``clip_gradient >= 0`` (a negative value turns
  clipping off; 0 clips every gradient to 0);
- ``mp_*`` operators keep a float32 master copy ``weight32`` of a (float16) weight: the update
  runs in float32 on the master copy and states, and the result is cast to the weight's dtype;
- ``multi_*`` operators update ``num_weights`` weights at once from the per-weight groups of
  inputs flattened (``w0, g0, w1, g1, ...``), with one learning rate and weight decay per weight
  (``lrs``, ``wds``), and return one array per weight; ``preloaded_multi_*`` take the learning
  rates and weight decays as two trailing float32 arrays;
- with a ``row_sparse`` gradient, ``sgd_update``, ``sgd_mom_update`` and ``adam_update`` (with
  ``lazy_update`` and the states in the weight's storage type), ``ftrl_update`` (row_sparse
  weight and states) and ``group_adagrad_update`` change only the rows the gradient stores, in
  the weight and in the states; every other operator, and those with ``lazy_update=False``, run
  as with the dense gradient (zeros elsewhere);
- the ``adamw_update`` family takes ``rescale_grad`` as an array (or a number) and skips the
  whole update, states included, when it is 0, infinite or NaN.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy

from ..base import ContextError, InvalidShapeError, MXNetError
from .core.array import ArrayCore, ArrayT, check_writable

__all__ = [
    "sgd_update",
    "sgd_mom_update",
    "mp_sgd_update",
    "mp_sgd_mom_update",
    "multi_sgd_update",
    "multi_sgd_mom_update",
    "multi_mp_sgd_update",
    "multi_mp_sgd_mom_update",
    "preloaded_multi_sgd_update",
    "preloaded_multi_sgd_mom_update",
    "preloaded_multi_mp_sgd_update",
    "preloaded_multi_mp_sgd_mom_update",
    "nag_mom_update",
    "mp_nag_mom_update",
    "adam_update",
    "rmsprop_update",
    "rmspropalex_update",
    "ftrl_update",
    "ftml_update",
    "signsgd_update",
    "signum_update",
    "lamb_update_phase1",
    "lamb_update_phase2",
    "mp_lamb_update_phase1",
    "mp_lamb_update_phase2",
    "multi_lars",
    "multi_sum_sq",
]

#: ``mx.nd.contrib``'s operators of this module.
CONTRIB = (
    "adamw_update",
    "mp_adamw_update",
    "multi_adamw_update",
    "multi_mp_adamw_update",
    "group_adagrad_update",
)

_F32 = numpy.dtype(numpy.float32)
Kernel = Callable[..., Any]


# ----------------------------------------------------------------- checks
def _p(value: Any) -> float:
    """A hyper-parameter as MXNet holds it: a float32 number."""
    return float(numpy.float32(value))


def _dtype(a: ArrayCore) -> numpy.dtype[Any]:
    return numpy.dtype(a.dtype)


def _arrays(op: str, named: Sequence[tuple[str, Any]]) -> Any:
    """Check that every input is an NDArray and all share one context; return its backend."""
    ctx = None
    for name, a in named:
        if not isinstance(a, ArrayCore):
            raise MXNetError(f"{op}: {name} must be an NDArray, got {type(a).__name__}")
        if ctx is None:
            ctx = a._ctx
        elif a._ctx != ctx:
            raise ContextError(
                f"{op}: {name} is on {a._ctx} but {named[0][0]} is on {ctx}; move the arrays "
                "to one context first"
            )
    assert ctx is not None
    return ctx._backend or ctx.backend


def _check_float(op: str, name: str, a: ArrayCore) -> None:
    if _dtype(a).kind in "biuc":
        raise MXNetError(
            f"{op}: only floating point arrays can be updated, {name} is {_dtype(a).name}"
        )


def _check_shapes(op: str, ref: tuple[str, Any], named: Sequence[tuple[str, Any]]) -> None:
    rname, r = ref
    for name, a in named:
        if tuple(a.shape) != tuple(r.shape):
            raise InvalidShapeError(
                f"{op}: {name} has shape {tuple(a.shape)} but {rname} has shape "
                f"{tuple(r.shape)}; they must match"
            )


def _check_dtypes(op: str, ref: tuple[str, Any], named: Sequence[tuple[str, Any]]) -> None:
    rname, r = ref
    for name, a in named:
        if _dtype(a) != _dtype(r):
            raise MXNetError(
                f"{op}: {name} is {_dtype(a).name} but {rname} is {_dtype(r).name}; they "
                "must have one dtype"
            )


def _check_f32(op: str, named: Sequence[tuple[str, Any]]) -> None:
    for name, a in named:
        if _dtype(a) != _F32:
            raise MXNetError(
                f"{op}: {name} must be float32 (the master precision), got {_dtype(a).name}"
            )


def _required(op: str, name: str, value: Any, kind: type) -> Any:
    if value is None:
        raise MXNetError(f"{op}: the parameter {name} ({kind.__name__}) is required")
    return kind(value)


def _check_update(
    op: str,
    named: Sequence[tuple[str, Any]],
    same_dtype: int,
    master: Sequence[str] = (),
) -> Any:
    """The checks of an elementwise update: NDArrays on one context, one shape, a floating
    weight, the first ``same_dtype`` inputs of the weight's dtype and the ``master`` ones
    float32. Returns the backend."""
    be = _arrays(op, named)
    ref = named[0]
    _check_float(op, ref[0], ref[1])
    _check_shapes(op, ref, named[1:])
    _check_dtypes(op, ref, named[1:same_dtype])
    _check_f32(op, [(n, a) for n, a in named if n in master])
    return be


# ----------------------------------------------------------------- buffers and results
class _Buffers:
    """The raw buffers of one update's arrays: ``write`` gives a buffer whose changes reach
    the array (a ``row_sparse`` one is made to store every row; a ``csr`` one is re-encoded
    by :meth:`done`), ``read`` the values (a dense copy of a sparse array)."""

    def __init__(self) -> None:
        self._dense_copies: list[tuple[Any, Any]] = []

    @staticmethod
    def read(a: Any) -> Any:
        return a._data

    def write(self, a: Any) -> Any:
        check_writable(a)
        if not a._sparse:
            return a._data
        if a.stype == "row_sparse":
            return a._full_values()
        dense = a._data
        self._dense_copies.append((a, dense))
        return dense

    def done(self) -> None:
        for a, dense in self._dense_copies:
            a._data = dense


def _emit(bufs: _Buffers, weight: Any, new: Any, out: Any) -> Any:
    """The new weight ``new`` (raw, cast to the weight's dtype): in ``out`` when given (the
    weight itself for an in-place update), else a new array."""
    new = new.astype(weight.dtype, copy=False)
    if out is None:
        return weight._new(new, weight._ctx)
    if not isinstance(out, ArrayCore):
        raise MXNetError(f"out must be an NDArray, got {type(out).__name__}")
    if tuple(out.shape) != tuple(weight.shape):
        raise InvalidShapeError(
            f"out has shape {tuple(out.shape)} but the weight has shape {tuple(weight.shape)}"
        )
    if out._ctx != weight._ctx:
        out[:] = weight._new(new, weight._ctx)
        return out
    buf = bufs.write(out)
    buf[...] = new
    return out


def _is_rsp(a: Any) -> bool:
    return bool(a._sparse) and a.stype == "row_sparse"


def _update(
    be: Any,
    weight: Any,
    grad: Any,
    states: Sequence[Any],
    out: Any,
    kernel: Kernel,
    lazy: bool = False,
    master: Any = None,
) -> Any:
    """Run ``kernel(xp, w, g, *states)`` (it updates the states in place and returns the new
    weight) on the whole arrays, or with ``lazy`` on the rows the ``row_sparse`` gradient
    stores; ``master`` (a float32 master copy, updated in place) replaces the weight as the
    kernel's ``w``. Returns the new weight, in ``out`` when given."""
    ctx = weight._ctx
    bufs = _Buffers()
    with be.guard(ctx.device_id), numpy.errstate(all="ignore"):
        if lazy:
            res = _lazy_update(be, bufs, weight, grad, states, out, kernel, master)
        else:
            st = [bufs.write(s) for s in states]
            w = bufs.write(master) if master is not None else bufs.read(weight)
            new = kernel(be.xp, w, bufs.read(grad), *st)
            if master is not None:
                w[...] = new
            res = _emit(bufs, weight, new, out)
        bufs.done()
    return res


def _lazy_update(
    be: Any,
    bufs: _Buffers,
    weight: Any,
    grad: Any,
    states: Sequence[Any],
    out: Any,
    kernel: Kernel,
    master: Any,
) -> Any:
    idx, vals = grad._sp_idx, grad._sp_vals
    in_place = out is weight
    wbuf = bufs.write(weight) if in_place else bufs.read(weight).copy()
    if idx.shape[0]:
        sbufs = [bufs.write(s) for s in states]
        blocks = [b[idx] for b in sbufs]
        src = bufs.write(master) if master is not None else wbuf
        rows = kernel(be.xp, src[idx], vals, *blocks)
        for b, block in zip(sbufs, blocks, strict=True):
            b[idx] = block
        if master is not None:
            src[idx] = rows
        wbuf[idx] = rows.astype(wbuf.dtype, copy=False)
    if in_place:
        return out
    return _emit(bufs, weight, wbuf, out)


# ----------------------------------------------------------------- shared arithmetic
def _clipped(xp: Any, g: Any, rescale: float, clip: float) -> Any:
    """``clip(rescale * g)`` (a new array), clipped only when ``clip >= 0``."""
    t = g * rescale
    if clip >= 0:
        xp.clip(t, -clip, clip, out=t)
    return t


def _sign(xp: Any, a: Any) -> Any:
    """-1, 0 or 1 by the sign of each element (0 for NaN), as MXNet's sign."""
    return (a > 0).astype(a.dtype) - (a < 0).astype(a.dtype)


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


def _f32(g: Any) -> Any:
    return g.astype(_F32, copy=False)


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


# ----------------------------------------------------------------- SGD
def _lazy_ok(grad: Any, weight: Any, states: Sequence[Any], lazy_update: bool) -> bool:
    """MXNet's lazy update: a row_sparse gradient, a dense or row_sparse weight and every state
    in the weight's storage type."""
    return (
        bool(lazy_update)
        and _is_rsp(grad)
        and weight.stype in ("default", "row_sparse")
        and all(s.stype == weight.stype for s in states)
    )


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
    op = "sgd_update"
    named = [("weight", weight), ("grad", grad)]
    be = _check_update(op, named, 2)
    lr, wd, r, c = _p(lr), _p(wd), _p(rescale_grad), _p(clip_gradient)
    lazy = _lazy_ok(grad, weight, (), lazy_update)

    def kernel(xp: Any, w: Any, g: Any) -> Any:
        return _sgd_step(xp, w, g, lr, wd, r, c)

    return _update(be, weight, grad, (), out, kernel, lazy=lazy)


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
    op = "sgd_mom_update"
    named = [("weight", weight), ("grad", grad), ("mom", mom)]
    be = _check_update(op, named, 3)
    lr, mu, wd = _p(lr), _p(momentum), _p(wd)
    r, c = _p(rescale_grad), _p(clip_gradient)
    lazy = _lazy_ok(grad, weight, (mom,), lazy_update)

    def kernel(xp: Any, w: Any, g: Any, m: Any) -> Any:
        return _momentum_step(xp, w, g, m, lr, mu, wd, r, c)

    return _update(be, weight, grad, (mom,), out, kernel, lazy=lazy)


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
    op = "mp_sgd_update"
    named = [("weight", weight), ("grad", grad), ("weight32", weight32)]
    be = _check_update(op, named, 2, master=("weight32",))
    lr, wd, r, c = _p(lr), _p(wd), _p(rescale_grad), _p(clip_gradient)

    def kernel(xp: Any, w32: Any, g: Any) -> Any:
        return _sgd_step(xp, w32, _f32(g), lr, wd, r, c)

    return _update(be, weight, grad, (), out, kernel, master=weight32)


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
    op = "mp_sgd_mom_update"
    named = [("weight", weight), ("grad", grad), ("mom", mom), ("weight32", weight32)]
    be = _check_update(op, named, 2, master=("mom", "weight32"))
    lr, mu, wd = _p(lr), _p(momentum), _p(wd)
    r, c = _p(rescale_grad), _p(clip_gradient)

    def kernel(xp: Any, w32: Any, g: Any, m: Any) -> Any:
        return _momentum_step(xp, w32, _f32(g), m, lr, mu, wd, r, c)

    return _update(be, weight, grad, (mom,), out, kernel, master=weight32)


# ----------------------------------------------------------------- many weights at once
def _groups(op: str, data: Sequence[Any], stride: int, num_weights: Any, extra: int = 0) -> int:
    n = int(num_weights)
    if n < 1:
        raise MXNetError(f"{op}: num_weights must be at least 1, got {n}")
    if len(data) != stride * n + extra:
        trailing = f" plus {extra} trailing arrays" if extra else ""
        raise MXNetError(
            f"{op}: expects {stride * n + extra} inputs ({stride} per weight for "
            f"num_weights={n}{trailing}), but got {len(data)}"
        )
    return n


def _per_weight(op: str, values: Any, n: int, what: str) -> list[float]:
    vals = [_p(v) for v in (values if isinstance(values, list | tuple) else [values])]
    if len(vals) != n:
        raise MXNetError(
            f"{op}: number of {what} is inconsistent with num_weights: expected {n}, got "
            f"{len(vals)}"
        )
    return vals


def _outs(op: str, out: Any, n: int) -> list[Any]:
    if out is None:
        return [None] * n
    outs = list(out) if isinstance(out, list | tuple) else [out]
    if len(outs) != n:
        raise MXNetError(f"{op}: out= holds {len(outs)} arrays but the op updates {n} weights")
    return outs


def _check_groups(
    op: str, data: Sequence[Any], n: int, names: Sequence[str], same: int, f32: Sequence[str]
) -> tuple[Any, list[list[Any]]]:
    """Check the ``n`` groups of ``names`` among ``data``: NDArrays on one context, each group
    of one shape, its first ``same`` arrays of one floating dtype and its ``f32`` ones float32.
    Returns the backend and the groups."""
    stride = len(names)
    groups = [list(data[i * stride : (i + 1) * stride]) for i in range(n)]
    labelled = [[(f"{nm}_{i}", a) for nm, a in zip(names, grp, strict=True)]
                for i, grp in enumerate(groups)]  # fmt: skip
    be = _arrays(op, [pair for grp in labelled for pair in grp])
    for grp in labelled:
        _check_float(op, grp[0][0], grp[0][1])
        _check_shapes(op, grp[0], grp[1:])
        _check_dtypes(op, grp[0], grp[1:same])
        _check_f32(op, [(nm, a) for nm, a in grp if nm.rsplit("_", 1)[0] in f32])
    return be, groups


def _multi(
    op: str,
    data: Sequence[Any],
    n: int,
    names: Sequence[str],
    out: Any,
    kernels: Sequence[Kernel],
    master: bool,
    same: int,
    f32: Sequence[str],
) -> Any:
    """Run ``kernels[i]`` on the i-th group of ``names`` among ``data`` (the states follow the
    gradient; with ``master`` the float32 master copy comes last). Returns the new weights,
    ``out`` when given."""
    be, groups = _check_groups(op, data, n, names, same, f32)
    outs = _outs(op, out, n)
    res = []
    for grp, kern, o in zip(groups, kernels, outs, strict=True):
        weight, grad = grp[0], grp[1]
        if master:
            res.append(_update(be, weight, grad, grp[2:-1], o, kern, master=grp[-1]))
        else:
            res.append(_update(be, weight, grad, grp[2:], o, kern))
    return out if out is not None else res


def _multi_sgd(
    op: str,
    data: Sequence[Any],
    lrs: Sequence[float],
    wds: Sequence[float],
    momentum: float | None,
    rescale_grad: float,
    clip_gradient: float,
    n: int,
    out: Any,
    master: bool,
) -> Any:
    names = ["weight", "grad"] + (["mom"] if momentum is not None else [])
    names += ["weight32"] if master else []
    mu = 0.0 if momentum is None else _p(momentum)
    r, c = _p(rescale_grad), _p(clip_gradient)

    def make(lr: float, wd: float) -> Kernel:
        def kernel(xp: Any, w: Any, g: Any, m: Any = None) -> Any:
            return _momentum_step(xp, w, _f32(g) if master else g, m, lr, mu, wd, r, c)

        return kernel

    kernels = [make(lr, wd) for lr, wd in zip(lrs, wds, strict=True)]
    if master:
        return _multi(op, data, n, names, out, kernels, True, 2, names[2:])
    return _multi(op, data, n, names, out, kernels, False, len(names), ())


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
    op = "multi_sgd_update"
    n = _groups(op, data, 2, num_weights)
    lr_, wd_ = _per_weight(op, lrs, n, "learning rates"), _per_weight(op, wds, n, "weight decays")
    return _multi_sgd(op, data, lr_, wd_, None, rescale_grad, clip_gradient, n, out, False)


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
    op = "multi_sgd_mom_update"
    n = _groups(op, data, 3, num_weights)
    lr_, wd_ = _per_weight(op, lrs, n, "learning rates"), _per_weight(op, wds, n, "weight decays")
    return _multi_sgd(op, data, lr_, wd_, momentum, rescale_grad, clip_gradient, n, out, False)


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
    op = "multi_mp_sgd_update"
    n = _groups(op, data, 3, num_weights)
    lr_, wd_ = _per_weight(op, lrs, n, "learning rates"), _per_weight(op, wds, n, "weight decays")
    return _multi_sgd(op, data, lr_, wd_, None, rescale_grad, clip_gradient, n, out, True)


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
    op = "multi_mp_sgd_mom_update"
    n = _groups(op, data, 4, num_weights)
    lr_, wd_ = _per_weight(op, lrs, n, "learning rates"), _per_weight(op, wds, n, "weight decays")
    return _multi_sgd(op, data, lr_, wd_, momentum, rescale_grad, clip_gradient, n, out, True)


def _preloaded(
    op: str, data: Sequence[Any], stride: int, num_weights: Any
) -> tuple[int, list[float], list[float]]:
    """The number of weights and the learning rates and weight decays held by the two
    trailing float32 arrays of a ``preloaded_multi_*`` call."""
    n = _groups(op, data, stride, num_weights, extra=2)
    tail = [("lrs", data[-2]), ("wds", data[-1])]
    _arrays(op, [("weight_0", data[0])] + tail)
    _check_f32(op, tail)
    vals = []
    for what, (nm, a) in zip(("learning rates", "weight decays"), tail, strict=True):
        if a.size != n:
            raise MXNetError(
                f"{op}: number of {what} ({nm}) is inconsistent with num_weights: expected "
                f"{n}, got {a.size}"
            )
        be = a._ctx._backend or a._ctx.backend
        vals.append([float(v) for v in numpy.asarray(be.to_host(a._data)).reshape(-1)])
    return n, vals[0], vals[1]


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
    op = "preloaded_multi_sgd_update"
    n, lrs, wds = _preloaded(op, data, 2, num_weights)
    body = data[:-2]
    return _multi_sgd(op, body, lrs, wds, None, rescale_grad, clip_gradient, n, out, False)


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
    op = "preloaded_multi_sgd_mom_update"
    n, lrs, wds = _preloaded(op, data, 3, num_weights)
    body = data[:-2]
    return _multi_sgd(op, body, lrs, wds, momentum, rescale_grad, clip_gradient, n, out, False)


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
    op = "preloaded_multi_mp_sgd_update"
    n, lrs, wds = _preloaded(op, data, 3, num_weights)
    body = data[:-2]
    return _multi_sgd(op, body, lrs, wds, None, rescale_grad, clip_gradient, n, out, True)


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
    op = "preloaded_multi_mp_sgd_mom_update"
    n, lrs, wds = _preloaded(op, data, 4, num_weights)
    body = data[:-2]
    return _multi_sgd(op, body, lrs, wds, momentum, rescale_grad, clip_gradient, n, out, True)


# ----------------------------------------------------------------- NAG
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
    op = "nag_mom_update"
    named = [("weight", weight), ("grad", grad), ("mom", mom)]
    be = _check_update(op, named, 3)
    lr, mu, wd = _p(lr), _p(momentum), _p(wd)
    r, c = _p(rescale_grad), _p(clip_gradient)
    in_place = out is weight

    def kernel(xp: Any, w: Any, g: Any, m: Any) -> Any:
        return _nag_step(xp, w, g, m, lr, mu, wd, r, c, in_place)

    return _update(be, weight, grad, (mom,), out, kernel)


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
    op = "mp_nag_mom_update"
    named = [("weight", weight), ("grad", grad), ("mom", mom), ("weight32", weight32)]
    be = _check_update(op, named, 2, master=("mom", "weight32"))
    lr, mu, wd = _p(lr), _p(momentum), _p(wd)
    r, c = _p(rescale_grad), _p(clip_gradient)

    def kernel(xp: Any, w32: Any, g: Any, m: Any) -> Any:
        return _nag_step(xp, w32, _f32(g), m, lr, mu, wd, r, c, True)

    return _update(be, weight, grad, (mom,), out, kernel, master=weight32)


# ----------------------------------------------------------------- Adam, RMSProp, FTRL, FTML
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
    named = [("weight", weight), ("grad", grad), ("mean", mean), ("var", var)]
    be = _check_update(op, named, 4)
    if mean.stype != var.stype:
        raise MXNetError(
            f"{op}: inconsistent storage types of the states: mean is {mean.stype}, var is "
            f"{var.stype}"
        )
    lr, b1, b2, eps = _p(lr), _p(beta1), _p(beta2), _p(epsilon)
    wd, r, c = _p(wd), _p(rescale_grad), _p(clip_gradient)
    lazy = _lazy_ok(grad, weight, (mean, var), lazy_update)

    def kernel(xp: Any, w: Any, g: Any, m: Any, v: Any) -> Any:
        t = g * r + w * wd
        if c >= 0:
            xp.clip(t, -c, c, out=t)
        m[...] = b1 * m + (1.0 - b1) * t
        v[...] = b2 * v + (1.0 - b2) * t * t
        return w - lr * m / (xp.sqrt(v) + eps)

    return _update(be, weight, grad, (mean, var), out, kernel, lazy=lazy)


def _rescaled_wd(xp: Any, w: Any, g: Any, rescale: float, wd: float, clip: float) -> Any:
    """``clip(rescale * g + wd * w)`` (a new array)."""
    t = rescale * g + wd * w
    if clip >= 0:
        xp.clip(t, -clip, clip, out=t)
    return t


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
    op = "rmsprop_update"
    named = [("weight", weight), ("grad", grad), ("n", n)]
    be = _check_update(op, named, 3)
    lr, g1, eps, wd = _p(lr), _p(gamma1), _p(epsilon), _p(wd)
    r, c, cw = _p(rescale_grad), _p(clip_gradient), _p(clip_weights)

    def kernel(xp: Any, w: Any, g: Any, ns: Any) -> Any:
        t = _rescaled_wd(xp, w, g, r, wd, c)
        ns[...] = (1.0 - g1) * (t * t) + g1 * ns
        return _clip_weights(xp, w - lr * (t / xp.sqrt(ns + eps)), cw)

    return _update(be, weight, grad, (n,), out, kernel)


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
    op = "rmspropalex_update"
    named = [("weight", weight), ("grad", grad), ("n", n), ("g", g), ("delta", delta)]
    be = _check_update(op, named, 5)
    lr, g1, g2, eps, wd = _p(lr), _p(gamma1), _p(gamma2), _p(epsilon), _p(wd)
    r, c, cw = _p(rescale_grad), _p(clip_gradient), _p(clip_weights)

    def kernel(xp: Any, w: Any, gr: Any, ns: Any, gs: Any, ds: Any) -> Any:
        t = _rescaled_wd(xp, w, gr, r, wd, c)
        ns[...] = (1.0 - g1) * t * t + g1 * ns
        gs[...] = (1.0 - g1) * t + g1 * gs
        ds[...] = g2 * ds - lr * t / xp.sqrt(ns - gs * gs + eps)
        return _clip_weights(xp, w + ds, cw)

    return _update(be, weight, grad, (n, g, delta), out, kernel)


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
    op = "ftrl_update"
    named = [("weight", weight), ("grad", grad), ("z", z), ("n", n)]
    be = _check_update(op, named, 4)
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

    return _update(be, weight, grad, (z, n), out, kernel, lazy=lazy)


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
    named = [("weight", weight), ("grad", grad), ("d", d), ("v", v), ("z", z)]
    be = _check_update(op, named, 5)
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

    return _update(be, weight, grad, (d, v, z), out, kernel)


# ----------------------------------------------------------------- signSGD and Signum
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
    op = "signsgd_update"
    be = _check_update(op, [("weight", weight), ("grad", grad)], 2)
    lr, wd = _p(lr), _p(wd)

    def kernel(xp: Any, w: Any, g: Any) -> Any:
        return (1.0 - lr * wd) * w - lr * _sign(xp, g)

    return _update(be, weight, grad, (), out, kernel)


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
    op = "signum_update"
    be = _check_update(op, [("weight", weight), ("grad", grad), ("mom", mom)], 3)
    lr, mu, wd, lh = _p(lr), _p(momentum), _p(wd), _p(wd_lh)
    r, c = _p(rescale_grad), _p(clip_gradient)

    def kernel(xp: Any, w: Any, g: Any, m: Any) -> Any:
        m[...] = mu * m - (1.0 - mu) * wd * w - (1.0 - mu) * _clipped(xp, g, r, c)
        return (1.0 - lr * lh) * w + lr * _sign(xp, m)

    return _update(be, weight, grad, (mom,), out, kernel)


# ----------------------------------------------------------------- LAMB
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
    op = "lamb_update_phase1"
    named = [("weight", weight), ("grad", grad), ("mean", mean), ("var", var)]
    be = _check_update(op, named, 4)
    step, wd_ = _required(op, "t", t, int), _required(op, "wd", wd, float)
    b1, b2, eps = _p(beta1), _p(beta2), _p(epsilon)
    r, c, bc = _p(rescale_grad), _p(clip_gradient), bool(bias_correction)

    def kernel(xp: Any, w: Any, g: Any, m: Any, v: Any) -> Any:
        return _lamb_direction(xp, w, g, m, v, b1, b2, eps, step, bc, wd_, r, c)

    return _update(be, weight, grad, (mean, var), out, kernel)


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
    op = "mp_lamb_update_phase1"
    named = [("weight", weight), ("grad", grad), ("mean", mean), ("var", var),
             ("weight32", weight32)]  # fmt: skip
    be = _check_update(op, named, 2, master=("mean", "var", "weight32"))
    step, wd_ = _required(op, "t", t, int), _required(op, "wd", wd, float)
    b1, b2, eps = _p(beta1), _p(beta2), _p(epsilon)
    r, c, bc = _p(rescale_grad), _p(clip_gradient), bool(bias_correction)
    ctx = weight._ctx
    bufs = _Buffers()
    with be.guard(ctx.device_id), numpy.errstate(all="ignore"):
        m, v = bufs.write(mean), bufs.write(var)
        w32, g = bufs.read(weight32), _f32(bufs.read(grad))
        res = _lamb_direction(be.xp, w32, g, m, v, b1, b2, eps, step, bc, wd_, r, c)
        result = _emit(bufs, weight32, res, out)
        bufs.done()
    return result


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


def _check_norms(op: str, r1: ArrayCore, r2: ArrayCore) -> None:
    for nm, a in (("r1", r1), ("r2", r2)):
        if len(a.shape) == 0 or a.shape[0] != 1:
            raise InvalidShapeError(f"{op}: {nm} must have shape (1,), got {tuple(a.shape)}")


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
    op = "lamb_update_phase2"
    named = [("weight", weight), ("g", g), ("r1", r1), ("r2", r2)]
    be = _arrays(op, named)
    _check_float(op, "weight", weight)
    _check_shapes(op, named[0], named[1:2])
    _check_dtypes(op, named[0], named[1:])
    _check_norms(op, r1, r2)
    lo, hi = _p(lower_bound), _p(upper_bound)

    def kernel(xp: Any, w: Any, gs: Any) -> Any:
        return w - _trust_lr(xp, r1._data, r2._data, _p(lr), lo, hi) * gs

    return _update(be, weight, g, (), out, kernel)


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
    op = "mp_lamb_update_phase2"
    named = [("weight", weight), ("g", g), ("r1", r1), ("r2", r2), ("weight32", weight32)]
    be = _arrays(op, named)
    _check_float(op, "weight", weight)
    _check_shapes(op, named[0], [named[1], named[4]])
    _check_f32(op, named[1:])
    _check_norms(op, r1, r2)
    lo, hi = _p(lower_bound), _p(upper_bound)
    ctx = weight._ctx
    bufs = _Buffers()
    with be.guard(ctx.device_id), numpy.errstate(all="ignore"):
        rate = _trust_lr(be.xp, r1._data, r2._data, _p(lr), lo, hi)
        new = bufs.read(weight32) - rate * bufs.read(g)
        result = _emit(bufs, weight, new, out)
        bufs.done()
    return result


# ----------------------------------------------------------------- LARS helpers
def multi_lars(
    lrs: ArrayT,
    weights_sum_sq: ArrayCore,
    grads_sum_sq: ArrayCore,
    wds: ArrayCore,
    eta: float,
    eps: float,
    rescale_grad: float = 1.0,
    out: ArrayCore | None = None,
    name: str | None = None,
) -> ArrayT:
    """LARS learning rates from the sums of squares of the weights and gradients (float32
    arrays of one shape, one element per weight)::

        w_norm = sqrt(weights_sum_sq)
        lr = lrs * eta * w_norm / (sqrt(grads_sum_sq) * rescale_grad + wds * w_norm + eps)

    where both sums are positive, else ``lrs``.
    """
    op = "multi_lars"
    named = [("lrs", lrs), ("weights_sum_sq", weights_sum_sq), ("grads_sum_sq", grads_sum_sq),
             ("wds", wds)]  # fmt: skip
    be = _arrays(op, named)
    if _dtype(lrs) != _F32:
        raise MXNetError(f"{op}: only float32 arrays are supported, lrs is {_dtype(lrs).name}")
    _check_shapes(op, named[0], named[1:])
    _check_dtypes(op, named[0], named[1:])
    eta_, eps_, r = _p(eta), _p(eps), _p(rescale_grad)
    ctx = lrs._ctx
    bufs = _Buffers()
    with be.guard(ctx.device_id), numpy.errstate(all="ignore"):
        xp = be.xp
        lr, wss, gss, wd = (bufs.read(a) for a in (lrs, weights_sum_sq, grads_sum_sq, wds))
        w_norm = xp.sqrt(wss)
        scaled = lr * eta_ * w_norm / (xp.sqrt(gss) * r + wd * w_norm + eps_)
        new = xp.where((w_norm > 0) & (gss > 0), scaled, lr).astype(_F32)
        result = _emit(bufs, lrs, new, out)
        bufs.done()
    return result


def multi_sum_sq(
    *data: ArrayCore,
    num_arrays: int | None = None,
    out: ArrayCore | None = None,
    name: str | None = None,
) -> Any:
    """The sum of squares of each array: a float32 array of shape ``(num_arrays,)``
    (``num_arrays``, the number of arrays given, is required, as in MXNet).

    Raises
    ------
    MXNetError
        When ``num_arrays`` is missing or is not the number of arrays, or the arrays differ in
        dtype.
    """
    op = "multi_sum_sq"
    n = _required(op, "num_arrays", num_arrays, int)
    if n < 1 or len(data) != n:
        raise MXNetError(f"{op}: num_arrays={n} but {len(data)} arrays were given")
    named = [(f"array_{i}", a) for i, a in enumerate(data)]
    be = _arrays(op, named)
    _check_dtypes(op, named[0], named[1:])
    first = data[0]
    ctx = first._ctx
    bufs = _Buffers()
    with be.guard(ctx.device_id), numpy.errstate(all="ignore"):
        xp = be.xp
        sums = []
        for a in data:
            x = bufs.read(a)
            sums.append(xp.sum(x * x, dtype=_F32).reshape(1))
        new = xp.concatenate(sums).astype(_F32)
        if out is None:
            return first._new(new, ctx)
        if not isinstance(out, ArrayCore):
            raise MXNetError(f"{op}: out must be an NDArray, got {type(out).__name__}")
        out[:] = first._new(new, ctx)
        return out


# ----------------------------------------------------------------- contrib: AdamW
def _scale(op: str, rescale_grad: Any) -> float:
    """``rescale_grad`` (an array: its first element) as a number."""
    if isinstance(rescale_grad, ArrayCore):
        if rescale_grad.size < 1:
            raise MXNetError(f"{op}: rescale_grad is an empty array")
        ctx = rescale_grad._ctx
        be = ctx._backend or ctx.backend
        return float(numpy.asarray(be.to_host(rescale_grad._data)).reshape(-1)[0])
    return _p(rescale_grad)


def _skips(scale: float) -> bool:
    """Whether an AdamW update is skipped: the rescaling factor is 0, infinite or NaN."""
    return not math.isfinite(scale) or scale == 0.0


def _unchanged(weight: Any, out: Any) -> Any:
    """A skipped update's result: ``out`` as it is, or a copy of the weight."""
    if out is not None:
        return out
    return weight.copy()


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
    op = "adamw_update"
    named = [("weight", weight), ("grad", grad), ("mean", mean), ("var", var)]
    be = _check_update(op, named, 4)
    scale = _scale(op, rescale_grad)
    if _skips(scale):
        return _unchanged(weight, out)
    lr_, eta_, b1, b2 = _p(lr), _p(eta), _p(beta1), _p(beta2)
    eps, wd_, c = _p(epsilon), _p(wd), _p(clip_gradient)

    def kernel(xp: Any, w: Any, g: Any, m: Any, v: Any) -> Any:
        return _adamw_step(xp, w, g, m, v, lr_, eta_, b1, b2, eps, wd_, scale, c, False)

    return _update(be, weight, grad, (mean, var), out, kernel)


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
    op = "mp_adamw_update"
    named = [("weight", weight), ("grad", grad), ("mean", mean), ("var", var),
             ("weight32", weight32)]  # fmt: skip
    be = _check_update(op, named, 2, master=("mean", "var", "weight32"))
    scale = _scale(op, rescale_grad)
    if _skips(scale):
        return _unchanged(weight, out)
    lr_, eta_, b1, b2 = _p(lr), _p(eta), _p(beta1), _p(beta2)
    eps, wd_, c = _p(epsilon), _p(wd), _p(clip_gradient)

    def kernel(xp: Any, w32: Any, g: Any, m: Any, v: Any) -> Any:
        return _adamw_step(xp, w32, _f32(g), m, v, lr_, eta_, b1, b2, eps, wd_, scale, c, False)

    return _update(be, weight, grad, (mean, var), out, kernel, master=weight32)


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
    stride = 5 if master else 4
    n = _groups(op, data, stride, num_weights, extra=1)
    lr_ = _per_weight(op, lrs, n, "learning rates")
    wd_ = _per_weight(op, wds, n, "weight decays")
    eta_ = _per_weight(op, etas, n, "learning rate schedule multipliers")
    rescale = data[-1]
    if isinstance(rescale, ArrayCore):
        _arrays(op, [("weight_0", data[0]), ("rescale_grad", rescale)])
    scale = _scale(op, rescale)
    body = data[:-1]
    names = ["weight", "grad", "mean", "var"] + (["weight32"] if master else [])
    f32 = names[2:]
    if _skips(scale):
        _check_groups(op, body, n, names, 2, f32)
        return out if out is not None else [body[i * stride].copy() for i in range(n)]
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


def _zip_lists(op: str, lists: Sequence[tuple[str, Any]], size: int) -> list[Any]:
    n = int(size) if size else len(lists[0][1])
    for nm, lst in lists:
        if not isinstance(lst, list | tuple):
            raise MXNetError(f"{op}: {nm} must be a list of NDArrays, got {type(lst).__name__}")
        if len(lst) != n:
            counts = ", ".join(f"{k} {len(v)}" for k, v in lists)
            raise MXNetError(f"{op}: expects {n} arrays in each list, got {counts}")
    return [a for group in zip(*(lst for _, lst in lists), strict=True) for a in group]


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
    op = "multi_adamw_update"
    lists = [("weights", weights), ("grads", grads), ("mean", mean), ("var", var)]
    flat = _zip_lists(op, lists, size)
    return _multi_adamw(op, flat + [rescale_grad], lrs, wds, etas, beta1, beta2, epsilon,
                        clip_gradient, len(flat) // 4, out, False)  # fmt: skip


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
    op = "multi_mp_adamw_update"
    lists = [("weights", weights), ("grads", grads), ("mean", mean), ("var", var),
             ("weights32", weights32)]  # fmt: skip
    flat = _zip_lists(op, lists, size)
    return _multi_adamw(op, flat + [rescale_grad], lrs, wds, etas, beta1, beta2, epsilon,
                        clip_gradient, len(flat) // 5, out, True)  # fmt: skip


# ----------------------------------------------------------------- contrib: Group AdaGrad
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
    be = _arrays(op, named)
    _check_float(op, "weight", weight)
    _check_shapes(op, named[0], named[1:2])
    _check_dtypes(op, named[0], named[1:])
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
