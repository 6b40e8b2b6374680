"""The sparse NDArray classes: :class:`RowSparseNDArray` and :class:`CSRNDArray`.

A sparse array keeps its components in raw arrays of its context's library: ``_sp_vals`` (the
stored values), ``_sp_idx`` (int64 row ids for row_sparse, column ids for CSR), ``_sp_ptr``
(CSR's row offsets) and ``_sp_shape``. Its ``_data`` attribute is a dense copy made on each
read, so every operator of mxrs takes sparse inputs (MXNet's "storage fallback"); assigning a
dense raw array to ``_data`` re-encodes it. The operators that keep zeros zero (``*`` by a
scalar, ``+``/``-``/``*`` of two sparse arrays, ``sqrt``, ``square``, ``abs``...) keep the storage
type (``_rules``), as MXNet's do.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

import numpy as np

from ..._sparse_rows import SparseRows
from ...base import MXNetError
from ...context import Context
from ..core.transfer import move_data
from ..ndarray import NDArray, _wrap
from . import _storage as st

if TYPE_CHECKING:
    from ..._typing import DTypeLike

__all__ = ["BaseSparseNDArray", "RowSparseNDArray", "CSRNDArray", "make_rsp", "make_csr"]

_object_new = object.__new__


class BaseSparseNDArray(NDArray):
    """The common part of the sparse arrays; see :class:`RowSparseNDArray` and
    :class:`CSRNDArray`."""

    __slots__ = ("_sp_vals", "_sp_idx", "_sp_ptr", "_sp_shape")
    _sparse = True

    _sp_vals: Any
    _sp_idx: Any
    _sp_ptr: Any
    _sp_shape: tuple[int, ...]

    # ----------------------------------------------------------------- dense view
    @property
    def _data(self) -> Any:
        """A new dense raw array with this array's values (writes to it are not kept)."""
        return self._dense()

    @_data.setter
    def _data(self, dense: Any) -> None:
        self._set_dense(dense)

    def _dense(self) -> Any:
        raise NotImplementedError

    def _set_dense(self, dense: Any) -> None:
        raise NotImplementedError

    def _blank(self, ctx: Context | None = None) -> Any:
        """A new array of this class, unrecorded, with no components yet."""
        return _unset(type(self), self._ctx if ctx is None else ctx, self._sp_shape)

    # ----------------------------------------------------------------- attributes
    @property
    def shape(self) -> tuple[int, ...]:
        """tuple of int: the array's dimensions."""
        return self._sp_shape

    @property
    def dtype(self) -> type:
        """The NumPy scalar type of the elements."""
        return self._sp_vals.dtype.type

    @property
    def size(self) -> int:
        """int: the number of elements, zeros included."""
        return int(np.prod(self._sp_shape, dtype=np.int64))

    @property
    def ndim(self) -> int:
        """int: the number of dimensions."""
        return len(self._sp_shape)

    @property
    def data(self) -> NDArray:
        """NDArray: a copy of the stored values."""
        return _wrap(self._sp_vals.copy(), self._ctx)

    @property
    def indices(self) -> NDArray:
        """NDArray: a copy of the int64 indices (row ids, or CSR column ids)."""
        return _wrap(self._sp_idx.copy(), self._ctx)

    def __len__(self) -> int:
        return self._sp_shape[0]

    def __repr__(self) -> str:
        shape = "x".join(str(s) for s in self._sp_shape)
        return f"\n<{type(self).__name__} {shape} @{self._ctx}>"

    def __reduce__(self) -> Any:
        ctx = self._ctx
        return (_rebuild, (self.stype, self.asnumpy(), ctx.device_type, ctx.device_id))

    # ----------------------------------------------------------------- conversions
    def tostype(self, stype: str) -> NDArray:
        """Return a copy of this array with storage type ``stype``.

        Raises
        ------
        MXNetError
            For a conversion MXNet does not have either (row_sparse <-> csr).
        """
        if stype == self.stype:
            return self.copy()
        if stype == "default":
            return _wrap(self._dense(), self._ctx)
        raise MXNetError(f"cast_storage from {self.stype} to {stype} is not supported")

    def copy(self) -> NDArray:  # type: ignore[override]
        """Return a copy on the same context."""
        return self.copyto(self._ctx)

    def copyto(self, other: Any) -> Any:
        """Copy to a new array on a context (same storage type), or into an array.

        A target of another storage type receives the values in its own type.
        """
        if isinstance(other, Context):
            out = self._blank(other)
            src, dst = self._ctx, other
            out._sp_vals = _moved(self._sp_vals, src, dst)
            out._sp_idx = _moved(self._sp_idx, src, dst)
            if self._sp_ptr is not None:
                out._sp_ptr = _moved(self._sp_ptr, src, dst)
            return out
        if isinstance(other, NDArray):
            if other is self:
                return other
            if tuple(other.shape) != self._sp_shape:
                raise MXNetError(f"copyto: shape {self.shape} does not match target {other.shape}")
            if isinstance(other, BaseSparseNDArray) and type(other) is type(self):
                moved = self.copyto(other._ctx)
                other._assign_components(moved, other.dtype)
            elif isinstance(other, BaseSparseNDArray):
                other._set_dense(move_data(self._dense(), self._ctx, other._ctx))
            else:
                other._data[...] = move_data(self._dense(), self._ctx, other._ctx)
            return other
        raise TypeError(f"copyto does not support type {type(other).__name__}")

    def as_in_context(self, context: Context) -> NDArray:
        """Return this array on ``context``: ``self`` when already there, else a copy."""
        return self if context == self._ctx else self.copyto(context)

    def astype(self, dtype: DTypeLike, copy: bool = True) -> NDArray:  # type: ignore[override]
        """Return the array with its values cast to ``dtype`` (same storage type)."""
        dt = np.dtype(dtype)
        if not copy and dt == self._sp_vals.dtype:
            return self
        out = cast(BaseSparseNDArray, self.copy())
        out._sp_vals = out._sp_vals.astype(dt)
        return out

    def _assign_components(self, src: BaseSparseNDArray, dtype: Any) -> None:
        """Take ``src``'s components (same class and context), cast to ``dtype``."""
        self._sp_vals = src._sp_vals.astype(dtype, copy=False)
        self._sp_idx = src._sp_idx
        self._sp_ptr = src._sp_ptr

    def detach(self) -> NDArray:
        """Return an array sharing this one's components but cut from the autograd graph."""
        out = self._blank()
        out._assign_components(self, self._sp_vals.dtype)
        return out

    def asnumpy(self) -> np.ndarray:
        """Return a dense NumPy copy of the array."""
        return self._ctx.backend.to_host(self._dense()) if self._on_gpu() else self._dense()

    def _on_gpu(self) -> bool:
        return self._ctx.backend.xp is not np

    def wait_to_read(self) -> None:
        """Block until pending computation writing this array has finished."""
        self._ctx.backend.synchronize(self._ctx.device_id)

    def reshape(self, *shape: Any, **kwargs: Any) -> NDArray:  # type: ignore[override]
        """Not supported for sparse arrays (as in MXNet)."""
        raise MXNetError(f"reshape is not supported for storage type {self.stype}")

    def _filled_like(self, value: float) -> NDArray:
        if value == 0:
            return _zeros_as(self)
        return super()._filled_like(value)

    def zeros_like(self) -> NDArray:
        """Return zeros of this array's shape, dtype, context and storage type."""
        return _zeros_as(self)

    # ----------------------------------------------------------------- writing
    def _assign(self, value: Any) -> None:
        """``self[:] = value``: a scalar, an array_like, or an NDArray of any storage type."""
        if type(value) is type(self):
            moved = value.copyto(self._ctx) if value._ctx != self._ctx else value.copy()
            self._assign_components(cast(BaseSparseNDArray, moved), self._sp_vals.dtype)
            return
        be, ctx = self._ctx.backend, self._ctx
        if isinstance(value, NDArray):
            dense = move_data(value._data, value._ctx, ctx).astype(self._sp_vals.dtype)
        elif np.isscalar(value) or isinstance(value, (np.ndarray, list, tuple)):
            dense = be.xp.zeros(self._sp_shape, self._sp_vals.dtype)
            dense[...] = be.asarray(value, self._sp_vals.dtype, ctx.device_id)
        else:
            raise TypeError(f"cannot assign {type(value).__name__} to a {self.stype} array")
        if tuple(dense.shape) != self._sp_shape:
            dense = be.xp.broadcast_to(dense, self._sp_shape)
        self._set_dense(dense)

    def __setitem__(self, key: Any, value: Any) -> None:
        if not (isinstance(key, slice) and key == slice(None)):
            raise MXNetError(f"{type(self).__name__} only supports [:] for assignment")
        self._assign(value)

    def _inplace(self, result: Any) -> NDArray:
        self._assign(result)
        return self

    def __iadd__(self, other: Any) -> NDArray:  # type: ignore[misc, override]
        return self._inplace(self + other)

    def __isub__(self, other: Any) -> NDArray:  # type: ignore[misc, override]
        return self._inplace(self - other)

    def __imul__(self, other: Any) -> NDArray:  # type: ignore[misc, override]
        return self._inplace(self * other)

    def __itruediv__(self, other: Any) -> NDArray:  # type: ignore[misc, override]
        return self._inplace(self / other)

    __idiv__ = __itruediv__

    # ----------------------------------------------------------------- autograd
    def _store_grad(self, g: Any, add: bool) -> None:
        """Store a backward pass's gradient ``g`` (dense raw or SparseRows) into this array."""
        raise NotImplementedError


