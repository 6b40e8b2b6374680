"""What the symbol graph needs to know of each operator: its input names, hidden outputs and
auxiliary states, how a node's string attributes become an ``mx.nd`` call.

Every ``mx.nd`` operator is also a symbol operator: its array inputs are the parameters without
a default (``broadcast_add(lhs, rhs)``), the rest are attributes. The operators with learnable
parameters, labels, auxiliary states or several outputs are described in :data:`_DEFS`, as are
the internal names MXNet gives arithmetic (``_plus_scalar``, ``elemwise_mul``...).
"""

from __future__ import annotations

import ast
import functools
import inspect
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from ..base import MXNetError


class OpNode(Protocol):
    """A graph node as the operator table reads it (:class:`~mxrs.symbol.graph.Node` is one)."""

    op: str | None
    name: str
    attrs: dict[str, str]


__all__ = [
    "has_op",
    "input_names",
    "aux_positions",
    "visible_outputs",
    "num_outputs",
    "parse_attr",
    "parse_attrs",
    "run",
    "compile_node",
]


@dataclass(frozen=True)
class _Def:
    """What a symbol operator needs beyond its ``mx.nd`` function."""

    nd: str  # the mx.nd function that computes it
    inputs: tuple[str, ...] | None = None  # None: the nd function's parameters without default
    aux: tuple[str, ...] = ()  # trailing inputs that are auxiliary states
    variadic: bool = False  # any number of inputs (``num_args``)
    drop: Callable[[dict[str, Any]], set[str]] = field(default=lambda a: set())
    hidden: int = 0  # outputs beyond the visible ones (BatchNorm's mean and variance)
    scalar: str | None = None  # an arithmetic op with a number: how to compute it
    count: str = "num_args"  # the attribute holding a variadic op's number of inputs ("": none)


def _no_bias(default: bool) -> Callable[[dict[str, Any]], set[str]]:
    return lambda a: {"bias"} if a.get("no_bias", default) else set()


def _prelu(a: dict[str, Any]) -> set[str]:
    return set() if a.get("act_type", "leaky") == "prelu" else {"gamma"}


def _ctc_lengths(a: dict[str, Any]) -> set[str]:
    drop = set() if a.get("use_data_lengths", False) else {"data_lengths"}
    return drop | (set() if a.get("use_label_lengths", False) else {"label_lengths"})


def _softmax_length(a: dict[str, Any]) -> set[str]:
    return set() if a.get("use_length", False) else {"length"}


def _rnn_inputs(a: dict[str, Any]) -> set[str]:
    drop = set() if a.get("mode") == "lstm" else {"state_cell"}
    return drop | (set() if a.get("use_sequence_length", False) else {"sequence_length"})


def _sequence_length(a: dict[str, Any]) -> set[str]:
    return set() if a.get("use_sequence_length", False) else {"sequence_length"}


def _batch_norm(nd: str) -> _Def:
    """A batch normalisation: its moving statistics are auxiliary states, and its mean and
    variance hidden outputs."""
    inputs = ("data", "gamma", "beta", "moving_mean", "moving_var")
    return _Def(nd, inputs, aux=("moving_mean", "moving_var"), hidden=2)


