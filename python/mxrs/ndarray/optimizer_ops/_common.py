"""What the optimizer update operators share: the checks of their inputs, the runner that
applies an update rule to the raw buffers (the whole arrays, the rows of a ``row_sparse``
gradient, or a float32 master copy), the splitting of a ``multi_*`` / ``preloaded_multi_*``
call's flat inputs into per-weight groups, and the arithmetic of gradient clipping."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import numpy

from ...base import ContextError, InvalidShapeError, MXNetError
from ..core.array import ArrayCore, check_writable

_F32 = numpy.dtype(numpy.float32)
Kernel = Callable[..., Any]
#: An input of an operator with the name its messages give it.
Named = tuple[str, Any]


# ----------------------------------------------------------------- checks
def _p(value: Any) -> float:
    """A hyper-parameter as MXNet holds it: a float32 number."""
    return float(numpy.float32(value))


def _dtype(a: ArrayCore) -> numpy.dtype[Any]:
    return numpy.dtype(a.dtype)


def _backend(a: ArrayCore) -> Any:
    ctx = a._ctx
    return ctx._backend or ctx.backend


def _host(a: ArrayCore) -> Any:
    """The values of ``a`` as a flat host (numpy) array."""
    return numpy.asarray(_backend(a).to_host(a._data)).reshape(-1)


def _arrays(op: str, named: Sequence[Named]) -> Any:
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


def _check_shapes(op: str, ref: Named, named: Sequence[Named]) -> None:
    rname, r = ref
    for name, a in named:
        if tuple(a.shape) != tuple(r.shape):
            raise InvalidShapeError(
                f"{op}: {name} has shape {tuple(a.shape)} but {rname} has shape "
                f"{tuple(r.shape)}; they must match"
            )


def _check_dtypes(op: str, ref: Named, named: Sequence[Named]) -> None:
    rname, r = ref
    for name, a in named:
        if _dtype(a) != _dtype(r):
            raise MXNetError(
                f"{op}: {name} is {_dtype(a).name} but {rname} is {_dtype(r).name}; they "
                "must have one dtype"
            )


def _check_f32(op: str, named: Sequence[Named]) -> None:
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
    named: Sequence[Named],
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


def _check_weighted(
    op: str, named: Sequence[Named], same_shape: Sequence[Named], f32: Sequence[Named] | None
) -> Any:
    """The checks of an update whose other inputs are not all of the weight's shape: NDArrays
    on one context, a floating weight (``named[0]``) of the shape of ``same_shape``, and the
    ``f32`` inputs float32 or (``f32`` None) every input of the weight's dtype. Returns the
    backend."""
    be = _arrays(op, named)
    _check_float(op, named[0][0], named[0][1])
    _check_shapes(op, named[0], same_shape)
    if f32 is None:
        _check_dtypes(op, named[0], named[1:])
    else:
        _check_f32(op, f32)
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


@contextmanager
def _computing(be: Any, a: ArrayCore) -> Iterator[_Buffers]:
    """Compute on the device of ``a`` (floating point warnings off) with a fresh
    :class:`_Buffers`, whose writes reach the arrays when the block ends."""
    bufs = _Buffers()
    with be.guard(a._ctx.device_id), numpy.errstate(all="ignore"):
        yield bufs
        bufs.done()


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


def _f32(g: Any) -> Any:
    return g.astype(_F32, copy=False)


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
    kernel's ``w``, and the kernel's ``g`` is then float32. Returns the new weight, in ``out``
    when given."""
    with _computing(be, weight) as bufs:
        if lazy:
            return _lazy_update(be, bufs, weight, grad, states, out, kernel, master)
        st = [bufs.write(s) for s in states]
        g = bufs.read(grad)
        if master is None:
            new = kernel(be.xp, bufs.read(weight), g, *st)
        else:
            w = bufs.write(master)
            new = kernel(be.xp, w, _f32(g), *st)
            w[...] = new
        return _emit(bufs, weight, new, out)


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
        rows = kernel(be.xp, src[idx], vals if master is None else _f32(vals), *blocks)
        for b, block in zip(sbufs, blocks, strict=True):
            b[idx] = block
        if master is not None:
            src[idx] = rows
        wbuf[idx] = rows.astype(wbuf.dtype, copy=False)
    if in_place:
        return out
    return _emit(bufs, weight, wbuf, out)


