"""The graph pass of an executor: operators computed as one where the result is the same.

A bound graph is fixed, so an executor can see what each output feeds. Where an operator's
output is read by one ``Activation`` with ``act_type='relu'`` and by nothing else (not an
output of the graph either), the pair runs as one operator and the activation hands its input
on, as MXNet's oneDNN graph passes fuse such pairs:

- ``BatchNorm`` + ReLU runs as ``mx.nd.contrib.BatchNormWithReLU``: on oneDNN the ReLU is
  applied in the normalisation's own pass over the data, and its gradient comes from a
  one-byte mask;
- ``elemwise_add`` + ReLU (a residual block's end) runs as one pass over the three buffers,
  and both addends share the ReLU's gradient.

An executor with a monitor callback runs the graph as written, so that every operator's
output is there to watch.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from .graph import Node
from .opinfo import parse_attrs

__all__ = ["Plan", "fuse"]

#: The nodes in order, each with the call computing its outputs (None for a variable).
Plan = list[tuple[Node, Callable[[list[Any]], list[Any]] | None]]

Call = Callable[[list[Any]], list[Any]]


def fuse(plan: Plan, outputs: Sequence[tuple[Node, int]]) -> Plan:
    """``plan`` with every BatchNorm and every ``elemwise_add`` that only a ReLU reads
    computed together with it."""
    readers: dict[tuple[int, int], list[Node]] = {}
    for node, _ in plan:
        for child, i in node.inputs:
            readers.setdefault((id(child), i), []).append(node)
    exposed = {(id(n), i) for n, i in outputs}
    fused: dict[int, Call] = {}
    relus: set[int] = set()
    for node, _ in plan:
        make = _FUSED.get(node.op or "")
        if make is None:
            continue
        params = parse_attrs(node.attrs)
        users = readers.get((id(node), 0), [])
        if params.get("output_mean_var") or (id(node), 0) in exposed or len(users) != 1:
            continue
        act = users[0]
        if act.op == "Activation" and parse_attrs(act.attrs).get("act_type") == "relu":
            fused[id(node)] = make(params)
            relus.add(id(act))
    if not fused:
        return plan
    return [
        (node, fused[id(node)])
        if id(node) in fused
        else (node, _passed_on)
        if id(node) in relus
        else (node, call)
        for node, call in plan
    ]


def _norm_relu(params: dict[str, Any]) -> Call:
    from .. import ndarray as nd

    def call(inputs: list[Any]) -> list[Any]:
        return [nd.contrib.BatchNormWithReLU(*inputs, **params)]

    return call


def _sum_relu(params: dict[str, Any]) -> Call:
    from .. import ndarray as nd

    def call(inputs: list[Any]) -> list[Any]:
        a, b = inputs
        if a.shape == b.shape and a.dtype == b.dtype and a.stype == b.stype == "default":
            return [nd.unary._add_relu(a, b)]
        return [nd.relu(nd.elemwise_add(a, b))]

    return call


def _passed_on(inputs: list[Any]) -> list[Any]:
    return [inputs[0]]


#: The operators fused with a ReLU that alone reads them, and what makes the fused call.
_FUSED: dict[str, Callable[[dict[str, Any]], Call]] = {
    "BatchNorm": _norm_relu,
    "elemwise_add": _sum_relu,
}
