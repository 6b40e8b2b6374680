"""Shape and dtype inference over symbol graphs.

Shapes flow forward through the graph from the arguments given (or their ``__shape__``
attribute); operators with parameters fill in their parameters' shapes from their data's
(``FullyConnected``'s weight is ``(num_hidden, in_units)``) and output layers their label's.
The operators whose output shape has a formula here (convolution, pooling, fully connected,
elementwise) are never run; any other is run once on zero arrays of its input shapes.

As in MXNet 1.x, a 0 in a shape is an unknown dimension: a variable's ``__shape__`` or a source
operator's ``shape`` (``mx.sym.zeros(shape=(0, 100))``, an RNN cell's begin state) may leave the
batch size open. Such graphs are inferred to a fixed point: an elementwise operator unifies its
inputs with each other and with its output, and the batch size of a fully connected, convolution
or pooling output flows back to its data.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from ..base import MXNetError
from .graph import DTYPE_CODES, Node
from .opinfo import parse_attr, parse_attrs, run
from .partial_shape import is_partial, partial_source, refine_inputs, unify
from .shape_rules import BROADCAST, SAME_SHAPE, rule_for

if TYPE_CHECKING:
    from .graph import Graph

__all__ = ["infer_shape", "infer_type", "node_shapes"]

Shape = tuple[int, ...]
Shapes = list[Shape | None]


def _known(sym: Graph, args: Sequence[Any], kwargs: dict[str, Any], what: str) -> dict[str, Any]:
    arg_names = sym.list_arguments()
    inputs = set(sym.list_inputs())
    if len(args) > len(arg_names):
        raise MXNetError(f"{what}: {len(args)} values for {len(arg_names)} arguments")
    known = {n: v for n, v in zip(arg_names, args, strict=False) if v is not None}
    for k, v in kwargs.items():
        if k not in inputs:
            raise MXNetError(f"{what}: the symbol has no argument {k!r}; it has {sorted(inputs)}")
        if v is not None:
            known[k] = v
    return known


def node_shapes(sym: Graph, known: dict[str, Shape]) -> dict[tuple[int, int], Shape | None]:
    """The shape of every node output (keyed by ``(id(node), index)``) and of every variable
    (index 0), None where it cannot be inferred (a 0 in a shape: an unknown dimension, in graphs
    with partial shapes)."""
    shapes: dict[tuple[int, int], Shape | None] = {}
    nodes = sym._nodes()
    if not any(partial_source(n) for n in nodes):
        _shape_pass(nodes, known, shapes, None)
        return shapes
    cache: dict[Any, Shapes] = {}
    for _ in range(len(nodes) + 1):  # each pass that refines something feeds the next one
        if not _shape_pass(nodes, known, shapes, cache):
            break
    return shapes


def _shape_pass(
    nodes: list[Node], known: dict[str, Shape], shapes: dict[tuple[int, int], Shape | None],
    cache: dict[Any, Shapes] | None,
) -> bool:  # fmt: skip
    """One forward pass over ``nodes``; ``cache`` is None for graphs whose shapes are all
    known from their inputs (one pass, strict checks). Returns whether a shape already set
    was refined by a later node (another pass may then learn more)."""
    refined = False
    for node in nodes:
        if node.op is None:
            s = known.get(node.name)
            if s is None and "__shape__" in node.attrs:
                s = tuple(parse_attr(node.attrs["__shape__"]))
                if cache is None and 0 in s:
                    s = None  # MXNet 1.x: 0 is an unknown dimension
            key = (id(node), 0)
            s = tuple(int(d) for d in s) if s is not None else None
            shapes[key] = s if cache is None else _merge(shapes.get(key), s, node, node.name)
            continue
        ins: Shapes = [shapes.get((id(c), i)) for c, i in node.inputs]
        try:
            if cache is None:
                filled, outs = _infer_node(node, ins)
            else:
                old = [shapes.get((id(node), i)) for i in range(len(node.output_names()))]
                filled, outs = _infer_partial(node, ins, old, cache)
        except MXNetError:
            raise
        except Exception as e:  # an operator refused the shapes
            raise MXNetError(
                f"infer_shape: {node.op} node {node.name!r} cannot take inputs of shapes {ins}: {e}"
            ) from None
        for (child, i), before, after in zip(node.inputs, ins, filled, strict=True):
            if after is None:
                continue
            if cache is None:
                if before is not None and tuple(before) != tuple(after):
                    raise MXNetError(
                        f"infer_shape: {node.op} node {node.name!r} needs input "
                        f"{child.name!r} of shape {tuple(after)}, but it has shape {tuple(before)}"
                    )
                shapes[(id(child), i)] = tuple(after)
                _through_casts(child, i, tuple(after), shapes)
                continue
            merged = _merge(before, tuple(after), node, child.name)
            refined = refined or merged != before
            shapes[(id(child), i)] = merged
            if merged is not None:
                _through_casts(child, i, merged, shapes)
        for i, s in enumerate(outs):
            key = (id(node), i)
            shapes[key] = s if cache is None else _merge(shapes.get(key), s, node, "its output")
    return refined


def _through_casts(
    node: Node, i: int, shape: Shape, shapes: dict[tuple[int, int], Shape | None]
) -> None:
    """Give the shape an operator needs of an ``amp_cast``/``amp_multicast`` output to what it
    casts too (a parameter read through a cast gets its shape)."""
    while node.op in ("amp_cast", "amp_multicast"):
        node, i = node.inputs[0 if node.op == "amp_cast" else i]
        if shapes.get((id(node), i)) is not None:
            return
        shapes[(id(node), i)] = shape


def _merge(before: Shape | None, after: Shape | None, node: Node, what: str) -> Shape | None:
    try:
        return unify(before, after)
    except ValueError:
        raise MXNetError(
            f"infer_shape: {node.op or 'variable'} node {node.name!r} needs {what!r} of shape "
            f"{after}, but it has shape {before}"
        ) from None


def _infer_partial(
    node: Node, ins: Shapes, outs: Shapes, cache: dict[Any, Shapes]
) -> tuple[Shapes, Shapes]:
    """``node``'s inputs and outputs where some shapes are partial: known outputs flow back
    first (``refine_inputs``), then the operator's rule runs; an operator without one is only
    run on fully known inputs."""
    assert node.op is not None
    attrs = parse_attrs(node.attrs)
    if partial_source(node):
        return ins, [tuple(int(d) for d in attrs["shape"])]
    elementwise = node.op in SAME_SHAPE or node.op in BROADCAST or node.op == "LeakyReLU"
    ins = refine_inputs(node.op, ins, outs, elementwise)
    if rule_for(node.op) is not None:
        if node.op in BROADCAST and not any(s is None for s in ins):
            try:  # elementwise operands of one rank describe one shape
                s = ins[0]
                for other in ins[1:]:
                    s = unify(s, other)
                return [s] * len(ins), [s]
            except ValueError:
                pass
        filled, new = _infer_node(node, ins)
        return filled, [None if s is None else tuple(max(int(d), 0) for d in s) for s in new]
    if any(is_partial(s) for s in ins):
        return ins, [None] * len(node.output_names())
    key = (id(node), tuple(ins))
    if key not in cache:
        cache[key] = _evaluate(node, ins)
    return ins, cache[key]


def infer_shape(
    sym: Graph, args: Sequence[Any], kwargs: dict[str, Any], partial: bool
) -> tuple[Any, Any, Any]:
    """See :meth:`Symbol.infer_shape`."""
    known = {k: tuple(v) for k, v in _known(sym, args, kwargs, "infer_shape").items()}
    shapes = node_shapes(sym, known)
    var = {n.name: shapes.get((id(n), 0)) for n in sym._nodes() if n.op is None}
    arg = [var[n] for n in sym.list_arguments()]
    aux = [var[n] for n in sym.list_auxiliary_states()]
    out = [shapes.get((id(n), i)) for n, i in sym._outputs]
    open_dims = any(partial_source(n) for n in sym._nodes())  # a 0 left: an unknown dimension
    if any(s is None or (open_dims and 0 in s) for s in arg + aux + out):
        if not partial:
            return None, None, None
        return tuple([() if s is None else s for s in group] for group in (arg, out, aux))  # type: ignore[return-value]
    return arg, out, aux


def infer_type(sym: Graph, args: Sequence[Any], kwargs: dict[str, Any]) -> tuple[Any, Any, Any]:
    """See :meth:`Symbol.infer_type`: every operator's outputs and parameters take its first
    input's dtype (``Cast`` its ``dtype``); unknown arguments default to float32."""
    names = {v: k for k, v in DTYPE_CODES.items()}
    known = {k: np.dtype(v).type for k, v in _known(sym, args, kwargs, "infer_type").items()}
    types: dict[tuple[int, int], Any] = {}
    for node in sym._nodes():
        if node.op is None:
            t = known.get(node.name)
            if t is None and "__dtype__" in node.attrs:
                t = np.dtype(names[int(node.attrs["__dtype__"])]).type
            types[(id(node), 0)] = t
            continue
        first = next((types[(id(c), i)] for c, i in node.inputs if types.get((id(c), i))), None)
        first = first or np.float32
        params_f32 = node.op in _FP32_PARAMS and np.dtype(first) in _LOW
        for j, (c, i) in enumerate(node.inputs):
            if types.get((id(c), i)) is None:
                types[(id(c), i)] = np.float32 if j and params_f32 else first
        ins = [types[(id(c), i)] for c, i in node.inputs]
        for i, t in enumerate(_output_types(node, ins, first)):
            types[(id(node), i)] = t
    var = {n.name: types.get((id(n), 0)) or np.float32 for n in sym._nodes() if n.op is None}
    return (
        [var[n] for n in sym.list_arguments()],
        [types[(id(n), i)] for n, i in sym._outputs],
        [var[n] for n in sym.list_auxiliary_states()],
    )


