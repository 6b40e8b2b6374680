"""Executors: a symbol bound to arrays, run with mxrs's NDArray operators.

``forward`` evaluates the graph node by node with the ``mx.nd`` operators (recorded by autograd
when training), ``backward`` runs autograd from the outputs and leaves each argument's gradient
in its gradient array per its ``grad_req`` ('write', 'add' or 'null'). An operator's error of
computation does not raise there: the arrays it reaches fail and raise it at the next wait
(``asnumpy``, ``nd.waitall()``), as in MXNet 1.9.1 (see :mod:`mxrs._failure`). Auxiliary states
(BatchNorm's moving statistics) are inputs the operators update in place. Where the graph
allows, neighbouring operators run as one (:mod:`.fusion`). With ``group2ctx`` the nodes run
on their ``ctx_group``'s contexts (:mod:`.placement`).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from .. import _profiler_ops, autograd
from .._failure import ComputeError, propagate
from ..base import MXNetError
from ..context import Context
from .fusion import fuse
from .graph import Node
from .infer import node_shapes
from .opinfo import compile_node
from .partial_shape import is_partial, partial_source
from .placement import check_group2ctx, check_on_default, place, variable_contexts

if TYPE_CHECKING:
    from .graph import Graph

__all__ = ["Executor", "simple_bind"]


def _by_name(values: Any, names: list[str], what: str, required: bool) -> list[Any]:
    """``values`` (a list in ``names`` order or a dict by name) as a list in ``names`` order."""
    if values is None:
        if required and names:
            raise MXNetError(f"bind: {what} are missing: {names}")
        return [None] * len(names)
    if isinstance(values, dict):
        unknown = sorted(set(values) - set(names))
        if unknown and what == "arguments":
            raise MXNetError(f"bind: {unknown} are not arguments of the symbol ({names})")
        out = [values.get(n) for n in names]
    else:
        out = list(values)
        if len(out) != len(names):
            raise MXNetError(f"bind: {len(out)} {what} for {len(names)} ({names})")
    if required:
        missing = [n for n, v in zip(names, out, strict=True) if v is None]
        if missing:
            raise MXNetError(f"bind: {what} {missing} are missing")
    return out


class Executor:
    """A symbol bound to argument, gradient and auxiliary arrays on one context (or, with
    ``group2ctx``, on the contexts of its nodes' groups).

    Attributes
    ----------
    arg_arrays, grad_arrays, aux_arrays : list of NDArray
        In ``list_arguments()`` / ``list_auxiliary_states()`` order (a gradient is None where
        its ``grad_req`` is 'null').
    arg_dict, grad_dict, aux_dict, output_dict : dict of str to NDArray
    outputs : list of NDArray
        What the last :meth:`forward` computed.
    """

    def __init__(
        self,
        symbol: Graph,
        ctx: Context,
        args: Any,
        args_grad: Any = None,
        grad_req: Any = "write",
        aux_states: Any = None,
        group2ctx: Any = None,
    ) -> None:
        self._symbol = symbol
        self._ctx = ctx
        self._group2ctx = check_group2ctx(group2ctx)
        arg_names = symbol.list_arguments()
        aux_names = symbol.list_auxiliary_states()
        self.arg_arrays = _by_name(args, arg_names, "arguments", True)
        self.grad_arrays = _by_name(args_grad, arg_names, "gradients", False)
        self.aux_arrays = _by_name(aux_states, aux_names, "auxiliary states", True)
        if isinstance(grad_req, str):
            reqs = [grad_req] * len(arg_names)
        elif isinstance(grad_req, dict):
            reqs = [grad_req.get(n, "null") for n in arg_names]
        else:
            reqs = list(grad_req)
            if len(reqs) != len(arg_names):
                raise MXNetError(f"bind: {len(reqs)} grad_req for {len(arg_names)} arguments")
        for r in reqs:
            if r not in ("write", "add", "null"):
                raise MXNetError(f"bind: grad_req must be 'write', 'add' or 'null', not {r!r}")
        self._grad_req = [
            "null" if g is None else r for r, g in zip(reqs, self.grad_arrays, strict=True)
        ]
        self.grad_arrays = [
            None if r == "null" else g
            for r, g in zip(self._grad_req, self.grad_arrays, strict=True)
        ]
        self.arg_dict = dict(zip(arg_names, self.arg_arrays, strict=True))
        self.grad_dict = {
            n: g for n, g in zip(arg_names, self.grad_arrays, strict=True) if g is not None
        }
        self.aux_dict = dict(zip(aux_names, self.aux_arrays, strict=True))
        self.outputs: list[Any] = []
        self._monitor: Callable[[str, Any], None] | None = None
        self._recorded = False
        self._forwarded = False  # a forward ran since the last backward
        # the graph is fixed once bound: order it and prepare each operator call once, as
        # written (for a monitor, which watches every operator's output) and fused
        self._plan = [
            (node, None if node.op is None else compile_node(node)) for node in symbol._nodes()
        ]
        self._fill_open_shapes()
        self._fused_plan = fuse(self._plan, symbol._outputs)
        bound = {**self.arg_dict, **self.aux_dict}
        # with group2ctx: each operator node's context (by id); the plan runs unfused then
        self._placement: dict[int, Context] | None = None
        if self._group2ctx:
            self._placement = place(symbol._nodes(), bound, ctx, self._group2ctx)
        else:
            check_on_default(ctx, bound)

    def _fill_open_shapes(self) -> None:
        """Compile the operators whose ``shape`` leaves dimensions open (0, as an RNN cell's
        begin state ``zeros(shape=(0, 100))``) with the shape inferred from the bound arrays."""
        opened = [k for k, (node, _) in enumerate(self._plan)
                  if node.op is not None and partial_source(node)]  # fmt: skip
        if not opened:
            return
        known = {n: a.shape for n, a in {**self.arg_dict, **self.aux_dict}.items()}
        shapes = node_shapes(self._symbol, known)
        for k in opened:
            node = self._plan[k][0]
            shape = shapes.get((id(node), 0))
            if is_partial(shape):
                raise MXNetError(
                    f"bind: cannot infer the shape of {node.op} node {node.name!r} (given "
                    f"{node.attrs['shape']}, 0 meaning unknown) from the bound arguments"
                )
            attrs = dict(node.attrs, shape=str(shape))
            self._plan[k] = (node, compile_node(Node(node.op, node.name, attrs, [])))

    @property
    def output_dict(self) -> dict[str, Any]:
        """The last outputs by name."""
        return dict(zip(self._symbol.list_outputs(), self.outputs, strict=False))

    def forward(self, is_train: bool = False, **kwargs: Any) -> list[Any]:
        """Compute the outputs; ``kwargs`` first copy new values into arguments by name.

        With ``is_train`` the computation is recorded for :meth:`backward` and runs in training
        mode (Dropout active, BatchNorm on batch statistics)."""
        for k, v in kwargs.items():
            if k not in self.arg_dict:
                raise MXNetError(f"forward: {k!r} is not an argument of the symbol")
            self.arg_dict[k][:] = v
        record = is_train and (any(r != "null" for r in self._grad_req) or bool(self.aux_arrays))
        self._run(record, is_train)
        self._forwarded = True
        return self.outputs

    def _run(self, record: bool, train_mode: bool) -> None:
        """Evaluate the graph, recording it for backward or not."""
        if record:
            variables = [a for a, r in zip(self.arg_arrays, self._grad_req, strict=True)
                         if r != "null"]  # fmt: skip
            grads = [g for g in self.grad_arrays if g is not None]
            reqs = [r for r in self._grad_req if r != "null"]
            if variables:
                autograd.mark_variables(variables, grads, reqs)
            scope = autograd.record(train_mode=train_mode)
        else:
            scope = autograd.pause(train_mode=train_mode)
        with scope, self._ctx:  # operators without inputs (zeros...) make arrays on ctx
            self.outputs = self._evaluate()
        self._recorded = record

    def _evaluate(self) -> list[Any]:
        values: dict[tuple[int, int], Any] = {}
        names = dict(self.arg_dict)
        names.update(self.aux_dict)
        placement = self._placement
        # profiling times each node under its operator's name: the plan runs unfused then
        profiled = _profiler_ops.recording()
        unfused = self._monitor is not None or placement or profiled
        plan = self._plan if unfused else self._fused_plan
        for node, call in plan:
            if call is None:
                values[(id(node), 0)] = names[node.name]
                continue
            inputs = [values[(id(c), i)] for c, i in node.inputs]
            if placement:
                ctx = placement[id(node)]
                call = functools.partial(_run_on, ctx, call)
            try:  # free while nothing fails
                if profiled:
                    assert node.op is not None  # only operator nodes are compiled
                    outs = _profiler_ops.run_node(node.op, call, inputs)
                else:
                    outs = call(inputs)
            except ComputeError as err:  # an operator that reads a failed input by itself
                outs = propagate(err, functools.partial(call, inputs))
            for i, o in enumerate(outs):
                values[(id(node), i)] = o
            if self._monitor is not None:
                for oname, o in zip(node.output_names(), outs, strict=False):
                    self._monitor(oname, o)
        return [values[(id(n), i)] for n, i in self._symbol._outputs]

    def backward(self, out_grads: Any = None, is_train: bool = True) -> None:
        """Back-propagate from the outputs of the last :meth:`forward` into the gradient
        arrays; ``out_grads`` are the outputs' gradients (ones where None; output layers such as
        SoftmaxOutput ignore them). After ``forward(is_train=False)`` the gradients are those
        of the graph in inference mode (Dropout off, BatchNorm on its moving statistics), as
        MXNet computes them: the forward pass runs again, recorded.

        Raises
        ------
        MXNetError
            When no forward ran since the last backward.
        """
        if not self._recorded:
            if not self._forwarded:
                raise MXNetError("backward needs a forward first")
            self._run(record=True, train_mode=False)
        self._forwarded = False
        if out_grads is not None and not isinstance(out_grads, list | tuple):
            out_grads = [out_grads]
        heads = [o for o in self.outputs if o._node is not None or o._grad is not None]
        if out_grads is not None:
            out_grads = [g for o, g in zip(self.outputs, out_grads, strict=False)
                         if o._node is not None or o._grad is not None]  # fmt: skip
        if heads:
            autograd.backward(heads, head_grads=out_grads)
        self._recorded = False

    def set_monitor_callback(self, callback: Callable[[str, Any], None],
                             monitor_all: bool = False) -> None:  # fmt: skip
        """Call ``callback(name, array)`` on every operator output of each forward
        (``monitor_all`` is accepted; inputs are the arguments, already at hand)."""
        self._monitor = callback

    def copy_params_from(
        self, arg_params: dict[str, Any], aux_params: dict[str, Any] | None = None,
        allow_extra_params: bool = False,
    ) -> None:  # fmt: skip
        """Copy parameter values by name into the bound arrays."""
        for src, dst, what in ((arg_params, self.arg_dict, "argument"),
                               (aux_params or {}, self.aux_dict, "auxiliary state")):  # fmt: skip
            for name, value in src.items():
                if name in dst:
                    dst[name][:] = value
                elif not allow_extra_params:
                    raise MXNetError(f"copy_params_from: {name!r} is not an {what} of the symbol")

    def reshape(self, partial_shaping: bool = False, allow_up_sizing: bool = False,
                **kwargs: Any) -> Executor:  # fmt: skip
        """A new executor for new argument shapes, sharing the parameters whose shapes stay."""
        from .. import ndarray as nd

        arg_shapes, _, aux_shapes = self._symbol.infer_shape(**kwargs)
        if arg_shapes is None:
            raise MXNetError(f"reshape: cannot infer every shape from {kwargs}")
        args, grads = [], []
        for name, shape, a, g in zip(self._symbol.list_arguments(), arg_shapes,
                                     self.arg_arrays, self.grad_arrays, strict=True):  # fmt: skip
            if tuple(shape) == a.shape:
                args.append(a)
                grads.append(g)
            else:
                if name not in kwargs and not partial_shaping:
                    raise MXNetError(f"reshape: {name!r} would change shape; pass partial_shaping")
                args.append(nd.zeros(shape, ctx=a.context, dtype=a.dtype))
                grads.append(None if g is None else nd.zeros(shape, ctx=g.context, dtype=g.dtype))
        return Executor(
            self._symbol, self._ctx, args, grads, self._grad_req, self.aux_arrays, self._group2ctx
        )

    def debug_str(self) -> str:
        """A listing of the graph's nodes."""
        lines = []
        for node in self._symbol._nodes():
            ins = ", ".join(c.name for c, _ in node.inputs)
            lines.append(f"{node.op or 'Variable'}:{node.name}({ins})")
        return "\n".join(lines)


