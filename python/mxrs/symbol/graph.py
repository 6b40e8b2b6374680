"""The nodes of symbol graphs and their order.

A node is a variable (``op`` None) or an operator with its string attributes (MXNet keeps every
attribute as a string, ``kernel='(5, 5)'``) and its inputs, each an output of another node.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from ..base import MXNetError
from .opinfo import visible_outputs

__all__ = [
    "Node",
    "Graph",
    "topo",
    "without_amp_casts",
    "hidden_attrs",
    "hidden_key",
    "listed_attrs",
    "HIDDEN_KEYS",
    "DTYPE_CODES",
]

#: attributes MXNet stores as ``__key__`` when given as ``key``
HIDDEN_KEYS = ("ctx_group", "lr_mult", "wd_mult", "force_mirroring", "mirror_stage",
                "profiler_scope")  # fmt: skip


def hidden_key(key: str) -> str:
    """``key`` as a node stores it: a hidden key (``lr_mult``...) as ``__lr_mult__``, any other
    as it is.

    Raises
    ------
    MXNetError
        For a key that ends in a hidden key (``weight_lr_mult``): MXNet 1.9.1 refuses that old
        way of setting a variable's attribute through its operator.
    """
    if key in HIDDEN_KEYS:
        return f"__{key}__"
    for k in HIDDEN_KEYS:
        if key.endswith(k) and not key.startswith("__"):
            raise MXNetError(
                f"setting variable attributes with {key} is deprecated. please instead use\n"
                f"w = Variable({k}=...)\nsym = YourSymbolName({key[: -len(k)].rstrip('_')}=w)"
            )
    return key


def hidden_attrs(attrs: dict[str, str]) -> dict[str, str]:
    """``attrs`` with the hidden keys (``lr_mult``...) written ``__lr_mult__``
    (:func:`hidden_key`)."""
    return {hidden_key(k): v for k, v in attrs.items()}


def listed_attrs(attrs: dict[str, str]) -> dict[str, str]:
    """A node's ``attrs`` as MXNet lists them (``list_attr``, ``attr_dict``): each hidden one
    (``__lr_mult__``) also under its plain name (``lr_mult``)."""
    out = dict(attrs)
    for k, v in attrs.items():
        if k.startswith("__") and k.endswith("__") and k[2:-2] in HIDDEN_KEYS:
            out[k[2:-2]] = v
    return out


class Node:
    """One node of a symbol graph.

    Attributes
    ----------
    op : str or None
        The operator's MXNet name (``'FullyConnected'``), None for a variable.
    name : str
    attrs : dict of str to str
        Operator parameters and user attributes (``__lr_mult__``...), all strings.
    inputs : list of (Node, int)
        The outputs of other nodes this operator reads.
    """

    __slots__ = ("op", "name", "attrs", "inputs")

    def __init__(
        self, op: str | None, name: str, attrs: dict[str, str], inputs: list[tuple[Node, int]]
    ) -> None:
        self.op, self.name, self.attrs, self.inputs = op, name, attrs, inputs

    def output_names(self) -> list[str]:
        """The names of this node's visible outputs (``fc1_output``, ``split0_output1``)."""
        if self.op is None:
            return [self.name]
        outs = visible_outputs(self.op, self.attrs)
        if len(outs) == 1:
            return [f"{self.name}_{outs[0]}"]
        return [f"{self.name}_{o}" for o in outs]


def topo(outputs: Sequence[tuple[Node, int]]) -> list[Node]:
    """The nodes reachable from ``outputs``, inputs before their users, in MXNet's order
    (depth first, inputs left to right)."""
    order: list[Node] = []
    seen: set[int] = set()
    for head, _ in outputs:
        if id(head) in seen:
            continue
        stack: list[tuple[Node, int]] = [(head, 0)]
        seen.add(id(head))
        while stack:
            node, i = stack.pop()
            if i < len(node.inputs):
                stack.append((node, i + 1))
                child = node.inputs[i][0]
                if id(child) not in seen:
                    seen.add(id(child))
                    stack.append((child, 0))
            else:
                order.append(node)
    return order


_AMP_CASTS = ("amp_cast", "amp_multicast")


def without_amp_casts(outputs: Sequence[tuple[Node, int]]) -> list[tuple[Node, int]]:
    """A copy of the graph of ``outputs`` where every ``amp_cast`` and ``amp_multicast`` node
    is bypassed: its consumers read what it cast (MXNet's ``remove_amp_cast``)."""
    copies: dict[int, Node] = {}

    def source(entry: tuple[Node, int]) -> tuple[Node, int]:
        node, i = entry
        while node.op in _AMP_CASTS:
            node, i = node.inputs[0 if node.op == "amp_cast" else i]
        return copies[id(node)], i

    for node in topo(outputs):
        if node.op not in _AMP_CASTS:
            inputs = [source(e) for e in node.inputs]
            copies[id(node)] = Node(node.op, node.name, dict(node.attrs), inputs)
    return [source(e) for e in outputs]


#: MXNet's numeric dtype codes, as the ``__dtype__`` attribute stores them
DTYPE_CODES = {"float32": 0, "float64": 1, "float16": 2, "uint8": 3, "int32": 4, "int8": 5,
                "int64": 6, "bool": 7, "bfloat16": 12}  # fmt: skip


class Graph(Protocol):
    """What binding, inference and serialisation need of a graph (a
    :class:`~mxrs.symbol.Symbol` is one): its outputs, its nodes and their names."""

    _outputs: list[tuple[Node, int]]

    def _nodes(self) -> list[Node]: ...

    def list_arguments(self) -> list[str]: ...

    def list_auxiliary_states(self) -> list[str]: ...

    def list_inputs(self) -> list[str]: ...

    def list_outputs(self) -> list[str]: ...

    def infer_shape(self, *args: Any, **kwargs: Any) -> tuple[Any, Any, Any]: ...

    def infer_shape_partial(self, *args: Any, **kwargs: Any) -> tuple[Any, Any, Any]: ...

    def infer_type(self, *args: Any, **kwargs: Any) -> tuple[Any, Any, Any]: ...
