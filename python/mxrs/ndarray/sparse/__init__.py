"""Sparse arrays (``mx.nd.sparse``): :class:`RowSparseNDArray` and :class:`CSRNDArray`.

A row_sparse array stores only its non-zero rows (``indices``, ``data``): the gradient of a
large embedding, where a batch touches a few rows. A CSR array stores a 2-D matrix's non-zeros
(``data``, ``indices``, ``indptr``): sparse input features. Both work with every operator (as
dense copies where the operator has no sparse form, MXNet's "storage fallback"); those that keep
zeros zero keep the storage type, see ``_rules``.

Layout
------
_storage
    Conversions between dense raw arrays and the formats' components; format checks.
_arrays
    The classes.
_create
    ``row_sparse_array``, ``csr_matrix``, ``zeros``, ``empty``, ``array``, ``cast_storage``.
_rules
    The operators that keep a sparse input sparse (installed into ``core.op.sparse_rules``).
_ops
    ``retain``, ``dot``, ``add_n``, ``elemwise_*``, ``sum``, ``square_sum``...
"""

from .. import ndarray as _ndarray_mod
from ..unary import abs, clip, negative, relu, sign, sqrt, square  # noqa: F401
from . import _rules  # noqa: F401  (installs the sparse rules)
from ._arrays import BaseSparseNDArray, CSRNDArray, RowSparseNDArray  # noqa: F401
from ._create import array, cast_storage, csr_matrix, empty, row_sparse_array, zeros
from ._ops import *  # noqa: F403
from ._ops import __all__ as _ops_all

__all__ = [
    "BaseSparseNDArray",
    "CSRNDArray",
    "RowSparseNDArray",
    "array",
    "cast_storage",
    "csr_matrix",
    "empty",
    "row_sparse_array",
    "zeros",
    *_ops_all,
]

_ndarray_mod._sparse_hooks["cast"] = cast_storage
_ndarray_mod._sparse_hooks["zeros"] = zeros
