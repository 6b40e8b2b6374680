"""Python's arithmetic and comparison operators for NDArrays (a mixin of the NDArray class).

Each operator calls the function of :mod:`.elementwise` that computes it; in-place operators
write into the left array's data unless autograd must see a new node.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any

import numpy as np

from ..autograd import _state
from ..base import ContextError
from .core.array import ArrayCore, ArrayT, check_writable
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

__all__ = ["Operators"]


class Operators(ArrayCore):
    """Python's arithmetic and comparison operators for NDArrays, in place ones included.

    ``a += b`` writes into ``a``'s data, except inside ``autograd.record()`` when either side
    takes part in the graph: then it makes a new, recorded array, as ``a = a + b`` would.
    """

    __slots__ = ()

    def __add__(self: ArrayT, other: ArrayT | float) -> ArrayT:
        return add(self, other)

    def __radd__(self: ArrayT, other: ArrayT | float) -> ArrayT:
        return add(self, other)

    def __sub__(self: ArrayT, other: ArrayT | float) -> ArrayT:
        return subtract(self, other)

    def __rsub__(self: ArrayT, other: ArrayT | float) -> ArrayT:
        return subtract(other, self)

    def __mul__(self: ArrayT, other: ArrayT | float) -> ArrayT:
        return multiply(self, other)

    def __rmul__(self: ArrayT, other: ArrayT | float) -> ArrayT:
        return multiply(self, other)

    def __truediv__(self: ArrayT, other: ArrayT | float) -> ArrayT:
        return divide(self, other)

    def __rtruediv__(self: ArrayT, other: ArrayT | float) -> ArrayT:
        return divide(other, self)

    def __mod__(self: ArrayT, other: ArrayT | float) -> ArrayT:
        return modulo(self, other)

    def __rmod__(self: ArrayT, other: ArrayT | float) -> ArrayT:
        return modulo(other, self)

    def __pow__(self: ArrayT, other: ArrayT | float) -> ArrayT:
        return power(self, other)

    def __rpow__(self: ArrayT, other: ArrayT | float) -> ArrayT:
        return power(other, self)

    def __eq__(  # type: ignore[override]  # elementwise, as NumPy's
        self: ArrayT, other: ArrayT | float
    ) -> ArrayT:
        return equal(self, other)

    def __ne__(  # type: ignore[override]  # elementwise, as NumPy's
        self: ArrayT, other: ArrayT | float
    ) -> ArrayT:
        return not_equal(self, other)

    def __gt__(self: ArrayT, other: ArrayT | float) -> ArrayT:
        return greater(self, other)

    def __ge__(self: ArrayT, other: ArrayT | float) -> ArrayT:
        return greater_equal(self, other)

    def __lt__(self: ArrayT, other: ArrayT | float) -> ArrayT:
        return lesser(self, other)

    def __le__(self: ArrayT, other: ArrayT | float) -> ArrayT:
        return lesser_equal(self, other)

    def __iadd__(self: ArrayT, other: ArrayT | float) -> ArrayT:
        return _inplace(self, other, add, operator.iadd)

    def __isub__(self: ArrayT, other: ArrayT | float) -> ArrayT:
        return _inplace(self, other, subtract, operator.isub)

    def __imul__(self: ArrayT, other: ArrayT | float) -> ArrayT:
        return _inplace(self, other, multiply, operator.imul)

    def __itruediv__(self: ArrayT, other: ArrayT | float) -> ArrayT:
        return _inplace(self, other, divide, operator.itruediv)


def _inplace(
    x: ArrayT,
    other: ArrayT | float,
    fn: Callable[[Any, Any], ArrayT],
    pyop: Callable[[Any, Any], Any],
) -> ArrayT:
    """In-place arithmetic: ``pyop`` (``operator.iadd``, ...) on ``x._data``, unless autograd must
    see a new node, which ``fn`` (``add``, ...) makes."""
    check_writable(x)
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
