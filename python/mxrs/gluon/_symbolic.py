"""HybridBlocks on Symbols: the symbolic call, the graph of a hybridized block and ``export``.

A HybridBlock called with Symbols runs ``hybrid_forward(mx.sym, x, ..., **{name: param.var()})``
inside its name scope, so operators get the block's prefix (``dense0_fwd``, ``dense0_relu_fwd``)
and the graph's arguments are the parameters' names, as in MXNet 1.x.

A hybridized block remembers the structure of the inputs of its first forward call; its graph
(:func:`graph`) is that of a symbolic call on variables named ``data`` (one input) or ``data0``,
``data1``... (several), which :func:`export` writes in MXNet's checkpoint format.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from .. import name as _naming
from .. import ndarray as nd
from .. import symbol
from ..attribute import AttrScope
from ..base import MXNetError
from ..ndarray import NDArray
from ..symbol import Symbol

if TYPE_CHECKING:
    from ._scope import _BlockScope
    from .parameter import Parameter
    from .parameter_dict import ParameterDict

__all__ = [
    "input_kinds",
    "flatten",
    "regroup",
    "call",
    "remember_inputs",
    "graph",
    "export",
    "Hybrid",
]

#: A nested input or output structure: 0 one array, -1 None, n > 0 a symbol of n outputs,
#: a list for a (nested) list.
Format = int | list[Any]


class Hybrid(Protocol):
    """What the symbolic side needs of a block (a :class:`~mxrs.gluon.HybridBlock` is one):
    its names and parameters, its ``hybrid_forward``, and the graph it keeps once hybridized."""

    _reg_params: dict[str, Parameter]
    _in_format: Format | str | None
    _out_format: Format | None
    _cached_graph: tuple[list[Symbol], Symbol] | tuple[()]

    @property
    def prefix(self) -> str: ...

    @property
    def name(self) -> str: ...

    def name_scope(self) -> _BlockScope: ...

    def collect_params(self, select: str | None = None) -> ParameterDict: ...

    def hybrid_forward(self, F: Any, x: Any, *args: Any, **kwargs: Any) -> Any: ...


def input_kinds(args: Any) -> tuple[bool, bool]:
    """``(has_symbol, has_ndarray)`` of the (nested lists of) arguments ``args``."""
    if isinstance(args, NDArray):
        return False, True
    if isinstance(args, Symbol):
        return True, False
    has_sym = has_nd = False
    if isinstance(args, (list, tuple)):
        for a in args:
            s, n = input_kinds(a)
            has_sym, has_nd = has_sym or s, has_nd or n
    return has_sym, has_nd


def flatten(args: Any, what: str) -> tuple[list[Any], Format]:
    """The arrays or symbols in ``args`` (nested lists, None allowed) as a flat list, and the
    format that :func:`regroup` rebuilds the structure from.

    Raises
    ------
    MXNetError
        On an element that is neither an NDArray, a Symbol, None nor a list of them.
    """
    if isinstance(args, NDArray):
        return [args], 0
    if isinstance(args, Symbol):
        n = len(args.list_outputs())
        return [args], n if n > 1 else 0
    if args is None:
        return [None], -1
    if not isinstance(args, (list, tuple)):
        raise MXNetError(
            f"When hybridized, the {what} of HybridBlock must be (nested) list of Symbol or "
            f"NDArray, but got {args} of type {type(args)}"
        )
    flat: list[Any] = []
    fmts: list[Format] = []
    for a in args:
        f, fmt = flatten(a, what)
        flat.extend(f)
        fmts.append(fmt)
    return flat, fmts


def regroup(flat: Sequence[Any], fmt: Format) -> Any:
    """The structure that :func:`flatten` described by ``fmt``, with ``flat``'s elements."""

    def merge(items: Sequence[Any], f: Format) -> tuple[Any, Sequence[Any]]:
        if isinstance(f, int):
            if f in (0, -1):
                return items[0], items[1:]
            return list(items[:f]), items[f:]
        out = []
        for sub in f:
            res, items = merge(items, sub)
            out.append(res)
        return out, items

    return merge(flat, fmt)[0]


class _LayerNames(_naming.NameManager):
    """The names inside a built-in layer's scope: its main operator is ``<prefix>fwd``, the
    others are named by the scope around (the layer's ``name_scope``).

    MXNet's Gluon layers pass ``name='fwd'`` to their main operator (``dense0_fwd``); mxrs's
    layers leave the name to the scope, which gives it to the operators listed for the layer.
    """

    def __init__(self, prefix: str, fwd_ops: frozenset[str]) -> None:
        super().__init__()
        self._prefix = prefix
        self._fwd_ops = fwd_ops
        self._outer: _naming.NameManager | None = None

    def __enter__(self) -> _LayerNames:
        self._outer = _naming.current()
        super().__enter__()
        return self

    def get(self, name: str | None, hint: str) -> str:
        """``<prefix>fwd`` for the layer's main operator, else the outer scope's name."""
        if not name and hint in self._fwd_ops:
            return self._prefix + "fwd"
        assert self._outer is not None  # set on entering
        return self._outer.get(name, hint)