def _lazy_ok(grad: Any, weight: Any, states: Sequence[Any], lazy_update: bool) -> bool:
    """MXNet's lazy update: a row_sparse gradient, a dense or row_sparse weight and every state
    in the weight's storage type."""
    return (
        bool(lazy_update)
        and _is_rsp(grad)
        and weight.stype in ("default", "row_sparse")
        and all(s.stype == weight.stype for s in states)
    )


class _Elementwise:
    """One elementwise update's arrays (the weight, the gradient, the named ``states`` and for
    an ``mp_*`` operator the float32 master copy ``weight32``), checked as MXNet checks them:
    one context and shape, a floating weight, the gradient and states of the weight's dtype
    or, with a master copy, the states and the master copy float32.

    :meth:`run` applies an update rule written for the float32 (or any one-dtype) case; with a
    master copy it runs on ``weight32`` (updated in place) with a float32 gradient, and the
    result is cast to the weight's dtype."""

    def __init__(
        self,
        op: str,
        weight: Any,
        grad: Any,
        states: Sequence[Named] = (),
        weight32: Any = None,
    ) -> None:
        named = [("weight", weight), ("grad", grad), *states]
        if weight32 is None:
            self.backend = _check_update(op, named, len(named))
        else:
            named.append(("weight32", weight32))
            self.backend = _check_update(op, named, 2, master=[n for n, _ in named[2:]])
        self.weight, self.grad, self.weight32 = weight, grad, weight32
        self.states = [a for _, a in states]

    def lazy(self, lazy_update: bool) -> bool:
        """Whether MXNet updates only the rows of a ``row_sparse`` gradient (never on a master
        copy, where ``lazy_update`` has no effect)."""
        return self.weight32 is None and _lazy_ok(self.grad, self.weight, self.states, lazy_update)

    def run(self, out: Any, rule: Kernel, lazy: bool = False) -> Any:
        """``rule(xp, w, g, *states)`` applied as :func:`_update` does."""
        return _update(
            self.backend, self.weight, self.grad, self.states, out, rule, lazy, self.weight32
        )


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


def _preloaded(op: str, data: Sequence[Any], n: int) -> tuple[list[float], list[float]]:
    """The learning rates and weight decays held by the two trailing float32 arrays of a
    ``preloaded_multi_*`` call."""
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
        vals.append([float(v) for v in _host(a)])
    return vals[0], vals[1]


def _split(
    op: str,
    data: Sequence[Any],
    stride: int,
    num_weights: Any,
    lrs: Any,
    wds: Any,
    extra: int = 0,
) -> tuple[int, list[float], list[float], Sequence[Any]]:
    """Split the flat inputs of a ``multi_*`` call (``stride`` arrays per weight, then
    ``extra`` trailing ones): the number of weights, one learning rate and weight decay per
    weight and the per-weight inputs. With ``lrs`` None (a ``preloaded_multi_*`` call) the
    rates and decays are the two trailing float32 arrays."""
    if lrs is None:
        n = _groups(op, data, stride, num_weights, extra=2)
        lr_, wd_ = _preloaded(op, data, n)
        return n, lr_, wd_, data[:-2]
    n = _groups(op, data, stride, num_weights, extra)
    lr_ = _per_weight(op, lrs, n, "learning rates")
    wd_ = _per_weight(op, wds, n, "weight decays")
    return n, lr_, wd_, data[: len(data) - extra]


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
        states, w32 = (grp[2:-1], grp[-1]) if master else (grp[2:], None)
        res.append(_update(be, grp[0], grp[1], states, o, kern, master=w32))
    return out if out is not None else res


# ----------------------------------------------------------------- shared arithmetic
def _clipped(xp: Any, g: Any, rescale: float, clip: float) -> Any:
    """``clip(rescale * g)`` (a new array), clipped only when ``clip >= 0``."""
    t = g * rescale
    if clip >= 0:
        xp.clip(t, -clip, clip, out=t)
    return t


def _rescaled_wd(xp: Any, w: Any, g: Any, rescale: float, wd: float, clip: float) -> Any:
    """``clip(rescale * g + wd * w)`` (a new array)."""
    t = rescale * g + wd * w
    if clip >= 0:
        xp.clip(t, -clip, clip, out=t)
    return t


def _sign(xp: Any, a: Any) -> Any:
    """-1, 0 or 1 by the sign of each element (0 for NaN), as MXNet's sign."""
    return (a > 0).astype(a.dtype) - (a < 0).astype(a.dtype)
