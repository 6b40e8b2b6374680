"""Symbol graphs in MXNet's JSON format (``-symbol.json`` files).

The format: ``nodes`` in topological order, each ``{"op", "name", "attrs", "inputs"}`` with
inputs as ``[node index, output index, version]``; ``arg_nodes`` (the variables' indices),
``node_row_ptr`` (where each node's outputs start when all are counted, hidden ones included),
``heads`` (the outputs) and ``attrs`` (``mxnet_version``). Files from MXNet 0.x, with ``param``
and ``attr`` instead of ``attrs``, are read too.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from ..base import MXNetError
from .graph import Node
from .opinfo import aux_positions, num_outputs

if TYPE_CHECKING:
    from .graph import Graph

__all__ = ["dumps", "loads"]

#: the MXNet version written into files, 1.9.1 as MXNet encodes it
MXNET_VERSION = 10901


def dumps(sym: Graph) -> str:
    """``sym`` as MXNet's JSON text."""
    nodes = sym._nodes()
    index = {id(n): i for i, n in enumerate(nodes)}
    out_nodes, row_ptr = [], [0]
    for node in nodes:
        entry: dict[str, Any] = {"op": node.op or "null", "name": node.name}
        if node.attrs:
            entry["attrs"] = dict(node.attrs)
        aux = set(aux_positions(node.op, node.attrs, len(node.inputs))) if node.op else set()
        entry["inputs"] = [
            [index[id(child)], i, 1 if pos in aux else 0]
            for pos, (child, i) in enumerate(node.inputs)
        ]
        out_nodes.append(entry)
        row_ptr.append(row_ptr[-1] + (num_outputs(node.op, node.attrs) if node.op else 1))
    doc = {
        "nodes": out_nodes,
        "arg_nodes": [i for i, n in enumerate(nodes) if n.op is None],
        "node_row_ptr": row_ptr,
        "heads": [[index[id(n)], i, 0] for n, i in sym._outputs],
        "attrs": {"mxnet_version": ["int", MXNET_VERSION]},
    }
    return json.dumps(doc, indent=2)


def loads(text: str) -> list[tuple[Node, int]]:
    """The outputs of the symbol graph in MXNet's JSON ``text``.

    Raises
    ------
    MXNetError
        When the text is not a symbol graph (named what is wrong).
    """
    doc = json.loads(text)
    if not isinstance(doc, dict) or not isinstance(doc.get("nodes"), list):
        raise MXNetError("not a symbol graph: no 'nodes' list")
    built: list[Node] = []
    for k, entry in enumerate(doc["nodes"]):
        try:
            op, name = entry["op"], entry["name"]
            raw = entry.get("attrs") or {**entry.get("param", {}), **entry.get("attr", {})}
            attrs = {str(a): str(v) for a, v in raw.items()}
            inputs = []
            for ref in entry.get("inputs", []):
                j, i = int(ref[0]), int(ref[1]) if len(ref) > 1 else 0
                if not 0 <= j < k:
                    raise MXNetError(f"node {k} ({name!r}) reads node {j}, which is not before it")
                inputs.append((built[j], i))
        except (KeyError, TypeError, IndexError, ValueError) as e:
            raise MXNetError(f"not a symbol graph: node {k} is malformed ({e!r})") from None
        built.append(Node(None if op == "null" else str(op), str(name), attrs, inputs))
    heads = doc.get("heads") or [[len(built) - 1, 0, 0]]
    try:
        return [(built[int(h[0])], int(h[1])) for h in heads]
    except (IndexError, TypeError, ValueError) as e:
        raise MXNetError(f"not a symbol graph: bad heads {heads!r} ({e!r})") from None