_LABEL = ("data", "label")
_SEQUENCE = ("data", "sequence_length")
_RNN_INPUTS = ("data", "parameters", "state", "state_cell", "sequence_length")
_CTC_INPUTS = ("data", "label", "data_lengths", "label_lengths")
_PROPOSAL_INPUTS = ("cls_prob", "bbox_pred", "im_info")
_DEFORMABLE_INPUTS = ("data", "offset", "weight", "bias")
_MODULATED_INPUTS = ("data", "offset", "mask", "weight", "bias")
_DEFS: dict[str, _Def] = {
    "FullyConnected": _Def("FullyConnected", ("data", "weight", "bias"), drop=_no_bias(False)),
    "Convolution": _Def("Convolution", ("data", "weight", "bias"), drop=_no_bias(False)),
    "Deconvolution": _Def("Deconvolution", ("data", "weight", "bias"), drop=_no_bias(True)),
    "BatchNorm": _batch_norm("BatchNorm"),
    "BatchNorm_v1": _batch_norm("BatchNorm_v1"),
    "_contrib_BatchNormWithReLU": _batch_norm("_contrib_BatchNormWithReLU"),
    "LayerNorm": _Def("LayerNorm", ("data", "gamma", "beta"), hidden=2),
    "InstanceNorm": _Def("InstanceNorm", ("data", "gamma", "beta"), hidden=2),
    "GroupNorm": _Def("GroupNorm", ("data", "gamma", "beta"), hidden=2),
    "Embedding": _Def("Embedding", ("data", "weight")),
    "RNN": _Def("RNN", _RNN_INPUTS, drop=_rnn_inputs),
    "SequenceMask": _Def("SequenceMask", _SEQUENCE, drop=_sequence_length),
    "SequenceLast": _Def("SequenceLast", _SEQUENCE, drop=_sequence_length),
    "SequenceReverse": _Def("SequenceReverse", _SEQUENCE, drop=_sequence_length),
    "LeakyReLU": _Def("LeakyReLU", ("data", "gamma"), drop=_prelu),
    "Dropout": _Def("Dropout", ("data",), hidden=1),
    "SoftmaxOutput": _Def("SoftmaxOutput", _LABEL),
    "Softmax": _Def("SoftmaxOutput", _LABEL),
    "LinearRegressionOutput": _Def("LinearRegressionOutput", _LABEL),
    "LogisticRegressionOutput": _Def("LogisticRegressionOutput", _LABEL),
    "MAERegressionOutput": _Def("MAERegressionOutput", _LABEL),
    "SVMOutput": _Def("SVMOutput", _LABEL),
    "Concat": _Def("concat", variadic=True),
    "concat": _Def("concat", variadic=True),
    "add_n": _Def("add_n", variadic=True),
    "ElementWiseSum": _Def("add_n", variadic=True),
    "stack": _Def("stack", variadic=True),
    "amp_multicast": _Def("amp_multicast", variadic=True, count="num_outputs"),
    "SliceChannel": _Def("SliceChannel", ("data",)),
    "split": _Def("split", ("data",)),
    "Flatten": _Def("Flatten", ("data",)),
    "Reshape": _Def("reshape", ("data",)),
    "Cast": _Def("cast", ("data",)),
    "BlockGrad": _Def("BlockGrad", ("data",)),
    "stop_gradient": _Def("BlockGrad", ("data",)),
    "MakeLoss": _Def("MakeLoss", ("data",)),
    "CTCLoss": _Def("CTCLoss", _CTC_INPUTS, drop=_ctc_lengths),
    "softmax": _Def("softmax", ("data", "length"), drop=_softmax_length),
    "ctc_loss": _Def("CTCLoss", _CTC_INPUTS, drop=_ctc_lengths),
    "make_loss": _Def("MakeLoss", ("data",)),
    "_copy": _Def("identity", ("data",)),
    "identity": _Def("identity", ("data",)),
    "Pooling": _Def("Pooling", ("data",)),
    "LRN": _Def("LRN", ("data",), hidden=1),
    "Correlation": _Def("Correlation", ("data1", "data2"), hidden=2),
    "_contrib_Proposal": _Def("_contrib_Proposal", _PROPOSAL_INPUTS, hidden=1),
    "_contrib_MultiProposal": _Def("_contrib_MultiProposal", _PROPOSAL_INPUTS, hidden=1),
    "_contrib_DeformableConvolution": _Def(
        "_contrib_DeformableConvolution", _DEFORMABLE_INPUTS, drop=_no_bias(False)
    ),
    "_contrib_ModulatedDeformableConvolution": _Def(
        "_contrib_ModulatedDeformableConvolution", _MODULATED_INPUTS, drop=_no_bias(False)
    ),
    "reverse": _Def("flip", ("data",)),
    "Pad": _Def("pad", ("data",)),
    "SwapAxis": _Def("swapaxes", ("data",)),
    "_zeros": _Def("zeros", ()),
    "_ones": _Def("ones", ()),
    "_arange": _Def("arange", ()),
}
#: the update operators of many weights: their inputs by position, their own ``num_weights``
#: attribute (never filled in), one output per weight
_MULTI_WEIGHT = (
    "multi_sgd_update", "multi_sgd_mom_update", "multi_mp_sgd_update",
    "multi_mp_sgd_mom_update", "preloaded_multi_sgd_update", "preloaded_multi_sgd_mom_update",
    "preloaded_multi_mp_sgd_update", "preloaded_multi_mp_sgd_mom_update",
    "_multi_adamw_update", "_multi_mp_adamw_update",
)  # fmt: skip
for _op in _MULTI_WEIGHT:
    _DEFS[_op] = _Def(_op, variadic=True, count="")
