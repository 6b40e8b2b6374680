"""``mx.sym.sparse``: the operators MXNet lists for sparse inputs, as symbols.

Executors hold every array densely, so a graph built from these runs as MXNet's would with
dense storage (the values agree; the storage types of Variables are kept as attributes).
"""

from __future__ import annotations

from typing import Any

from . import ops
from .opinfo import has_op

#: The operators of MXNet's ``mx.sym.sparse`` that are plain operators here.
_NAMES = frozenset(
    {
        "dot",
        "elemwise_add",
        "elemwise_sub",
        "elemwise_mul",
        "Embedding",
        "FullyConnected",
        "add_n",
        "cast_storage",
        "retain",
        "sum",
        "mean",
        "square",
        "sqrt",
        "abs",
        "sign",
        "relu",
        "negative",
        "clip",
        "zeros_like",
        "where",
        "LinearRegressionOutput",
        "LogisticRegressionOutput",
        "MAERegressionOutput",
    }
)


def __getattr__(name: str) -> Any:
    """``mx.sym.sparse.<operator>``: the function that makes that operator's nodes."""
    if name not in _NAMES or not has_op(name):
        raise AttributeError(f"module 'mxrs.symbol.sparse' has no attribute {name!r}")
    return ops.make_function(name)
