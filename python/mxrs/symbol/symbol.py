"""The :class:`Symbol`: a graph of operator nodes, as MXNet 1.x's ``mx.sym``.

A graph is made of :class:`Node` objects: a variable (``op`` None) or an operator with its
string attributes (MXNet keeps every attribute as a string, ``kernel='(5, 5)'``) and its inputs,
each an output of another node. A Symbol is a list of such outputs; composing operators builds
new nodes and never changes existing ones.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

from .. import name as _name
from ..attribute import AttrScope
from ..base import MXNetError
from . import infer, json_io
from .executor import Executor, simple_bind
from .graph import (
    DTYPE_CODES,
    HIDDEN_KEYS,
    Node,
    hidden_attrs,
    hidden_key,
    listed_attrs,
    topo,
    without_amp_casts,
)
from .opinfo import aux_positions, has_op

if TYPE_CHECKING:
    from ..context import Context

__all__ = ["Symbol", "Variable", "var", "Group", "load", "load_json"]


class Symbol:
    """A symbolic expression: one or more outputs of a graph of operators.

    Symbols are made by :func:`Variable` and the operator functions of ``mx.sym``, combined by
    Python's arithmetic, grouped by :func:`Group`, and run by :meth:`bind`/:meth:`simple_bind`.
    """

    __slots__ = ("_outputs",)

    #: ``mx.sym``'s function maker (``ops.make_function``), installed by the package: the
    #: operators as methods, ``sym.reshape(...)``
    _make_function: Any = None

    def __init__(self, outputs: list[tuple[Node, int]]) -> None:
        self._outputs = outputs

    # ----------------------------------------------------------------- structure
    @property
    def name(self) -> str | None:
        """str or None: the name of a single-output symbol's node."""
        if len(self._outputs) != 1:
            return None
        return self._outputs[0][0].name

    def _nodes(self) -> list[Node]:
        return topo(self._outputs)

    def _aux_nodes(self) -> set[int]:
        """ids of the variables that are operators' auxiliary states."""
        aux: set[int] = set()
        for node in self._nodes():
            if node.op is not None:
                for pos in aux_positions(node.op, node.attrs, len(node.inputs)):
                    aux.add(id(node.inputs[pos][0]))
        return aux

    def list_arguments(self) -> list[str]:
        """The names of the variables that are arguments (inputs and parameters), in order."""
        aux = self._aux_nodes()
        return [n.name for n in self._nodes() if n.op is None and id(n) not in aux]

    def list_auxiliary_states(self) -> list[str]:
        """The names of the auxiliary states (BatchNorm's moving statistics)."""
        aux = self._aux_nodes()
        return [n.name for n in self._nodes() if n.op is None and id(n) in aux]

    def list_inputs(self) -> list[str]:
        """Every variable's name: arguments and auxiliary states, in graph order."""
        return [n.name for n in self._nodes() if n.op is None]

    def list_outputs(self) -> list[str]:
        """The names of the outputs (``softmax_output``...)."""
        return [node.output_names()[i] for node, i in self._outputs]

    def get_internals(self) -> Symbol:
        """A symbol whose outputs are every node's visible outputs, in graph order."""
        outs: list[tuple[Node, int]] = []
        for node in self._nodes():
            outs += [(node, i) for i in range(len(node.output_names()))]
        return Symbol(outs)

    def get_children(self) -> Symbol | None:
        """The inputs of this symbol's (single) node, as one grouped symbol; None for a
        variable."""
        node = self._outputs[0][0]
        return Symbol(list(node.inputs)) if node.inputs else None

    def __len__(self) -> int:
        return len(self._outputs)

    def __iter__(self) -> Iterator[Symbol]:
        return (Symbol([o]) for o in self._outputs)

    def __getitem__(self, index: int | str | slice) -> Symbol:
        if isinstance(index, str):
            names = self.list_outputs()
            if index not in names:
                raise MXNetError(f"symbol has no output named {index!r}; it has {names}")
            if names.count(index) > 1:
                raise MXNetError(f"symbol has several outputs named {index!r}")
            index = names.index(index)
        if isinstance(index, slice):
            return Symbol(self._outputs[index])
        if not -len(self._outputs) <= index < len(self._outputs):
            raise IndexError(f"output {index} of a symbol with {len(self._outputs)} outputs")
        return Symbol([self._outputs[index]])

    # ----------------------------------------------------------------- attributes
    def attr(self, key: str) -> str | None:
        """The attribute ``key`` of this symbol's node, None if unset: an operator's
        parameter (``'kernel'``), a user attribute, or a hidden one by either name
        (``'lr_mult'`` or ``'__lr_mult__'``)."""
        node = self._single("attr")
        value = node.attrs.get(key)
        if value is None and key in HIDDEN_KEYS:
            value = node.attrs.get(f"__{key}__")
        return value

    def list_attr(self, recursive: bool = False) -> dict[str, str]:
        """This node's attributes: an operator's parameters, the attributes given with
        ``attr=`` or an :class:`~mxrs.attribute.AttrScope`, and each hidden one
        (``__lr_mult__``, ``__ctx_group__``...) under its plain name too (``lr_mult``), as
        MXNet 1.9.1 lists them.

        Raises
        ------
        DeprecationWarning
            For ``recursive=True`` (raised, as MXNet does): use :meth:`attr_dict`.
        """
        if recursive:
            raise DeprecationWarning(
                "Symbol.list_attr with recursive=True has been deprecated. "
                "Please use attr_dict instead."
            )
        return listed_attrs(self._single("list_attr").attrs)

    def attr_dict(self) -> dict[str, dict[str, str]]:
        """Every node's attributes (as :meth:`list_attr` gives them) by node name; nodes
        without any are left out."""
        return {node.name: listed_attrs(node.attrs) for node in self._nodes() if node.attrs}

    def _set_attr(self, **kwargs: str) -> None:
        """Set string attributes on this symbol's node (a hidden key such as ``lr_mult`` is
        stored as ``__lr_mult__``).

        Raises
        ------
        MXNetError
            For a value that is not a str, or a key ending in a hidden key
            (``weight_lr_mult``), which MXNet refuses.
        """
        node = self._single("_set_attr")
        for k, v in kwargs.items():
            if not isinstance(v, str):
                raise MXNetError(f"attribute {k!r} must be a string, not {type(v).__name__}")
            node.attrs[hidden_key(k)] = v

    def _single(self, what: str) -> Node:
        if len(self._outputs) != 1:
            raise MXNetError(f"{what} needs a symbol with one output, not {len(self._outputs)}")
        return self._outputs[0][0]

    # ----------------------------------------------------------------- composition
    def __call__(self, *args: Symbol, **kwargs: Any) -> Symbol:
        """A copy of this symbol with variables replaced: positional symbols take the
        arguments in order, keyword ones the variables of those names."""
        name = kwargs.pop("name", None)
        args_names = self.list_arguments()
        bind: dict[str, Symbol] = {}
        if len(args) > len(args_names):
            raise MXNetError(f"compose: {len(args)} inputs for {len(args_names)} arguments")
        for n, a in zip(args_names, args, strict=False):
            bind[n] = a
        for k, v in kwargs.items():
            if k not in args_names:
                raise MXNetError(f"compose: the symbol has no argument {k!r}")
            bind[k] = v
        memo: dict[int, Node] = {}
        for node in self._nodes():
            if node.op is None:
                continue
            inputs = []
            for child, i in node.inputs:
                if child.op is None and child.name in bind:
                    inputs.append(_only(bind[child.name]))
                elif id(child) in memo:
                    inputs.append((memo[id(child)], i))
                else:
                    inputs.append((child, i))
            memo[id(node)] = Node(node.op, node.name, dict(node.attrs), inputs)
        outs = []
        for node, i in self._outputs:
            if node.op is None and node.name in bind:
                outs.append(_only(bind[node.name]))
            else:
                outs.append((memo.get(id(node), node), i))
        result = Symbol(outs)
        if name is not None and len(outs) == 1:
            outs[0][0].name = name
        return result

    def __copy__(self) -> Symbol:
        return self()

    def __deepcopy__(self, memo: Any) -> Symbol:
        return load_json(json_io.dumps(self))

    # ----------------------------------------------------------------- serialisation
    def tojson(self, remove_amp_cast: bool = True) -> str:
        """The graph in MXNet's JSON format; with ``remove_amp_cast`` (the default, as in
        MXNet) without the ``amp_cast``/``amp_multicast`` nodes mixed precision added."""
        if remove_amp_cast:
            return json_io.dumps(Symbol(without_amp_casts(self._outputs)))
        return json_io.dumps(self)

    def save(self, fname: str, remove_amp_cast: bool = True) -> None:
        """Write :meth:`tojson` (with ``remove_amp_cast``) to ``fname``."""
        with open(fname, "w") as f:
            f.write(self.tojson(remove_amp_cast))

    def __getstate__(self) -> dict[str, str]:
        return {"json": json_io.dumps(self)}

    def __setstate__(self, state: dict[str, str]) -> None:
        self._outputs = load_json(state["json"])._outputs

    def __repr__(self) -> str:
        name = self.name
        if name is None:
            return f"<Symbol group [{', '.join(str(s.name) for s in self)}]>"
        return f"<Symbol {name}>"

    # ----------------------------------------------------------------- inference and binding
    def infer_shape(self, *args: Any, **kwargs: Any) -> tuple[Any, Any, Any]:
        """``(arg_shapes, out_shapes, aux_shapes)`` from the shapes of some arguments (given
        in order or by name); Nones where a shape cannot be inferred."""
        return infer.infer_shape(self, args, kwargs, partial=False)

    def infer_shape_partial(self, *args: Any, **kwargs: Any) -> tuple[Any, Any, Any]:
        """As :meth:`infer_shape`, but unknown shapes are returned as ``()`` without error."""
        return infer.infer_shape(self, args, kwargs, partial=True)

    def infer_type(self, *args: Any, **kwargs: Any) -> tuple[Any, Any, Any]:
        """``(arg_types, out_types, aux_types)`` from the dtypes of some arguments."""
        return infer.infer_type(self, args, kwargs)

    def bind(
        self,
        ctx: Context,
        args: Any,
        args_grad: Any = None,
        grad_req: Any = "write",
        aux_states: Any = None,
        group2ctx: Any = None,
        shared_exec: Any = None,
    ) -> Executor:
        """An :class:`~mxrs.symbol.executor.Executor` running this symbol on ``ctx`` with the
        given argument arrays (a list in :meth:`list_arguments` order, or a dict by name).

        ``group2ctx`` (a dict of ``ctx_group`` names to contexts) runs each node made inside
        ``AttrScope(ctx_group=...)`` on its group's context; without it every argument and
        auxiliary state must live on ``ctx``."""
        return Executor(self, ctx, args, args_grad, grad_req, aux_states, group2ctx)

    def simple_bind(
        self,
        ctx: Context,
        grad_req: Any = "write",
        type_dict: dict[str, Any] | None = None,
        stype_dict: Any = None,
        group2ctx: Any = None,
        shared_arg_names: Any = None,
        shared_exec: Any = None,
        shared_buffer: Any = None,
        **kwargs: Any,
    ) -> Executor:
        """Bind with freshly allocated arguments, gradients and auxiliary states whose shapes
        are inferred from the given ones (``data=(32, 1, 28, 28)``).

        Arguments are allocated in the storage type given by ``stype_dict`` or their
        variable's ``stype`` (gradients dense); with ``group2ctx`` (a dict of ``ctx_group``
        names to contexts) each argument, its gradient and each auxiliary state lives on its
        group's context (the others on ``ctx``) and the nodes run there."""
        return simple_bind(self, ctx, grad_req, type_dict or {}, kwargs, stype_dict, group2ctx)

    def eval(self, ctx: Context | None = None, **kwargs: Any) -> list[Any]:
        """Run the symbol once on the given argument arrays and return its outputs."""
        from ..context import current_context

        exe = self.bind(ctx or current_context(), kwargs, grad_req="null")
        return exe.forward()

    # ----------------------------------------------------------------- arithmetic
    def _binary(self, other: Any, op: str, scalar_op: str, hint: str, shint: str) -> Symbol:
        if isinstance(other, Symbol):
            return _arithmetic(op, [self, other], {}, hint)
        if isinstance(other, int | float):
            return _arithmetic(scalar_op, [self], {"scalar": str(other)}, shint)
        return NotImplemented

    def _rscalar(self, other: Any, op: str, hint: str) -> Symbol:
        if isinstance(other, int | float):
            return _arithmetic(op, [self], {"scalar": str(other)}, hint)
        return NotImplemented

    def __add__(self, o: Any) -> Symbol:
        return self._binary(o, "elemwise_add", "_plus_scalar", "_plus", "_plusscalar")

    __radd__ = __add__

    def __sub__(self, o: Any) -> Symbol:
        return self._binary(o, "elemwise_sub", "_minus_scalar", "_minus", "_minusscalar")

    def __rsub__(self, o: Any) -> Symbol:
        return self._rscalar(o, "_rminus_scalar", "_rminusscalar")

    def __mul__(self, o: Any) -> Symbol:
        return self._binary(o, "elemwise_mul", "_mul_scalar", "_mul", "_mulscalar")

    __rmul__ = __mul__

    def __truediv__(self, o: Any) -> Symbol:
        return self._binary(o, "elemwise_div", "_div_scalar", "_div", "_divscalar")

    def __rtruediv__(self, o: Any) -> Symbol:
        return self._rscalar(o, "_rdiv_scalar", "_rdivscalar")

    def __mod__(self, o: Any) -> Symbol:
        return self._binary(o, "_mod", "_mod_scalar", "_mod", "_modscalar")

    def __rmod__(self, o: Any) -> Symbol:
        return self._rscalar(o, "_rmod_scalar", "_rmodscalar")

    def __pow__(self, o: Any) -> Symbol:
        return self._binary(o, "_power", "_power_scalar", "_power", "_powerscalar")

    def __rpow__(self, o: Any) -> Symbol:
        return self._rscalar(o, "_rpower_scalar", "_rpowerscalar")

    def __neg__(self) -> Symbol:
        return self.__mul__(-1.0)

    def __gt__(self, o: Any) -> Symbol:
        return self._binary(o, "_greater", "_greater_scalar", "_greater", "_greater_scalar")

    def __ge__(self, o: Any) -> Symbol:
        return self._binary(
            o, "_greater_equal", "_greater_equal_scalar", "_greater_equal",
            "_greater_equal_scalar",
        )  # fmt: skip

    def __lt__(self, o: Any) -> Symbol:
        return self._binary(o, "_lesser", "_lesser_scalar", "_lesser", "_lesser_scalar")

    def __le__(self, o: Any) -> Symbol:
        return self._binary(
            o, "_lesser_equal", "_lesser_equal_scalar", "_lesser_equal", "_lesser_equal_scalar"
        )

    def __eq__(self, o: Any) -> Symbol:  # type: ignore[override]
        return self._binary(o, "_equal", "_equal_scalar", "_equal", "_equal_scalar")

    def __ne__(self, o: Any) -> Symbol:  # type: ignore[override]
        return self._binary(o, "_not_equal", "_not_equal_scalar", "_not_equal", "_not_equal_scalar")

    __hash__ = object.__hash__

    def __bool__(self) -> bool:
        raise MXNetError("a Symbol has no truth value: it is not computed until bound")

    def __getattr__(self, name: str) -> Any:
        """Operators as methods: ``sym.reshape(...)`` is ``mx.sym.reshape(sym, ...)``."""
        if name.startswith("_"):
            raise AttributeError(name)
        make = Symbol._make_function
        if make is None or not has_op(name):
            raise AttributeError(f"'Symbol' object has no attribute {name!r}")

        def method(*args: Any, **kwargs: Any) -> Symbol:
            return make(name)(self, *args, **kwargs)

        return method