_DEFS["multi_sum_sq"] = _Def("multi_sum_sq", variadic=True, count="num_arrays")
_DEFS["_adamw_update"] = _Def("_adamw_update", ("weight", "grad", "mean", "var", "rescale_grad"))
_DEFS["_mp_adamw_update"] = _Def(
    "_mp_adamw_update", ("weight", "grad", "mean", "var", "weight32", "rescale_grad")
)
#: the operator MXNet records for a function name (``mx.sym.flatten`` makes a ``Flatten`` node)
_CANONICAL = {
    "flatten": "Flatten", "concat": "Concat", "split": "SliceChannel", "reshape": "Reshape",
    "cast": "Cast", "stop_gradient": "BlockGrad", "identity": "_copy", "ElementWiseSum": "add_n",
    "pad": "Pad", "swapaxes": "SwapAxis", "Softmax": "SoftmaxOutput",
    "broadcast_plus": "broadcast_add", "broadcast_minus": "broadcast_sub", "sum_axis": "sum",
    "max_axis": "max", "min_axis": "min", "flip": "reverse", "arange": "_arange",
    "zeros": "_zeros", "ones": "_ones", "ctc_loss": "CTCLoss",
}  # fmt: skip
# arithmetic as MXNet names it in graphs
for _op, _fn in {
    "elemwise_add": "elemwise_add", "_plus": "elemwise_add", "_Plus": "elemwise_add",
    "elemwise_sub": "elemwise_sub", "_minus": "elemwise_sub", "_Minus": "elemwise_sub",
    "elemwise_mul": "elemwise_mul", "_mul": "elemwise_mul", "_Mul": "elemwise_mul",
    "elemwise_div": "elemwise_div", "_div": "elemwise_div", "_Div": "elemwise_div",
    "_power": "power", "_Power": "power", "_maximum": "maximum", "_Maximum": "maximum",
    "_minimum": "minimum", "_Minimum": "minimum", "_mod": "modulo", "_Mod": "modulo",
    "_greater": "greater", "_greater_equal": "greater_equal", "_lesser": "lesser",
    "_lesser_equal": "lesser_equal", "_equal": "equal", "_not_equal": "not_equal",
}.items():  # fmt: skip
    _DEFS[_op] = _Def(_fn, ("lhs", "rhs"))
_SCALAR = {
    "_plus_scalar": "x + s", "_minus_scalar": "x - s", "_rminus_scalar": "s - x",
    "_mul_scalar": "x * s", "_div_scalar": "x / s", "_rdiv_scalar": "s / x",
    "_power_scalar": "x ** s", "_rpower_scalar": "s ** x", "_mod_scalar": "x % s",
    "_rmod_scalar": "s % x", "_maximum_scalar": "maximum", "_minimum_scalar": "minimum",
    "_greater_scalar": "greater", "_greater_equal_scalar": "greater_equal",
    "_lesser_scalar": "lesser", "_lesser_equal_scalar": "lesser_equal",
    "_equal_scalar": "equal", "_not_equal_scalar": "not_equal",
}  # fmt: skip
for _op, _how in _SCALAR.items():
    _DEFS[_op] = _Def("", ("data",), scalar=_how)
#: the ``__init__`` attribute MXNet gives auxiliary-state variables
_AUX_INIT = {"moving_mean": '["zero", {}]', "moving_var": '["one", {}]'}


def _nd() -> Any:
    from .. import ndarray

    return ndarray


#: ``mx.nd.contrib``'s functions that are not operators: control flow over Python callables.
_CONTRIB_NOT_OPS = frozenset({"foreach", "cond", "while_loop", "with_out"})
#: ... and those MXNet composes from other operators (no ``_contrib_`` operator of theirs).
_CONTRIB_COMPOSED = frozenset({"isnan", "isinf", "isfinite", "rand_zipfian"})


def _contrib_fn(op: str) -> Any:
    """``mx.nd.contrib``'s function for ``_contrib_<name>`` (MXNet's name of its contrib
    operators), or None."""
    name = op[len("_contrib_") :]
    skip = _CONTRIB_NOT_OPS | _CONTRIB_COMPOSED
    if not op.startswith("_contrib_") or name in skip or name.startswith("_"):
        return None
    return getattr(_nd().contrib, name, None)


def _image_fn(op: str) -> Any:
    """``mx.nd.image``'s function for ``_image_<name>`` (MXNet's name of its image operators),
    or None."""
    name = op[len("_image_") :]
    if not op.startswith("_image_") or name.startswith("_"):
        return None
    return getattr(_nd().image, name, None)


