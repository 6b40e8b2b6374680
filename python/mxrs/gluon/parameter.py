"""Parameters of Gluon blocks: one array per context, deferred initialization.

A :class:`Parameter` holds one copy of its value on each context it was initialized on (and,
unless ``grad_req='null'``, a gradient buffer per copy, attached for autograd). Initialization
fills one array on the CPU with the initializer and copies it to every context, so all copies
start identical. The copies are the same NDArray objects for the parameter's whole life (casts
and re-initializations on the same contexts write into them), so a trainer may hold on to them.

When the shape has unknown dimensions (0 or None), ``initialize`` only records the initializer
and the contexts; the block that owns the parameter fills in the shape from its first input and
finishes the initialization then. Before that, ``data()`` raises
:class:`DeferredInitializationError`.

Sparse weights and gradients (``stype``, ``grad_stype``) are described in ``_sparse_param``.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, TypeGuard, cast, overload

import numpy as np

from .. import autograd, initializer, symbol
from .. import ndarray as nd
from ..base import MXNetError
from ..context import Context, cpu, current_context
from ..ndarray.ndarray import NDArray
from ._sparse_param import SparseAccess, cast_array, check_stypes, clear_grad, new_grad

if TYPE_CHECKING:
    from .._typing import DTypeLike
    from ._sparse_param import ParamOwner

#: An initializer argument: an instance, a registered name or a JSON dump.
InitLike = initializer.Initializer | str

__all__ = ["DeferredInitializationError", "Parameter", "Constant"]


class DeferredInitializationError(MXNetError):
    """A parameter's data was asked for before its deferred initialization finished."""


def _ctx_list(ctx: Context | Sequence[Context] | None) -> list[Context]:
    if ctx is None:
        return [current_context()]
    if isinstance(ctx, Context):
        return [ctx]
    return list(ctx)


@overload
def _norm_shape(shape: None) -> None: ...


@overload
def _norm_shape(shape: int | Sequence[int | None]) -> tuple[int, ...]: ...


def _norm_shape(shape: int | Sequence[int | None] | None) -> tuple[int, ...] | None:
    if shape is None:
        return None
    if isinstance(shape, (int, np.integer)):
        return (int(shape),)
    return tuple(0 if d is None else int(d) for d in shape)


def _shape_known(shape: tuple[int, ...] | None) -> TypeGuard[tuple[int, ...]]:
    return shape is not None and all(d > 0 for d in shape)


