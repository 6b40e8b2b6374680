"""Output (and parameter) shapes of the operators whose shapes follow a formula, so shape
inference never runs them: elementwise and broadcasting arithmetic, fully connected,
convolution, deconvolution and pooling windows, normalisations, embeddings, output layers, the
fused RNN, custom operators. Each rule maps ``(attributes, input shapes)`` to ``(input shapes
with the parameters' filled in, output shapes)``; None is an unknown shape."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from .partial_shape import unify

__all__ = ["BROADCAST", "RULES", "SAME_SHAPE", "rule_for"]

Shape = tuple[int, ...]
Shapes = list[Shape | None]
Rule = Callable[[dict[str, Any], Shapes], tuple[Shapes, Shapes]]


def rule_for(op: str) -> Rule | None:
    """The shape rule of operator ``op``, or None where it must be run to be known."""
    rule = RULES.get(op)
    if rule is None and op in SAME_SHAPE:
        return _same
    if rule is None and op in BROADCAST:
        return _broadcast
    return rule


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


def _deformable(masked: bool) -> Rule:
    """A deformable convolution's (``masked``: modulated) rule: the weight and bias as a
    convolution's, the offsets ``(N, 2 * kh * kw * groups, *out)`` and the mask
    ``(N, kh * kw * groups, *out)`` on the output's grid."""

    def rule(a: dict[str, Any], ins: Shapes) -> tuple[Shapes, Shapes]:
        data = ins[0]
        if data is None:
            return ins, [None]
        kernel, stride, dilate, pad, nf, g = _window(a, len(data) - 2)
        taps = math.prod(kernel) * int(a.get("num_deformable_group", 1))
        space = tuple(
            (x + 2 * p - dl * (k - 1) - 1) // s + 1
            for x, k, s, dl, p in zip(data[2:], kernel, stride, dilate, pad, strict=True)
        )
        filled: Shapes = [data, (data[0], 2 * taps) + space]
        if masked:
            filled.append((data[0], taps) + space)
        filled.append((nf, data[1] // g) + kernel)
        if len(ins) > len(filled):
            filled.append((nf,))
        return filled, [(data[0], nf) + space]

    return rule


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


RULES: dict[str, Rule] = {
    "Custom": _custom,
    "FullyConnected": _fully_connected,
    "Convolution": _conv,
    "Deconvolution": _deconv,
    "_contrib_DeformableConvolution": _deformable(False),
    "_contrib_ModulatedDeformableConvolution": _deformable(True),
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
SAME_SHAPE = {
    "amp_cast",
    "Activation", "Dropout", "BlockGrad", "stop_gradient", "MakeLoss", "make_loss", "identity",
    "_copy", "relu", "sigmoid", "tanh", "softsign", "exp", "log", "sqrt", "square", "abs",
    "negative", "clip", "Cast", "cast", "softmax", "log_softmax", "SoftmaxActivation",
    "_plus_scalar", "_minus_scalar", "_rminus_scalar", "_mul_scalar", "_div_scalar",
    "_rdiv_scalar", "_power_scalar", "_rpower_scalar", "_mod_scalar", "_rmod_scalar",
    "_maximum_scalar", "_minimum_scalar", "_greater_scalar", "_greater_equal_scalar",
    "_lesser_scalar", "_lesser_equal_scalar", "_equal_scalar", "_not_equal_scalar",
}  # fmt: skip
BROADCAST = {
    "elemwise_add", "elemwise_sub", "elemwise_mul", "elemwise_div", "_plus", "_Plus", "_minus",
    "_Minus", "_mul", "_Mul", "_div", "_Div", "_power", "_Power", "_maximum", "_Maximum",
    "_minimum", "_Minimum", "_mod", "_greater", "_greater_equal", "_lesser", "_lesser_equal",
    "_equal", "_not_equal",
}  # fmt: skip
for _op in (
    "broadcast_add", "broadcast_sub", "broadcast_mul", "broadcast_div", "broadcast_plus",
    "broadcast_minus", "broadcast_maximum", "broadcast_minimum", "broadcast_power",
):  # fmt: skip
    RULES[_op] = _broadcast_strict
