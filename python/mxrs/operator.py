"""Custom operators written in Python (``mx.operator``), as in MXNet 1.x.

A :class:`CustomOpProp` subclass, registered under a name with :func:`register`, describes the
operator (its inputs, outputs, auxiliary states and how their shapes and types follow from the
inputs') and makes the :class:`CustomOp` that computes it. ``mx.nd.Custom(*inputs,
op_type=name, **kwargs)`` runs it imperatively, with autograd, and ``mx.sym.Custom`` makes graph
nodes of it that executors, ``Module`` and hybridized Gluon blocks run. As in MXNet, the
property's constructor gets the keyword arguments as strings.

Example::

    class Sigmoid(mx.operator.CustomOp):
        def forward(self, is_train, req, in_data, out_data, aux):
            self.assign(out_data[0], req[0], 1 / (1 + mx.nd.exp(-in_data[0])))

        def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
            y = out_data[0]
            self.assign(in_grad[0], req[0], out_grad[0] * y * (1 - y))

    @mx.operator.register("sigmoid")
    class SigmoidProp(mx.operator.CustomOpProp):
        def create_operator(self, ctx, in_shapes, in_dtypes):
            return Sigmoid()
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from . import _profiler_ops, autograd
from .base import MXNetError
from .ndarray.core.op import Op, apply, with_out
from .ndarray.ndarray import NDArray, _wrap

__all__ = ["CustomOp", "CustomOpProp", "register", "get_all_registered_operators", "Custom"]

_REGISTRY: dict[str, type[CustomOpProp]] = {}


class CustomOp:
    """The computation of a custom operator: override :meth:`forward` and :meth:`backward`."""

    def forward(
        self,
        is_train: bool,
        req: Sequence[str],
        in_data: Sequence[NDArray],
        out_data: Sequence[NDArray],
        aux: Sequence[NDArray],
    ) -> None:
        """Compute ``out_data`` from ``in_data`` (write them with :meth:`assign`)."""
        raise NotImplementedError

    def backward(
        self,
        req: Sequence[str],
        out_grad: Sequence[NDArray],
        in_data: Sequence[NDArray],
        out_data: Sequence[NDArray],
        in_grad: Sequence[NDArray],
        aux: Sequence[NDArray],
    ) -> None:
        """Compute ``in_grad`` from ``out_grad`` (write them with :meth:`assign`)."""
        raise NotImplementedError

    def assign(self, dst: NDArray, req: str, src: Any) -> None:
        """Write ``src`` into ``dst`` as ``req`` says: ``'write'``/``'inplace'`` replace,
        ``'add'`` adds, ``'null'`` does nothing.

        Raises
        ------
        MXNetError
            For another ``req``.
        """
        if req == "null":
            return
        if req in ("write", "inplace"):
            dst[:] = src
        elif req == "add":
            dst[:] = dst + src
        else:
            raise MXNetError(f"CustomOp.assign: unknown req {req!r}")


class CustomOpProp:
    """The description of a custom operator; subclass it and register the subclass.

    Parameters
    ----------
    need_top_grad : bool, default True
        Whether :meth:`CustomOp.backward` reads the outputs' gradients (mxrs always passes
        them).
    """

    def __init__(self, need_top_grad: bool = True) -> None:
        self.need_top_grad_ = need_top_grad

    def list_arguments(self) -> list[str]:
        """The inputs' names."""
        return ["data"]

    def list_outputs(self) -> list[str]:
        """The outputs' names."""
        return ["output"]

    def list_auxiliary_states(self) -> list[str]:
        """The auxiliary states' names (inputs without gradients, after the arguments)."""
        return []

    def infer_shape(self, in_shape: list[Any]) -> tuple[list[Any], ...]:
        """``(input shapes, output shapes, aux shapes)`` from the input shapes; by default
        every output has the first input's shape."""
        return in_shape, [in_shape[0]] * len(self.list_outputs()), []

    def infer_type(self, in_type: list[Any]) -> tuple[list[Any], ...]:
        """``(input types, output types, aux types)``; by default the first input's."""
        first = in_type[0]
        n_out, n_aux = len(self.list_outputs()), len(self.list_auxiliary_states())
        return in_type, [first] * n_out, [first] * n_aux

    def declare_backward_dependency(
        self, out_grad: list[int], in_data: list[int], out_data: list[int]
    ) -> list[int]:
        """What backward reads (kept for MXNet's API; mxrs keeps everything)."""
        deps = list(out_grad) if self.need_top_grad_ else []
        return deps + list(in_data) + list(out_data)

    def create_operator(self, ctx: Any, in_shapes: list[Any], in_dtypes: list[Any]) -> CustomOp:
        """The :class:`CustomOp` computing this operator."""
        raise NotImplementedError


