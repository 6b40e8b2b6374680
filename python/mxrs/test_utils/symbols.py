"""Running a Symbol once on NumPy inputs; comparing two Symbols' graphs."""

from __future__ import annotations

import json
from typing import Any

from ..context import Context
from ..ndarray import array
from .arrays import default_context

__all__ = ["simple_forward", "same_symbol_structure"]


def simple_forward(sym, ctx: Context | None = None, is_train: bool = False, **inputs: Any):
    """Run ``sym`` forward once.

    Parameters
    ----------
    sym : Symbol
    ctx : Context, optional
        Defaults to :func:`default_context`.
    is_train : bool, default False
    **inputs
        Each argument's value (NumPy arrays) by name.

    Returns
    -------
    numpy.ndarray or list of numpy.ndarray
        The output, or the list of outputs of a symbol with several.
    """
    ctx = ctx or default_context()
    args = {k: array(v) for k, v in inputs.items()}
    executor = sym.bind(ctx, args=args)
    executor.forward(is_train=is_train)
    outputs = [x.asnumpy() for x in executor.outputs]
    return outputs[0] if len(outputs) == 1 else outputs


def same_symbol_structure(sym1, sym2) -> bool:
    """Whether the nodes of ``sym1`` and ``sym2`` (as their JSON lists them, compared up to
    the shorter list) run the same operators in the same order."""
    nodes1 = json.loads(sym1.tojson())["nodes"]
    nodes2 = json.loads(sym2.tojson())["nodes"]
    return all(n1["op"] == n2["op"] for n1, n2 in zip(nodes1, nodes2, strict=False))