#: How MXNet 1.9.1's layers call their main operator, by the mxrs layer class (or base class)
#: that calls it: the operators (``mx.sym`` function names, lower case) they name ``fwd`` and
#: the attributes they add to them.
_LAYER_CALLS: dict[str, tuple[frozenset[str], dict[str, str]]] = {
    "Dense": (frozenset({"fullyconnected"}), {}),
    "Activation": (frozenset({"activation"}), {}),
    "LeakyReLU": (frozenset({"leakyrelu"}), {}),
    "PReLU": (frozenset({"leakyrelu"}), {}),
    "SELU": (frozenset({"leakyrelu"}), {}),
    "GELU": (frozenset({"leakyrelu"}), {}),
    "Swish": (frozenset({"sigmoid"}), {}),
    "Dropout": (frozenset({"dropout"}), {"cudnn_off": "False"}),
    "BatchNorm": (frozenset({"batchnorm"}), {}),
    "Embedding": (frozenset({"embedding"}), {}),
    "InstanceNorm": (frozenset({"instancenorm"}), {}),
    "_Conv": (frozenset({"convolution", "deconvolution"}), {}),
    "_Pooling": (frozenset({"pooling"}), {}),
}


@contextlib.contextmanager
def _layer_scope(block: Hybrid) -> Iterator[None]:
    """The naming and attribute scope of a built-in layer's symbolic call (none for others)."""
    for cls in type(block).__mro__:
        if cls.__module__.startswith("mxrs.gluon.nn.") and cls.__name__ in _LAYER_CALLS:
            ops, attrs = _LAYER_CALLS[cls.__name__]
            with _LayerNames(block.prefix, ops), AttrScope(**attrs):
                yield
            return
    yield


def call(block: Hybrid, x: Any, args: Sequence[Any], kwargs: dict[str, Any]) -> Any:
    """``block``'s output Symbol(s) for Symbol inputs: its ``hybrid_forward`` with ``mx.sym``
    and its parameters' variables, inside its name scope."""
    params: dict[str, Any] = {k: p.var() for k, p in block._reg_params.items()}
    params.update(kwargs)
    with block.name_scope(), _layer_scope(block):
        return block.hybrid_forward(symbol, x, *args, **params)


def remember_inputs(block: Hybrid, args: Sequence[Any]) -> None:
    """Remember the input structure of a hybridized block's first forward call (what its
    graph is built from) and make its parameters' variables now, before deferred
    initialization fills in their shapes, as MXNet builds its graph at that moment."""
    try:
        _, block._in_format = flatten(list(args), "input")
    except MXNetError as err:
        block._in_format = str(err)
        return
    stack: list[Any] = [block]
    while stack:
        b = stack.pop()
        for p in b.params.values():
            p.var()
        stack.extend(b._children.values())


def graph(block: Hybrid) -> tuple[list[Symbol], Symbol]:
    """The input variables and the output symbol of a hybridized block that has run.

    Raises
    ------
    MXNetError
        When the block has not been hybridized and run yet, or its inputs have no graph.
    """
    if block._cached_graph:
        return block._cached_graph
    fmt = block._in_format
    if fmt is None:
        raise MXNetError(
            "Please first call block.hybridize() and then run forward with this block at "
            "least once before calling export."
        )
    if isinstance(fmt, str):
        raise MXNetError(f"{block.name} has no symbolic graph: {fmt}")
    slots = _slots(fmt)
    real = sum(slots)
    if real == 0:
        raise MXNetError("All args are None and we do not support such a case.")
    inputs: list[Symbol] = []
    flat: list[Any] = []
    for s in slots:
        if not s:
            flat.append(None)
            continue
        v = symbol.var(f"data{len(inputs)}" if real > 1 else "data")
        inputs.append(v)
        flat.append(v)
    grouped = regroup(flat, fmt)
    out = call(block, grouped[0], grouped[1:], {})
    outs, block._out_format = flatten(out, "output")
    block._cached_graph = (inputs, symbol.Group(outs))
    return block._cached_graph


def _slots(fmt: Format) -> list[bool]:
    """For each flat position of an input format: whether it holds an input (not None)."""
    if isinstance(fmt, int):
        return [True] * fmt if fmt > 0 else [fmt == 0]
    return [s for f in fmt for s in _slots(f)]


def export(block: Hybrid, path: str, epoch: int, remove_amp_cast: bool) -> None:
    """Write ``block``'s graph to ``path-symbol.json`` and its parameters, named ``arg:<name>``
    and ``aux:<name>``, to ``path-%04d.params`` (see :meth:`HybridBlock.export`)."""
    inputs, sym = graph(block)
    data_names = {i.name for i in inputs}
    params = block.collect_params()
    for name in sym.list_inputs():
        if name not in data_names and name not in params:
            raise MXNetError(f"Unknown input to HybridBlock: {name}")
    sym.save(f"{path}-symbol.json", remove_amp_cast=remove_amp_cast)
    arg_names = set(sym.list_arguments())
    arrays = {}
    for name in sym.list_inputs():
        if name in data_names or not params[name]._is_initialized():
            continue
        kind = "arg" if name in arg_names else "aux"
        arrays[f"{kind}:{name}"] = params[name]._reduce()
    nd.save(f"{path}-{epoch:04d}.params", arrays)
