"""``mx.sym.contrib``: the symbolic forms of ``mx.nd.contrib``'s operators, as nodes of MXNet's
``_contrib_<name>`` operators (so their JSON loads in MXNet); ``isnan``, ``isinf``,
``isfinite`` and ``rand_zipfian`` are composed of other operators, as MXNet composes them;
the AdamW updates make nodes of MXNet's ``_adamw_update`` family, their ``rescale_grad`` a
symbol (a number becomes a ``full`` node).
Control flow (``foreach``, ``cond``, ``while_loop``) runs Python callables and exists
imperatively only."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..base import MXNetError
from ..ndarray.contrib.ops import check_zipfian
from .opinfo import _CONTRIB_NOT_OPS, has_op
from .ops import make_function
from .symbol import Symbol


def isnan(data: Symbol) -> Symbol:
    """1 where ``data`` is NaN, else 0."""
    return data != data


def isinf(data: Symbol) -> Symbol:
    """1 where ``data`` is infinite, else 0."""
    return make_function("abs")(data) == np.inf


def isfinite(data: Symbol) -> Symbol:
    """1 where ``data`` is neither NaN nor infinite, else 0."""
    return (make_function("abs")(data) != np.inf) * (data == data)


def rand_zipfian(
    true_classes: Symbol, num_sampled: int, range_max: int, ctx: Any = None
) -> tuple[Symbol, Symbol, Symbol]:
    """``(sampled_classes, expected_count_true, expected_count_sampled)``: ``num_sampled``
    classes of ``[0, range_max)`` drawn by the log-uniform (Zipfian) law and the expected
    counts of ``true_classes`` and of the sampled ones (float64), as
    :func:`mxrs.nd.contrib.rand_zipfian` computes them.

    Raises
    ------
    MXNetError
        For ``num_sampled`` or ``range_max`` below 1.
    """
    check_zipfian(num_sampled, range_max)
    log_range = math.log(range_max + 1)
    uniform = make_function("random_uniform", "uniform")
    cast, log, exp = make_function("Cast"), make_function("log"), make_function("exp")
    draw = uniform(low=0.0, high=log_range, shape=(num_sampled,), dtype="float64")
    sampled = cast(exp(draw) - 1, dtype="int64") % range_max

    def expected(classes: Symbol) -> Symbol:
        c = cast(classes, dtype="float64")
        return log((c + 2.0) / (c + 1.0)) / log_range * num_sampled

    return sampled, expected(true_classes), expected(sampled)


def _scale_symbol(rescale_grad: Any) -> Symbol:
    if isinstance(rescale_grad, Symbol):
        return rescale_grad
    return make_function("full")(shape=(1,), val=float(rescale_grad))


def adamw_update(
    weight: Symbol, grad: Symbol, mean: Symbol, var: Symbol, rescale_grad: Any, lr: float,
    eta: float, name: str | None = None, attr: Any = None, **kwargs: Any,
) -> Symbol:  # fmt: skip
    """A ``_adamw_update`` node: :func:`mxrs.nd.contrib.adamw_update` of symbols
    (``rescale_grad`` a symbol or a number)."""
    kwargs.pop("out", None)
    args = [weight, grad, mean, var, _scale_symbol(rescale_grad)]
    return make_function("_adamw_update")(*args, lr=lr, eta=eta, name=name, attr=attr, **kwargs)


def mp_adamw_update(
    weight: Symbol, grad: Symbol, mean: Symbol, var: Symbol, weight32: Symbol, rescale_grad: Any,
    lr: float, eta: float, name: str | None = None, attr: Any = None, **kwargs: Any,
) -> Symbol:  # fmt: skip
    """A ``_mp_adamw_update`` node: :func:`mxrs.nd.contrib.mp_adamw_update` of symbols."""
    kwargs.pop("out", None)
    args = [weight, grad, mean, var, weight32, _scale_symbol(rescale_grad)]
    fn = make_function("_mp_adamw_update")
    return fn(*args, lr=lr, eta=eta, name=name, attr=attr, **kwargs)


def _multi_adamw(
    op: str, lists: list[list[Symbol]], rescale_grad: Any, size: int, **kwargs: Any
) -> Symbol:
    n = int(size) if size else len(lists[0])
    if any(len(lst) != n for lst in lists):
        raise MXNetError(
            f"{op[1:]}: expects {n} symbols in each list, got {[len(x) for x in lists]}"
        )
    flat = [s for group in zip(*lists, strict=True) for s in group]
    kwargs.pop("out", None)
    return make_function(op)(*flat, _scale_symbol(rescale_grad), num_weights=n, **kwargs)


def multi_adamw_update(
    weights: list[Symbol], grads: list[Symbol], mean: list[Symbol], var: list[Symbol],
    rescale_grad: Any, lrs: Any, wds: Any, etas: Any, name: str | None = None, size: int = 0,
    **kwargs: Any,
) -> Symbol:  # fmt: skip
    """A ``_multi_adamw_update`` node (one output per weight): the symbolic form of
    :func:`mxrs.nd.contrib.multi_adamw_update`."""
    lists = [list(weights), list(grads), list(mean), list(var)]
    return _multi_adamw("_multi_adamw_update", lists, rescale_grad, size, lrs=lrs, wds=wds,
                        etas=etas, name=name, **kwargs)  # fmt: skip


def multi_mp_adamw_update(
    weights: list[Symbol], grads: list[Symbol], mean: list[Symbol], var: list[Symbol],
    weights32: list[Symbol], rescale_grad: Any, lrs: Any, wds: Any, etas: Any,
    name: str | None = None, size: int = 0, **kwargs: Any,
) -> Symbol:  # fmt: skip
    """A ``_multi_mp_adamw_update`` node: the symbolic form of
    :func:`mxrs.nd.contrib.multi_mp_adamw_update`."""
    lists = [list(weights), list(grads), list(mean), list(var), list(weights32)]
    return _multi_adamw("_multi_mp_adamw_update", lists, rescale_grad, size, lrs=lrs, wds=wds,
                        etas=etas, name=name, **kwargs)  # fmt: skip


def __getattr__(name: str) -> Any:
    """``mx.sym.contrib.<operator>``."""
    if name in _CONTRIB_NOT_OPS:
        raise MXNetError(
            f"mx.sym.contrib.{name}: symbolic control flow is not supported; use "
            f"mx.nd.contrib.{name} imperatively (or in a non-hybridized Gluon block)"
        )
    op = "_contrib_" + name
    if name.startswith("_") or not has_op(op):
        raise AttributeError(f"module 'mxrs.symbol.contrib' has no attribute {name!r}")
    return make_function(op, name.lower())