class Parameter(SparseAccess):
    """A container of a block's weights: one copy per context, plus gradient buffers.

    Parameters
    ----------
    name : str
        Full name, e.g. ``'dense0_weight'``; initializers pick their rule from its suffix.
    grad_req : {'write', 'add', 'null'}, default 'write'
        How backward stores gradients; 'null' allocates no gradient buffer.
    shape : int or tuple of int, optional
        0 (or None) marks a dimension that is not known yet.
    dtype : numpy.dtype or str, default numpy.float32
    lr_mult, wd_mult : float, default 1.0
        Multipliers of the optimizer's learning rate and weight decay for this parameter.
    init : Initializer or str, optional
        This parameter's own initializer; it wins over the one given to ``initialize``.
    allow_deferred_init : bool, default False
        Let ``initialize`` wait for the shape instead of failing.
    differentiable : bool, default True
        False forces ``grad_req='null'``.
    stype : {'default', 'row_sparse', 'csr'}, default 'default'
        The weight's storage type. A 'row_sparse' weight lives whole in its Trainer's store
        and is read with :meth:`row_sparse_data` (``data()`` refuses it).
    grad_stype : {'default', 'row_sparse', 'csr'}, default 'default'
        The gradient buffers' storage type ('row_sparse' for large embeddings).

    Examples
    --------
    >>> w = mx.gluon.Parameter('fc_weight', shape=(64, 100), init=mx.init.Xavier())
    >>> w.initialize(ctx=[mx.cpu(0), mx.cpu(1)])
    >>> [a.context for a in w.list_data()]
    [cpu(0), cpu(1)]
    """

    def __init__(
        self,
        name: str,
        grad_req: str = "write",
        shape: int | Sequence[int | None] | None = None,
        dtype: DTypeLike = np.float32,
        lr_mult: float = 1.0,
        wd_mult: float = 1.0,
        init: InitLike | None = None,
        allow_deferred_init: bool = False,
        differentiable: bool = True,
        stype: str = "default",
        grad_stype: str = "default",
    ) -> None:
        check_stypes(name, stype, grad_stype)
        # _data, _ctx_list and _ctx_index are None until initialized, then all set together
        self._data: list[NDArray] | None = None
        self._grad: list[NDArray] | None = None
        self._ctx_list: list[Context] | None = None
        self._ctx_index: dict[Context, int] | None = None
        self._trainer: ParamOwner | None = None
        self._deferred_init: tuple[Any, ...] = ()
        self._differentiable = differentiable
        self._allow_deferred_init = allow_deferred_init
        self._grad_req = ""  # set by the grad_req setter below
        self._stype = stype
        self._grad_stype = grad_stype
        self._shape = _norm_shape(shape)
        self.name = name
        self.dtype = dtype
        self.lr_mult = lr_mult
        self.wd_mult = wd_mult
        self.grad_req = grad_req
        self.init = init
        self._var: symbol.Symbol | None = None

    def __repr__(self) -> str:
        return f"Parameter {self.name} (shape={self.shape}, dtype={self.dtype})"

    def var(self) -> symbol.Symbol:
        """Return the symbol variable standing for this parameter in symbolic graphs.

        Made once and cached, as MXNet does: a ``Variable`` named after the parameter with its
        shape (0 for a dimension not known yet), dtype, ``lr_mult``, ``wd_mult`` and
        initializer as attributes. A HybridBlock called on Symbols passes these variables to
        its ``hybrid_forward``.
        """
        if self._var is None:
            self._var = symbol.var(
                self.name,
                shape=self.shape,
                dtype=self.dtype,
                lr_mult=self.lr_mult,
                wd_mult=self.wd_mult,
                init=self.init,
                stype=self._stype,
            )
        return self._var

    # ----------------------------------------------------------------- attributes
    @property
    def grad_req(self) -> str:
        """str: 'write', 'add' or 'null'; setting 'null' drops the gradient buffers."""
        return self._grad_req

    @grad_req.setter
    def grad_req(self, req: str) -> None:
        if req not in ("write", "add", "null"):
            raise MXNetError(f"grad_req must be one of 'write', 'add', or 'null', but got '{req}'")
        if not self._differentiable:
            req = "null"
        if self._grad_req == req:
            return
        self._grad_req = req
        if req == "null" and self._grad is not None:
            self._grad = None
            for arr in self._data or ():
                arr.attach_grad("null")
        elif self._grad is not None:
            for arr, g in zip(self._data or (), self._grad, strict=True):
                arr._mark_variable(g, req)
        elif self._data is not None:
            self._init_grad()

    @property
    def shape(self) -> tuple[int, ...] | None:
        """tuple of int or None: the shape; 0 marks a dimension not known yet."""
        return self._shape

    @shape.setter
    def shape(self, new_shape: int | Sequence[int | None]) -> None:
        new_shape = _norm_shape(new_shape)
        if self._shape is None:
            self._shape = new_shape
            return
        if len(self._shape) != len(new_shape) or not all(
            j in (0, i) for i, j in zip(new_shape, self._shape, strict=True)
        ):
            raise MXNetError(
                f"Expected shape {new_shape} is incompatible with given shape "
                f"{self._shape} for Parameter '{self.name}'."
            )
        self._shape = new_shape

    # ----------------------------------------------------------------- state helpers
    def _is_initialized(self) -> bool:
        """Return whether the data arrays exist (initialization is complete)."""
        return self._data is not None

    def _is_deferred(self) -> bool:
        """Return whether initialization waits for the shape to become known."""
        return self._data is None and bool(self._deferred_init)

    def _check_and_get(
        self, arr_list: list[NDArray] | None, ctx: Context | type[list] | None
    ) -> Any:
        if arr_list is not None:
            if ctx is list:
                return arr_list
            if ctx is None:
                if len(arr_list) == 1:
                    return arr_list[0]
                ctx = current_context()
            assert self._ctx_index is not None  # set with the arrays
            idx = self._ctx_index.get(cast(Context, ctx))  # not list, after the test above
            if idx is not None:
                return arr_list[idx]
            raise MXNetError(
                f"Parameter '{self.name}' was not initialized on context {ctx}. "
                f"It was only initialized on {self._ctx_list}."
            )
        if self._deferred_init:
            raise DeferredInitializationError(
                f"Parameter '{self.name}' has not been initialized yet because initialization "
                "was deferred. Actual initialization happens during the first forward pass. "
                "Please pass one batch of data through the network before accessing "
                "Parameters. You can also avoid deferred initialization by specifying "
                "in_units, num_features, etc., for network layers."
            )
        raise MXNetError(
            f"Parameter '{self.name}' has not been initialized. Note that you should initialize "
            "parameters and create Trainer with Block.collect_params() instead of Block.params "
            "because the later does not include Parameters of nested child Blocks"
        )

    # ----------------------------------------------------------------- initialization
    def initialize(
        self,
        init: InitLike | None = None,
        ctx: Context | Sequence[Context] | None = None,
        default_init: InitLike | None = None,
        force_reinit: bool = False,
    ) -> None:
        """Allocate and fill the data (and gradient) arrays on the given contexts.

        Parameters
        ----------
        init : Initializer or str, optional
            Overrides this parameter's ``init`` and ``default_init``.
        ctx : Context or list of Context, optional
            One copy per context; defaults to the current context.
        default_init : Initializer or str, default Uniform()
            Used when neither ``init`` nor the parameter's ``init`` is given.
        force_reinit : bool, default False
            Re-initialize an initialized parameter (otherwise warn and do nothing).

        Raises
        ------
        MXNetError
            When the shape is unknown and deferred initialization is not allowed.
        """
        if self._data is not None and not force_reinit:
            warnings.warn(
                f"Parameter '{self.name}' is already initialized, ignoring. Set "
                "force_reinit=True to re-initialize.",
                stacklevel=2,
            )
            return
        ctx = _ctx_list(ctx)
        if default_init is None:
            default_init = initializer.Uniform()
        if init is None:
            init = default_init if self.init is None else self.init
        if not _shape_known(self._shape):
            if self._allow_deferred_init:
                self._deferred_init = (init, ctx, default_init, None)
                return
            raise MXNetError(
                f"Cannot initialize Parameter '{self.name}' because it has "
                f"invalid shape: {self._shape}."
            )
        self._deferred_init = (init, ctx, default_init, None)
        self._finish_deferred_init()

    def _finish_deferred_init(self) -> None:
        """Run the initialization ``initialize`` recorded (the shape must be known now)."""
        if not self._deferred_init:
            return
        init, ctx, default_init, data = self._deferred_init
        self._deferred_init = ()
        if not _shape_known(self._shape):
            raise MXNetError(
                f"Cannot initialize Parameter '{self.name}' because it has "
                f"invalid shape: {self._shape}. Please specify in_units, "
                "in_channels, etc for `Block`s."
            )
        with autograd.pause():
            if data is None:
                data = nd.zeros(self._shape, ctx=cpu(), dtype=self.dtype)
                initializer.create(default_init)(
                    initializer.InitDesc(self.name, {"__init__": init}), data
                )
            self._init_impl(data, ctx)

    def _init_impl(self, data: NDArray, ctx_list: Sequence[Context]) -> None:
        """Copy ``data`` to every context, reusing the arrays already there when possible."""
        if data.stype != self._stype:  # a sparse weight is initialised densely
            data = data.tostype(self._stype)
        ctx_list = list(ctx_list)
        old = self._data
        if (
            old is not None
            and ctx_list == self._ctx_list
            and all(a.shape == data.shape and a.dtype == data.dtype for a in old)
        ):
            for arr in old:
                data.copyto(arr)
            self.zero_grad()
            return
        self._ctx_list = ctx_list
        self._ctx_index = {c: i for i, c in enumerate(ctx_list)}
        self._data = [data.copyto(c) for c in ctx_list]
        self._init_grad()

    def _init_grad(self) -> None:
        if self.grad_req == "null":
            self._grad = None
            return
        grads = []
        for arr in self._data or ():
            g = new_grad(arr, self._grad_stype)
            arr._mark_variable(g, self.grad_req)
            grads.append(g)
        self._grad = grads

    def _load_init(
        self,
        data: NDArray,
        ctx: Context | Sequence[Context] | None,
        cast_dtype: bool = False,
        dtype_source: str = "current",
    ) -> None:
        """(Re)initialize from loaded ``data`` (checking shape and dtype)."""
        if self._shape:
            if len(self._shape) != len(data.shape) or not all(
                s in (0, d) for s, d in zip(self._shape, data.shape, strict=True)
            ):
                raise MXNetError(
                    f"Failed loading Parameter '{self.name}' from saved params: "
                    f"shape incompatible expected {self._shape} vs saved "
                    f"{data.shape}"
                )
            self._shape = tuple(s if s else d for s, d in zip(self._shape, data.shape, strict=True))
        if self.dtype is not None and np.dtype(self.dtype) != np.dtype(data.dtype):
            if cast_dtype and dtype_source == "saved":
                self.dtype = data.dtype
            elif cast_dtype:
                data = data.astype(self.dtype)
            else:
                raise MXNetError(
                    f"Failed loading Parameter '{self.name}' from saved params: "
                    f"dtype incompatible expected {np.dtype(self.dtype).name} vs "
                    f"saved {np.dtype(data.dtype).name}. Set cast_dtype=True to "
                    "cast the dtype of saved params."
                )
        ctxs = None if ctx is None else _ctx_list(ctx)
        if self._data is None:
            if self._deferred_init:
                if ctxs is not None and set(ctxs) != set(self._deferred_init[1]):
                    raise MXNetError(
                        f"Failed to load Parameter '{self.name}' on {ctxs} because "
                        f"it was previous initialized on {self.list_ctx()}."
                    )
                ctxs = self._deferred_init[1]
            elif ctxs is None:
                ctxs = [cpu()]
            with autograd.pause():
                self._init_impl(data, ctxs)
        else:
            if ctxs is not None and set(ctxs) != set(self._ctx_list or ()):
                raise MXNetError(
                    f"Failed to load Parameter '{self.name}' on {ctxs} because it "
                    f"was previous initialized on {self.list_ctx()}."
                )
            self.set_data(data)
        self._deferred_init = ()

    def _reduce(self) -> NDArray:
        """Return the copies' mean on the CPU (the value to save)."""
        if self._stype != "default":
            return self._reduce_sparse()
        block = self.list_data()
        with autograd.pause():
            if len(block) == 1:
                return block[0].copyto(cpu())
            total = block[0].copyto(cpu())
            for w in block[1:]:
                total += w.copyto(cpu())
            return total / len(block)

    def reset_ctx(self, ctx: Context | Sequence[Context] | None) -> None:
        """Move the parameter to other contexts (its value is the mean of the current copies).

        Parameters
        ----------
        ctx : Context or list of Context
        """
        ctx = _ctx_list(ctx)
        if self._data is not None:
            data = self._reduce()
            with autograd.pause():
                self._init_impl(data, ctx)
        elif self._deferred_init:
            init, _, default_init, data = self._deferred_init
            self._deferred_init = (init, ctx, default_init, data)
        else:
            raise MXNetError(
                f"Cannot reset context for Parameter '{self.name}' because it has "
                "not been initialized."
            )

    # ----------------------------------------------------------------- data access
    def set_data(self, data: NDArray) -> None:
        """Write ``data`` into the copy on every context (or keep it for deferred init).

        Parameters
        ----------
        data : NDArray or array_like
        """
        if not isinstance(data, nd.NDArray):
            data = nd.array(data, dtype=self.dtype)
        if data.stype != self._stype:
            data = data.tostype(self._stype)
        self.shape = data.shape
        if self._data is None:
            if not self._deferred_init:
                raise MXNetError(f"Parameter '{self.name}' has not been initialized")
            self._deferred_init = self._deferred_init[:3] + (data,)
            return
        if self._trainer is not None:
            self._trainer._data_changed(self)
        for arr in self._data:
            data.copyto(arr)

    def data(self, ctx: Context | None = None) -> NDArray:
        """Return the copy on ``ctx`` (the only copy, or the current context's, when None).

        Raises
        ------
        DeferredInitializationError
            Before a deferred initialization has finished.
        MXNetError
            When not initialized, or not initialized on ``ctx``; for a sparse weight (use
            :meth:`row_sparse_data`).
        """
        if self._stype != "default":
            raise self._dense_only("data", ctx)
        arrs = self._data
        if arrs is not None and ctx is not None:
            assert self._ctx_index is not None  # set with the arrays
            idx = self._ctx_index.get(ctx)
            if idx is not None:
                return arrs[idx]
        return self._check_and_get(arrs, ctx)

    def list_data(self) -> list[NDArray]:
        """Return the copies on all contexts, in the order of :meth:`list_ctx` (not for a sparse
        weight: see :meth:`list_row_sparse_data`)."""
        if self._stype != "default":
            raise self._dense_only("list_data")
        return self._check_and_get(self._data, list)

    def grad(self, ctx: Context | None = None) -> NDArray:
        """Return the gradient buffer on ``ctx`` (as :meth:`data` picks the context)."""
        if self._data is not None and self._grad is None:
            raise MXNetError(
                f"Cannot get gradient array for Parameter '{self.name}' because grad_req='null'"
            )
        return self._check_and_get(self._grad, ctx)

    def list_grad(self) -> list[NDArray]:
        """Return the gradient buffers on all contexts, in the order of :meth:`list_ctx`."""
        if self._data is not None and self._grad is None:
            raise MXNetError(
                f"Cannot get gradient array for Parameter '{self.name}' because grad_req='null'"
            )
        return self._check_and_get(self._grad, list)

    def list_ctx(self) -> list[Context]:
        """Return the contexts holding a copy (or that will, for a deferred initialization)."""
        if self._data is None:
            if self._deferred_init:
                return self._deferred_init[1]
            raise MXNetError(f"Parameter '{self.name}' has not been initialized")
        assert self._ctx_list is not None  # set with the arrays
        return self._ctx_list

    def zero_grad(self) -> None:
        """Set the gradient buffers to 0 (nothing to do without them); a sparse one is left
        storing no rows."""
        for g in self._grad or ():
            clear_grad(g)

    def cast(self, dtype: DTypeLike) -> None:
        """Convert the data and gradients to ``dtype``, keeping the same NDArray objects."""
        self.dtype = dtype
        if self._data is None:
            return
        dt = np.dtype(dtype)
        for arrs in (self._data, self._grad or ()):
            for a in arrs:
                cast_array(a, dt)