class RowSparseNDArray(BaseSparseNDArray):
    """An array whose zero rows are not stored: ``indices`` lists the stored rows (sorted,
    unique, int64) and ``data`` holds them, shape ``(len(indices),) + shape[1:]``.

    Made by :func:`mxrs.nd.sparse.row_sparse_array`, ``zeros('row_sparse', shape)`` or
    ``x.tostype('row_sparse')``; the gradient type of large embeddings.

    Examples
    --------
    >>> a = mx.nd.sparse.row_sparse_array(([[1, 2]], [1]), shape=(3, 2))
    >>> a.asnumpy()
    array([[0., 0.],
           [1., 2.],
           [0., 0.]], dtype=float32)
    """

    __slots__ = ()

    @property
    def stype(self) -> str:
        """str: ``'row_sparse'``."""
        return "row_sparse"

    def _dense(self) -> Any:
        return st.rsp_to_dense(self._ctx.backend, self._sp_idx, self._sp_vals, self._sp_shape)

    def _set_dense(self, dense: Any) -> None:
        self._sp_idx, self._sp_vals = st.rsp_from_dense(self._ctx.backend, dense)

    def __getitem__(self, key: Any) -> NDArray:  # type: ignore[override]
        if isinstance(key, slice) and key == slice(None):
            return self
        raise MXNetError("RowSparseNDArray only supports [:] for __getitem__")

    def retain(self, indices: Any) -> RowSparseNDArray:
        """Return the rows of this array listed in ``indices`` (the others become zero)."""
        from_ids = _ids(self._ctx, indices)
        xp = self._ctx.backend.xp
        keep = xp.isin(self._sp_idx, from_ids)
        out = self._blank()
        out._sp_idx = self._sp_idx[keep]
        out._sp_vals = self._sp_vals[keep]
        return out

    def check_format(self, full_check: bool = True) -> None:
        """Raise MXNetError unless indices are sorted, unique and in range."""
        st.check_rsp(self._ctx.backend, self._sp_idx, self._sp_vals, self._sp_shape)

    def _full_values(self) -> Any:
        """The dense values buffer, in place: the array is made to store every row first."""
        n = self._sp_shape[0]
        if self._sp_idx.shape[0] != n:
            be = self._ctx.backend
            self._sp_vals = self._dense()
            self._sp_idx = be.xp.arange(n, dtype=np.int64)
        return self._sp_vals

    def _store_grad(self, g: Any, add: bool) -> None:
        be = self._ctx.backend
        if type(g) is SparseRows:
            idx, vals = g.indices, g.values.astype(self._sp_vals.dtype, copy=False)
        else:
            idx, vals = st.rsp_from_dense(be, g.astype(self._sp_vals.dtype, copy=False))
        if add and self._sp_idx.shape[0]:
            merged = SparseRows(self._sp_idx, self._sp_vals, self._sp_shape, be) + SparseRows(
                idx, vals, self._sp_shape, be
            )
            idx, vals = merged.indices, merged.values
        self._sp_idx, self._sp_vals = idx, vals


