"""Sparse storage for Gluon Parameters: ``stype`` and ``grad_stype`` 'row_sparse' and 'csr'.

Two kinds of sparse Parameter exist, as in MXNet 1.9.1:

* a dense weight with sparse gradients (``grad_stype='row_sparse'``, what
  ``nn.Embedding(sparse_grad=True)`` makes): ``data()`` works as for any Parameter, and backward
  stores only the rows a batch looked up into the row_sparse ``.grad`` of each copy;
* a sparse weight (``stype='row_sparse'``): the whole table lives in the Trainer's KVStore,
  and each context's array holds only the rows last fetched with :meth:`row_sparse_data`.
  ``data()`` and ``list_data()`` refuse it. The array ``row_sparse_data`` returns is the
  Parameter's own (the autograd variable), so gradients land in its ``.grad``.

The initializer fills a sparse weight densely on the CPU once; the result is then stored in the
Parameter's storage type.

:class:`SparseAccess` is the part of :class:`~mxrs.gluon.Parameter` that reads such weights;
the functions make and clear sparse gradient buffers.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from .. import autograd
from .. import ndarray as nd
from ..base import InvalidUsageError, MXNetError
from ..context import Context, cpu
from ..ndarray.ndarray import NDArray, _wrap
from ..ndarray.sparse import BaseSparseNDArray

__all__ = [
    "STYPES",
    "ParamOwner",
    "SparseAccess",
    "check_stypes",
    "new_grad",
    "clear_grad",
    "cast_array",
]


class ParamOwner(Protocol):
    """What a Parameter asks of the Trainer that updates it (:class:`~mxrs.gluon.Trainer`)."""

    def _row_sparse_pull(
        self, parameter: Any, out: Any, row_id: Any, full_idx: bool = False
    ) -> None:
        """Fill ``out`` with rows ``row_id`` of ``parameter``'s value in the store."""
        ...

    def _data_changed(self, parameter: Any) -> None:
        """``parameter``'s value was set from outside (``set_data``); the owner decides what
        its store must do about it."""
        ...


#: The storage types a Parameter and its gradient may have.
STYPES = ("default", "row_sparse", "csr")


def check_stypes(name: str, stype: str, grad_stype: str) -> None:
    """Refuse an unknown storage type, with MXNet's message (an ``AssertionError`` there).

    Raises
    ------
    InvalidUsageError
        For a ``stype`` or ``grad_stype`` outside :data:`STYPES`.
    """
    for what, value in (("grad_stype", grad_stype), ("stype", stype)):
        if value not in STYPES:
            raise InvalidUsageError(
                f"{what} for Parameter '{name}' must be one of 'default', 'row_sparse', or "
                f"'csr', but got '{value}'"
            )


def new_grad(arr: NDArray, stype: str) -> NDArray:
    """A zero gradient buffer for ``arr`` (its shape, dtype and context) of storage ``stype``."""
    ctx = arr._ctx
    be = ctx.backend
    if stype == "default":
        with be.guard(ctx.device_id):
            return _wrap(be.xp.zeros(arr.shape, np.dtype(arr.dtype)), ctx)
    return nd.sparse.zeros(stype, arr.shape, ctx=ctx, dtype=arr.dtype)


def clear_grad(g: NDArray) -> None:
    """Set gradient buffer ``g`` to zero in place; a sparse one then stores nothing."""
    if isinstance(g, BaseSparseNDArray):
        g._assign_components(g.zeros_like(), np.dtype(g.dtype))  # type: ignore[arg-type]
    else:
        g._data.fill(0)


def cast_array(a: NDArray, dtype: np.dtype) -> None:
    """Convert ``a``'s elements to ``dtype`` in place (the NDArray object stays the same)."""
    with a._ctx.backend.guard(a._ctx.device_id):
        if isinstance(a, BaseSparseNDArray):  # only the stored values change
            a._assign_components(a, dtype)
        else:
            a._data = a._data.astype(dtype)


