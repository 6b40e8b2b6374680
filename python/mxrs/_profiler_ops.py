"""Operator spans for ``mx.profiler``: each operator run while the profiler records, under the
name MXNet 1.9.1 gives it in its profile.

Imperative operators (``profile_imperative``): while the profiler records, the operator
functions of ``mx.nd`` and ``mx.nd.random`` and NDArray's arithmetic, comparison and in-place
operators are replaced by timing wrappers (:func:`configure` installs them and puts the
originals back when recording stops, so operators cost nothing extra while it is off). Each
span is named as MXNet names the operator that runs: ``sqrt``, ``FullyConnected``, ``_zeros``
for ``mx.nd.zeros``, ``_random_uniform`` for ``mx.nd.random.uniform``; arithmetic by its
operands, ``a + 1`` (and ``mx.nd.add(a, 1)``) as ``_plus_scalar``, ``1 - a`` as
``_rminus_scalar``, ``a * b`` as ``broadcast_mul``. Functions that run no operator (``array``,
``empty``, ``waitall``...) make no span.

Symbolic operators (``profile_symbolic``): an executor's forward times each node under its
operator's name (:func:`run_node`).

An operator is one span however many others it runs inside: while one is timed, the
operators it calls make none. Custom operators (``mx.operator.CustomOp``) are timed as MXNet
does, in the category ``Custom Operator``: the Python ``forward`` as ``OPTYPE::pure_python``,
``backward`` as ``_backward_OPTYPE::pure_python``, and the operators they call as
``OPTYPE::name`` (``MySigmoid::_zeros``), not in the category ``operator``.

This module knows nothing of the profiler's state: ``mx.profiler`` tells it what to record and
where to (:func:`configure`).
"""

from __future__ import annotations

import contextlib
import functools
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

__all__ = ["configure", "custom_operator", "recording", "run_node", "CATEGORY", "CUSTOM"]

#: The category of operator spans.
CATEGORY = "operator"
#: The category of custom operators' spans.
CUSTOM = "Custom Operator"

#: ``sink(name, category, start_ns, end_ns)``: where spans go (set by the profiler).
Sink = Callable[[str, str, int, int], None]

_MISSING = object()


class _Flags:
    """What is recorded now (read on every wrapped call, set by :func:`configure`)."""

    imperative = False
    symbolic = False
    sink: Sink | None = None


_flags = _Flags()
# per thread: ``busy`` while an operator is being timed; ``custom``: the custom operator
# (``OPTYPE`` or ``_backward_OPTYPE``) whose Python code is running
_tls = threading.local()
_lock = threading.Lock()
#: ``(namespace, attribute, previous value or _MISSING, wrapper)`` of every installed wrapper.
_installed: list[tuple[Any, str, Any, Any]] = []

