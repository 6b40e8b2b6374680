"""NDArrays whose values are known from their position, for tests of large tensors (more
than 2**32 elements), where a random reference would not fit in memory twice."""

from __future__ import annotations

import numpy as np

from .. import ndarray as nd
from ..ndarray import NDArray

__all__ = ["create_2d_tensor", "create_vector", "get_identity_mat", "get_identity_mat_batch"]


def create_2d_tensor(rows: int, columns: int, dtype=np.int64) -> NDArray:
    """A ``rows x columns`` NDArray whose row ``i`` holds ``i`` in every column."""
    col = nd.arange(0, rows, dtype=dtype).reshape(rows, 1)
    return nd.broadcast_to(col, shape=(rows, columns))


def create_vector(size: int, dtype=np.int64) -> NDArray:
    """The NDArray ``[0, 1, ..., size - 1]``."""
    return nd.arange(0, size, dtype=dtype)


def get_identity_mat(size: int) -> NDArray:
    """The ``size x size`` float32 identity matrix."""
    return nd.eye(size, dtype=np.float32)


def get_identity_mat_batch(size: int) -> NDArray:
    """Two ``size x size`` float32 identity matrices: shape ``(2, size, size)``."""
    eye = get_identity_mat(size).asnumpy()
    return nd.array(np.stack([eye, eye]))