def register(reg_name: str) -> Callable[[type[CustomOpProp]], type[CustomOpProp]]:
    """Register a :class:`CustomOpProp` subclass as the operator ``reg_name``."""

    def do(prop: type[CustomOpProp]) -> type[CustomOpProp]:
        _REGISTRY[reg_name] = prop
        return prop

    return do


def get_all_registered_operators() -> list[str]:
    """The names of the registered custom operators."""
    return sorted(_REGISTRY)


def make_prop(op_type: str, attrs: dict[str, Any]) -> CustomOpProp:
    """The registered property of ``op_type``, made with ``attrs`` as strings (as MXNet does).

    Raises
    ------
    MXNetError
        For an operator nobody registered.
    """
    cls = _REGISTRY.get(op_type)
    if cls is None:
        known = ", ".join(sorted(_REGISTRY)) or "none"
        raise MXNetError(f"Custom: no custom operator {op_type!r} is registered (known: {known})")
    make: Any = cls  # a subclass's own keyword parameters
    return make(**{k: str(v) for k, v in attrs.items()})


class _Custom(Op):
    def forward(self, *arrays, op_type, attrs):
        prop = make_prop(op_type, attrs)
        names = prop.list_arguments()
        n_args, n_aux = len(names), len(prop.list_auxiliary_states())
        if len(arrays) != n_args + n_aux:
            raise MXNetError(
                f"Custom {op_type!r}: takes {n_args} inputs {names} and {n_aux} auxiliary "
                f"states, got {len(arrays)} arrays"
            )
        ctx = self.ctx
        wrapped = [_wrap(a, ctx) for a in arrays]
        self.in_data, self.aux = wrapped[:n_args], wrapped[n_args:]
        shapes = [tuple(a.shape) for a in arrays]
        _, out_shapes, _ = prop.infer_shape(shapes[:n_args])
        _, out_types, _ = prop.infer_type([np.dtype(a.dtype).type for a in arrays[:n_args]])
        xp = self.xp
        self.out_data = [
            _wrap(xp.zeros(tuple(s), dtype=t), ctx)
            for s, t in zip(out_shapes, out_types, strict=True)
        ]
        self.op = prop.create_operator(ctx, shapes[:n_args], [a.dtype for a in arrays[:n_args]])
        self.op_type = op_type
        with (
            autograd.pause(train_mode=autograd.is_training()),
            _profiler_ops.custom_operator(op_type),
        ):
            self.op.forward(
                autograd.is_training(),
                ["write"] * len(self.out_data),
                self.in_data,
                self.out_data,
                self.aux,
            )
        outs = tuple(o._data for o in self.out_data)
        return outs[0] if len(outs) == 1 else outs

    def backward(self, *out_grads):
        xp, ctx = self.xp, self.ctx
        grads = [
            _wrap(g if g is not None else xp.zeros_like(o._data), ctx)
            for g, o in zip(out_grads, self.out_data, strict=True)
        ]
        in_grad = [_wrap(xp.zeros_like(a._data), ctx) for a in self.in_data]
        needs = list(self.needs) + [False] * len(self.aux)
        req = ["write" if needs[i] else "null" for i in range(len(self.in_data))]
        with autograd.pause(), _profiler_ops.custom_operator(f"_backward_{self.op_type}"):
            self.op.backward(req, grads, self.in_data, self.out_data, in_grad, self.aux)
        return tuple(
            g._data if r != "null" else None for g, r in zip(in_grad, req, strict=True)
        ) + (None,) * len(self.aux)


def Custom(*data: NDArray, op_type: str, **kwargs: Any) -> Any:
    """Run the custom operator registered as ``op_type`` on ``data`` (its arguments, then its
    auxiliary states); ``kwargs`` go to its property as strings. One NDArray, or a list for
    several outputs.

    Raises
    ------
    MXNetError
        For an unregistered ``op_type`` or a wrong number of arrays.
    """
    return apply(_Custom, data, op_type=op_type, attrs=kwargs)


Custom = with_out(Custom)  # MXNet's out= and name= keywords