#: MXNet's operator names of the ``mx.nd`` functions named otherwise.
_RENAMED = {
    "zeros": "_zeros",
    "ones": "_ones",
    "full": "_full",
    "arange": "_arange",
    "eye": "_eye",
    "linspace": "_linspace",
    "zeros_like": "zeros_like",
    "ones_like": "ones_like",
    "random_uniform": "_random_uniform",
    "uniform": "_random_uniform",
    "random_normal": "_random_normal",
    "normal": "_random_normal",
    "random_randint": "_random_randint",
    "random_poisson": "_random_poisson",
    "random_exponential": "_random_exponential",
    "random_gamma": "_random_gamma",
    "random_negative_binomial": "_random_negative_binomial",
    "random_generalized_negative_binomial": "_random_generalized_negative_binomial",
    "shuffle": "_shuffle",
}
#: ``mx.nd.random``'s samplers and their operators.
_RANDOM = {
    "uniform": "_random_uniform",
    "normal": "_random_normal",
    "randn": "_random_normal",
    "randint": "_random_randint",
    "poisson": "_random_poisson",
    "exponential": "_random_exponential",
    "gamma": "_random_gamma",
    "negative_binomial": "_random_negative_binomial",
    "generalized_negative_binomial": "_random_generalized_negative_binomial",
    "multinomial": "_sample_multinomial",
    "shuffle": "_shuffle",
}
#: Binary functions: the operator MXNet runs for (array, array), (array, scalar) and
#: (scalar, array).
_BINARY = {
    "add": ("broadcast_add", "_plus_scalar", "_plus_scalar"),
    "subtract": ("broadcast_sub", "_minus_scalar", "_rminus_scalar"),
    "multiply": ("broadcast_mul", "_mul_scalar", "_mul_scalar"),
    "divide": ("broadcast_div", "_div_scalar", "_rdiv_scalar"),
    "true_divide": ("broadcast_div", "_div_scalar", "_rdiv_scalar"),
    "modulo": ("broadcast_mod", "_mod_scalar", "_rmod_scalar"),
    "power": ("broadcast_power", "_power_scalar", "_rpower_scalar"),
    "maximum": ("broadcast_maximum", "_maximum_scalar", "_maximum_scalar"),
    "minimum": ("broadcast_minimum", "_minimum_scalar", "_minimum_scalar"),
    "equal": ("broadcast_equal", "_equal_scalar", "_equal_scalar"),
    "not_equal": ("broadcast_not_equal", "_not_equal_scalar", "_not_equal_scalar"),
    "greater": ("broadcast_greater", "_greater_scalar", "_lesser_scalar"),
    "greater_equal": ("broadcast_greater_equal", "_greater_equal_scalar", "_lesser_equal_scalar"),
    "lesser": ("broadcast_lesser", "_lesser_scalar", "_greater_scalar"),
    "lesser_equal": ("broadcast_lesser_equal", "_lesser_equal_scalar", "_greater_equal_scalar"),
}
#: NDArray's operators: the binary function they are, and whether ``self`` is the right side.
_DUNDERS = {
    "__add__": ("add", False),
    "__radd__": ("add", True),
    "__iadd__": ("add", False),
    "__sub__": ("subtract", False),
    "__rsub__": ("subtract", True),
    "__isub__": ("subtract", False),
    "__mul__": ("multiply", False),
    "__rmul__": ("multiply", True),
    "__imul__": ("multiply", False),
    "__truediv__": ("divide", False),
    "__rtruediv__": ("divide", True),
    "__itruediv__": ("divide", False),
    "__mod__": ("modulo", False),
    "__rmod__": ("modulo", True),
    "__pow__": ("power", False),
    "__rpow__": ("power", True),
    "__eq__": ("equal", False),
    "__ne__": ("not_equal", False),
    "__gt__": ("greater", False),
    "__ge__": ("greater_equal", False),
    "__lt__": ("lesser", False),
    "__le__": ("lesser_equal", False),
}
#: NDArray's one-operand operators and theirs (``-a`` is ``a * -1`` in MXNet).
_UNARY_DUNDERS = {"__neg__": "_mul_scalar", "__abs__": "abs"}


def recording() -> bool:
    """Whether operators are timed now (imperative or symbolic)."""
    return _flags.imperative or _flags.symbolic


def configure(imperative: bool, symbolic: bool, sink: Sink) -> None:
    """Time imperative and/or symbolic operators from now on, sending spans to ``sink``;
    install the imperative wrappers when ``imperative`` turns on, put the originals back when
    it turns off."""
    with _lock:
        _flags.sink = sink
        _flags.symbolic = symbolic
        if imperative and not _installed:
            _install()
        elif not imperative and _installed:
            _uninstall()
        _flags.imperative = imperative


def _emit(name: str, t0: int, t1: int) -> None:
    """Send the span of operator ``name`` (inside a custom operator: ``OPTYPE::name``)."""
    sink = _flags.sink
    if sink is None:
        return
    custom = getattr(_tls, "custom", None)
    if custom is None:
        sink(name, CATEGORY, t0, t1)
    else:
        sink(f"{custom}::{name}", CUSTOM, t0, t1)


def _timed(fn: Callable[..., Any], name: Callable[[tuple[Any, ...]], str]) -> Callable[..., Any]:
    """``fn`` timed as operator ``name(args)`` while imperative operators are recorded (and
    no other operator is being timed on this thread)."""

    @functools.wraps(fn)
    def call(*args: Any, **kwargs: Any) -> Any:
        if not _flags.imperative or getattr(_tls, "busy", False):
            return fn(*args, **kwargs)
        _tls.busy = True
        t0 = time.perf_counter_ns()
        try:
            out = fn(*args, **kwargs)
        finally:
            _tls.busy = False
        if out is not NotImplemented:
            _emit(name(args), t0, time.perf_counter_ns())
        return out

    call._profiled = True  # type: ignore[attr-defined]
    return call


