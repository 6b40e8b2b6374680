"""``autograd.get_symbol``: the computation autograd recorded behind an NDArray, as a Symbol.

The tape holds each recorded operation as a primitive op object with its input NDArrays and
keyword attributes (``ndarray.core.op.apply``). Walking it back from the array gives the graph:
arrays marked with ``attach_grad`` become variables ``var0``, ``var1``..., other arrays that
were never computed under ``record()`` become ``null0``, ``null1``..., and operations become
nodes ``node_0``, ``node_1``..., numbered in graph order, as MXNet names them. Arithmetic and the
common operators get MXNet's operator names (``broadcast_mul``, ``_mul_scalar``, ``exp``...),
so such a symbol binds and runs; any other primitive keeps its mxrs name and its attributes as
given to it, which describes the computation but may not bind.

The tape sits below the symbol package and does not import it: this module installs
:func:`get_symbol` into ``autograd`` (``autograd._install_symbol_builder``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from .. import autograd
from ..base import MXNetError
from .graph import Node
from .symbol import Symbol

if TYPE_CHECKING:
    from ..ndarray import NDArray

__all__ = ["get_symbol"]

#: MXNet's operator for an mxrs primitive (by class name): array-array arithmetic broadcasts
_BINARY = {
    "_Add": "broadcast_add", "_Sub": "broadcast_sub", "_Mul": "broadcast_mul",
    "_Div": "broadcast_div", "_Pow": "broadcast_power", "_Maximum": "broadcast_maximum",
    "_Minimum": "broadcast_minimum", "_Mod": "broadcast_mod",
}  # fmt: skip
#: array-number arithmetic: the number is the ``scalar`` attribute
_SCALAR = {
    "_AddS": "_plus_scalar", "_MulS": "_mul_scalar", "_RSubS": "_rminus_scalar",
    "_DivS": "_div_scalar", "_DivIntS": "_div_scalar", "_RDivS": "_rdiv_scalar",
    "_PowS": "_power_scalar", "_RPowS": "_rpower_scalar", "_MaxS": "_maximum_scalar",
    "_MinS": "_minimum_scalar", "_ModS": "_mod_scalar", "_RModS": "_rmod_scalar",
}  # fmt: skip
#: comparisons, by the name of the Python function the primitive applies
_COMPARE = {"_eq": "equal", "_ne": "not_equal", "_gt": "greater", "_ge": "greater_equal",
            "_lt": "lesser", "_le": "lesser_equal"}  # fmt: skip
#: other primitives whose MXNet operator is not their lower-cased name
_OTHER = {
    "_FC": "FullyConnected", "_Conv": "Convolution", "_Deconv": "Deconvolution",
    "_Pool": "Pooling", "_GlobalPool": "Pooling", "_BatchNorm": "BatchNorm",
    "_LayerNorm": "LayerNorm", "_Dropout": "Dropout", "_Leaky": "LeakyReLU",
    "_Softmax": "softmax", "_LogSoftmax": "log_softmax", "_SoftmaxOutput": "SoftmaxOutput",
    "_MakeLoss": "MakeLoss", "_BlockGrad": "BlockGrad", "_Identity": "_copy",
    "_Reshape": "Reshape", "_Concat": "Concat", "_Split": "SliceChannel", "_Flip": "reverse",
    "_BroadcastTo": "broadcast_to", "_Neg": "negative", "_Dot": "dot", "_BatchDot": "batch_dot",
    "_Cast": "Cast", "_OneHot": "one_hot",
}  # fmt: skip
#: attributes whose MXNet name differs, by primitive
_RENAME = {
    "_Concat": {"axis": "dim"},
    "_Split": {"num": "num_outputs", "squeeze": "squeeze_axis"},
    "_Sum": {"axes": "axis"},
    "_NanSum": {"axes": "axis"},
    "_Mean": {"axes": "axis"},
    "_Prod": {"axes": "axis"},
}


def _attr(value: Any) -> str | None:
    """An attribute as MXNet's string, None for what a graph cannot hold (arrays,
    functions)."""
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, (bool, int, float, str)):
        return str(value)
    if isinstance(value, (list, tuple)) and all(isinstance(v, (int, float)) for v in value):
        return str(tuple(value))
    if isinstance(value, (np.dtype, type)):
        try:
            return np.dtype(value).name
        except TypeError:
            return None
    return None


def _describe(op: Any) -> tuple[str, dict[str, str]]:
    """The MXNet operator name and string attributes of the recorded primitive ``op``."""
    cls = type(op).__name__
    attrs = dict(getattr(op, "attrs", None) or {})
    if cls in _BINARY:
        return _BINARY[cls], {}
    if cls in _SCALAR:
        return _SCALAR[cls], {"scalar": str(float(attrs.get("s", 0)))}
    if cls in ("_Compare", "_CompareS"):
        fn = getattr(attrs.get("fn"), "__name__", "")
        name = _COMPARE.get(fn, fn.strip("_"))
        if cls == "_Compare":
            return f"broadcast_{name}", {}
        return f"_{name}_scalar", {"scalar": str(float(attrs.get("s", 0)))}
    name = _OTHER.get(cls, cls.lstrip("_").lower())
    rename = _RENAME.get(cls, {})
    out: dict[str, str] = {}
    for k, v in attrs.items():
        s = _attr(v)
        if s is not None:
            out[rename.get(str(k), str(k))] = s
    if cls == "_Concat":
        out["num_args"] = str(len(op.inputs))
    return name, out


def get_symbol(x: NDArray) -> Symbol:
    """The Symbol of the computation recorded (inside ``autograd.record()``) that produced
    ``x``; an array marked with ``attach_grad`` is a lone variable.

    Raises
    ------
    MXNetError
        When ``x`` is neither recorded nor a marked variable.
    """
    if x._node is None and x._grad is None:
        raise MXNetError(
            "NDArray is not part of a computation graph. Did you forget to turn on recording?"
        )
    ops: dict[int, Node] = {}
    leaves: dict[int, Node] = {}
    counts = {"var": 0, "null": 0, "node_": 0}

    def name(kind: str) -> str:
        n = counts[kind]
        counts[kind] = n + 1
        return f"{kind}{n}"

    def leaf(a: Any) -> Node:
        node = leaves.get(id(a))
        if node is None:
            node = leaves[id(a)] = Node(None, name("var" if a._grad is not None else "null"),
                                        {}, [])  # fmt: skip
        return node

    def entry(a: Any) -> tuple[Node, int]:
        return (ops[id(a._node)], a._oidx or 0) if a._node is not None else (leaf(a), 0)

    # inputs before their users (depth first, inputs left to right), as MXNet orders graphs
    stack: list[tuple[Any, bool]] = [(x._node, False)] if x._node is not None else []
    while stack:
        op, ready = stack.pop()
        if id(op) in ops:
            continue
        if op.inputs is None:
            raise MXNetError(
                "autograd.get_symbol: the graph was freed by backward; record again or pass "
                "retain_graph=True to backward"
            )
        if not ready:
            stack.append((op, True))
            for a in reversed(op.inputs):
                if a._node is not None and id(a._node) not in ops:
                    stack.append((a._node, False))
            continue
        inputs = [entry(a) for a in op.inputs]
        op_name, attrs = _describe(op)
        ops[id(op)] = Node(op_name, name("node_"), attrs, inputs)
    return Symbol([entry(x)])


autograd._install_symbol_builder(get_symbol)
