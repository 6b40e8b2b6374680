"""Python's arithmetic and comparison operators for NDArrays (a mixin of the NDArray class).

Each operator calls the function of :mod:`.elementwise` that computes it; in-place operators
write into the left array's data unless autograd must see a new node.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from ..autograd import _state
from ..base import ContextError
from ._core import ArrayCore
from .elementwise import (
    add,
    divide,
    equal,
    greater,
    greater_equal,
    lesser,
    lesser_equal,
    modulo,
    multiply,
    not_equal,
    power,
    subtract,
)

if TYPE_CHECKING:
    from .ndarray import NDArray

__all__ = ["Operators"]


class Operators:
    """Python's arithmetic and comparison operators for NDArrays, in place ones included.

    ``a += b`` writes into ``a``'s data, except inside ``autograd.record()`` when either side
    takes part in the graph: then it makes a new, recorded array, as ``a = a + b`` would.
    """

    __slots__ = ()

    def __add__(self: Any, other: NDArray | float) -> NDArray:
        return add(self, other)

    def __radd__(self: Any, other: NDArray | float) -> NDArray:
        return add(self, other)

    def __sub__(self: Any, other: NDArray | float) -> NDArray:
        return subtract(self, other)

    def __rsub__(self: Any, other: NDArray | float) -> NDArray:
        return subtract(other, self)

    def __mul__(self: Any, other: NDArray | float) -> NDArray:
        return multiply(self, other)

    def __rmul__(self: Any, other: NDArray | float) -> NDArray:
        return multiply(self, other)

    def __truediv__(self: Any, other: NDArray | float) -> NDArray:
        return divide(self, other)

    def __rtruediv__(self: Any, other: NDArray | float) -> NDArray:
        return divide(other, self)

    def __mod__(self: Any, other: NDArray | float) -> NDArray:
        return modulo(self, other)

    def __rmod__(self: Any, other: NDArray | float) -> NDArray:
        return modulo(other, self)

    def __pow__(self: Any, other: NDArray | float) -> NDArray:
        return power(self, other)

    def __rpow__(self: Any, other: NDArray | float) -> NDArray:
        return power(other, self)

    def __eq__(  # type: ignore[override]  # elementwise, as NumPy's
        self: Any, other: NDArray | float
    ) -> NDArray:
        return equal(self, other)

    def __ne__(  # type: ignore[override]  # elementwise, as NumPy's
        self: Any, other: NDArray | float
    ) -> NDArray:
        return not_equal(self, other)

    def __gt__(self: Any, other: NDArray | float) -> NDArray:
        return greater(self, other)

    def __ge__(self: Any, other: NDArray | float) -> NDArray:
        return greater_equal(self, other)

    def __lt__(self: Any, other: NDArray | float) -> NDArray:
        return lesser(self, other)

    def __le__(self: Any, other: NDArray | float) -> NDArray:
        return lesser_equal(self, other)

    def __iadd__(self: Any, other: NDArray | float) -> NDArray:
        return _inplace(self, other, add, operator.iadd)

    def __isub__(self: Any, other: NDArray | float) -> NDArray:
        return _inplace(self, other, subtract, operator.isub)

    def __imul__(self: Any, other: NDArray | float) -> NDArray:
        return _inplace(self, other, multiply, operator.imul)

    def __itruediv__(self: Any, other: NDArray | float) -> NDArray:
        return _inplace(self, other, divide, operator.itruediv)


def _inplace(
    x: NDArray,
    other: NDArray | float,
    fn: Callable[[Any, Any], NDArray],
    pyop: Callable[[Any, Any], Any],
) -> NDArray:
    """In-place arithmetic: ``pyop`` (``operator.iadd``, ...) on ``x._data``, unless autograd must
    see a new node, which ``fn`` (``add``, ...) makes."""
    if _state.recording and (
        x._needs_grad() or (isinstance(other, ArrayCore) and other._needs_grad())
    ):
        return fn(x, other)
    if isinstance(other, ArrayCore):
        if other._ctx != x._ctx:
            raise ContextError(
                f"in-place operation got arrays on two contexts, {x._ctx} "
                f"and {other._ctx}; move one with as_in_context() first"
            )
        raw: Any = other._data
    elif not isinstance(other, (int, float, np.generic)):
        raise TypeError(f"unsupported operand type {type(other).__name__}")
    else:
        raw = other
    pyop(x._data, raw)
    return x
