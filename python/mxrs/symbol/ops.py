"""The ``mx.sym`` operator functions: each makes a node of its operator over the symbols given,
with the other arguments as string attributes, and names missing inputs as MXNet does."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from .. import name as _name
from ..base import MXNetError
from .graph import Node, hidden_attrs, hidden_key
from .opinfo import (
    _AUX_INIT,
    _CANONICAL,
    _DEFS,
    _attr_string,
    _positional_attrs,
    has_op,
    input_names,
)
from .symbol import Symbol, Variable

__all__ = ["create", "make_function"]


def create(
    op: str,
    args: list[Symbol],
    kwargs: dict[str, Any],
    name: str | None = None,
    attr: dict[str, str] | None = None,
    hint: str | None = None,
) -> Symbol:
    """A new ``op`` node over the given symbols (positional ``args``, or by input name among
    ``kwargs``; the other ``kwargs`` are attributes). Inputs not given become variables named
    ``<node name>_<input>``, as MXNet names them."""
    from ..attribute import AttrScope

    params = {k: v for k, v in kwargs.items() if not isinstance(v, Symbol)}
    named = {k: v for k, v in kwargs.items() if isinstance(v, Symbol)}
    # a hidden key given as a parameter (lr_mult=...) is an attribute, as MXNet makes it
    attrs = {hidden_key(k): _attr_string(k, v) for k, v in params.items() if v is not None}
    names, variadic = input_names(op, params)
    if variadic:
        if named:
            raise MXNetError(f"{op} takes its inputs by position, not {sorted(named)}")
        count = _DEFS[op].count if op in _DEFS else "num_args"
        if count:
            attrs.setdefault(count, str(len(args)))
    elif len(args) > len(names):
        raise MXNetError(f"{op} takes {len(names)} inputs {list(names)}, got {len(args)}")
    node_name = _name.current().get(name, hint or op.lower())
    attrs.update(hidden_attrs(AttrScope.current().get(attr)))
    inputs: list[tuple[Node, int]] = []
    if variadic:
        inputs = [_output(a, op) for a in args]
    else:
        given = dict(zip(names, args, strict=False))
        for k, v in named.items():
            if k not in names:
                raise MXNetError(f"{op} has no input {k!r}; its inputs are {list(names)}")
            if k in given:
                raise MXNetError(f"{op}: input {k!r} given twice")
            given[k] = v
        aux = _DEFS[op].aux if op in _DEFS else ()
        for n in names:
            if n in given:
                inputs.append(_output(given[n], op))
            else:
                vattrs = dict(attrs)
                if n in aux:
                    vattrs["__init__"] = _AUX_INIT.get(n, '["zero", {}]')
                elif (op, n) in _INPUT_INIT:
                    vattrs["__init__"] = _INPUT_INIT[(op, n)]
                inputs.append(Variable(f"{node_name}_{n}", attr=vattrs)._outputs[0])
    node = Node(op, node_name, attrs, inputs)
    n_out = len(node.output_names())
    return Symbol([(node, i) for i in range(n_out)])


#: the ``__init__`` attribute MXNet gives the variables some operators create for themselves
_INPUT_INIT = {("LeakyReLU", "gamma"): '["Constant", {"value": 0.25}]'}


def _output(sym: Any, op: str) -> tuple[Node, int]:
    if not isinstance(sym, Symbol):
        raise MXNetError(f"{op}: inputs must be Symbols, got {type(sym).__name__}")
    if len(sym._outputs) != 1:
        raise MXNetError(f"{op}: an input has {len(sym._outputs)} outputs; pick one")
    return sym._outputs[0]


@functools.cache
def make_function(op: str, hint: str | None = None) -> Callable[..., Symbol]:
    """The ``mx.sym`` function that makes ``op`` nodes: symbols positionally or by input name,
    attributes by keyword, plus ``name=`` and ``attr=``; automatic node names start with
    ``hint`` (the operator's name in lower case by default)."""
    if not has_op(op):
        raise MXNetError(f"symbol operator {op!r} is not an operator mxrs has")

    def fn(*args: Any, name: str | None = None, attr: dict[str, str] | None = None,
           **kwargs: Any) -> Symbol:  # fmt: skip
        n = next((i for i, a in enumerate(args) if not isinstance(a, Symbol)), len(args))
        syms, extra = list(args[:n]), args[n:]
        if any(isinstance(a, Symbol) for a in extra):
            raise MXNetError(f"{op}: give the symbols first, then attributes by keyword")
        if extra:
            names, variadic = input_names(op, kwargs)
            rest = [n for n in _positional_attrs(op) if n not in names]
            if len(extra) > len(rest):
                raise MXNetError(
                    f"{op}: {len(extra)} positional attribute(s) {list(extra)} but it takes "
                    f"{rest}; give symbols for its inputs {list(names)}"
                )
            for k, v in zip(rest, extra, strict=False):
                kwargs[k] = v
        kwargs.pop("out", None)
        node_hint = hint or op.lower()
        return create(_CANONICAL.get(op, op), syms, kwargs, name=name, attr=attr, hint=node_hint)

    fn.__name__ = fn.__qualname__ = op
    fn.__doc__ = f"Symbolic form of ``mx.nd.{_DEFS[op].nd if op in _DEFS else op}``."
    return fn
