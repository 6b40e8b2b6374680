"""Failed arrays: the outputs of a computation that raised :class:`~mxrs._failure.ComputeError`.

A failed array's class is switched to :class:`_FailedNDArray`, as a pending array's is (see
:mod:`._pending`), so ordinary arrays pay nothing. Its data is a placeholder of the right shape
and dtype (zeros); ``shape``, ``dtype``, ``size``, ``ndim``, ``len`` and iteration work as on any
array, while reading the data (``asnumpy``, ``wait_to_read``, an operation that does not handle
failed inputs) raises the failure's error, once: when the failure was reported (here, through
another array holding it, or by ``nd.waitall()``), the array turns back into a plain NDArray
holding its placeholder. Writing into a failed array leaves it failed, as in MXNet.
:func:`failed_array` makes a new one, for operators that make their outputs themselves.
"""

from __future__ import annotations

import weakref
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from .. import _failure
from .._failure import ComputeError, Failure
from .core.array import ArrayCore
from .ndarray import NDArray, _wrap

if TYPE_CHECKING:
    from ..context import Context

__all__ = ["failed_array", "failure_of"]

_DATA = ArrayCore.__dict__["_data"]  # the slot descriptor behind NDArray._data

# id(array) -> (weakref to the array, its failure)
_HELD: dict[int, tuple[weakref.ref[NDArray], Failure]] = {}


def _plain(arr: NDArray) -> None:
    """``arr``'s failure was reported: make it a plain array holding its placeholder."""
    _HELD.pop(id(arr), None)
    arr.__class__ = NDArray


class _FailedNDArray(NDArray):
    """An NDArray whose computation failed; reading its data raises the error, once."""

    __slots__ = ()

    @property
    def _data(self) -> Any:
        f = _HELD[id(self)][1]
        if f.reported:
            _plain(self)
        elif not _failure.collecting():
            raise f.surface()
        return _DATA.__get__(self)

    @_data.setter
    def _data(self, value: Any) -> None:
        if _HELD[id(self)][1].reported:
            _plain(self)
        _DATA.__set__(self, value)  # written while failed: still failed

    @property
    def shape(self) -> tuple[int, ...]:
        """tuple of int: the array's dimensions (known although its computation failed)."""
        return _DATA.__get__(self).shape

    @property
    def dtype(self) -> type:
        """The NumPy scalar type of the elements."""
        return _DATA.__get__(self).dtype.type

    @property
    def size(self) -> int:
        """int: the number of elements."""
        return _DATA.__get__(self).size

    @property
    def ndim(self) -> int:
        """int: the number of dimensions."""
        return _DATA.__get__(self).ndim

    def __len__(self) -> int:
        return self.shape[0]

    def __iter__(self) -> Iterator[NDArray]:
        for i in range(self.shape[0]):
            yield self[i]  # each row fails with this array's failure

    def detach(self) -> NDArray:
        """Return an array sharing this one's data and failure, cut from the autograd graph."""
        f = _HELD[id(self)][1]
        out = _wrap(_DATA.__get__(self), self._ctx)
        if not f.reported:
            _mark(out, f)
        return out


def _mark(arr: Any, failure: Failure) -> bool:
    """Make ``arr`` a failed array holding ``failure``; False when it cannot be one."""
    cls = type(arr)
    if cls is not NDArray and cls is not _FailedNDArray:
        return False  # sparse arrays, arrays with KVStore requests in flight
    key = id(arr)
    entry = _HELD.get(key)
    if entry is not None and entry[0]() is arr:
        _HELD[key] = (entry[0], failure)
        return True

    def forget(_: object) -> None:
        if _HELD.get(key, (None,))[0] is ref:
            del _HELD[key]

    ref = weakref.ref(arr, forget)
    _HELD[key] = (ref, failure)
    arr.__class__ = _FailedNDArray
    return True


_failure.install(_mark)


def failure_of(arr: Any) -> Failure | None:
    """The failure ``arr`` holds, if it is a failed array whose error was not reported yet."""
    if type(arr) is not _FailedNDArray:
        return None
    f = _HELD[id(arr)][1]
    return None if f.reported else f


def failed_array(err: ComputeError, ctx: Context, shape: tuple[int, ...], dtype: Any) -> NDArray:
    """A failed array of ``shape`` and ``dtype`` on ``ctx`` for ``err``, caught by an operator
    that makes its output itself and knows its shape (the samplers): ``err`` was raised by its
    computation, or by the read of a failed input (see :func:`mxrs._failure.caught`).

    Raises
    ------
    ComputeError
        ``err``, when the computation ran on failed arrays' placeholders.
    """
    f = _failure.caught(err)
    be = ctx.backend
    with be.guard(ctx.device_id):
        out = _wrap(be.xp.zeros(shape, dtype), ctx)
    _failure.fail((out,), f)
    return out
