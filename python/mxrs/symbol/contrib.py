"""``mx.sym.contrib``: the symbolic forms of ``mx.nd.contrib``'s operators, as nodes of MXNet's
``_contrib_<name>`` operators (so their JSON loads in MXNet); ``isnan``, ``isinf`` and
``isfinite`` are composed of other operators, as MXNet composes them. Control flow
(``foreach``, ``cond``, ``while_loop``) runs Python callables and exists imperatively only."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..base import MXNetError
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
