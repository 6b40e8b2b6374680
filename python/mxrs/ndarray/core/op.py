"""The primitive-op protocol and its dispatcher.

A primitive op is a subclass of :class:`Op` with ``forward(*arrays, **attrs)`` and
``backward(*out_grads)`` working on raw arrays of the inputs' library (``self.xp`` is NumPy or
CuPy, ``self.be`` the backend for the few calls that differ). :func:`apply` checks that all input
arrays share one context, picks that context's backend once, runs ``forward`` and, inside
``autograd.record()`` when some input needs a gradient, keeps the op object as the outputs' graph
node. ``backward`` returns one gradient per input (a bare array for one input); ``self.needs[i]``
tells whether input ``i`` wants one, so unneeded gradients are never computed. Results are made
by the first input (``ArrayCore._new``), so no op module needs the NDArray class;
:func:`as_method` turns an op function into the NDArray method of the same name.

An error of computation (:class:`~mxrs._failure.ComputeError`, raised by ``forward`` or by the
read of a failed input) does not reach the caller of :func:`apply`: the op's outputs become
failed arrays, raising it at the next wait on them, as MXNet 1.9.1's asynchronous engine does.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, SupportsIndex

from ..._bfloat16 import BFLOAT16, forward_in_float32
from ..._failure import ComputeError, Failure, fail, propagate
from ...autograd import _state
from ...base import ContextError, InvalidShapeError, MXNetError

if TYPE_CHECKING:
    from ...context import Context
    from .array import ArrayCore

__all__ = [
    "Op",
    "GraphSlot",
    "apply",
    "as_method",
    "with_out",
    "unbroadcast",
    "axis_index",
    "sparse_rules",
]


class Op:
    """Base class of primitive ops: one forward, one hand-written backward.

    Attributes set by :func:`apply`: ``xp`` (array module), ``be`` (backend), ``ctx``, ``needs``
    (per-input bool, only when recorded), ``inputs`` (input NDArrays, only when recorded),
    ``attrs`` (the keyword attributes, only when recorded), ``nout`` (number of outputs) and,
    for several outputs, ``out_meta`` (each one's shape and dtype, only when recorded).

    An op whose ``backward`` and differentiable backward rule (``ndarray.grad``) never read the
    inputs' values sets ``keeps_inputs = False``: its recorded ``inputs`` then hold, for each
    array computed by another op, only its place in the graph (:class:`GraphSlot`), so an
    intermediate array that nothing else holds (a residual sum before its ReLU) is freed when
    the forward pass moves on instead of living until ``backward``.
    """

    keeps_inputs = True
    #: Whether ``backward`` takes an output gradient in parts (``mxrs._grad_parts.GradParts``)
    #: and adds them itself, in a pass it makes anyway: the tape then hands over the parts of
    #: an output several ops read instead of adding them first.
    sums_gradients = False
    #: Whether ``forward`` and ``backward`` take bfloat16 arrays as they are (casts); other ops
    #: given a bfloat16 input run in float32 (see ``mxrs._bfloat16.forward_in_float32``).
    bfloat16 = False

    xp: Any
    be: Any
    ctx: Context
    needs: tuple[bool, ...]
    inputs: Sequence[ArrayCore] | None  # None once backward has freed the graph
    attrs: dict[str, Any]
    nout: int = 1
    out_meta: list[tuple[tuple[int, ...], Any]]

    def forward(self, *arrays: Any, **attrs: Any) -> Any:
        """Compute the output(s) from raw input arrays; save what backward needs on ``self``."""
        raise NotImplementedError

    def backward(self, *out_grads: Any) -> Any:
        """Return the gradient of each input given the outputs' gradients.

        Multi-output ops receive None for outputs that got no gradient. Return None for an
        input that needs no gradient; never modify ``out_grads`` in place.
        """
        raise NotImplementedError


def _mixed(op_cls: type[Op], ctx: Context, other: Context) -> ContextError:
    name = op_cls.__name__.lstrip("_")
    return ContextError(
        f"operation {name} got arrays on two contexts, {ctx} and {other}; move one with "
        "as_in_context() or copyto() first"
    )


def apply(op_cls: type[Op], arrays: Sequence[ArrayCore], **attrs: Any) -> Any:
    """Run primitive op ``op_cls`` on NDArrays ``arrays`` with keyword ``attrs``.

    Returns
    -------
    NDArray or list of NDArray
        One array, or a list when the op's forward returns a tuple. Failed arrays when an input
        is one, or when ``forward`` raised a ``ComputeError`` giving its placeholder ``result``
        (see :func:`_failed`).

    Raises
    ------
    ContextError
        When the arrays live on different contexts.
    """
    ctx = arrays[0]._ctx
    sparse = low = False
    try:  # free while nothing fails; a ComputeError is a failed input or forward failing
        for a in arrays:
            if a._ctx is not ctx and a._ctx != ctx:
                raise _mixed(op_cls, ctx, a._ctx)
            if a._sparse:
                sparse = True
            elif a._data.dtype is BFLOAT16:
                low = not op_cls.bfloat16
        if sparse:
            rule = sparse_rules.get(op_cls)
            if rule is not None:
                res = rule(op_cls, arrays, attrs)
                if res is not NotImplemented:
                    return res
        be = ctx._backend or ctx.backend
        op = op_cls()
        op.xp = be.xp
        op.be = be
        op.ctx = ctx
        rec = False
        if _state.recording:
            needs = tuple([a._node is not None or a._grad is not None for a in arrays])
            rec = True in needs
            op.needs = needs
        else:
            op.needs = (False,) * len(arrays)
        try:
            if ctx.device_typeid == 2:
                with be.guard(ctx.device_id):
                    out = op.forward(*[a._data for a in arrays], **attrs)
            elif low:
                out = forward_in_float32(op, [a._data for a in arrays], attrs)
            else:
                out = op.forward(*[a._data for a in arrays], **attrs)
        except ComputeError:
            raise
        except ValueError as err:  # the array library's shape errors, e.g. broadcasting
            shapes = ", ".join(str(a.shape) for a in arrays)
            name = op_cls.__name__.lstrip("_")
            raise InvalidShapeError(f"{name} on shapes {shapes}: {err}") from None
    except ComputeError as err:
        return _failed(err, op_cls, arrays, attrs)
    new = arrays[0]._new
    if type(out) is tuple:
        outs = [new(o, ctx) for o in out]
        if rec:
            op.nout = len(out)
            op.inputs = arrays
            op.attrs = attrs
            op.out_meta = [(o.shape, o.dtype) for o in out]
            for i, r in enumerate(outs):
                r._node = op
                r._oidx = i
        return outs
    res = new(out, ctx)
    if rec:
        op.inputs = arrays if op_cls.keeps_inputs else _slots(arrays)
        op.attrs = attrs
        res._node = op
    return res


def _failed(err: ComputeError, op_cls: type[Op], arrays: Sequence[ArrayCore], attrs: Any) -> Any:
    """:func:`apply` met ``err``: make the op's outputs failed arrays (see :mod:`mxrs._failure`).

    A failed input makes the outputs fail with its failure (the op runs on the placeholders to
    give them their shapes); an error of ``forward`` itself, with the placeholder ``result`` it
    gives, makes them fail with a new one (recorded, so that a backward pass fails the
    gradients too); without ``result`` it is raised.
    """
    if err.failure is not None:
        return propagate(err, lambda: apply(op_cls, arrays, **attrs))
    if err.result is None:
        raise err
    out = err.result
    f = Failure.of_new(err)
    ctx = arrays[0]._ctx
    new = arrays[0]._new
    outs = [new(o, ctx) for o in out] if type(out) is tuple else [new(out, ctx)]
    if _state.recording:
        needs = tuple([a._node is not None or a._grad is not None for a in arrays])
        if True in needs:
            op = op_cls()
            op.ctx, op.needs, op.inputs, op.attrs, op.nout = ctx, needs, arrays, attrs, len(outs)
            op.out_meta = [(o.shape, o.dtype) for o in outs]
            for i, r in enumerate(outs):
                r._node = op
                r._oidx = i
    fail(outs, f)
    return outs if type(out) is tuple else outs[0]


class GraphSlot:
    """An op's input as the tape needs it when the op keeps no input values: the op that made
    it and which of its outputs it is (variables and constants stay themselves)."""

    __slots__ = ("_node", "_oidx")
    _grad = None  # an array an op computed is never a variable

    def __init__(self, a: ArrayCore) -> None:
        self._node, self._oidx = a._node, a._oidx


def _slots(arrays: Sequence[ArrayCore]) -> tuple[Any, ...]:
    return tuple(GraphSlot(a) if a._node is not None else a for a in arrays)


#: Ops that keep a sparse input sparse: ``rule(op_cls, arrays, attrs)`` returns the result, or
#: NotImplemented to compute it densely (installed by ``mxrs.ndarray.sparse``).
sparse_rules: dict[type[Op], Callable[[type[Op], Sequence[Any], dict[str, Any]], Any]] = {}


def with_out(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Return op function ``fn`` taking MXNet's ``out=`` (the result is written into that
    NDArray, which is returned) and ``name=`` (ignored) keywords; ``fn`` itself if it takes
    ``out`` already."""
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return fn
    if "out" in params or getattr(fn, "_takes_out", False):
        return fn

    @functools.wraps(fn)
    def call(*args: Any, out: Any = None, name: Any = None, **kwargs: Any) -> Any:
        res = fn(*args, **kwargs)
        if out is None:
            return res
        if isinstance(res, list | tuple):
            outs = out if isinstance(out, list | tuple) else [out]
            if len(outs) != len(res):
                raise MXNetError(
                    f"{fn.__name__}: out= holds {len(outs)} arrays but the op returns {len(res)}"
                )
            for o, r in zip(outs, res, strict=True):
                o[:] = r
            return out
        out[:] = res
        return out

    call._takes_out = True  # type: ignore[attr-defined]
    return call


def as_method(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Return ``fn`` as an NDArray method: ``x.name(*args)`` is ``nd.name(x, *args)``."""
    fn = with_out(fn)

    def method(self: Any, *args: Any, **kwargs: Any) -> Any:
        return fn(self, *args, **kwargs)

    method.__name__ = method.__qualname__ = fn.__name__
    method.__doc__ = f"Same as :func:`mxrs.nd.{fn.__name__}` with this array as the first argument."
    return method


def unbroadcast(g: Any, shape: tuple[int, ...]) -> Any:
    """Sum gradient ``g`` over the axes that broadcasting expanded so it gets ``shape``."""
    if g.shape == shape:
        return g
    lead = g.ndim - len(shape)
    axes = tuple(range(lead)) + tuple(
        i + lead for i, s in enumerate(shape) if s == 1 and g.shape[i + lead] != 1
    )
    if axes:
        g = g.sum(axis=axes)
    return g.reshape(shape)


def axis_index(axis: SupportsIndex, ndim: int) -> int:
    """Return ``axis`` as an index in ``[0, ndim)``; negative values count from the end.

    Raises
    ------
    MXNetError
        When ``axis`` is out of range.
    """
    a = int(axis)
    if not -ndim <= a < ndim:
        raise MXNetError(f"axis {axis} is out of range for an array of {ndim} dimension(s)")
    return a + ndim if a < 0 else a
