"""The NDArray class: an array on a context, with operators, autograd hooks and conversions.

An NDArray wraps one NumPy array (CPU contexts) or CuPy array (GPU contexts) in ``_data``, with
its context in ``_ctx``. Arithmetic, comparison and indexing run through the primitive ops of the
``elementwise``, ``reduce``, ``shape`` and ``indexing`` modules; the methods named like ``mx.nd``
functions (``reshape``, ``sum``, ``relu``, ...) call those functions with the array first.
"""

import numpy as np

from ..autograd import _state
from ..base import ContextError, MXNetError
from ..context import Context

__all__ = ["NDArray"]

_object_new = object.__new__


def _wrap(data, ctx):
    """Make an NDArray around raw array ``data`` on ``ctx`` without copying or checking."""
    a = _object_new(NDArray)
    a._data = data
    a._ctx = ctx
    a._node = None
    a._oidx = 0
    a._grad = None
    a._grad_req = "null"
    return a


class NDArray:
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

    __slots__ = ("_data", "_ctx", "_node", "_oidx", "_grad", "_grad_req", "_fresh", "__weakref__")
    __array_priority__ = 1000.0

    def __init__(self, data, ctx=None, dtype=None):
        from .creation import array

        src = array(data, ctx=ctx, dtype=dtype)
        self._data = src._data
        self._ctx = src._ctx
        self._node = None
        self._oidx = 0
        self._grad = None
        self._grad_req = "null"

    # ----------------------------------------------------------------- attributes
    @property
    def shape(self):
        """tuple of int: the array's dimensions."""
        return self._data.shape

    @property
    def dtype(self):
        """The NumPy scalar type of the elements, e.g. ``numpy.float32``."""
        return self._data.dtype.type

    @property
    def size(self):
        """int: the number of elements."""
        return self._data.size

    @property
    def ndim(self):
        """int: the number of dimensions."""
        return self._data.ndim

    @property
    def context(self):
        """Context: where the array lives."""
        return self._ctx

    ctx = context

    @property
    def stype(self):
        """str: the storage type; always ``'default'`` (dense)."""
        return "default"

    @property
    def T(self):
        """NDArray: the array with its axes reversed."""
        return _shp.transpose(self)

    @property
    def grad(self):
        """NDArray or None: the gradient buffer set up by :meth:`attach_grad`."""
        return self._grad

    @property
    def grad_req(self):
        """str: how backward stores this variable's gradient ('write', 'add' or 'null')."""
        return self._grad_req

    @property
    def _fresh_grad(self):
        """bool: True once backward wrote this variable's gradient, until a trainer consumes it."""
        return getattr(self, "_fresh", False)

    @_fresh_grad.setter
    def _fresh_grad(self, value):
        self._fresh = bool(value)

    # ----------------------------------------------------------------- conversions
    def __repr__(self):
        shape = "x".join(str(s) for s in self.shape)
        return f"\n{self.asnumpy()}\n<{type(self).__name__} {shape} @{self._ctx}>"

    def __len__(self):
        return self._data.shape[0]

    def __iter__(self):
        for i in range(self._data.shape[0]):
            yield self[i]

    def __bool__(self):
        if self._data.size == 1:
            return bool(self._data.reshape(-1)[0])
        if self._data.size == 0:
            return False
        raise ValueError("The truth value of an NDArray with multiple elements is ambiguous.")

    def __float__(self):
        return float(self.asscalar())

    def __int__(self):
        return int(self.asscalar())

    __hash__ = object.__hash__

    def asnumpy(self):
        """Return a NumPy copy of the array (waits for pending device work)."""
        be = self._ctx.backend
        if be.xp is np:
            return np.array(self._data, copy=True)
        return be.to_host(self._data)

    def asscalar(self):
        """Return the only element of a size-1 array as a NumPy scalar.

        Raises
        ------
        ValueError
            When the array has more than one element.
        """
        if self._data.size != 1:
            raise ValueError("The current array is not a scalar")
        return self.asnumpy().reshape(-1)[0]

    def astype(self, dtype, copy=True):
        """Return the array converted to ``dtype`` (``self`` when unchanged and ``copy=False``)."""
        dt = np.dtype(dtype)
        if not copy and dt == self._data.dtype:
            return self
        return _ew.cast(self, dt)

    def copy(self):
        """Return a copy on the same context."""
        return self.copyto(self._ctx)

    def copyto(self, other):
        """Copy into another NDArray, or to a new array on a context.

        Parameters
        ----------
        other : NDArray or Context
            A target array of the same shape (written in place and returned), or a context.
        """
        if isinstance(other, Context):
            return _cr._to_context(self, other, force_copy=True)
        if isinstance(other, NDArray):
            if other is self:
                return other
            if other.shape != self.shape:
                raise MXNetError(f"copyto: shape {self.shape} does not match target {other.shape}")
            other._data[...] = _cr._move_data(self._data, self._ctx, other._ctx)
            return other
        raise TypeError(f"copyto does not support type {type(other).__name__}")

    def as_in_context(self, context):
        """Return this array on ``context``: ``self`` when already there, else a copy.

        The copy is recorded by autograd, so gradients flow back to the source context.
        """
        if context == self._ctx:
            return self
        return _cr._to_context(self, context)

    def wait_to_read(self):
        """Block until pending computation or KVStore requests writing this array have finished."""
        self._data  # noqa: B018  (touching the data settles pending KVStore requests)
        self._ctx.backend.synchronize(self._ctx.device_id)

    def detach(self):
        """Return an array sharing this one's data but cut from the autograd graph."""
        return _wrap(self._data, self._ctx)

    # ----------------------------------------------------------------- autograd
    def attach_grad(self, grad_req="write", stype=None):
        """Allocate a gradient buffer and make this array a variable for autograd.

        Parameters
        ----------
        grad_req : {'write', 'add', 'null'}, default 'write'
            'write' overwrites ``.grad`` on each backward, 'add' accumulates into it,
            'null' computes no gradient.
        """
        if grad_req == "null":
            self._grad = None
            self._grad_req = "null"
            self._node = None
            return
        be = self._ctx.backend
        with be.guard(self._ctx.device_id):
            grad = _wrap(be.xp.zeros_like(self._data), self._ctx)
        self._mark_variable(grad, grad_req)

    def _mark_variable(self, grad, grad_req):
        if grad_req not in ("write", "add", "null"):
            raise MXNetError(f"grad_req must be 'write', 'add' or 'null', not {grad_req!r}")
        self._grad = grad if grad_req != "null" else None
        self._grad_req = grad_req
        self._node = None

    def backward(self, out_grad=None, retain_graph=False, train_mode=True):
        """Compute gradients of this array with respect to the marked variables.

        Parameters
        ----------
        out_grad : NDArray, optional
            The gradient flowing into this array; ones when omitted.
        retain_graph : bool, default False
            Keep the graph so it can be differentiated again.
        """
        from ..autograd import backward

        backward([self], None if out_grad is None else [out_grad], retain_graph, train_mode)

    # ----------------------------------------------------------------- operators
    def __add__(self, other):
        return _ew.add(self, other)

    def __radd__(self, other):
        return _ew.add(self, other)

    def __sub__(self, other):
        return _ew.subtract(self, other)

    def __rsub__(self, other):
        return _ew.subtract(other, self)

    def __mul__(self, other):
        return _ew.multiply(self, other)

    def __rmul__(self, other):
        return _ew.multiply(self, other)

    def __truediv__(self, other):
        return _ew.divide(self, other)

    def __rtruediv__(self, other):
        return _ew.divide(other, self)

    def __mod__(self, other):
        return _ew.modulo(self, other)

    def __rmod__(self, other):
        return _ew.modulo(other, self)

    def __pow__(self, other):
        return _ew.power(self, other)

    def __rpow__(self, other):
        return _ew.power(other, self)

    def __neg__(self):
        return _ew.negative(self)

    def __pos__(self):
        return self

    def __abs__(self):
        return _ew.abs(self)

    def __eq__(self, other):
        return _ew.equal(self, other)

    def __ne__(self, other):
        return _ew.not_equal(self, other)

    def __gt__(self, other):
        return _ew.greater(self, other)

    def __ge__(self, other):
        return _ew.greater_equal(self, other)

    def __lt__(self, other):
        return _ew.lesser(self, other)

    def __le__(self, other):
        return _ew.lesser_equal(self, other)

    def _inplace(self, other, fn, pyop):
        """In-place arithmetic: mutate ``_data`` unless autograd must see a new node."""
        if _state.recording and (self._node is not None or self._grad is not None or (
                isinstance(other, NDArray) and (other._node is not None
                                                or other._grad is not None))):
            return fn(self, other)
        if isinstance(other, NDArray):
            if other._ctx != self._ctx:
                raise ContextError(f"in-place operation got arrays on two contexts, {self._ctx} "
                                   f"and {other._ctx}; move one with as_in_context() first")
            other = other._data
        elif not isinstance(other, (int, float, np.generic)):
            raise TypeError(f"unsupported operand type {type(other).__name__}")
        pyop(self._data, other)
        return self

    def __iadd__(self, other):
        return self._inplace(other, _ew.add, _iadd)

    def __isub__(self, other):
        return self._inplace(other, _ew.subtract, _isub)

    def __imul__(self, other):
        return self._inplace(other, _ew.multiply, _imul)

    def __itruediv__(self, other):
        return self._inplace(other, _ew.divide, _idiv)

    def __getitem__(self, key):
        return _ix.getitem(self, key)

    def __setitem__(self, key, value):
        _ix.setitem(self, key, value)

    def reshape(self, *shape, **kwargs):
        """Return the array with a new shape; see :func:`mxrs.nd.reshape` for special codes."""
        if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
            shape = tuple(shape[0])
        if "shape" in kwargs:
            shape = kwargs.pop("shape")
        return _shp.reshape(self, shape, **kwargs)

    def zeros_like(self):
        """Return zeros of this array's shape, dtype and context."""
        return _cr.zeros_like(self)

    def ones_like(self):
        """Return ones of this array's shape, dtype and context."""
        return _cr.ones_like(self)