def _arithmetic(op: str, inputs: list[Symbol], attrs: dict[str, str], hint: str) -> Symbol:
    """A node of an arithmetic operator (no parameters to name) over ``inputs``."""
    attrs.update(hidden_attrs(AttrScope.current().get(None)))
    node = Node(op, _name.current().get(None, hint), attrs, [_only(s) for s in inputs])
    return Symbol([(node, 0)])


def _only(sym: Symbol) -> tuple[Node, int]:
    if len(sym._outputs) != 1:
        raise MXNetError(f"an input must be a single-output symbol, not {len(sym._outputs)}")
    return sym._outputs[0]


def Variable(
    name: str,
    attr: dict[str, str] | None = None,
    shape: Sequence[int] | None = None,
    lr_mult: float | None = None,
    wd_mult: float | None = None,
    dtype: Any = None,
    init: Any = None,
    stype: str | None = None,
    **kwargs: Any,
) -> Symbol:
    """A variable: an argument of the graph (data, label or parameter) named ``name``.

    ``shape``, ``lr_mult``, ``wd_mult``, ``dtype`` and ``init`` become the attributes
    ``__shape__``, ``__lr_mult__``... that shape inference, optimizers and initializers read.
    """
    if not isinstance(name, str):
        raise MXNetError(f"a variable's name must be a string, not {type(name).__name__}")
    attrs = hidden_attrs(AttrScope.current().get(attr))
    if shape is not None:
        attrs["__shape__"] = str(tuple(shape))
    if lr_mult is not None:
        attrs["__lr_mult__"] = str(lr_mult)
    if wd_mult is not None:
        attrs["__wd_mult__"] = str(wd_mult)
    if dtype is not None:
        import numpy as np

        attrs["__dtype__"] = str(DTYPE_CODES[np.dtype(dtype).name])
    if init is not None:
        attrs["__init__"] = init if isinstance(init, str) else init.dumps()
    if stype is not None:
        codes = {"default": "0", "row_sparse": "1", "csr": "2"}  # MXNet's storage type codes
        if stype not in codes:
            raise MXNetError(
                f"Variable {name!r}: unknown storage type {stype!r}; use 'default', "
                "'row_sparse' or 'csr'"
            )
        attrs["__storage_type__"] = codes[stype]
    for k, v in kwargs.items():
        if not (k.startswith("__") and k.endswith("__")):
            raise MXNetError(f"Variable {name!r}: unknown argument {k!r}")
        attrs[k] = str(v)
    return Symbol([(Node(None, name, attrs, []), 0)])


var = Variable


def Group(symbols: Sequence[Symbol]) -> Symbol:
    """One symbol whose outputs are those of ``symbols``, in order."""
    if not symbols:
        raise MXNetError("Group needs at least one symbol")
    outs: list[tuple[Node, int]] = []
    for s in symbols:
        if not isinstance(s, Symbol):
            raise MXNetError(f"Group takes Symbols, not {type(s).__name__}")
        outs += s._outputs
    return Symbol(outs)


def load_json(json_str: str) -> Symbol:
    """The symbol described by MXNet's JSON format."""
    return Symbol(json_io.loads(json_str))


def load(fname: str) -> Symbol:
    """The symbol saved in file ``fname`` (MXNet's JSON format)."""
    with open(fname) as f:
        text = f.read()
    try:
        return load_json(text)
    except json.JSONDecodeError as e:
        raise MXNetError(f"{fname} is not a symbol file: {e}") from None
