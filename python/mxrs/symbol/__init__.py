"""The symbolic API (``mx.sym``, ``mx.symbol``): graphs of operators, bound and run later.

Layout
------
opinfo
    What each operator's inputs, outputs and auxiliary states are and how a node runs (every
    ``mx.nd`` operator is a symbol operator).
graph
    :class:`Node` and the graph order.
json_io
    MXNet's JSON format.
infer
    Shape and dtype inference.
executor
    ``Executor``: a bound symbol, run with the NDArray operators and autograd.
symbol
    :class:`Symbol`, ``Variable``, ``Group``, ``load``/``load_json``.
ops
    The ``mx.sym`` functions that make operator nodes.
from_autograd
    ``autograd.get_symbol``: the Symbol of a computation autograd recorded.

Examples
--------
>>> data = mx.sym.Variable("data")
>>> net = mx.sym.FullyConnected(data, num_hidden=10, name="fc1")
>>> net.list_arguments()
['data', 'fc1_weight', 'fc1_bias']
"""

from typing import Any

from . import cached_op as cached_op
from . import contrib as contrib
from . import from_autograd as from_autograd  # installs autograd.get_symbol
from . import image as image
from . import linalg as linalg
from . import ops
from . import random as random
from . import sparse as sparse
from .executor import Executor
from .opinfo import has_op
from .symbol import Group, Symbol, Variable, load, load_json, var

Symbol._make_function = ops.make_function

__all__ = ["Symbol", "Variable", "var", "Group", "load", "load_json", "Executor", "maximum",
           "minimum", "power", "pow"]  # fmt: skip


def _with_number(op: str, scalar: str, rscalar: str, hint: str) -> Any:
    def fn(lhs: Any, rhs: Any, name: str | None = None, attr: Any = None) -> Symbol:
        if isinstance(lhs, Symbol) and isinstance(rhs, Symbol):
            return ops.create(op, [lhs, rhs], {}, name=name, attr=attr, hint=hint)
        if isinstance(lhs, Symbol):
            return ops.create(scalar, [lhs], {"scalar": rhs}, name=name, attr=attr,
                          hint=scalar.replace("_scalar", "scalar"))  # fmt: skip
        if isinstance(rhs, Symbol):
            return ops.create(rscalar, [rhs], {"scalar": lhs}, name=name, attr=attr,
                          hint=rscalar.replace("_scalar", "scalar"))  # fmt: skip
        raise TypeError(f"{hint.strip('_')}: at least one operand must be a Symbol")

    fn.__name__ = hint.strip("_")
    fn.__doc__ = f"``{op}`` of two symbols, or ``{scalar}`` of a symbol and a number."
    return fn


maximum = _with_number("_maximum", "_maximum_scalar", "_maximum_scalar", "_maximum")
minimum = _with_number("_minimum", "_minimum_scalar", "_minimum_scalar", "_minimum")
power = pow = _with_number("_power", "_power_scalar", "_rpower_scalar", "_power")


def __getattr__(name: str) -> Any:
    """``mx.sym.<operator>``: the function that makes that operator's nodes."""
    if name.startswith("__") or not has_op(name):
        raise AttributeError(f"module 'mxrs.symbol' has no attribute {name!r}")
    return ops.make_function(name)
