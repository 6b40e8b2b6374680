"""The NDArray class: an array on a context, with operators, autograd hooks and conversions.

An NDArray wraps one NumPy array (CPU contexts) or CuPy array (GPU contexts) in ``_data``, with its
context in ``_ctx`` (the slots of :class:`~.core.array.ArrayCore`). Its operators and the methods
named like ``mx.nd`` functions (``reshape``, ``sum``, ``relu``, ...) come from the op modules'
mixins (``operators.Operators``, ``unary.UnaryMethods``, ...), each calling that module's function
with the array first; this module adds conversions, context moves and autograd hooks.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import numpy as np

from .._failure import ComputeError, propagate
from ..autograd import backward as _backward
from ..base import MXNetError
from ..context import Context, current_context
from .core.array import ArrayCore, check_writable
from .core.transfer import move_data, to_context, to_raw
from .indexing import IndexingMethods
from .nn import SoftmaxMethods
from .operators import Operators
from .reduce import ReduceMethods
from .shape import ShapeMethods
from .unary import UnaryMethods

if TYPE_CHECKING:
    from .._typing import CtxLike, DTypeLike

__all__ = ["NDArray"]

_object_new = object.__new__
#: ``cast`` (dense NDArray, stype -> sparse array) and ``zeros`` (stype, shape, ctx, dtype ->
#: sparse array), installed by ``mxrs.ndarray.sparse``, which is built on this module.
_sparse_hooks: dict[str, Any] = {}


def _wrap(data: Any, ctx: Context) -> NDArray:
    """Make an NDArray around raw array ``data`` on ``ctx`` without copying or checking."""
    a = _object_new(NDArray)
    a._data = data
    a._ctx = ctx
    a._node = None
    a._oidx = 0
    a._grad = None
    a._grad_req = "null"
    return a


def _copy_failed(err: ComputeError, src: NDArray, dst: NDArray) -> None:
    """``src.copyto(dst)`` read a failed array: ``dst`` fails with it."""
    propagate(err, lambda: src.copyto(dst), into=(dst,))


class NDArray(
    Operators,
    UnaryMethods,
    ReduceMethods,
    ShapeMethods,
    IndexingMethods,
    SoftmaxMethods,
    ArrayCore,
):
    """A multi-dimensional array on a device context.

    Create arrays with :func:`mxrs.nd.array`, :func:`mxrs.nd.zeros` and friends; ``NDArray(data,
    ctx=None, dtype=None)`` is the same as ``mx.nd.array(data, ctx, dtype)``.

    Examples
    --------
    >>> a = mx.nd.array([[1, 2]])
    >>> a
    <BLANKLINE>
    [[1. 2.]]
    <NDArray 1x2 @cpu(0)>
    """

    __slots__ = ()
    __array_priority__ = 1000.0

    def __init__(
        self, data: Any, ctx: CtxLike | None = None, dtype: DTypeLike | None = None
    ) -> None:
        ctx = current_context() if ctx is None else ctx
        ctx = ctx if isinstance(ctx, Context) else Context(ctx)
        self._data = to_raw(data, ctx, dtype)
        self._ctx = ctx
        self._node = None
        self._oidx = 0
        self._grad = None
        self._grad_req = "null"

    def _new(self, data: Any, ctx: Context) -> NDArray:
        return _wrap(data, ctx)

    @property
    def writable(self) -> bool:
        """bool: whether the array can be written to; always True in mxrs."""
        return True

    # ----------------------------------------------------------------- conversions
    def __repr__(self) -> str:
        shape = "x".join(str(s) for s in self.shape)
        return f"\n{self.asnumpy()}\n<{type(self).__name__} {shape} @{self._ctx}>"

    def __len__(self) -> int:
        return self._data.shape[0]

    def __iter__(self) -> Iterator[NDArray]:
        for i in range(self._data.shape[0]):
            yield self[i]

    def __bool__(self) -> bool:
        if self._data.size == 1:
            return bool(self._data.reshape(-1)[0])
        if self._data.size == 0:
            return False
        raise ValueError("The truth value of an NDArray with multiple elements is ambiguous.")

    def __float__(self) -> float:
        return float(self.asscalar())

    def __int__(self) -> int:
        return int(self.asscalar())

    __hash__ = object.__hash__

    def asnumpy(self) -> np.ndarray:
        """Return a NumPy copy of the array (waits for pending device work)."""
        be = self._ctx.backend
        if be.xp is np:
            return np.array(self._data, copy=True)
        return be.to_host(self._data)

    def asscalar(self) -> Any:
        """Return the only element of a size-1 array as a NumPy scalar.

        Raises
        ------
        ValueError
            When the array has more than one element.
        """
        if self._data.size != 1:
            raise ValueError("The current array is not a scalar")
        return self.asnumpy().reshape(-1)[0]

    def copy(self) -> NDArray:
        """Return a copy on the same context."""
        return self.copyto(self._ctx)

    def copyto(self, other: NDArray | Context) -> NDArray:
        """Copy into another NDArray, or to a new array on a context (a failed array's copy
        fails with it, see :mod:`mxrs._failure`).

        Parameters
        ----------
        other : NDArray or Context
            A target array of the same shape (written in place and returned), or a context.
        """
        if isinstance(other, Context):
            return to_context(self, other)
        if isinstance(other, NDArray):
            if other is self:
                return other
            if other.shape != self.shape:
                raise MXNetError(f"copyto: shape {self.shape} does not match target {other.shape}")
            check_writable(other)
            try:  # free while nothing fails
                if other._sparse:  # re-encoded in the target's storage type
                    other._data = move_data(self._data, self._ctx, other._ctx).astype(other.dtype)
                    return other
                other._data[...] = move_data(self._data, self._ctx, other._ctx)
            except ComputeError as err:  # a failed array: the target fails with it
                _copy_failed(err, self, other)
            return other
        raise TypeError(f"copyto does not support type {type(other).__name__}")

    def as_in_context(self, context: Context) -> NDArray:
        """Return this array on ``context``: ``self`` when already there, else a copy.

        The copy is recorded by autograd, so gradients flow back to the source context.
        """
        if context == self._ctx:
            return self
        return to_context(self, context)

    def wait_to_read(self) -> None:
        """Block until pending computation or KVStore requests writing this array have finished."""
        self._data  # noqa: B018  (touching the data settles pending KVStore requests)
        self._ctx.backend.synchronize(self._ctx.device_id)

    def detach(self) -> NDArray:
        """Return an array sharing this one's data but cut from the autograd graph."""
        return _wrap(self._data, self._ctx)

    # ----------------------------------------------------------------- autograd
    def attach_grad(self, grad_req: str = "write", stype: str | None = None) -> None:
        """Allocate a gradient buffer and make this array a variable for autograd.

        Parameters
        ----------
        grad_req : {'write', 'add', 'null'}, default 'write'
            'write' overwrites ``.grad`` on each backward, 'add' accumulates into it,
            'null' computes no gradient.
        stype : {'default', 'row_sparse', 'csr'}, optional
            The gradient's storage type; this array's own by default.
        """
        if grad_req == "null":
            self._grad = None
            self._grad_req = "null"
            self._node = None
            return
        stype = self.stype if stype is None else stype
        if stype == "default":
            be = self._ctx.backend
            with be.guard(self._ctx.device_id):
                grad = _wrap(be.xp.zeros(self.shape, self._dtype_raw()), self._ctx)
        else:
            grad = _sparse_hooks["zeros"](stype, self.shape, self._ctx, self._dtype_raw())
        self._mark_variable(grad, grad_req)

    def _dtype_raw(self) -> Any:
        """The NumPy dtype of the elements (without reading a sparse array's values)."""
        return np.dtype(self.dtype)

    def tostype(self, stype: str) -> NDArray:
        """Return a copy of this array with storage type ``stype``.

        Parameters
        ----------
        stype : {'default', 'row_sparse', 'csr'}
            ``'row_sparse'`` keeps the rows holding a non-zero, ``'csr'`` (2-D only) the
            non-zero elements.
        """
        if stype == "default":
            return self.copy()
        return _sparse_hooks["cast"](self, stype)

    def _mark_variable(self, grad: NDArray | None, grad_req: str) -> None:
        if grad_req not in ("write", "add", "null"):
            raise MXNetError(f"grad_req must be 'write', 'add' or 'null', not {grad_req!r}")
        self._grad = grad if grad_req != "null" else None
        self._grad_req = grad_req
        self._node = None

    def backward(
        self, out_grad: NDArray | None = None, retain_graph: bool = False, train_mode: bool = True
    ) -> None:
        """Compute gradients of this array with respect to the marked variables.

        Parameters
        ----------
        out_grad : NDArray, optional
            The gradient flowing into this array; ones when omitted.
        retain_graph : bool, default False
            Keep the graph so it can be differentiated again.
        """
        _backward([self], None if out_grad is None else [out_grad], retain_graph, train_mode)

    def zeros_like(self) -> NDArray:
        """Return zeros of this array's shape, dtype and context."""
        return self._filled_like(0)

    def ones_like(self) -> NDArray:
        """Return ones of this array's shape, dtype and context."""
        return self._filled_like(1)

    def _filled_like(self, value: float) -> NDArray:
        """An array of ``value`` with this array's shape, dtype and context."""
        be, ctx = self._ctx.backend, self._ctx
        with be.guard(ctx.device_id):
            return _wrap(be.xp.full_like(self._data, value), ctx)
