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

import math
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from ..base import MXNetError
from .graph import DTYPE_CODES, Node
from .opinfo import parse_attr, parse_attrs, run
from .partial_shape import is_partial, partial_source, refine_inputs, unify

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
    elementwise = node.op in _SAME_SHAPE or node.op in _BROADCAST or node.op == "LeakyReLU"
    ins = refine_inputs(node.op, ins, outs, elementwise)
    if node.op in _RULES or node.op in _SAME_SHAPE or node.op in _BROADCAST:
        if node.op in _BROADCAST and not any(s is None for s in ins):
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
    rule = _RULES.get(node.op)
    if rule is None and node.op in _SAME_SHAPE:
        rule = _same
    if rule is None and node.op in _BROADCAST:
        rule = _broadcast
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


def _broadcast_strict(attrs: dict[str, Any], ins: Shapes) -> tuple[Shapes, Shapes]:
    if ins[0] is None or ins[1] is None:
        return ins, [None]
    return ins, [tuple(np.broadcast_shapes(ins[0], ins[1]))]


def _same(attrs: dict[str, Any], ins: Shapes) -> tuple[Shapes, Shapes]:
    return ins, [ins[0]]


def _broadcast(attrs: dict[str, Any], ins: Shapes) -> tuple[Shapes, Shapes]:
    if ins[0] is None or ins[1] is None:
        s = ins[0] or ins[1]
        return [s, s], [s]  # elementwise: an unknown side has the other's shape
    return ins, [tuple(np.broadcast_shapes(ins[0], ins[1]))]


def _where(a: dict[str, Any], ins: Shapes) -> tuple[Shapes, Shapes]:
    """``where(condition, x, y)``: x and y of one shape (the output's), condition too unless it
    is 1-D (one value per row)."""
    cond, x, y = ins
    if x is None or y is None:
        s = x or y
        return [cond, s, s], [s]
    s = unify(x, y)
    if cond is not None and s is not None and len(cond) == len(s):
        s = unify(s, cond)
        cond = s
    return [cond, s, s], [s]


def _fully_connected(a: dict[str, Any], ins: Shapes) -> tuple[Shapes, Shapes]:
    data, nh = ins[0], int(a["num_hidden"])
    if data is None:
        return ins, [None]
    flatten = a.get("flatten", True)
    k = math.prod(data[1:]) if flatten else data[-1]
    filled: Shapes = [data, (nh, k)]
    if len(ins) > 2:
        filled.append((nh,))
    out = (data[0], nh) if flatten else tuple(data[:-1]) + (nh,)
    return filled, [out]


def _rnn(a: dict[str, Any], ins: Shapes) -> tuple[Shapes, Shapes]:
    """The fused RNN: its flat parameter vector's length and its states' shapes from the
    data's ``(T, N, C)``."""
    from .._rnn_layout import rnn_param_shapes

    data = ins[0]
    n_out = 1 + (1 + (a.get("mode") == "lstm") if a.get("state_outputs", False) else 0)
    if data is None or len(data) != 3:
        return ins, [None] * n_out
    t_len, batch, feats = (int(d) for d in data)
    hidden, layers = int(a["state_size"]), int(a["num_layers"])
    dirs = 2 if a.get("bidirectional", False) else 1
    proj = a.get("projection_size") or 0
    rec = int(proj) or hidden
    total = sum(
        math.prod(s)
        for _, s in rnn_param_shapes(
            str(a["mode"]), hidden, layers, feats, dirs == 2, int(proj) or None
        )
    )
    state = (layers * dirs, batch, rec)
    filled: Shapes = [data, (total,) if feats > 0 else ins[1], state]
    if a.get("mode") == "lstm":
        filled.append((layers * dirs, batch, hidden))
    if len(ins) > len(filled):
        filled.append((batch,))
    outs: Shapes = [(t_len, batch, dirs * rec), state]
    if a.get("mode") == "lstm":
        outs.append((layers * dirs, batch, hidden))
    return filled, outs[:n_out]


def _spatial(a: dict[str, Any], key: str, n: int, default: int) -> tuple[int, ...]:
    v = a.get(key)
    if v is None or v == ():
        return (default,) * n
    v = (v,) if isinstance(v, int) else tuple(v)
    return v * n if len(v) == 1 else v


