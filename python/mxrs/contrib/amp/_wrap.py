"""How ``amp.init`` makes operators run in low precision: it replaces the operator functions
of ``mx.nd`` and ``mx.sym`` (and their ``contrib`` and ``_internal`` namespaces) by wrappers
that cast their inputs first.

* the low-precision list: every float input is cast to the target type (``amp_cast``), but the
  inputs a ``fp32_params`` entry names (bfloat16's BatchNorm parameters) and, for symbols,
  auxiliary states;
* the float32 list, and the conditional list when its parameter has one of the values listed:
  every float input is cast to float32;
* the widest-type list: with NDArrays, the target-type inputs become float32 when any input is
  float32; with Symbols, all inputs go through one ``amp_multicast``;
* the loss-output list (``SoftmaxOutput``...): imperatively, ``grad_scale`` is multiplied by the
  loss scale; symbolically a warning says dynamic loss scaling does not apply.

A Symbol wrapper builds the node first, so the inputs the operator names for itself
(``fc1_weight``...) are cast too, and the node keeps its name, as MXNet does. Every replaced
attribute is recorded so :func:`restore` can put the originals back.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import numpy as np

from ... import ndarray, symbol
from ..._bfloat16 import BFLOAT16
from ...ndarray import NDArray
from ...symbol import Symbol
from ...symbol.graph import Node
from ...symbol.opinfo import aux_positions

__all__ = ["wrap_all", "restore"]

#: The float types AMP casts between.
_FLOATS = (np.dtype(np.float32), np.dtype(np.float16), BFLOAT16)
_MISSING = object()
#: ``(namespace, attribute, previous value or _MISSING)`` for every replaced function.
_replaced: list[tuple[Any, str, Any]] = []


_PREFIXES = ("_contrib_", "_linalg_", "_sparse_", "_image_", "_random_")


def _namespaces(module: Any, name: str) -> list[tuple[Any, str]]:
    """Where the function of MXNet operator ``name`` lives in ``module`` (``mx.nd`` or
    ``mx.sym``), as MXNet finds it: ``_contrib_x`` in its ``contrib`` as ``x`` (likewise
    ``_linalg_``, ``_sparse_``, ``_image_``, and ``_random_`` for the ``*_like`` samplers), other
    underscore names in its ``_internal``, the rest at the top. Empty when that namespace is
    missing."""
    for prefix in _PREFIXES:
        if name.startswith(prefix) and (prefix != "_random_" or name.endswith("_like")):
            sub = getattr(module, prefix[1:-1], None)
            return [] if sub is None else [(sub, name[len(prefix) :])]
    if name.startswith("_"):
        internal = getattr(module, "_internal", None)
        return [] if internal is None else [(internal, name)]
    return [(module, name)]


def _replace(module: Any, name: str, make: Callable[[Callable[..., Any]], Any]) -> None:
    """Replace the function of operator ``name`` in ``module`` by ``make(original)``; an
    operator ``module`` has no function for is left alone."""
    for space, attr in _namespaces(module, name):
        try:
            original = getattr(space, attr)
        except AttributeError:
            continue
        if not callable(original):
            continue
        _replaced.append((space, attr, space.__dict__.get(attr, _MISSING)))
        wrapper = make(original)
        functools.update_wrapper(wrapper, original)
        # the symbol executor runs a graph's nodes with the originals: its casts are nodes
        wrapper._amp_original = getattr(original, "_amp_original", original)
        setattr(space, attr, wrapper)


def restore() -> None:
    """Put back every function :func:`wrap_all` replaced (most recent first)."""
    while _replaced:
        space, attr, before = _replaced.pop()
        if before is _MISSING:
            delattr(space, attr)
        else:
            setattr(space, attr, before)


# ----------------------------------------------------------------- NDArray wrappers
def _cast_array(x: Any, dtype: np.dtype) -> Any:
    """``x`` cast to ``dtype`` when it is an NDArray of another float type, else ``x``."""
    if isinstance(x, NDArray):
        current = np.dtype(x.dtype)
        if current != dtype and current in _FLOATS:
            return ndarray.amp_cast(x, dtype=dtype)
    return x


def _keeps(fp32_params: Sequence[str] | None, i: int) -> bool:
    """Whether input ``i`` is one of those ``fp32_params`` keeps in float32 (a non-empty name
    at its position)."""
    return fp32_params is not None and i < len(fp32_params) and bool(fp32_params[i])


def _applies(cond: tuple[str, Sequence[str]] | None, kwargs: dict[str, Any]) -> bool:
    return cond is None or (cond[0] in kwargs and str(kwargs[cond[0]]) in cond[1])


_F = Callable[..., Any]
_Make = Callable[[_F], _F]
_Names = Sequence[str] | None


def _casting(call: _F) -> Callable[..., _Make]:
    """The wrapper factory ``(dtype, fp32_params=None, cond=None) -> make`` whose wrappers run
    ``call(f, dtype, fp32_params, args, kwargs)`` (``f`` with its inputs cast to ``dtype``), or
    plain ``f`` when ``cond`` (``(parameter, values)``) does not apply to the call."""

    def casting(dtype: np.dtype, fp32_params: _Names = None, cond: Any = None) -> _Make:
        def make(f: _F) -> _F:
            def run(*args: Any, **kwargs: Any) -> Any:
                if not _applies(cond, kwargs):
                    return f(*args, **kwargs)
                return call(f, dtype, fp32_params, args, kwargs)

            return run

        return make

    return casting


def _nd_cast_call(f: _F, dtype: np.dtype, fp32_params: _Names, args: tuple, kwargs: dict) -> Any:
    args = tuple(a if _keeps(fp32_params, i) else _cast_array(a, dtype) for i, a in enumerate(args))
    kept = set(fp32_params or ()) | {"out"}
    kwargs = {k: v if k in kept else _cast_array(v, dtype) for k, v in kwargs.items()}
    return f(*args, **kwargs)


_nd_casting = _casting(_nd_cast_call)


def _nd_widest(target: np.dtype) -> _Make:
    f32 = np.dtype(np.float32)

    def make(f: Callable[..., Any]) -> Callable[..., Any]:
        def run(*args: Any, **kwargs: Any) -> Any:
            arrays = [v for k, v in (*enumerate(args), *kwargs.items()) if k != "out"]
            if any(isinstance(a, NDArray) and np.dtype(a.dtype) == f32 for a in arrays):
                args = tuple(_widen(a, target) for a in args)
                kwargs = {k: v if k == "out" else _widen(v, target) for k, v in kwargs.items()}
            return f(*args, **kwargs)

        return run

    return make


def _widen(x: Any, target: np.dtype) -> Any:
    if isinstance(x, NDArray) and np.dtype(x.dtype) == target:
        return ndarray.amp_cast(x, dtype=np.float32)
    return x


def _nd_loss_output(scaler: Any) -> _Make:
    def make(f: Callable[..., Any]) -> Callable[..., Any]:
        def run(*args: Any, **kwargs: Any) -> Any:
            kwargs["grad_scale"] = kwargs.get("grad_scale", 1.0) * scaler.loss_scale
            return f(*args, **kwargs)

        return run

    return make


# ----------------------------------------------------------------- Symbol wrappers
def _sym_cast_call(f: _F, dtype: np.dtype, fp32_params: _Names, args: tuple, kwargs: dict) -> Any:
    out = f(*args, **kwargs)
    node = out._outputs[0][0]
    aux = set(aux_positions(node.op, node.attrs, len(node.inputs)))
    inputs = []
    for i, entry in enumerate(node.inputs):
        if i in aux or _keeps(fp32_params, i):
            inputs.append(entry)
        else:
            cast = symbol.amp_cast(Symbol([entry]), dtype=dtype.name)
            inputs.append(cast._outputs[0])
    new = Node(node.op, node.name, node.attrs, inputs)
    return Symbol([(new, i) for _, i in out._outputs])


_sym_casting = _casting(_sym_cast_call)


def _sym_widest(f: Callable[..., Any]) -> Callable[..., Any]:
    def run(*args: Any, **kwargs: Any) -> Any:
        places = [i for i, a in enumerate(args) if isinstance(a, Symbol)]
        keys = [k for k, v in kwargs.items() if isinstance(v, Symbol)]
        given = [args[i] for i in places] + [kwargs[k] for k in keys]
        if not given:
            return f(*args, **kwargs)
        cast = list(symbol.amp_multicast(*given, num_outputs=len(given)))
        new_args = list(args)
        for i, c in zip(places, cast, strict=False):
            new_args[i] = c
        new_kwargs = dict(kwargs)
        for k, c in zip(keys, cast[len(places) :], strict=True):
            new_kwargs[k] = c
        return f(*new_args, **new_kwargs)

    return run


def _sym_loss_output(f: Callable[..., Any]) -> Callable[..., Any]:
    def run(*args: Any, **kwargs: Any) -> Any:
        logging.warning(
            "%s does not support dynamic loss scaling in symbolic and hybridized execution.",
            getattr(f, "__name__", "this output layer"),
        )
        return f(*args, **kwargs)

    return run


# ----------------------------------------------------------------- all of it
def wrap_all(
    target: np.dtype,
    lowp: Iterable[str],
    fp32: Iterable[str],
    conditional: Iterable[tuple[str, str, Sequence[str]]],
    widest: Iterable[str],
    loss_outputs: Iterable[str],
    fp32_params: dict[str, list[str]],
    scaler: Any,
) -> None:
    """Replace the operator functions of ``mx.nd`` and ``mx.sym`` as the lists say (see the
    module's description)."""
    f32 = np.dtype(np.float32)
    lowp, fp32, widest = list(lowp), list(fp32), list(widest)
    conditional, loss_outputs = list(conditional), list(loss_outputs)
    for module, casting in ((symbol, _sym_casting), (ndarray, _nd_casting)):
        for name in lowp:
            _replace(module, name, casting(target, fp32_params.get(name)))
        for name in fp32:
            _replace(module, name, casting(f32))
        for name, attr, values in conditional:
            _replace(module, name, casting(f32, cond=(attr, list(values))))
    for name in widest:
        _replace(symbol, name, _sym_widest)
        _replace(ndarray, name, _nd_widest(target))
    for name in loss_outputs:
        _replace(ndarray, name, _nd_loss_output(scaler))
        _replace(symbol, name, _sym_loss_output)
