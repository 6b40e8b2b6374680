"""Blocks: the building units of Gluon models, with MXNet 1.x's naming and parameter handling.

A :class:`Block` registers the blocks and parameters assigned to its attributes, names itself
from a per-class counter (``dense0_``, ``dense1_``; inside a parent's ``name_scope()`` the
counter is the parent's and the parent's prefix comes first: ``sequential0_dense0_``), and
collects, initializes, saves and loads the parameters of its whole tree.

A :class:`HybridBlock` runs ``hybrid_forward(F, x, *args, **params)`` with ``F = mx.nd`` and its
parameters' copies on ``x``'s context. Parameters whose shape was left unknown get it from the
first input: the layer's :meth:`HybridBlock.infer_shape` fills it in and the deferred
initialization then runs with the initializer and contexts ``initialize`` was given.
Called with Symbols it runs with ``F = mx.sym`` and returns a Symbol (``_symbolic``).
``hybridize()`` keeps blocks running imperatively; it only makes the block remember its inputs
on the next call, so that :meth:`HybridBlock.export` can write its graph.
"""

from __future__ import annotations

import os
import re
import warnings
from collections import OrderedDict, defaultdict
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from .. import autograd, timeline
from .. import ndarray as nd
from ..base import MXNetError
from ..context import Context
from ..ndarray import NDArray
from . import _block_files, _summary, _symbolic
from ._scope import _BlockScope
from .parameter import DeferredInitializationError, Parameter, _shape_known
from .parameter_dict import ParameterDict
from .utils import HookHandle, _brief_print_list, _indent

if TYPE_CHECKING:
    from .._typing import DTypeLike
    from ..symbol import Symbol
    from .parameter import InitLike

__all__ = ["Block", "HybridBlock"]