class _ValueInit(initializer.Initializer):
    """Fills an array with a :class:`Constant`'s value."""

    def __init__(self, value: Any) -> None:
        super().__init__()
        self.value = value

    def _init_weight(self, _: str, arr: NDArray) -> None:
        self.value.copyto(arr)


class Constant(Parameter):
    """A parameter whose value autograd and trainers leave alone (``set_data`` still works).

    Parameters
    ----------
    name : str
    value : array_like or NDArray
        The initial value; its shape and dtype become the parameter's.

    Examples
    --------
    >>> const = mx.gluon.Constant('const', [[1, 2], [3, 4]])
    """

    def __init__(self, name: str, value: Any) -> None:
        if not isinstance(value, nd.NDArray):
            value = nd.array(value)
        self.value = value
        super().__init__(
            name, grad_req="null", shape=value.shape, dtype=value.dtype, init=_ValueInit(value)
        )

    def __repr__(self) -> str:
        return f"Constant {self.name} (shape={self.shape}, dtype={self.dtype})"

    @property
    def grad_req(self) -> str:
        """str: always 'null'."""
        return "null"

    @grad_req.setter
    def grad_req(self, req: str) -> None:
        if req != "null":
            warnings.warn(
                f'Constant parameter "{self.name}" does not support grad_req other '
                f'than "null", and new value "{req}" is ignored.',
                stacklevel=2,
            )