def _binary_name(fname: str, lhs: Any, rhs: Any) -> str:
    """The operator binary function ``fname`` runs on ``lhs`` and ``rhs``."""
    from .ndarray.core.array import ArrayCore

    arrays, scalar, rscalar = _BINARY[fname]
    if isinstance(lhs, ArrayCore):
        return arrays if isinstance(rhs, ArrayCore) else scalar
    return rscalar


def _fixed(name: str) -> Callable[[tuple[Any, ...]], str]:
    return lambda args: name


def _of_function(fname: str) -> Callable[[tuple[Any, ...]], str]:
    def name(args: tuple[Any, ...]) -> str:
        if len(args) >= 2:
            return _binary_name(fname, args[0], args[1])
        return _BINARY[fname][0]

    return name


def _of_dunder(fname: str, reflected: bool) -> Callable[[tuple[Any, ...]], str]:
    def name(args: tuple[Any, ...]) -> str:
        this, other = args[0], args[1] if len(args) > 1 else None
        return _binary_name(fname, other, this) if reflected else _binary_name(fname, this, other)

    return name


def _replace(space: Any, attr: str, namer: Callable[[tuple[Any, ...]], str]) -> None:
    """Replace ``space.attr`` (a function) by its timing wrapper."""
    original = getattr(space, attr, None)
    if original is None or not callable(original) or isinstance(original, type):
        return
    if getattr(original, "_profiled", False):
        return  # a wrapper left in place under another's wrapper: it times already
    wrapper = _timed(original, namer)
    before = space.__dict__.get(attr, _MISSING)
    _installed.append((space, attr, before, wrapper))
    setattr(space, attr, wrapper)


def _install() -> None:
    """Wrap ``mx.nd``'s operator functions, ``mx.nd.random``'s samplers and NDArray's
    operators."""
    from . import ndarray as nd
    from .ndarray import random as nd_random
    from .ndarray.ndarray import NDArray

    names = set(getattr(nd, "_OPERATOR_NAMES", ())) | set(_RENAMED)
    for attr in sorted(names):
        if attr in _BINARY:
            _replace(nd, attr, _of_function(attr))
        else:
            _replace(nd, attr, _fixed(_RENAMED.get(attr, attr)))
    for attr, op in _RANDOM.items():
        _replace(nd_random, attr, _fixed(op))
    for attr, (fname, reflected) in _DUNDERS.items():
        _replace(NDArray, attr, _of_dunder(fname, reflected))
    for attr, op in _UNARY_DUNDERS.items():
        _replace(NDArray, attr, _fixed(op))


def _uninstall() -> None:
    """Put back what :func:`_install` replaced; an attribute replaced since by someone else
    (AMP's wrappers) is left to them."""
    while _installed:
        space, attr, before, wrapper = _installed.pop()
        current = space.__dict__.get(attr, _MISSING)
        if current is not wrapper:
            continue
        if before is _MISSING:
            delattr(space, attr)
        else:
            setattr(space, attr, before)


def run_node(op: str, call: Callable[[list[Any]], list[Any]], inputs: list[Any]) -> list[Any]:
    """Run an executor's compiled node of operator ``op`` on ``inputs``, timed under ``op``
    when symbolic operators are recorded; the operators it runs inside make no spans of
    their own (a custom operator's do, as its own)."""
    busy = getattr(_tls, "busy", False)
    _tls.busy = True
    t0 = time.perf_counter_ns()
    try:
        out = call(inputs)
    finally:
        _tls.busy = busy
    if _flags.symbolic and not busy and op != "Custom":
        _emit(op, t0, time.perf_counter_ns())
    return out


@contextlib.contextmanager
def custom_operator(name: str) -> Iterator[None]:
    """Time the Python code of custom operator ``name`` (``OPTYPE`` for forward,
    ``_backward_OPTYPE`` for backward) as ``name::pure_python``; the operators it runs are
    ``name::op``. Does nothing while no operator is recorded."""
    if not recording():
        yield
        return
    saved = (getattr(_tls, "busy", False), getattr(_tls, "custom", None))
    _tls.busy, _tls.custom = False, name
    t0 = time.perf_counter_ns()
    try:
        yield
    finally:
        t1 = time.perf_counter_ns()
        _tls.busy, _tls.custom = saved
        sink = _flags.sink
        if sink is not None:
            sink(f"{name}::pure_python", CUSTOM, t0, t1)