class Block:
    """Base class of every layer and model; subclass it and implement :meth:`forward`.

    Blocks and Parameters assigned as attributes are registered; create children inside
    ``with self.name_scope():`` so their names carry this block's prefix.

    Parameters
    ----------
    prefix : str, optional
        Name prefix of this block and its parameters; by default the lower-case class name
        and a counter, e.g. ``'model0_'``.
    params : ParameterDict, optional
        Share these parameters (e.g. another block's ``collect_params()``).

    Examples
    --------
    >>> class Model(gluon.Block):
    ...     def __init__(self, **kwargs):
    ...         super().__init__(**kwargs)
    ...         with self.name_scope():
    ...             self.dense0 = nn.Dense(20)
    ...             self.dense1 = nn.Dense(20)
    ...     def forward(self, x):
    ...         return mx.nd.relu(self.dense1(mx.nd.relu(self.dense0(x))))
    >>> model = Model()
    >>> model.initialize(ctx=mx.cpu(0))
    >>> model(mx.nd.zeros((10, 10))).shape
    (10, 20)
    """

    #: A block that only chains its children: :meth:`summary` lists the children, not it.
    _chains_children = False

    def __init__(self, prefix: str | None = None, params: ParameterDict | None = None) -> None:
        self._empty_prefix = prefix == ""
        self._prefix, self._params = _BlockScope.create(prefix, params, self._alias())
        self._name = self._prefix[:-1] if self._prefix.endswith("_") else self._prefix
        self._scope = _BlockScope(self)
        self._children: OrderedDict[str, Block] = OrderedDict()
        self._reg_params: dict[str, Parameter] = {}
        self._forward_hooks: OrderedDict[int, Callable[..., Any]] = OrderedDict()
        self._forward_pre_hooks: OrderedDict[int, Callable[..., Any]] = OrderedDict()

    def __repr__(self) -> str:
        modstr = "\n".join(
            f"  ({key}): {_indent(repr(block), 2)}"
            for key, block in self.__dict__.items()
            if isinstance(block, Block)
        )
        return f"{type(self).__name__}(\n{modstr}\n)"

    def __setattr__(self, name: str, value: Any) -> None:
        """Register Blocks and Parameters assigned as attributes."""
        if hasattr(self, name):
            existing = getattr(self, name)
            if isinstance(existing, (Parameter, Block)) and not isinstance(value, type(existing)):
                raise TypeError(
                    f"Changing attribute type for {name} from {type(existing)} to "
                    f"{type(value)} is not allowed."
                )
        if isinstance(value, Block):
            self.register_child(value, name)
        elif isinstance(value, Parameter):
            if name in self._reg_params:
                raise MXNetError(
                    f"Overriding Parameter attribute {name} is not allowed. If you "
                    "want to share parameters between blocks, please set 'params' "
                    "at Block construction instead."
                )
            self._reg_params[name] = value
        super().__setattr__(name, value)

    def _alias(self) -> str:
        return type(self).__name__.lower()

    @property
    def prefix(self) -> str:
        """str: the prefix of this block's name and of its parameters' names."""
        return self._prefix

    @property
    def name(self) -> str:
        """str: the prefix without its trailing underscore."""
        return self._name

    def name_scope(self) -> _BlockScope:
        """Return the scope in which child blocks get this block's prefix (use with ``with``)."""
        return self._scope

    @property
    def params(self) -> ParameterDict:
        """ParameterDict: this block's own parameters (not its children's)."""
        return self._params

    def _check_container_with_block(self) -> None:
        children = set(self._children.values())

        def unregistered(data: Any) -> bool:
            if isinstance(data, (list, tuple)):
                return any(unregistered(e) for e in data)
            if isinstance(data, dict):
                return any(unregistered(e) for e in data.values())
            return isinstance(data, Block) and data not in children

        for k, v in self.__dict__.items():
            if (
                isinstance(v, (list, tuple, dict))
                and not (k.startswith("__") or k == "_children")
                and unregistered(v)
            ):
                warnings.warn(
                    f'"{type(self).__name__}.{k}" is an unregistered container with '
                    "Blocks. Note that Blocks inside the list, tuple or dict will not "
                    "be registered automatically. Make sure to register them using "
                    "register_child() or switching to nn.Sequential/"
                    "nn.HybridSequential instead.",
                    stacklevel=3,
                )

    def collect_params(self, select: str | None = None) -> ParameterDict:
        """Return a ParameterDict of this block's and all descendants' parameters.

        Parameters
        ----------
        select : str, optional
            A regular expression; only parameters whose full names it matches (``re.match``)
            are returned, e.g. ``'.*weight|.*bias'`` or ``'dense0_weight|dense0_bias'``.
        """
        self._check_container_with_block()
        ret = ParameterDict(self._params.prefix)
        if not select:
            ret.update(self.params)
        else:
            pattern = re.compile(select)
            ret.update({name: value for name, value in self.params.items() if pattern.match(name)})
        for child in self._children.values():
            ret.update(child.collect_params(select=select))
        return ret

    def _collect_params_with_prefix(self, prefix: str = "") -> dict[str, Parameter]:
        if prefix:
            prefix += "."
        ret = {prefix + key: val for key, val in self._reg_params.items()}
        for name, child in self._children.items():
            ret.update(child._collect_params_with_prefix(prefix + name))
        return ret

    def save_parameters(self, filename: str | os.PathLike[str], deduplicate: bool = False) -> None:
        """Save the parameters under structural names (``'0.weight'``, ``'features.1.bias'``).

        Parameters
        ----------
        filename : str
        deduplicate : bool, default False
            Save a shared parameter once, under its first name.
        """
        params = self._collect_params_with_prefix()
        if deduplicate:
            names = defaultdict(list)
            for k, v in params.items():
                names[v].append(k)
            params = {v[0]: k for k, v in names.items()}
        nd.save(filename, {key: val._reduce() for key, val in params.items()})

    def load_parameters(
        self,
        filename: str | os.PathLike[str],
        ctx: Context | Sequence[Context] | None = None,
        allow_missing: bool = False,
        ignore_extra: bool = False,
        cast_dtype: bool = False,
        dtype_source: str = "current",
    ) -> None:
        """Load parameters saved by :meth:`save_parameters` (or ``ParameterDict.save``).

        Parameters
        ----------
        filename : str
        ctx : Context or list of Context, optional
            Where uninitialized parameters are created (default cpu).
        allow_missing : bool, default False
            Leave parameters absent from the file alone instead of failing.
        ignore_extra : bool, default False
            Skip arrays of the file that match no parameter instead of failing.
        cast_dtype : bool, default False
            Cast arrays whose dtype differs from the parameter's.
        dtype_source : {'current', 'saved'}, default 'current'
            With ``cast_dtype``, which dtype wins.

        Raises
        ------
        MXNetError
            On a missing or extra name, or a shape or dtype mismatch.
        """
        loaded = nd.load(filename)
        if not isinstance(loaded, dict):
            raise MXNetError(f"{filename} holds a list of arrays, not named parameters")
        params = self._collect_params_with_prefix()
        if not loaded and not params:
            return
        if not any("." in k for k in loaded):
            del loaded
            self.collect_params().load(
                filename,
                ctx,
                allow_missing,
                ignore_extra,
                self.prefix,
                cast_dtype=cast_dtype,
                dtype_source=dtype_source,
            )
            return
        if not allow_missing:
            names = defaultdict(list)
            for k, v in params.items():
                names[v].append(k)
            for name, param in params.items():
                if not any(n in loaded for n in names[param]):
                    raise MXNetError(
                        f"Parameter '{name}' is missing in file '{filename}', which "
                        f"contains parameters: {_brief_print_list(loaded.keys())}. "
                        "Set allow_missing=True to ignore missing parameters."
                    )
        for name, value in loaded.items():
            if name not in params:
                if not ignore_extra:
                    raise MXNetError(
                        f"Parameter '{name}' loaded from file '{filename}' is not "
                        "present in ParameterDict, which contains parameters "
                        f"{_brief_print_list(params.keys())}. Set "
                        "ignore_extra=True to ignore. "
                    )
                continue
            params[name]._load_init(value, ctx, cast_dtype=cast_dtype, dtype_source=dtype_source)

    def register_child(self, block: Block, name: str | None = None) -> None:
        """Register ``block`` as a child (attributes are registered automatically)."""
        if name is None:
            name = str(len(self._children))
        self._children[name] = block

    def register_forward_pre_hook(
        self, hook: Callable[[Block, tuple[Any, ...]], Any]
    ) -> HookHandle:
        """Call ``hook(block, inputs)`` before every :meth:`forward`; returns a HookHandle."""
        handle = HookHandle()
        handle.attach(self._forward_pre_hooks, hook)
        return handle

    def register_forward_hook(
        self, hook: Callable[[Block, tuple[Any, ...], Any], Any]
    ) -> HookHandle:
        """Call ``hook(block, inputs, outputs)`` after every :meth:`forward`; returns a
        HookHandle."""
        handle = HookHandle()
        handle.attach(self._forward_hooks, hook)
        return handle

    def apply(self, fn: Callable[[Block], Any]) -> Block:
        """Call ``fn(block)`` on every descendant, children first, then on this block."""
        for child in self._children.values():
            child.apply(fn)
        fn(self)
        return self

    def initialize(
        self,
        init: InitLike | None = None,
        ctx: Context | Sequence[Context] | None = None,
        verbose: bool = False,
        force_reinit: bool = False,
    ) -> None:
        """Initialize the parameters of this block and its descendants.

        Same as ``collect_params().initialize(init, ctx, verbose, force_reinit)``.

        Parameters
        ----------
        init : Initializer or str, default Uniform()
            The default initializer; a parameter's own initializer wins.
        ctx : Context or list of Context, optional
            One copy of every parameter per context.
        """
        self.collect_params().initialize(init, ctx, verbose, force_reinit)

    def hybridize(self, active: bool = True, **kwargs: Any) -> None:
        """Accepted for compatibility: blocks always run imperatively in mxrs."""
        for child in self._children.values():
            child.hybridize(active, **kwargs)

    def save(self, prefix: str) -> None:
        """Save the block tree's structure and parameters, for :meth:`load` on a block built
        the same way.

        ``prefix-model.json`` records, depth first, each block under its class name and
        position (``mybock0``, ``dense1``...) with its name, its children's attribute names
        and, for a hybridized block that has run, its graph; ``prefix-model.params`` holds the
        parameters as :meth:`save_parameters` writes them. MXNet 1.9.1 reads both.

        Parameters
        ----------
        prefix : str
            The files' common prefix.
        """
        _block_files.save_structure(self, prefix + "-model.json")
        self.save_parameters(prefix + "-model.params")

    def load(self, prefix: str) -> None:
        """Load what :meth:`save` wrote (in mxrs or MXNet) into a block tree built the same way.

        Blocks take back their saved names and children their saved attribute names, so that
        the parameters match; hybridized blocks get back their graph and are hybridized.

        Parameters
        ----------
        prefix : str
            The files' common prefix.

        Raises
        ------
        MXNetError
            When the saved structure does not match this block tree.
        """
        _block_files.load_structure(self, prefix + "-model.json")
        self.load_parameters(prefix + "-model.params")

    def cast(self, dtype: DTypeLike) -> None:
        """Convert every parameter of this block and its descendants to ``dtype``."""
        for child in self._children.values():
            child.cast(dtype)
        for param in self.params.values():
            param.cast(dtype)

    @timeline.traced("forward")  # the outermost block's call only
    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """Run the pre-hooks, :meth:`forward` and the hooks."""
        for hook in self._forward_pre_hooks.values():
            hook(self, args)
        out = self.forward(*args, **kwargs)
        for hook in self._forward_hooks.values():
            hook(self, args, out)
        return out

    def forward(self, *args: Any) -> Any:
        """Compute the block's output from NDArrays (subclasses implement this)."""
        raise NotImplementedError

    def summary(self, *inputs: Any) -> None:
        """Print each layer's output shape and parameter count for one pass of ``inputs``."""
        _summary.summary(self, inputs)


