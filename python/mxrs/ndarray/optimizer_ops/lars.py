"""LARS's helper operators: ``multi_sum_sq`` (the sums of squares of several arrays) and
``multi_lars`` (the layer-wise learning rates from those sums)."""

from __future__ import annotations

from typing import Any

from ...base import MXNetError
from ..core.array import ArrayCore, ArrayT
from ._common import (
    _F32,
    _arrays,
    _check_dtypes,
    _check_shapes,
    _computing,
    _dtype,
    _emit,
    _p,
    _required,
)


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
    with _computing(be, lrs) as bufs:
        xp = be.xp
        lr, wss, gss, wd = (bufs.read(a) for a in (lrs, weights_sum_sq, grads_sum_sq, wds))
        w_norm = xp.sqrt(wss)
        scaled = lr * eta_ * w_norm / (xp.sqrt(gss) * r + wd * w_norm + eps_)
        new = xp.where((w_norm > 0) & (gss > 0), scaled, lr).astype(_F32)
        return _emit(bufs, lrs, new, out)


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
    with _computing(be, first) as bufs:
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