def _iadd(a, b):
    a += b


def _isub(a, b):
    a -= b


def _imul(a, b):
    a *= b


def _idiv(a, b):
    a /= b


def _make_method(module, name):
    fn = getattr(module, name)

    def method(self, *args, **kwargs):
        return fn(self, *args, **kwargs)

    method.__name__ = name
    method.__doc__ = f"Same as :func:`mxrs.nd.{name}` with this array as the first argument."
    return method


from . import creation as _cr  # noqa: E402
from . import elementwise as _ew  # noqa: E402
from . import indexing as _ix  # noqa: E402
from . import nn as _nn  # noqa: E402
from . import reduce as _red  # noqa: E402
from . import shape as _shp  # noqa: E402

for _mod, _names in (
    (_ew, ("exp", "log", "sqrt", "square", "abs", "sign", "relu", "sigmoid", "tanh", "clip",
           "reciprocal", "rsqrt", "log1p", "expm1", "sin", "cos", "floor", "ceil", "round")),
    (_red, ("sum", "mean", "max", "min", "prod", "norm", "argmax", "argmin", "topk", "nansum")),
    (_shp, ("transpose", "flatten", "expand_dims", "squeeze", "broadcast_to", "broadcast_like",
            "split", "slice", "slice_axis", "tile", "repeat", "flip", "swapaxes", "reshape_like")),
    (_ix, ("take", "pick", "one_hot")),
    (_nn, ("softmax", "log_softmax")),
):
    for _name in _names:
        setattr(NDArray, _name, _make_method(_mod, _name))
