"""The graph pass of a hybridized ``HybridSequential``: adjacent layers computed as one operator.

A hybridized block promises that its output depends on its inputs alone, which lets its
container compute neighbouring layers together when the result is the same, as MXNet's graph
passes do: a :class:`BatchNorm` followed by ``Activation('relu')`` runs as
``mx.nd.contrib.BatchNormWithReLU`` (on oneDNN, one pass over the data and a one-byte mask
instead of a second pass and a separate ReLU gradient). A layer with forward hooks is never
fused (its hooks must see its own output), and a graph built from Symbols (``export``) keeps the
layers as they are.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any

from ...base import MXNetError
from ..block import Block
from .activations import Activation
from .norm_layers import BatchNorm

__all__ = ["steps"]


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