def _nd_fn(op: str) -> Callable[..., Any]:
    d = _DEFS.get(op)
    name = d.nd if d is not None else op
    contrib = _contrib_fn(name) or _image_fn(name)
    fn = contrib or getattr(_nd(), name, None)
    if fn is None and d is not None and name.startswith("_"):  # MXNet's underscore names
        fn = getattr(_nd()._internal, name, None)
    if fn is None or not callable(fn) or op.startswith("__"):
        raise MXNetError(f"symbol operator {op!r} is not an operator mxrs has")
    # AMP's imperative wrappers cast inputs; a graph holds its casts as nodes already
    return getattr(fn, "_amp_original", fn)


def has_op(op: str) -> bool:
    """Whether ``op`` names a symbol operator."""
    if op in _DEFS:
        return True
    if op.startswith("_contrib_"):
        return callable(_contrib_fn(op))
    if op.startswith("_image_"):
        return callable(_image_fn(op))
    fn = getattr(_nd(), op, None)
    return callable(fn) and not isinstance(fn, type) and not op.startswith("_")


@functools.cache
def _signature_inputs(op: str) -> tuple[tuple[str, ...], bool]:
    """The array inputs of a plain ``mx.nd`` operator and whether it takes any number: its
    parameters without a default, but those annotated as numbers, shapes or strings
    (``clip``'s ``a_min``, ``reshape``'s ``shape``), which are attributes."""
    params = inspect.signature(_nd_fn(op)).parameters.values()
    if any(p.kind is p.VAR_POSITIONAL for p in params):
        return (), True
    names = tuple(
        p.name
        for p in params
        if p.default is p.empty
        and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
        and _may_be_array(p.annotation)
    )
    return names, False


def _may_be_array(annotation: Any) -> bool:
    """Whether a parameter with this annotation (a string under postponed evaluation) can be
    an array; unannotated ones can."""
    text = annotation if isinstance(annotation, str) else getattr(annotation, "__name__", "")
    if annotation is inspect.Parameter.empty or not text:
        return True
    return any(k in text for k in ("NDArray", "Any", "ArrayCore", "ArrayT"))


def _custom_prop(attrs: dict[str, Any]) -> Any:
    from ..operator import make_prop

    rest = {k: v for k, v in attrs.items() if k != "op_type"}
    if "op_type" not in attrs:
        raise MXNetError("Custom: op_type (the registered name) is required")
    return make_prop(str(attrs["op_type"]), rest)


def input_names(op: str, attrs: dict[str, Any]) -> tuple[tuple[str, ...], bool]:
    """``(names, variadic)``: the inputs of an ``op`` node with (parsed) ``attrs``."""
    if op == "Custom":
        prop = _custom_prop(attrs)
        return tuple(prop.list_arguments()) + tuple(prop.list_auxiliary_states()), False
    d = _DEFS.get(op)
    if d is None:
        return _signature_inputs(op)
    if d.variadic:
        return (), True
    if d.inputs is None:
        return _signature_inputs(d.nd)
    dropped = d.drop(attrs)
    return tuple(n for n in d.inputs if n not in dropped), False


def aux_positions(op: str, attrs: dict[str, str], n_inputs: int) -> list[int]:
    """Which inputs of an ``op`` node are auxiliary states."""
    if op == "Custom":
        prop = _custom_prop(parse_attrs(attrs))
        n_args = len(prop.list_arguments())
        return list(range(n_args, min(n_inputs, n_args + len(prop.list_auxiliary_states()))))
    d = _DEFS.get(op)
    if d is None or not d.aux:
        return []
    names, _ = input_names(op, parse_attrs(attrs))
    return [i for i, n in enumerate(names) if n in d.aux and i < n_inputs]


