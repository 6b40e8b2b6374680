"""SymbolBlock: a Gluon block made from a Symbol graph, as MXNet 1.x's ``gluon.SymbolBlock``.

The graph's arguments that are not inputs become the block's Parameters, named exactly as in
the graph (auxiliary states, BatchNorm's moving statistics, with ``grad_req='null'``). Called on
NDArrays the graph is evaluated node by node with the ``mx.nd`` operators, so autograd records
it, gradients reach the Parameters and a ``gluon.Trainer`` trains them; BatchNorm updates its
moving statistics in training mode. Called on Symbols it composes the graph with them.

Examples
--------
>>> net = gluon.SymbolBlock.imports('net-symbol.json', ['data'], 'net-0000.params')
>>> out = net(mx.nd.ones((1, 3, 32, 32)))
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from .. import autograd, symbol
from ..base import MXNetError
from ..symbol import Symbol
from ..symbol.graph import DTYPE_CODES, Node
from ..symbol.infer import node_shapes
from ..symbol.opinfo import compile_node
from ..symbol.partial_shape import is_partial, partial_source
from . import _symbolic
from .block import HybridBlock
from .parameter import DeferredInitializationError
from .parameter_dict import ParameterDict

if TYPE_CHECKING:
    from .._typing import DTypeLike
    from ..context import Context
    from ..ndarray import NDArray

__all__ = ["SymbolBlock"]


def _common_prefix(names: list[str]) -> str:
    """The longest prefix all ``names`` share."""
    if not names:
        return ""
    return os.path.commonprefix(names)


def _name(var: Symbol) -> str:
    """The name of the variable ``var``."""
    return var._outputs[0][0].name


def _param_types(
    inputs: list[Symbol], out: Symbol, n_args: int, n_aux: int
) -> tuple[list[Any], list[Any]]:
    """The dtypes of the graph's arguments and auxiliary states, inferred from the inputs'
    ``__dtype__`` (float32 for all when an input has none, as MXNet does)."""
    codes = {v: k for k, v in DTYPE_CODES.items()}
    known = {}
    for s in inputs:
        code = s._outputs[0][0].attrs.get("__dtype__")
        if code is None:
            return [np.float32] * n_args, [np.float32] * n_aux
        known[_name(s)] = np.dtype(codes[int(code)])
    arg_types, _, aux_types = out.infer_type(**known)
    return list(arg_types), list(aux_types)


class SymbolBlock(HybridBlock):
    """A block that runs a Symbol graph; useful for pre-trained models and feature extraction.

    Parameters
    ----------
    outputs : Symbol or list of Symbol
        The outputs to compute.
    inputs : Symbol or list of Symbol
        The variables of ``outputs`` that are the block's inputs.
    params : ParameterDict, optional
        Parameters to share (e.g. another block's ``collect_params()``), found by name; the
        graph's other arguments and auxiliary states get new Parameters.

    Examples
    --------
    >>> alexnet = gluon.model_zoo.vision.alexnet(prefix='model_')
    >>> alexnet.initialize()
    >>> data = mx.sym.var('data')
    >>> internals = alexnet(data).get_internals()
    >>> outputs = [internals['model_dense0_relu_fwd_output'],
    ...            internals['model_dense1_relu_fwd_output']]
    >>> feat_model = gluon.SymbolBlock(outputs, data, params=alexnet.collect_params())
    >>> fc0, fc1 = feat_model(mx.nd.ones((1, 3, 224, 224)))
    """

    @staticmethod
    def imports(
        symbol_file: str,
        input_names: str | Sequence[str],
        param_file: str | None = None,
        ctx: Context | Sequence[Context] | None = None,
        allow_missing: bool = False,
        ignore_extra: bool = False,
    ) -> SymbolBlock:
        """Load a model saved by :meth:`HybridBlock.export` or ``Module.save_checkpoint``.

        Parameters
        ----------
        symbol_file : str
            The ``-symbol.json`` file.
        input_names : str or list of str
            The graph's input variables.
        param_file : str, optional
            The ``.params`` file (names with or without ``arg:``/``aux:``); the parameters
            take its dtypes.
        ctx : Context or list of Context, optional
            Where the parameters are loaded.
        allow_missing : bool, default False
            Leave parameters absent from the file uninitialized instead of failing.
        ignore_extra : bool, default False
            Skip arrays of the file that are no parameter of the graph instead of failing.

        Returns
        -------
        SymbolBlock
        """
        sym = symbol.load(symbol_file)
        if isinstance(input_names, str):
            input_names = [input_names]
        if param_file is None:
            inputs = [symbol.var(i, dtype=np.float32) for i in input_names]
        else:
            inputs = [symbol.var(i) for i in input_names]
        ret = SymbolBlock(sym, inputs)
        if param_file is not None:
            ret.collect_params().load(
                param_file,
                ctx,
                allow_missing,
                ignore_extra,
                cast_dtype=True,
                dtype_source="saved",
            )
        return ret

    def __init__(
        self,
        outputs: Symbol | Sequence[Symbol],
        inputs: Symbol | Sequence[Symbol],
        params: ParameterDict | None = None,
    ) -> None:
        super().__init__(prefix=None, params=None)
        self._prefix = ""
        self._params = ParameterDict("", params)
        if isinstance(inputs, Symbol) and len(inputs.list_outputs()) == 1:
            inputs = [inputs]
        if isinstance(outputs, (list, tuple)) and len(outputs) == 1:
            outputs = outputs[0]
        syms, self._in_format = _symbolic.flatten(inputs, "input")
        outs, self._out_format = _symbolic.flatten(outputs, "output")
        input_names = set()
        for s in syms:
            if not isinstance(s, Symbol) or len(s.get_internals().list_outputs()) != 1:
                raise MXNetError(
                    f"Input symbols must be variable, but {s} is an output of operators"
                )
            input_names.add(_name(s))
        out = symbol.Group(outs) if len(outs) > 1 else outs[0]
        arg_names, aux_names = out.list_arguments(), out.list_auxiliary_states()
        arg_types, aux_types = _param_types(syms, out, len(arg_names), len(aux_names))
        for name, dtype in zip(arg_names, arg_types, strict=True):
            if name not in input_names:
                self.params.get(name, allow_deferred_init=True, dtype=dtype)
        for name, dtype in zip(aux_names, aux_types, strict=True):
            if name not in input_names:
                self.params.get(name, grad_req="null", allow_deferred_init=True, dtype=dtype)
        self._cached_graph = (syms, out)
        len_prefix = len(_common_prefix(list(self._params.keys())))
        self._reg_params = {key[len_prefix:]: val for key, val in self._params.items()}
        self._plan: list[tuple[Node, Callable[[list[Any]], list[Any]] | None]] | None = None
        self._opened_plans: dict[tuple[Any, ...], list[tuple[Node, Any]]] = {}

    def __repr__(self) -> str:
        assert self._cached_graph  # set by __init__ and never dropped
        inputs, out = self._cached_graph
        return f"{type(self).__name__}(\n{out} : {len(inputs)} -> {len(out.list_outputs())}\n)"

    def _clear_cached_op(self) -> None:
        """Nothing to forget: the graph is the block itself."""

    def forward(self, x: Any, *args: Any) -> Any:
        """Evaluate the graph on NDArrays (recorded by autograd), or compose it with Symbols.

        Raises
        ------
        MXNetError
            When NDArrays and Symbols are mixed, or the inputs do not match the block's.
        """
        has_symbol, has_ndarray = _symbolic.input_kinds((x, *args))
        if has_symbol and has_ndarray:
            raise MXNetError(
                "In HybridBlock, we do not support mixed NDArrays and Symbols types for the "
                "input. Please check the type of the args."
            )
        if not has_symbol and not has_ndarray:
            raise MXNetError(
                "SymbolBlock requires the first argument to forward be either Symbol or "
                f"NDArray, but got {type(x)}"
            )
        flat, fmt = _symbolic.flatten([x, *args], "input")
        assert self._cached_graph  # set by __init__ and never dropped
        inputs, out = self._cached_graph
        if has_symbol:
            if fmt != self._in_format:
                raise MXNetError(
                    f"Invalid input format: the block takes {self._in_format}, got {fmt}"
                )
            ret = out(**{_name(s): v for s, v in zip(inputs, flat, strict=True)})
            return _symbolic.regroup(list(ret), self._out_format or 0)
        self._check_format(fmt)
        arrays = [a for a in flat if a is not None]
        with arrays[0].context:
            outs = self._evaluate(inputs, out, arrays)
        return _symbolic.regroup(outs, self._out_format or 0)

    def _check_format(self, fmt: _symbolic.Format) -> None:
        """Refuse NDArray inputs structured otherwise than the block's inputs (missing or
        extra trailing Nones are fine, as in MXNet)."""
        mine = self._in_format
        if fmt == mine:
            return
        if isinstance(fmt, list) and isinstance(mine, list):
            short, long = (fmt, mine) if len(fmt) < len(mine) else (mine, fmt)
            if long[: len(short)] == short and all(f == -1 for f in long[len(short) :]):
                return
        raise MXNetError(
            "The argument structure of HybridBlock does not match the cached version. "
            f"Stored format = {mine}, input format = {fmt}"
        )

    def _evaluate(self, inputs: list[Symbol], out: Symbol, arrays: list[NDArray]) -> list[Any]:
        """The graph's outputs on the input ``arrays``, computed with the NDArray operators
        (finishing the parameters' deferred initialization first)."""
        if len(arrays) != len(inputs):
            raise MXNetError(f"{self.name} takes {len(inputs)} inputs, got {len(arrays)}")
        ctx = arrays[0].context
        values: dict[str, Any] = {_name(s): a for s, a in zip(inputs, arrays, strict=True)}
        params = self.collect_params()
        needed = [n for n in out.list_inputs() if n not in values]
        try:
            for n in needed:
                values[n] = params[n].data(ctx)
        except DeferredInitializationError:
            self._deferred_infer_shape(*arrays)
            with autograd.pause():
                for n in needed:
                    params[n]._finish_deferred_init()
            values.update({n: params[n].data(ctx) for n in needed})
        if self._plan is None:
            self._plan = [(n, None if n.op is None else compile_node(n)) for n in out._nodes()]
        results: dict[tuple[int, int], Any] = {}
        for node, run in self._opened(out, values):
            if run is None:
                results[(id(node), 0)] = values[node.name]
                continue
            outs = run([results[(id(c), i)] for c, i in node.inputs])
            for i, o in enumerate(outs):
                results[(id(node), i)] = o
        return [results[(id(n), i)] for n, i in out._outputs]

    def _opened(self, out: Symbol, values: dict[str, Any]) -> list[tuple[Node, Any]]:
        """The plan, with each operator whose ``shape`` leaves dimensions open (0, as MXNet's
        RNN begin states ``zeros(shape=(0, 100))``) compiled for the shape these inputs give
        it (remembered per input shapes)."""
        assert self._plan is not None
        opened = [k for k, (node, _) in enumerate(self._plan)
                  if node.op is not None and partial_source(node)]  # fmt: skip
        if not opened:
            return self._plan
        known = {n: tuple(v.shape) for n, v in values.items()}
        key = tuple(sorted(known.items()))
        plan = self._opened_plans.get(key)
        if plan is None:
            shapes = node_shapes(out, known)
            plan = list(self._plan)
            for k in opened:
                node = plan[k][0]
                shape = shapes.get((id(node), 0))
                if shape is None or is_partial(shape):
                    raise MXNetError(
                        f"{self.name}: cannot infer the shape of {node.op} node {node.name!r} "
                        f"(given {node.attrs['shape']}, 0 meaning unknown) from the inputs"
                    )
                attrs = dict(node.attrs, shape=str(tuple(shape)))
                plan[k] = (node, compile_node(Node(node.op, node.name, attrs, [])))
            self._opened_plans[key] = plan
        return plan

    def _infer_attrs(self, method: str, attr: str, *args: Any) -> None:
        """Set every parameter's ``attr`` (shape or dtype) from the graph's inference on the
        inputs ``args``."""
        assert self._cached_graph  # set by __init__ and never dropped
        inputs, out = self._cached_graph
        flat = [a for a in _symbolic.flatten(list(args), "input")[0] if a is not None]
        known = {_name(s): getattr(a, attr) for s, a in zip(inputs, flat, strict=False)}
        names = out.list_arguments() + out.list_auxiliary_states()
        arg_attrs, _, aux_attrs = getattr(out, method)(**known)
        if arg_attrs is None:  # only shapes can be unknown
            partial, _, paux = out.infer_shape_partial(**known)
            unknown = [n for n, s in zip(names, [*partial, *paux], strict=True) if s == ()]
            raise MXNetError(f"cannot infer the shapes of {unknown} from the inputs' {known}")
        found = dict(zip(names, [*arg_attrs, *aux_attrs], strict=True))
        for p in self.collect_params().values():
            if p.name in found:
                setattr(p, attr, found[p.name])

    def infer_shape(self, *args: Any) -> None:
        """Set the parameters' shapes from the graph's shape inference on the inputs."""
        self._infer_attrs("infer_shape", "shape", *args)

    def infer_type(self, *args: Any) -> None:
        """Set the parameters' dtypes from the graph's type inference on the inputs."""
        self._infer_attrs("infer_type", "dtype", *args)

    def cast(self, dtype: DTypeLike) -> None:
        """Convert the parameters to ``dtype``; with float16, BatchNorm's parameters stay
        float32, as MXNet's BatchNorm needs."""
        super().cast(dtype)
        if np.dtype(dtype).name != "float16":
            return
        assert self._cached_graph  # set by __init__ and never dropped
        names = self._cached_graph[1].get_internals().list_inputs()
        for node in names:
            for stat, mean in (("running_var", "running_mean"), ("moving_var", "moving_mean")):
                if not node.endswith(stat):
                    continue
                prefix = node[: -len(stat)]
                sibs = [prefix + t for t in (mean, "gamma", "beta")]
                if all(p in names for p in sibs):
                    for name in (node, *sibs):
                        self.params.get(name).cast("float32")

    def hybrid_forward(self, F: Any, x: Any, *args: Any, **kwargs: Any) -> Any:
        """Not used: a SymbolBlock runs its graph (see :meth:`forward`)."""
        raise NotImplementedError
