"""Copies and sums of long float32 arrays on the kernels' threads (oneDNN's OpenMP team where it
is loaded, the calling thread otherwise), where NumPy would make them on one thread: the
gradient stores and sums of the backward pass, the residual additions of a forward pass and the
local KVStore's copies. Anything else (other dtypes, short, strided or overlapping arrays,
other devices) goes to NumPy or the array's own module, with NumPy's results.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from . import _native

__all__ = ["add", "copy"]

#: Elements from which a float32 array is copied or summed over the threads.
THRESHOLD = 1 << 16


def _flat(*arrays: Any) -> list[Any] | None:
    """One-dimensional views of long float32 arrays of one shape and one dense layout (row-major
    or any order of the axes, as channels-last data is), element ``i`` of each the same element
    of the shape; None for anything else."""
    first = arrays[0]
    if not all(
        type(a) is np.ndarray
        and a.dtype == np.float32
        and a.shape == first.shape
        and a.strides == first.strides
        for a in arrays
    ):
        return None
    if first.size < THRESHOLD:
        return None
    if first.flags.c_contiguous:
        return [a.reshape(-1) for a in arrays]
    # the axes from the longest stride to the shortest: a dense array becomes row-major
    order = sorted(range(first.ndim), key=lambda i: -first.strides[i])
    views = [a.transpose(order) for a in arrays]
    if not views[0].flags.c_contiguous:
        return None
    return [v.reshape(-1) for v in views]


def copy(dst: Any, src: Any, xp: Any = np) -> None:
    """``dst[...] = src``; ``xp`` (the arrays' module) copies what is not long float32."""
    flat = _flat(dst, src)
    if flat is not None and not np.may_share_memory(dst, src):
        _native.copy_into(*flat)
    else:
        xp.copyto(dst, src)


def add(a: Any, b: Any) -> Any:
    """``a + b`` as a new array."""
    if _flat(a, b) is not None:
        out = np.empty_like(a)  # a's layout
        flat = _flat(out, a, b)
        if flat is not None:
            _native.add_into(*flat)
            return out
    return a + b