def visible_outputs(op: str, attrs: dict[str, str]) -> list[str]:
    """The names (suffixes) of an ``op`` node's visible outputs."""
    if op in ("SliceChannel", "split", "amp_multicast"):
        n = int(parse_attrs(attrs).get("num_outputs", 1))
        return [f"output{i}" for i in range(n)] if n > 1 else ["output"]
    if op in _MULTI_WEIGHT:
        n = int(parse_attrs(attrs).get("num_weights", 1))
        return [f"output{i}" for i in range(n)] if n > 1 else ["output"]
    if op == "Custom":
        outs = _custom_prop(parse_attrs(attrs)).list_outputs()
        return ["output"] if len(outs) == 1 else list(outs)
    if op in ("_contrib_Proposal", "_contrib_MultiProposal"):  # scores hidden unless asked
        return ["output", "score"] if parse_attrs(attrs).get("output_score") else ["output"]
    if op in ("linalg_det", "linalg_slogdet"):  # MXNet's: they have hidden outputs
        return ["output0", "output1"] if op == "linalg_slogdet" else ["output0"]
    if op in ("linalg_gelqf", "linalg_syevd"):
        return ["output0", "output1"]
    if op == "RNN":
        a = parse_attrs(attrs)
        if not a.get("state_outputs", False):
            return ["output"]
        lstm = a.get("mode") == "lstm"  # MXNet's names: rnn_state_output, rnn_statecell_output
        return ["output", "state_output"] + (["statecell_output"] if lstm else [])
    norms = ("BatchNorm", "BatchNorm_v1", "LayerNorm", "GroupNorm")
    if op in norms and parse_attrs(attrs).get("output_mean_var"):
        return (
            ["output", "mean", "var"] if op.startswith("BatchNorm") else ["output", "mean", "std"]
        )
    return ["output"]


def num_outputs(op: str, attrs: dict[str, str]) -> int:
    """Every output of an ``op`` node, hidden ones included (MXNet's ``node_row_ptr``)."""
    d = _DEFS.get(op)
    visible = len(visible_outputs(op, attrs))
    hidden = d.hidden if d is not None else 0
    if op == "Pooling" and parse_attrs(attrs).get("pool_type", "max") == "max":
        hidden = 1  # MXNet's (MKL-DNN) max pooling keeps a workspace output
    return max(visible, 1 + hidden)


def parse_attr(value: str) -> Any:
    """An attribute string as a Python value: ``'(5, 5)'`` -> (5, 5), ``'True'`` -> True;
    anything that is not a literal stays a string (``'relu'``)."""
    try:
        return ast.literal_eval(value)
    except (ValueError, SyntaxError, MemoryError, RecursionError, TypeError):
        return value


def parse_attrs(attrs: dict[str, str]) -> dict[str, Any]:
    """The operator parameters among ``attrs`` (not the ``__x__`` ones), parsed."""
    return {
        k: parse_attr(v) for k, v in attrs.items() if not (k.startswith("__") and k.endswith("__"))
    }


def _attr_string(key: str, value: Any) -> str:
    if key == "dtype" and not isinstance(value, str):
        return np.dtype(value).name
    if isinstance(value, list):
        return str(tuple(value))
    return str(value)


def compile_node(node: OpNode) -> Callable[[list[Any]], list[Any]]:
    """A function computing ``node``'s visible outputs from its input NDArrays, with the
    node's attributes parsed and its operator looked up once (training or not is the autograd
    scope's)."""
    op = node.op
    assert op is not None
    params = parse_attrs(node.attrs)
    d = _DEFS.get(op)
    if d is not None and d.scalar is not None:
        how, s = d.scalar, params.get("scalar", 0.0)
        return lambda inputs: [_scalar(how, inputs[0], s)]
    fn = _nd_fn(op)
    if d is not None and d.variadic and d.count == "num_args":
        params.pop("num_args", None)

    def call(inputs: list[Any]) -> list[Any]:
        try:
            out = fn(*inputs, **params)
        except TypeError as e:
            raise MXNetError(f"{op} node {node.name!r}: {e}") from None
        return list(out) if isinstance(out, list | tuple) else [out]

    return call


def run(node: OpNode, inputs: list[Any]) -> list[Any]:
    """Compute ``node``'s visible outputs from its input NDArrays once (see
    :func:`compile_node` for running it repeatedly)."""
    return compile_node(node)(inputs)


def _scalar(how: str, x: Any, s: float) -> Any:
    nd = _nd()
    if how in ("maximum", "minimum", "greater", "greater_equal", "lesser", "lesser_equal",
               "equal", "not_equal"):  # fmt: skip
        return getattr(nd, how)(x, s)
    return {
        "x + s": lambda: x + s, "x - s": lambda: x - s, "s - x": lambda: s - x,
        "x * s": lambda: x * s, "x / s": lambda: x / s, "s / x": lambda: s / x,
        "x ** s": lambda: x**s, "s ** x": lambda: s**x, "x % s": lambda: x % s,
        "s % x": lambda: s % x,
    }[how]()  # fmt: skip


@functools.cache
def _positional_attrs(op: str) -> tuple[str, ...]:
    d = _DEFS.get(op)
    if d is not None and d.scalar is not None:
        return ("scalar",)
    fn = _nd_fn(op)
    return tuple(
        p.name
        for p in inspect.signature(fn).parameters.values()
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
    )