class CSRNDArray(BaseSparseNDArray):
    """A 2-D array in compressed sparse row format: ``data`` holds the non-zeros row by row,
    ``indices`` their column ids and ``indptr`` where each row's begin.

    Made by :func:`mxrs.nd.sparse.csr_matrix`, ``zeros('csr', shape)`` or
    ``x.tostype('csr')``; ``asscipy()`` gives a ``scipy.sparse.csr_matrix``.
    """

    __slots__ = ()

    @property
    def stype(self) -> str:
        """str: ``'csr'``."""
        return "csr"

    @property
    def indptr(self) -> NDArray:
        """NDArray: a copy of the int64 row offsets (``rows + 1`` of them)."""
        return _wrap(self._sp_ptr.copy(), self._ctx)

    def _dense(self) -> Any:
        be = self._ctx.backend
        return st.csr_to_dense(be, self._sp_vals, self._sp_idx, self._sp_ptr, self._sp_shape)

    def _set_dense(self, dense: Any) -> None:
        be = self._ctx.backend
        self._sp_vals, self._sp_idx, self._sp_ptr = st.csr_from_dense(be, dense)

    def __getitem__(self, key: Any) -> NDArray:  # type: ignore[override]
        n = self._sp_shape[0]
        if isinstance(key, (int, np.integer)):
            k = int(key) + n if key < 0 else int(key)
            if not 0 <= k < n:
                raise MXNetError(f"index {key} is out of range for a csr array of {n} rows")
            key = slice(k, k + 1)
        if not isinstance(key, slice) or key.step not in (None, 1):
            raise MXNetError("CSRNDArray only supports an int or a slice with step 1 for indexing")
        begin, end, _ = key.indices(n)
        end = max(begin, end)
        ptr = self._sp_ptr
        lo, hi = int(ptr[begin]), int(ptr[end])
        out = self._blank()
        out._sp_shape = (end - begin, self._sp_shape[1])
        out._sp_vals = self._sp_vals[lo:hi]
        out._sp_idx = self._sp_idx[lo:hi]
        out._sp_ptr = ptr[begin : end + 1] - lo
        return out

    def check_format(self, full_check: bool = True) -> None:
        """Raise MXNetError unless the offsets and column ids are consistent and in range."""
        be = self._ctx.backend
        st.check_csr(be, self._sp_vals, self._sp_idx, self._sp_ptr, self._sp_shape)

    def asscipy(self) -> Any:
        """Return a ``scipy.sparse.csr_matrix`` copy (on the host)."""
        import scipy.sparse as sps  # type: ignore[import-untyped]  # optional elsewhere

        be = self._ctx.backend
        vals, idx, ptr = (be.to_host(a) for a in (self._sp_vals, self._sp_idx, self._sp_ptr))
        return sps.csr_matrix((vals, idx, ptr), shape=self._sp_shape)

    def _store_grad(self, g: Any, add: bool) -> None:
        dense = g.dense() if type(g) is SparseRows else g
        if add:
            dense = dense + self._dense()
        self._set_dense(dense.astype(self._sp_vals.dtype, copy=False))


