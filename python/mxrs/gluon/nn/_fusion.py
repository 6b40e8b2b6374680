"""The graph pass of a hybridized ``HybridSequential``: adjacent layers computed as one operator.

A hybridized block promises that its output depends on its inputs alone, which lets its
container compute neighbouring layers together when the result is the same, as MXNet's graph
passes do: a :class:`BatchNorm` followed by ``Activation('relu')`` runs as
``mx.nd.contrib.BatchNormWithReLU`` (on oneDNN, one pass over the data and a one-byte mask
instead of a second pass and a separate ReLU gradient). A residual unit whose body ends in a
``BatchNorm`` computes ``relu(body(x) + shortcut)`` with the sum and the ReLU in that
BatchNorm's own pass (:func:`residual_end`). A layer with forward hooks is never fused (its
hooks must see its own output), and a graph built from Symbols (``export``) keeps the layers as
they are.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any

from ...base import MXNetError
from ..block import Block
from .activations import Activation
from .norm_layers import BatchNorm

__all__ = ["residual_end", "steps"]


def steps(children: Iterable[Block]) -> Iterator[Callable[..., Any]]:
    """What to call in order in place of ``children``: the blocks themselves, but a BatchNorm
    and the ``Activation('relu')`` after it become one call."""
    blocks = list(children)
    i = 0
    while i < len(blocks):
        block = blocks[i]
        nxt = blocks[i + 1] if i + 1 < len(blocks) else None
        if isinstance(block, BatchNorm) and nxt is not None and _bn_relu(block, nxt):
            yield _with_relu(block)
            i += 2
        else:
            yield block
            i += 1


def residual_end(body: Block, x: Any, residual: Any) -> Any | None:
    """``relu(body(x) + residual)`` for a hybridized residual unit, computed with the sum and
    the ReLU in the pass of the body's last layer, a BatchNorm (the body's other layers run as
    :func:`steps` groups them); None where the body is not a chain ending that way or where a
    hook must see an output the fusion would skip (the caller then computes it as written)."""
    if not getattr(body, "_chains_children", False) or _hooked(body):
        return None
    layers = list(body._children.values())
    if not layers or type(layers[-1]) is not BatchNorm or _hooked(layers[-1]):
        return None
    h = x
    for step in steps(layers[:-1]):
        h = step(h)
    return layers[-1].forward(h, residual=residual)


def _hooked(block: Block) -> bool:
    return bool(block._forward_hooks or block._forward_pre_hooks)


def _with_relu(norm: BatchNorm) -> Callable[..., Any]:
    def call(x: Any, *args: Any) -> Any:
        if args:
            raise MXNetError(f"{norm.name}: a BatchNorm takes one input, got {1 + len(args)}")
        return norm.forward(x, relu=True)

    return call


def _bn_relu(block: Block, nxt: Block) -> bool:
    return (
        type(block) is BatchNorm
        and type(nxt) is Activation
        and nxt._act_type == "relu"
        and not (block._forward_hooks or block._forward_pre_hooks)
        and not (nxt._forward_hooks or nxt._forward_pre_hooks)
    )