def _first_array(values: Any) -> NDArray | None:
    """The first NDArray in ``values``, looking inside lists and tuples."""
    for v in values:
        if isinstance(v, NDArray):
            return v
        if isinstance(v, (list, tuple)):
            found = _first_array(v)
            if found is not None:
                return found
    return None


class HybridBlock(Block):
    """A block written as ``hybrid_forward(F, x, *args, **params)``, with ``F = mx.nd``.

    Its registered parameters arrive as keyword arguments, as the copies on ``x``'s context.
    Called with Symbols instead, ``F`` is ``mx.sym``, the parameters are their
    :meth:`~mxrs.gluon.Parameter.var` variables and the result is a Symbol.
    Children must be HybridBlocks too. Layers whose parameter shapes depend on the input
    implement :meth:`infer_shape`, which makes deferred initialization work.

    Examples
    --------
    >>> class Scale(gluon.HybridBlock):
    ...     def __init__(self, **kwargs):
    ...         super().__init__(**kwargs)
    ...         self.s = self.params.get('s', shape=(1,), init='ones')
    ...     def hybrid_forward(self, F, x, s):
    ...         return F.broadcast_mul(x, s)
    """

    def __init__(self, prefix: str | None = None, params: ParameterDict | None = None) -> None:
        super().__init__(prefix=prefix, params=params)
        self._active = False
        self._flags: list[tuple[str, Any]] = []
        # what a hybridized block's graph is built from (see _symbolic): the inputs' format
        # (or why they have no graph), the graph once built and its outputs' format
        self._in_format: _symbolic.Format | str | None = None
        self._cached_graph: tuple[list[Symbol], Symbol] | tuple[()] = ()
        self._out_format: _symbolic.Format | None = None

    def __setattr__(self, name: str, value: Any) -> None:
        """Register Blocks and Parameters; a new child block drops the remembered graph."""
        super().__setattr__(name, value)
        if isinstance(value, HybridBlock):
            self._clear_cached_op()

    def _clear_cached_op(self) -> None:
        """Forget the graph and inputs remembered since :meth:`hybridize`."""
        self._cached_graph = ()
        self._in_format = None

    def register_child(self, block: Block, name: str | None = None) -> None:
        """Register HybridBlock ``block`` as a child.

        Raises
        ------
        MXNetError
            When ``block`` is not a HybridBlock.
        """
        if not isinstance(block, HybridBlock):
            raise MXNetError(
                f"Children of HybridBlock must also be HybridBlock, but {block} has "
                f"type {type(block)}. If you are using Sequential, please try "
                "HybridSequential instead."
            )
        super().register_child(block, name)

    def hybridize(self, active: bool = True, **kwargs: Any) -> None:
        """Mark the block (and its children) hybridized: it still runs imperatively, but its
        next forward call remembers the inputs, which :meth:`export` needs. The flags
        (``static_alloc``...) are kept; ``clear=False`` keeps a graph remembered before."""
        self._active = active
        self._flags = list(kwargs.items())
        if kwargs.get("clear", True):
            self._clear_cached_op()
        super().hybridize(active, **kwargs)

    def cast(self, dtype: DTypeLike) -> None:
        """Convert every parameter to ``dtype`` (the remembered graph is dropped)."""
        self._clear_cached_op()
        super().cast(dtype)

    def infer_shape(self, *args: Any) -> None:
        """Fill in unknown shapes of this block's parameters from the inputs ``args``.

        Layers override this; the base version only checks that nothing is left unknown.

        Raises
        ------
        MXNetError
            When a parameter's shape is unknown and this block cannot infer it.
        """
        unknown = [p.name for p in self._reg_params.values() if not _shape_known(p.shape)]
        if unknown:
            raise MXNetError(
                f"{type(self).__name__} cannot infer the shapes of {unknown} from "
                "its inputs; give the full shapes when creating the parameters or "
                "override infer_shape(self, *args)"
            )

    def _deferred_infer_shape(self, *args: Any) -> None:
        try:
            self.infer_shape(*args)
        except MXNetError as err:
            raise MXNetError(
                f"Deferred initialization failed because shape cannot be inferred. {err}"
            ) from err

    def forward(  # type: ignore[override]  # MXNet's signature: the input first
        self, x: NDArray, *args: Any, **kwargs: Any
    ) -> Any:
        """Run :meth:`hybrid_forward` with ``mx.nd`` and the parameters on the context of the
        first NDArray among the arguments (``x`` may be a list of them, or None, as in MXNet),
        finishing deferred initialization on the first call; with Symbol arguments, build the
        output Symbol with ``mx.sym`` instead.

        Raises
        ------
        MXNetError
            When NDArrays and Symbols are mixed, or there is neither among the arguments.
        """
        has_symbol, has_ndarray = _symbolic.input_kinds((x, *args))
        if has_symbol:
            if has_ndarray:
                raise MXNetError(
                    "In HybridBlock, we do not support mixed NDArrays and Symbols types for "
                    "the input. Please check the type of the args."
                )
            return _symbolic.call(self, x, args, kwargs)
        if self._active and self._in_format is None:
            _symbolic.remember_inputs(self, (x, *args))
        first = _first_array((x, *args))
        if first is None:
            raise MXNetError(
                "HybridBlock: there must be at least one NDArray among the inputs (in a list "
                f"or not); got {', '.join(type(a).__name__ for a in (x, *args))}"
            )
        ctx = first._ctx
        with ctx:
            try:
                params = {k: p.data(ctx) for k, p in self._reg_params.items()}
            except DeferredInitializationError:
                self._deferred_infer_shape(x, *args)
                with autograd.pause():
                    for p in self._params.values():
                        p._finish_deferred_init()
                params = {k: p.data(ctx) for k, p in self._reg_params.items()}
            if kwargs:
                params.update(kwargs)
            return self.hybrid_forward(nd, x, *args, **params)

    def hybrid_forward(self, F: Any, x: NDArray, *args: Any, **kwargs: Any) -> Any:
        """Compute the output with operator namespace ``F`` (``mx.nd``, or ``mx.sym`` when the
        block is called on Symbols); subclasses implement this."""
        raise NotImplementedError

    def export(self, path: str, epoch: int = 0, remove_amp_cast: bool = True) -> None:
        """Write the block's graph and parameters as MXNet does, for
        ``gluon.SymbolBlock.imports``, ``mx.mod.Module`` or MXNet's C++ API.

        ``path-symbol.json`` holds the graph, whose input is named ``data`` (``data0``,
        ``data1``... for several inputs); ``path-%04d.params`` (the epoch) holds the
        parameters as ``arg:<name>`` and ``aux:<name>``. Call :meth:`hybridize` and run a
        forward pass first, as in MXNet.

        Parameters
        ----------
        path : str
            The files' common prefix.
        epoch : int, default 0
        remove_amp_cast : bool, default True
            Accepted for compatibility (mxrs graphs have no ``amp_cast`` nodes).

        Raises
        ------
        MXNetError
            When the block has not been hybridized and run since.
        """
        _symbolic.export(self, path, epoch, remove_amp_cast)
