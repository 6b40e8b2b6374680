"""The core every NDArray shares: its slots, its read-only attributes, and how ops make arrays.

The op modules (``elementwise``, ``reduce``, ...) work on this core alone: they test operands
with ``isinstance(x, ArrayCore)`` and make their results with ``x._new(data, ctx)`` from an input
array, so none of them imports the :class:`~mxrs.ndarray.NDArray` class, which is put together
above them from this core and the op modules' method mixins. Their annotations say the same:
an op takes and gives back ``ArrayT`` (a type variable bound to this class), and the method
mixins subclass this class; no op module names NDArray, not even for the type checker.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from ...base import MXNetError

if TYPE_CHECKING:
    from typing_extensions import Self

    from ...autograd import TapeNode
    from ...context import Context

__all__ = ["ArrayCore", "ArrayT", "check_writable"]


class ArrayCore:
    """Raw array data on a context, with the slots autograd and the KVStore use.

    Slots: ``_data`` (a NumPy or CuPy array), ``_ctx`` (its context), ``_node`` (the op that made
    it, when recorded) and ``_oidx`` (which of that op's outputs it is), ``_grad`` and
    ``_grad_req`` (set by ``attach_grad``), ``_fresh`` (backward wrote ``_grad`` and no trainer
    has used it yet), ``_on_grad`` (set by a trainer on a parameter's array: called with the
    array as soon as a backward pass has stored its final gradient; unset on other arrays),
    ``_guard`` (set by a trainer on a gradient it has sent and not yet stepped past: why the
    array must not be written now, which :func:`check_writable` raises; unset otherwise).
    """

    __slots__ = (
        "_data",
        "_ctx",
        "_node",
        "_oidx",
        "_grad",
        "_grad_req",
        "_fresh",
        "_on_grad",
        "_guard",
        "__weakref__",
    )

    _data: Any
    _ctx: Context
    _node: TapeNode | None
    _oidx: int
    _grad: ArrayCore | None
    _grad_req: str
    _fresh: bool
    _on_grad: Callable[[Self], None]
    _guard: str
    #: Whether the array is a sparse one (its ``_data`` is then a dense copy made on reading).
    _sparse = False

    if TYPE_CHECKING:
        # Methods of every array that op code calls on its operands. They come from the op
        # modules' mixins and the NDArray class above this module; named here, op code
        # type-checks against the core alone.
        def __mul__(self, other: Any) -> Self: ...
        def __sub__(self, other: Any) -> Self: ...
        def __setitem__(self, key: Any, value: Any) -> None: ...
        def copy(self) -> Self: ...
        def reshape(self, *shape: Any, **kwargs: Any) -> Self: ...
        def transpose(self, *axes: Any, **kwargs: Any) -> Self: ...

    def _new(self, data: Any, ctx: Context) -> Self:
        """Return a new, unrecorded NDArray around raw ``data`` on ``ctx`` (no copy, no check)."""
        raise NotImplementedError

    @property
    def shape(self) -> tuple[int, ...]:
        """tuple of int: the array's dimensions."""
        return self._data.shape

    @property
    def dtype(self) -> type:
        """The NumPy scalar type of the elements, e.g. ``numpy.float32``."""
        return self._data.dtype.type

    @property
    def size(self) -> int:
        """int: the number of elements."""
        return self._data.size

    @property
    def ndim(self) -> int:
        """int: the number of dimensions."""
        return self._data.ndim

    @property
    def context(self) -> Context:
        """Context: where the array lives."""
        return self._ctx

    ctx = context

    @property
    def stype(self) -> str:
        """str: the storage type; always ``'default'`` (dense)."""
        return "default"

    @property
    def grad(self) -> ArrayCore | None:
        """NDArray or None: the gradient buffer set up by :meth:`attach_grad`."""
        return self._grad

    @property
    def grad_req(self) -> str:
        """str: how backward stores this variable's gradient ('write', 'add' or 'null')."""
        return self._grad_req

    @property
    def _fresh_grad(self) -> bool:
        """bool: True once backward wrote this variable's gradient, until a trainer consumes it."""
        return getattr(self, "_fresh", False)

    @_fresh_grad.setter
    def _fresh_grad(self, value: bool) -> None:
        self._fresh = bool(value)

    def _needs_grad(self) -> bool:
        """bool: whether an op on this array is recorded (it is a variable or was recorded)."""
        return self._node is not None or self._grad is not None


#: The array type an op takes and gives back: an op's result is of its array operands' class.
ArrayT = TypeVar("ArrayT", bound=ArrayCore)


def check_writable(x: ArrayCore) -> None:
    """Refuse an in-place write into ``x`` while a trainer guards it (see ``_guard``).

    Raises
    ------
    MXNetError
        With the guard's reason.
    """
    reason = getattr(x, "_guard", None)
    if reason is not None:
        raise MXNetError(reason)
