"""Partial shapes: MXNet 1.x's 0 is an unknown dimension.

A variable's ``__shape__`` or a source operator's ``shape`` (``mx.sym.zeros(shape=(0, 100))``,
the begin state of an RNN cell) may leave dimensions open, usually the batch size. Shape
inference then unifies what the operators around such a node know (:func:`unify`) and lets
known outputs flow back to their inputs (:func:`refine_inputs`).
"""

from __future__ import annotations

from .graph import Node
from .opinfo import parse_attr

__all__ = ["is_partial", "partial_source", "refine_inputs", "unify"]

Shape = tuple[int, ...]

#: operators whose output's first (batch) dimension is their data's
_BATCH_KEEPING = {"FullyConnected", "Convolution", "Deconvolution", "Pooling"}


def partial_source(node: Node) -> bool:
    """Whether ``node`` leaves dimensions open: a variable's ``__shape__`` or an input-less
    operator's ``shape`` with a 0."""
    key = "__shape__" if node.op is None else "shape"
    if (node.op is not None and node.inputs) or key not in node.attrs:
        return False
    shape = parse_attr(node.attrs[key])
    return isinstance(shape, list | tuple) and 0 in shape


def is_partial(shape: Shape | None) -> bool:
    """Whether ``shape`` is unknown (None) or has an unknown (0) dimension."""
    return shape is None or 0 in shape


def unify(a: Shape | None, b: Shape | None) -> Shape | None:
    """The shape both partial shapes ``a`` and ``b`` describe (None: unknown).

    Raises
    ------
    ValueError
        When they differ in rank or in a known dimension.
    """
    if a is None or b is None:
        return a if b is None else b
    if len(a) != len(b):
        raise ValueError(f"{tuple(a)} and {tuple(b)} differ in rank")
    out = []
    for x, y in zip(a, b, strict=True):
        if x != y and x != 0 and y != 0:
            raise ValueError(f"{tuple(a)} and {tuple(b)} differ")
        out.append(x or y)
    return tuple(out)


def refine_inputs(
    op: str, ins: list[Shape | None], outs: list[Shape | None], elementwise: bool
) -> list[Shape | None]:
    """``ins`` completed from what is known of the outputs ``outs``: an ``elementwise``
    operator's inputs of the output's rank are the output's shape; a fully connected,
    convolution or pooling output gives its data its batch size."""
    out = outs[0] if outs else None
    if out is None or not ins:
        return ins
    ins = list(ins)
    if elementwise:
        for k, s in enumerate(ins):
            if s is None or (len(s) == len(out) and is_partial(s)):
                ins[k] = unify(s, out)
    elif op in _BATCH_KEEPING and ins[0] is not None and ins[0][0] == 0 and out[0] != 0:
        ins[0] = (out[0],) + tuple(ins[0][1:])
    return ins