def _run_on(ctx: Context, call: Callable[[list[Any]], list[Any]], inputs: list[Any]) -> list[Any]:
    """Run a compiled node on ``ctx``: inputs living elsewhere are copied there first (a
    recorded copy, which carries gradients back)."""
    moved = [a if a.context == ctx else a.as_in_context(ctx) for a in inputs]
    with ctx:  # operators without inputs make their arrays here
        return call(moved)


#: MXNet's storage-type codes, as ``Variable(stype=...)`` writes them in ``__storage_type__``
_STYPES = {"0": "default", "1": "row_sparse", "2": "csr"}


def simple_bind(
    symbol: Graph, ctx: Context, grad_req: Any, type_dict: dict[str, Any],
    shapes: dict[str, Sequence[int]], stype_dict: dict[str, str] | None = None,
    group2ctx: Any = None,
) -> Executor:  # fmt: skip
    """See :meth:`Symbol.simple_bind`."""
    from .. import ndarray as nd

    groups = check_group2ctx(group2ctx)
    arg_shapes, _, aux_shapes = symbol.infer_shape(**shapes)
    if arg_shapes is None:
        partial, _, paux = symbol.infer_shape_partial(**shapes)
        names = symbol.list_arguments() + symbol.list_auxiliary_states()
        unknown = [n for n, s in zip(names, list(partial) + list(paux), strict=True) if s == ()]
        raise MXNetError(f"simple_bind: cannot infer the shapes of {unknown} from {shapes}")
    arg_types, _, aux_types = symbol.infer_type(**type_dict)
    names = symbol.list_arguments()
    aux_names = symbol.list_auxiliary_states()
    if isinstance(grad_req, str):
        reqs = {n: grad_req for n in names}
    elif isinstance(grad_req, dict):
        reqs = {n: grad_req.get(n, "null") for n in names}
    else:
        reqs = dict(zip(names, grad_req, strict=True))
    variables = [n for n in symbol._nodes() if n.op is None]
    where = variable_contexts(variables, ctx, groups)
    stypes = {n.name: _STYPES.get(n.attrs.get("__storage_type__", "0"), "default")
              for n in variables}  # fmt: skip
    stypes.update(stype_dict or {})

    def alloc(name: str, shape: Sequence[int], dtype: Any, stype: str = "default") -> Any:
        if stype == "default":
            return nd.zeros(shape, ctx=where[name], dtype=np.dtype(dtype))
        return nd.sparse.zeros(stype, shape, ctx=where[name], dtype=np.dtype(dtype))

    args = [alloc(n, s, t, stypes.get(n, "default"))
            for n, s, t in zip(names, arg_shapes, arg_types, strict=True)]  # fmt: skip
    grads = [None if reqs[n] == "null" else alloc(n, a.shape, a.dtype)
             for n, a in zip(names, args, strict=True)]  # fmt: skip
    aux = [alloc(n, s, t, stypes.get(n, "default"))
           for n, s, t in zip(aux_names, aux_shapes, aux_types, strict=True)]  # fmt: skip
    return Executor(symbol, ctx, args, grads, [reqs[n] for n in names], aux, groups)