class SparseAccess:
    """The methods of :class:`~mxrs.gluon.Parameter` that read a row_sparse weight."""

    if TYPE_CHECKING:
        name: str
        dtype: Any
        _stype: str
        _grad_stype: str
        _shape: tuple[int, ...] | None
        _data: list[NDArray] | None
        _trainer: ParamOwner | None

        def _check_and_get(self, arr_list: list[NDArray] | None, ctx: Any) -> Any: ...

    @property
    def stype(self) -> str:
        """str: the weight's storage type: 'default' (dense), 'row_sparse' or 'csr'."""
        return self._stype

    @property
    def grad_stype(self) -> str:
        """str: the gradient buffers' storage type."""
        return self._grad_stype

    def _set_trainer(self, trainer: ParamOwner | None) -> None:
        """Remember the Trainer updating this Parameter. A dense one may change Trainer, as in
        MXNet; a sparse one, whose value lives in its Trainer's store, may not.

        Raises
        ------
        MXNetError
            When a sparse Parameter already has another Trainer.
        """
        if self._stype != "default" and self._trainer is not None and trainer is not None:
            if self._trainer is not trainer:
                raise MXNetError(
                    f"Failed to set the trainer for Parameter '{self.name}' because it was "
                    f"already set. More than one trainers for a {self._stype} Parameter is "
                    "not supported."
                )
        self._trainer = trainer

    def row_sparse_data(self, row_id: NDArray) -> NDArray:
        """Return the copy on ``row_id``'s context, holding the rows ``row_id`` lists.

        The rows come from the Trainer's store (other rows of the returned array are zero);
        the array is the Parameter's own, so a forward pass through it and backward fill its
        ``.grad``.

        Parameters
        ----------
        row_id : NDArray
            Row ids (any shape; repeats and order do not matter).

        Raises
        ------
        MXNetError
            When the storage type is not 'row_sparse', or no Trainer was made with this
            Parameter.
        TypeError
            When ``row_id`` is not an NDArray.

        Examples
        --------
        >>> w = mx.gluon.Parameter('w', shape=(100, 4), stype='row_sparse')
        >>> w.initialize()
        >>> trainer = mx.gluon.Trainer([w], 'sgd')
        >>> w.row_sparse_data(mx.nd.array([3, 7])).indices.asnumpy()
        array([3, 7])
        """
        if self._stype != "row_sparse":
            raise MXNetError(
                f"Cannot return a copy of Parameter {self.name} via row_sparse_data() because "
                f"its storage type is {self._stype}. Please use data() instead."
            )
        ctx = row_id.context if isinstance(row_id, NDArray) else None  # else a TypeError below
        return self._get_row_sparse(self._data, ctx, row_id)

    def list_row_sparse_data(self, row_id: NDArray) -> list[NDArray]:
        """Return the copies on all contexts, each holding the rows ``row_id`` lists.

        As :meth:`row_sparse_data`, for every context (in the order of ``list_ctx()``).
        """
        if self._stype != "row_sparse":
            raise MXNetError(
                f"Cannot return copies of Parameter '{self.name}' on all contexts via "
                f"list_row_sparse_data() because its storage type is {self._stype}. Please "
                "use data() instead."
            )
        return self._get_row_sparse(self._data, list, row_id)

    def _get_row_sparse(self, arr_list: list[NDArray] | None, ctx: Any, row_id: NDArray) -> Any:
        """Fill the array(s) ``_check_and_get(arr_list, ctx)`` gives with rows ``row_id``."""
        if not isinstance(row_id, NDArray):
            raise TypeError(f"row_id must have NDArray type, but {type(row_id)} is given")
        if self._trainer is None:
            raise MXNetError(
                f"Cannot get row_sparse data for Parameter '{self.name}' when no Trainer is "
                "created with it."
            )
        results = self._check_and_get(arr_list, ctx)
        self._trainer._row_sparse_pull(self, results, row_id)
        return results

    def _dense_only(self, what: str, ctx: Context | None = None) -> MXNetError:
        """The error of ``data()`` (``what='data'``) or ``list_data()`` on a sparse weight."""
        if what == "data":
            return MXNetError(
                f"Cannot return a copy of Parameter '{self.name}' on ctx {ctx} via data() "
                f"because its storage type is {self._stype}. Please use row_sparse_data() "
                "instead."
            )
        return MXNetError(
            f"Cannot return copies of Parameter '{self.name}' on all contexts via "
            f"list_data() because its storage type is {self._stype}. Please use "
            "row_sparse_data() instead."
        )

    def _reduce_sparse(self) -> NDArray:
        """The value to save of a sparse weight, on the CPU and in its storage type.

        With a Trainer, a row_sparse weight is fetched whole from the store (its arrays hold
        only the rows fetched last), as MXNet does; without one, the arrays still hold the
        whole value and their mean is taken.
        """
        assert self._shape is not None  # an initialized Parameter has its shape
        if self._stype == "row_sparse" and self._trainer is not None:
            ids = nd.arange(0, self._shape[0], dtype="int64", ctx=cpu())
            data = nd.sparse.zeros("row_sparse", self._shape, ctx=cpu(), dtype=self.dtype)
            self._trainer._row_sparse_pull(self, data, ids, full_idx=True)
            return data
        block = self._check_and_get(self._data, list)
        with autograd.pause():
            total = block[0].copyto(cpu())
            for w in block[1:]:
                total += w.copyto(cpu())
            return total if len(block) == 1 else total / len(block)
