"""Which context each node of a bound graph runs on: ``bind``/``simple_bind(group2ctx=...)``.

A node made inside ``mx.AttrScope(ctx_group='stage1')`` carries the attribute
``__ctx_group__``; ``group2ctx`` maps group names to contexts. As in MXNet 1.9.1:

* ``simple_bind`` allocates each argument and auxiliary state (and its gradient) on its
  group's context, the others on the default context;
* an operator node of a group runs on the group's context; one without a group runs where its
  first input lives (the default context when it has none);
* an input living elsewhere is copied to the node's context first (a recorded copy, so
  gradients flow back across contexts).

Without ``group2ctx`` every argument and auxiliary state must live on the context bound to.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..base import MXNetError
from ..context import Context
from .graph import Node

__all__ = ["CTX_GROUP", "check_group2ctx", "variable_contexts", "place", "check_on_default"]

#: The attribute naming a node's group (``AttrScope(ctx_group=...)`` writes it).
CTX_GROUP = "__ctx_group__"


def check_group2ctx(group2ctx: Any) -> dict[str, Context]:
    """``group2ctx`` as a dict (None: empty).

    Raises
    ------
    MXNetError
        When it is not a dict of group names to Contexts.
    """
    if group2ctx is None:
        return {}
    if not isinstance(group2ctx, Mapping):
        raise MXNetError(
            f"group2ctx must be a dict of group names to Contexts, got {type(group2ctx).__name__}"
        )
    for group, ctx in group2ctx.items():
        if not isinstance(group, str) or not isinstance(ctx, Context):
            raise MXNetError(
                f"group2ctx maps group names (str) to Contexts; got {group!r}: {ctx!r}"
            )
    return dict(group2ctx)


def _group_context(node: Node, group2ctx: dict[str, Context]) -> Context | None:
    """The context of ``node``'s group, None when it has no group.

    Raises
    ------
    MXNetError
        When its group is not in ``group2ctx``.
    """
    group = node.attrs.get(CTX_GROUP)
    if group is None:
        return None
    ctx = group2ctx.get(group)
    if ctx is None:
        raise MXNetError(
            f"The device assignment not found for group {group!r} (of node {node.name!r}); "
            f"group2ctx has {sorted(group2ctx)}"
        )
    return ctx


def variable_contexts(
    nodes: Sequence[Node], default: Context, group2ctx: dict[str, Context]
) -> dict[str, Context]:
    """The context ``simple_bind`` allocates each variable (by name) on: its group's, else
    ``default``."""
    if not group2ctx:
        return {n.name: default for n in nodes if n.op is None}
    return {n.name: _group_context(n, group2ctx) or default for n in nodes if n.op is None}


def place(
    nodes: Sequence[Node],
    bound: Mapping[str, Any],
    default: Context,
    group2ctx: dict[str, Context],
) -> dict[int, Context]:
    """The context of every operator node (by ``id``) of ``nodes`` (in topological order),
    variables living where their bound arrays ``bound`` (by name) are.

    Raises
    ------
    MXNetError
        For a node whose group is not in ``group2ctx``.
    """
    where: dict[int, Context] = {}
    for node in nodes:
        if node.op is None:
            _group_context(node, group2ctx)  # an unknown group is an error here too
            where[id(node)] = bound[node.name].context
            continue
        ctx = _group_context(node, group2ctx)
        if ctx is None:
            ctx = where[id(node.inputs[0][0])] if node.inputs else default
        where[id(node)] = ctx
    return where


def check_on_default(default: Context, arrays: Mapping[str, Any]) -> None:
    """Raise unless every array of ``arrays`` (arguments and auxiliary states by name) lives
    on ``default``: without ``group2ctx`` a graph runs on one context, as in MXNet.

    Raises
    ------
    MXNetError
        Naming the first array elsewhere and its context.
    """
    for name, a in arrays.items():
        if a is not None and a.context != default:
            raise MXNetError(
                f"Input array {name!r} is in {a.context} while binding with ctx={default}. "
                f"All arguments must be in global context ({default}) unless group2ctx is "
                "specified for cross-device graph."
            )
