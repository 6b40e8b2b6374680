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


def _long(*arrays: Any) -> bool:
    first = arrays[0]
    return (
        all(
            type(a) is np.ndarray
            and a.dtype == np.float32
            and a.shape == first.shape
            and a.flags.c_contiguous
            for a in arrays
        )
        and first.size >= THRESHOLD
    )


def copy(dst: Any, src: Any, xp: Any = np) -> None:
    """``dst[...] = src``; ``xp`` (the arrays' module) copies what is not long float32."""
    if _long(dst, src) and not np.may_share_memory(dst, src):
        _native.copy_into(dst, src)
    else:
        xp.copyto(dst, src)


def add(a: Any, b: Any) -> Any:
    """``a + b`` as a new array."""
    if _long(a, b):
        out = np.empty_like(a)
        _native.add_into(out, a, b)
        return out
    return a + b