def _window(a: dict[str, Any], nd: int) -> tuple[Any, Any, Any, Any, int, int]:
    """A (de)convolution's kernel, stride, dilate, pad, num_filter and num_group."""
    kernel = _spatial(a, "kernel", nd, 1)
    stride, dilate = _spatial(a, "stride", nd, 1), _spatial(a, "dilate", nd, 1)
    pad = _spatial(a, "pad", nd, 0)
    return kernel, stride, dilate, pad, int(a["num_filter"]), int(a.get("num_group", 1))


def _conv(a: dict[str, Any], ins: Shapes) -> tuple[Shapes, Shapes]:
    data = ins[0]
    if data is None:
        return ins, [None]
    kernel, stride, dilate, pad, nf, g = _window(a, len(data) - 2)
    filled: Shapes = [data, (nf, data[1] // g) + kernel]
    if len(ins) > 2:
        filled.append((nf,))
    space = tuple(
        (x + 2 * p - dl * (k - 1) - 1) // s + 1
        for x, k, s, dl, p in zip(data[2:], kernel, stride, dilate, pad, strict=True)
    )
    return filled, [(data[0], nf) + space]


def _deconv(a: dict[str, Any], ins: Shapes) -> tuple[Shapes, Shapes]:
    data = ins[0]
    if data is None:
        return ins, [None]
    kernel, stride, dilate, pad, nf, g = _window(a, len(data) - 2)
    adj = _spatial(a, "adj", len(data) - 2, 0)
    filled: Shapes = [data, (data[1], nf // g) + kernel]
    if len(ins) > 2:
        filled.append((nf,))
    target = a.get("target_shape")
    if target:
        space = tuple(target)
    else:
        space = tuple(
            (x - 1) * s - 2 * p + dl * (k - 1) + 1 + j
            for x, k, s, dl, p, j in zip(data[2:], kernel, stride, dilate, pad, adj, strict=True)
        )
    return filled, [(data[0], nf) + space]


def _pool(a: dict[str, Any], ins: Shapes) -> tuple[Shapes, Shapes]:
    data = ins[0]
    if data is None:
        return ins, [None]
    nd = len(data) - 2
    if a.get("global_pool", False):
        return ins, [tuple(data[:2]) + (1,) * nd]
    kernel = _spatial(a, "kernel", nd, 1)
    stride, pad = _spatial(a, "stride", nd, 1), _spatial(a, "pad", nd, 0)
    full = a.get("pooling_convention", "valid") == "full"
    rnd: Callable[[float], int] = math.ceil if full else math.floor
    space = tuple(
        int(rnd((x + 2 * p - k) / s)) + 1
        for x, k, s, p in zip(data[2:], kernel, stride, pad, strict=True)
    )
    return ins, [tuple(data[:2]) + space]


def _channel_params(axis_key: str, default_axis: int) -> Callable[..., tuple[Shapes, Shapes]]:
    def rule(a: dict[str, Any], ins: Shapes) -> tuple[Shapes, Shapes]:
        data = ins[0]
        if data is None:
            return ins, [None]
        c = data[int(a.get(axis_key, default_axis))]
        filled: Shapes = [data]
        filled += [(c,)] * (len(ins) - 1)
        return filled, [data]

    return rule


def _group_norm(a: dict[str, Any], ins: Shapes) -> tuple[Shapes, Shapes]:
    data = ins[0]
    if data is None:
        return ins, [None]
    return [data, (data[1],), (data[1],)], [data]


def _embedding(a: dict[str, Any], ins: Shapes) -> tuple[Shapes, Shapes]:
    data = ins[0]
    w = (int(a["input_dim"]), int(a["output_dim"]))
    return [data, w], [None if data is None else tuple(data) + (w[1],)]


def _leaky(a: dict[str, Any], ins: Shapes) -> tuple[Shapes, Shapes]:
    data = ins[0]
    if data is None or len(ins) == 1:
        return ins, [data]
    return [data, (data[1] if len(data) > 1 else 1,)], [data]


def _softmax_output(a: dict[str, Any], ins: Shapes) -> tuple[Shapes, Shapes]:
    data = ins[0]
    if data is None:
        return ins, [None]
    if a.get("multi_output", False):
        label: Shape = (data[0],) + tuple(data[2:])
    else:
        label = tuple(data[:-1])
    if ins[1] is not None and math.prod(ins[1]) == math.prod(data):
        label = ins[1]  # a dense (probability) label
    return [data, label], [data]


def _regression(a: dict[str, Any], ins: Shapes) -> tuple[Shapes, Shapes]:
    data = ins[0]
    if data is None:
        return ins, [None]
    label = ins[1] if ins[1] is not None and math.prod(ins[1]) == math.prod(data) else data
    return [data, label], [data]


def _flatten(a: dict[str, Any], ins: Shapes) -> tuple[Shapes, Shapes]:
    data = ins[0]
    return ins, [None if data is None else (data[0], math.prod(data[1:]))]


def _custom(a: dict[str, Any], ins: Shapes) -> tuple[Shapes, Shapes]:
    """A custom operator's shapes, as its property's ``infer_shape`` gives them."""
    from .opinfo import _custom_prop

    prop = _custom_prop(a)
    n_args, n_out = len(prop.list_arguments()), len(prop.list_outputs())
    if any(s is None for s in ins[:n_args]):
        return ins, [None] * n_out
    args, outs, aux = prop.infer_shape([list(s) for s in ins[:n_args] if s is not None])
    shapes: Shapes = []
    shapes.extend(tuple(s) for s in args)
    shapes.extend(tuple(s) for s in aux)
    shapes += ins[len(shapes) :]
    return shapes, [tuple(o) for o in outs]


_RULES: dict[str, Callable[[dict[str, Any], Shapes], tuple[Shapes, Shapes]]] = {
    "Custom": _custom,
    "FullyConnected": _fully_connected,
    "Convolution": _conv,
    "Deconvolution": _deconv,
    "Pooling": _pool,
    "BatchNorm": _channel_params("axis", 1),
    "BatchNorm_v1": _channel_params("axis", 1),
    "_contrib_BatchNormWithReLU": _channel_params("axis", 1),
    "LayerNorm": _channel_params("axis", -1),
    "InstanceNorm": _channel_params("axis", 1),
    "GroupNorm": _group_norm,
    "Embedding": _embedding,
    "RNN": _rnn,
    "LeakyReLU": _leaky,
    "SoftmaxOutput": _softmax_output,
    "Softmax": _softmax_output,
    "LinearRegressionOutput": _regression,
    "LogisticRegressionOutput": _regression,
    "MAERegressionOutput": _regression,
    "SVMOutput": _softmax_output,
    "Flatten": _flatten,
    "flatten": _flatten,
    "where": _where,
    "amp_multicast": lambda a, ins: (ins, list(ins)),
}
_SAME_SHAPE = {
    "amp_cast",
    "Activation", "Dropout", "BlockGrad", "stop_gradient", "MakeLoss", "make_loss", "identity",
    "_copy", "relu", "sigmoid", "tanh", "softsign", "exp", "log", "sqrt", "square", "abs",
    "negative", "clip", "Cast", "cast", "softmax", "log_softmax", "SoftmaxActivation",
    "_plus_scalar", "_minus_scalar", "_rminus_scalar", "_mul_scalar", "_div_scalar",
    "_rdiv_scalar", "_power_scalar", "_rpower_scalar", "_mod_scalar", "_rmod_scalar",
    "_maximum_scalar", "_minimum_scalar", "_greater_scalar", "_greater_equal_scalar",
    "_lesser_scalar", "_lesser_equal_scalar", "_equal_scalar", "_not_equal_scalar",
}  # fmt: skip
_BROADCAST = {
    "elemwise_add", "elemwise_sub", "elemwise_mul", "elemwise_div", "_plus", "_Plus", "_minus",
    "_Minus", "_mul", "_Mul", "_div", "_Div", "_power", "_Power", "_maximum", "_Maximum",
    "_minimum", "_Minimum", "_mod", "_greater", "_greater_equal", "_lesser", "_lesser_equal",
    "_equal", "_not_equal",
}  # fmt: skip
for _op in (
    "broadcast_add", "broadcast_sub", "broadcast_mul", "broadcast_div", "broadcast_plus",
    "broadcast_minus", "broadcast_maximum", "broadcast_minimum", "broadcast_power",
):  # fmt: skip
    _RULES[_op] = _broadcast_strict
