"""The files of ``Block.save`` and ``Block.load``: a block tree's structure as JSON (each
block's name, its children's attribute names, a hybridized block's graph), in the layout
MXNet 1.9.1 writes and reads, beside the parameters."""

from __future__ import annotations

import json
from typing import Any

from ..base import MXNetError
from . import _symbolic

__all__ = ["load_structure", "save_structure"]


def save_structure(blk: Any, path: str) -> None:
    """Write the structure of the tree under block ``blk`` to ``path``."""
    model: dict[str, Any] = {}
    _save(blk, [0], model)
    with open(path, "w") as fp:
        json.dump(model, fp)


def load_structure(blk: Any, path: str) -> None:
    """Give the tree under ``blk`` the names (and graphs) saved in ``path``.

    Raises
    ------
    MXNetError
        When the saved structure does not match the tree.
    """
    with open(path) as fp:
        model = json.load(fp)
    _load(blk, [0], model)


def _hybrid(blk: Any) -> bool:
    return hasattr(blk, "_cached_graph")


def _save(blk: Any, index: list[int], parent: dict[str, Any]) -> None:
    """Record ``blk`` and, depth first, its children in ``parent`` (see :meth:`Block.save`)."""
    entry: dict[str, Any] = {"orig_name": blk.name}
    parent[type(blk).__name__.lower() + str(index[0])] = entry
    if _hybrid(blk):
        entry["hybridized"] = False
        if blk._active and blk._in_format is not None and not isinstance(blk._in_format, str):
            try:
                inputs, out = _symbolic.graph(blk)
            except MXNetError:
                inputs = []
            if inputs:
                entry.update(
                    hybridized=True,
                    in_format=blk._in_format,
                    out_format=blk._out_format,
                    inputs=[v.tojson() for v in inputs],
                    symbol=out.tojson(),
                )
    children: dict[str, str] = {}
    entry["children"] = children
    for attr, child in blk._children.items():
        index[0] += 1
        children[child.name] = attr
        _save(child, index, entry)


def _load(blk: Any, index: list[int], parent: dict[str, Any]) -> None:
    """Give ``blk`` and its descendants the names (and graphs) recorded by
    :func:`_save`."""
    from ..symbol import load_json

    key = type(blk).__name__.lower() + str(index[0])
    if key not in parent:
        raise MXNetError(f"the saved model has no block {key!r}: it was built differently")
    entry = parent[key]
    blk._name = entry["orig_name"]
    if _hybrid(blk) and entry.get("hybridized"):
        blk._in_format = entry["in_format"]
        blk._out_format = entry["out_format"]
        blk._cached_graph = ([load_json(s) for s in entry["inputs"]], load_json(entry["symbol"]))
        blk._active = True
    pdict = blk.params
    for old in list(pdict._params):
        pdict._params[blk.name + "_" + old[len(pdict._prefix) :]] = pdict._params.pop(old)
    for child in blk._children.values():
        index[0] += 1
        _load(child, index, entry)
    saved = entry["children"]
    current = list(blk._children.values())
    blk._children.clear()
    for child in current:
        if child.name not in saved:
            raise MXNetError(f"the saved model has no child {child.name!r} in {blk.name!r}")
        blk._children[saved[child.name]] = child