#: Operators whose parameters stay float32 for float16 and bfloat16 data (MXNet's BatchNorm).
_FP32_PARAMS = frozenset(("BatchNorm", "BatchNorm_v1", "_contrib_BatchNormWithReLU"))
_LOW = (np.dtype(np.float16), np.dtype("bfloat16"))


def _output_types(node: Node, ins: list[Any], first: Any) -> list[Any]:
    """The types of every output of ``node`` given its inputs' (``first``: the first known)."""
    n = len(node.output_names())
    if node.op in ("Cast", "cast", "amp_cast"):
        to = np.dtype(parse_attrs(node.attrs)["dtype"])
        if node.op == "amp_cast" and np.dtype(ins[0]) not in _AMP:
            to = np.dtype(ins[0])
        return [to.type] * n
    if node.op == "amp_multicast":
        from ..ndarray.precision import _widest

        dts = [np.dtype(t) for t in ins]
        common = _widest(dts, bool(parse_attrs(node.attrs).get("cast_narrow", False)))
        return [(common if d in _AMP else d).type for d in dts]
    return [first] * n


_AMP = (np.dtype(np.float32), *_LOW)


# ----------------------------------------------------------------- per-operator rules
def _infer_node(node: Node, ins: Shapes) -> tuple[Shapes, Shapes]:
    assert node.op is not None
    attrs = parse_attrs(node.attrs)
    rule = rule_for(node.op)
    if rule is not None:
        return rule(attrs, list(ins))
    if any(s is None for s in ins):
        return ins, [None] * len(node.output_names())
    return ins, _evaluate(node, ins)


def _evaluate(node: Node, ins: Shapes) -> Shapes:
    """Output shapes by running the operator on zeros (autograd paused, predict mode)."""
    from .. import autograd
    from .. import ndarray as nd

    arrays = [nd.zeros(s) for s in ins]  # type: ignore[arg-type]
    with autograd.pause():
        outs = run(node, arrays)
    return [tuple(o.shape) for o in outs]
