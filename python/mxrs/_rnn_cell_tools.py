"""Plumbing that the recurrent cells of ``gluon.rnn``, ``gluon.contrib.rnn`` and ``mx.rnn`` share:
constructors that differ from a sibling's only by default values, and running a wrapped
(*modified*) base cell from its modifier cell.
"""

from __future__ import annotations

import types
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar, cast

_F = TypeVar("_F", bound=Callable[..., Any])


def with_defaults(func: _F, qualname: str, **defaults: Any) -> _F:
    """A copy of the function ``func`` (named ``qualname``) whose parameters named in
    ``defaults`` default to the values given there instead; the code, annotations and
    docstring are ``func``'s, so ``inspect.signature`` shows the new defaults.

    Raises
    ------
    TypeError
        When a name in ``defaults`` is not a positional parameter of ``func``, or would leave
        a parameter without a default after one with a default.
    """
    code = func.__code__
    names = code.co_varnames[: code.co_argcount]
    given = func.__defaults__ or ()
    merged = {**dict(zip(names[len(names) - len(given) :], given, strict=True)), **defaults}
    first = min((names.index(n) for n in merged if n in names), default=len(names))
    missing = [n for n in names[first:] if n not in merged] + sorted(set(merged) - set(names))
    if missing:
        raise TypeError(f"{func.__qualname__}: no default can be given for {missing}")
    copy = types.FunctionType(
        code,
        func.__globals__,
        func.__name__,
        tuple(merged[n] for n in names[first:]),
        func.__closure__,
    )
    copy.__kwdefaults__ = func.__kwdefaults__
    copy.__annotations__ = dict(func.__annotations__)
    copy.__doc__ = func.__doc__
    copy.__module__ = func.__module__
    copy.__qualname__ = qualname
    return cast(_F, copy)


@contextmanager
def unmodified(base_cell: Any) -> Iterator[None]:
    """Let a modifier cell use its wrapped ``base_cell`` directly for the ``with`` block (a
    modified cell refuses ``begin_state``)."""
    base_cell._modified = False
    try:
        yield
    finally:
        base_cell._modified = True