def _moved(a: Any, src: Context, dst: Context) -> Any:
    out = move_data(a, src, dst)
    return out.copy() if out is a else out


def _ids(ctx: Context, indices: Any) -> Any:
    """Row ids from an NDArray, array_like or scalar as an int64 raw array of ``ctx``."""
    be = ctx.backend
    if isinstance(indices, NDArray):
        raw = move_data(indices._data, indices._ctx, ctx)
    else:
        raw = be.asarray(np.asarray(indices), np.int64, ctx.device_id)
    return raw.astype(np.int64, copy=False).reshape(-1)


def _unset(cls: type, ctx: Context, shape: tuple[int, ...]) -> Any:
    """A new, unrecorded array of sparse class ``cls`` whose components are still to be set."""
    a: Any = _object_new(cls)
    a._ctx = ctx
    a._node = None
    a._oidx = 0
    a._grad = None
    a._grad_req = "null"
    a._sp_ptr = None
    a._sp_shape = tuple(shape)
    return a


def make_rsp(indices: Any, values: Any, shape: tuple[int, ...], ctx: Context) -> RowSparseNDArray:
    """A row_sparse array around raw components (no copy, no check)."""
    a = _unset(RowSparseNDArray, ctx, shape)
    a._sp_vals, a._sp_idx = values, indices
    return a


def make_csr(values: Any, indices: Any, indptr: Any, shape: tuple[int, ...], ctx: Context) -> Any:
    """A CSR array around raw components (no copy, no check)."""
    a = _unset(CSRNDArray, ctx, shape)
    a._sp_vals, a._sp_idx, a._sp_ptr = values, indices, indptr
    return a


def _zeros_as(like: BaseSparseNDArray) -> NDArray:
    xp = like._ctx.backend.xp
    with like._ctx.backend.guard(like._ctx.device_id):
        return empty_sparse(like.stype, like._sp_shape, like._ctx, like._sp_vals.dtype, xp)


def empty_sparse(stype: str, shape: tuple[int, ...], ctx: Context, dtype: Any, xp: Any) -> Any:
    """An all-zero sparse array of ``stype`` (nothing stored)."""
    shape = tuple(int(s) for s in shape)
    if stype == "row_sparse":
        if not shape:
            raise MXNetError("a row_sparse array needs at least one dimension")
        return make_rsp(xp.zeros(0, np.int64), xp.zeros((0,) + shape[1:], dtype), shape, ctx)
    if stype == "csr":
        if len(shape) != 2:
            raise MXNetError(f"a csr array is 2-dimensional, not of shape {shape}")
        return make_csr(
            xp.zeros(0, dtype), xp.zeros(0, np.int64), xp.zeros(shape[0] + 1, np.int64), shape, ctx
        )
    raise MXNetError(f"unknown storage type {stype!r}; use 'default', 'row_sparse' or 'csr'")


def _rebuild(stype: str, dense: np.ndarray, device_type: str, device_id: int) -> NDArray:
    c = Context(device_type, device_id)
    a = _wrap(c.backend.asarray(dense, dense.dtype, c.device_id), c)
    return a if stype == "default" else a.tostype(stype)
