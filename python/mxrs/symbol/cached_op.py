"""``mx.nd.CachedOp``: a symbol graph prepared once and called like a function on NDArrays,
as MXNet's cached operators are (its hybridized Gluon blocks run on them)."""

from __future__ import annotations

from typing import Any

from ..base import MXNetError
from .fusion import fuse
from .graph import Graph
from .opinfo import compile_node

__all__ = ["CachedOp"]


class CachedOp:
    """``CachedOp(sym)(*inputs)``: the outputs of ``sym`` for ``inputs`` given in the order of
    ``sym.list_inputs()`` (arguments and auxiliary states as the graph reads them). One NDArray,
    or a list for several outputs. Under ``autograd.record()`` the computation is recorded, so
    gradients flow back to the inputs.

    Parameters
    ----------
    sym : Symbol
        The graph.
    flags : sequence of (str, str), optional
        MXNet's engine flags (``static_alloc``...): accepted, no effect.
    """

    def __init__(self, sym: Graph, flags: Any = ()) -> None:
        self._sym = sym
        self._names = sym.list_inputs()
        plan = [(node, None if node.op is None else compile_node(node)) for node in sym._nodes()]
        self._plan = fuse(plan, sym._outputs)

    def __call__(self, *args: Any, out: Any = None, **kwargs: Any) -> Any:
        """Run the graph on ``args``.

        Raises
        ------
        MXNetError
            When the number of inputs is not the graph's.
        """
        if len(args) != len(self._names):
            raise MXNetError(
                f"CachedOp: the graph takes {len(self._names)} inputs {self._names}, got "
                f"{len(args)}"
            )
        named = dict(zip(self._names, args, strict=True))
        values: dict[tuple[int, int], Any] = {}
        for node, call in self._plan:
            if call is None:
                values[(id(node), 0)] = named[node.name]
                continue
            for i, o in enumerate(call([values[(id(c), i)] for c, i in node.inputs])):
                values[(id(node), i)] = o
        outs = [values[(id(n), i)] for n, i in self._sym._outputs]
        if out is not None:
            targets = out if isinstance(out, list | tuple) else [out]
            for t, o in zip(targets, outs, strict=True):
                t[:] = o
            return out
        return outs[0] if len(outs) == 1 else outs
