"""NumPy reference computations tests compare operators with: an element-wise function over
one or two arrays, a reduction over several axes, the sum that undoes a broadcast."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

__all__ = ["assign_each", "assign_each2", "np_reduce", "collapse_sum_like"]


def assign_each(the_input: np.ndarray, function: Callable[[Any], Any] | None) -> np.ndarray:
    """``function`` applied to each element of ``the_input``.

    Parameters
    ----------
    the_input : numpy.ndarray
    function : callable or None
        Called with each element (a 0-d array); None returns a copy of ``the_input``.

    Returns
    -------
    numpy.ndarray
        float64 of ``the_input``'s shape: the results in the order ``numpy.nditer`` visits the
        input (memory order), written in C order.
    """
    if function is None:
        return np.array(the_input)
    output = np.zeros(the_input.shape)
    flat = output.reshape(-1)
    for i, value in enumerate(np.nditer(the_input)):
        flat[i] = function(value)
    return output


def assign_each2(
    input1: np.ndarray, input2: np.ndarray, function: Callable[[Any, Any], Any] | None
) -> np.ndarray:
    """``function`` applied to each pair of elements of ``input1`` and ``input2`` (same shape).

    Parameters
    ----------
    input1, input2 : numpy.ndarray
    function : callable or None
        Called with an element of each (0-d arrays); None returns a copy of ``input1``.

    Returns
    -------
    numpy.ndarray
        float64 of the inputs' shape (filled as :func:`assign_each` fills it).

    Raises
    ------
    AssertionError
        If the shapes differ.
    """
    if function is None:
        return np.array(input1)
    if input1.shape != input2.shape:
        raise AssertionError(f"assign_each2: shapes {input1.shape} and {input2.shape} differ")
    output = np.zeros(input1.shape)
    flat = output.reshape(-1)
    for i, (x, y) in enumerate(zip(np.nditer(input1), np.nditer(input2), strict=True)):
        flat[i] = function(x, y)
    return output


def np_reduce(dat: np.ndarray, axis: Any, keepdims: bool, numpy_reduce_func: Callable) -> Any:
    """Reduce ``dat`` over several axes with a one-axis NumPy reduction.

    Parameters
    ----------
    dat : numpy.ndarray
    axis : None, int or sequence of int
        The axes (None: all).
    keepdims : bool
        Keep the reduced axes with length 1.
    numpy_reduce_func : callable
        Such as ``np.sum`` or ``np.max``, called as ``f(x, axis=i)`` once per axis, from the
        highest axis down.
    """
    if isinstance(axis, int):
        axes = [axis]
    else:
        axes = list(axis) if axis is not None else list(range(dat.ndim))
    ret = dat
    for i in sorted(axes, reverse=True):
        ret = numpy_reduce_func(ret, axis=i)
    if keepdims:
        shape = list(dat.shape)
        for i in axes:
            shape[i] = 1
        ret = ret.reshape(tuple(shape))
    return ret


def collapse_sum_like(a: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """Sum ``a`` down to ``shape``, an array of which broadcasts to ``a``'s shape: over the
    leading axes ``shape`` lacks and the axes where it has 1 (the gradient of a broadcast).

    Raises
    ------
    AssertionError
        If ``shape`` has more axes than ``a``, or an axis that is neither ``a``'s nor 1.
    """
    shape = tuple(shape)
    if len(a.shape) < len(shape):
        raise AssertionError(f"collapse_sum_like: {shape} has more axes than {a.shape}")
    if np.prod(shape) == 0 or a.size == 0:
        return np.zeros(shape, dtype=a.dtype)
    lead = a.ndim - len(shape)
    axes = list(range(lead))
    for i, s in enumerate(shape):
        if s != a.shape[lead + i]:
            if s != 1:
                raise AssertionError(f"collapse_sum_like: {shape} does not broadcast to {a.shape}")
            axes.append(lead + i)
    return np.sum(a, axis=tuple(axes)).reshape(shape)
