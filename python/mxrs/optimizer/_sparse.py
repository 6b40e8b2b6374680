"""Optimizer updates that involve sparse arrays, with MXNet 1.9.1's semantics.

:meth:`Optimizer.update <mxrs.optimizer.Optimizer.update>` sends here every update in which the
weight, the gradient or a state is sparse; the optimizers' ``_step`` rules stay the ones the
dense updates run, applied to raw buffers:

- **lazy update**: a ``row_sparse`` gradient, with an optimizer that has a lazy kernel in MXNet
  (``Optimizer._updates_lazily``: SGD and Adam with ``lazy_update``, AdaGrad, FTRL with
  row_sparse weight and states; SGD and Adam, like FTRL, only when the states have the weight's
  storage type, and SGD's float16 multi-precision update never, as MXNet's ``mp_sgd_update`` has
  no sparse form), changes only the rows it stores. Those rows of the weight and
  of every state are gathered into blocks, the rule runs on the blocks, and they are scattered
  back (the gradient's row ids are unique), so rescaling, clipping and weight decay touch those
  rows only and every other row stays bit-identical. The work is proportional to the rows
  present: no table-sized temporary, no densified gradient.
- **standard update** for everything else (MXNet's storage fallback): the rule runs on the whole
  weight, with the gradient made dense (zeros outside its rows).

Sparse weights and states are updated in place in their own objects: a ``row_sparse`` one is
made to store every row (``RowSparseNDArray._full_values``), whose values buffer is then the
dense array itself; a ``csr`` one is computed on a dense copy and re-encoded afterwards.

Inside ``_step`` a state that is not an ordinary dense NDArray is a :class:`_Buf`, whose ``_data``
is the raw buffer (a row block, or the dense values in place): ``_step`` reads states only
through ``_data``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol, cast

import numpy

from ..ndarray import NDArray, zeros, zeros_like
from ..ndarray.sparse import RowSparseNDArray


class Rule(Protocol):
    """What this module needs of an optimizer (:class:`~mxrs.optimizer.Optimizer` is one): its
    update rule on raw arrays, whole or row by row, and whether it updates lazily."""

    def _updates_lazily(self, weight: NDArray, state: Any) -> bool: ...

    def _step(
        self, xp: Any, index: int | str, w: Any, g: Any, state: Any, lr: float, wd: float
    ) -> None: ...

    def _lazy_step(
        self, xp: Any, index: int | str, w: Any, g: Any, state: Any, lr: float, wd: float
    ) -> None: ...


__all__ = ["has_sparse", "states_match", "zeros_state", "is_lazy", "update", "copy_master"]


class _Buf:
    """A state inside ``_step``: ``_data`` is its raw buffer (a row block or the dense values)."""

    __slots__ = ("_data",)

    def __init__(self, data: Any) -> None:
        self._data = data


def _arrays(state: Any) -> list[NDArray]:
    """The NDArrays in a state (an NDArray, None, or nested tuples/lists of them)."""
    if isinstance(state, NDArray):
        return [state]
    if isinstance(state, (tuple, list)):
        return [a for s in state for a in _arrays(s)]
    return []


def _map(state: Any, fn: Callable[[NDArray], Any]) -> Any:
    """``state`` with ``fn`` applied to each NDArray in it (tuples and lists kept)."""
    if isinstance(state, NDArray):
        return fn(state)
    if isinstance(state, (tuple, list)):
        return type(state)(_map(s, fn) for s in state)
    return state


def has_sparse(state: Any) -> bool:
    """Whether any NDArray in ``state`` is sparse."""
    if isinstance(state, NDArray):
        return state._sparse
    if isinstance(state, (tuple, list)):
        return any(has_sparse(s) for s in state)
    return False


def states_match(weight: NDArray, state: Any) -> bool:
    """Whether every array in ``state`` has ``weight``'s storage type (MXNet's lazy kernels
    need it: with a mismatch they fall back to the standard update)."""
    stype = weight.stype
    return all(a.stype == stype for a in _arrays(state))


def zeros_state(weight: NDArray, stype: str = "default") -> NDArray:
    """A zero state of ``weight``'s shape, dtype and context and storage type ``stype``; a
    sparse one stores nothing."""
    if stype == weight.stype:
        return zeros_like(weight)
    return zeros(weight.shape, ctx=weight._ctx, dtype=weight.dtype, stype=stype)


def is_lazy(opt: Rule, weight: NDArray, grad: NDArray, state: Any) -> bool:
    """Whether ``opt`` updates ``weight`` lazily from ``grad``: only the rows ``grad`` stores."""
    return (
        grad.stype == "row_sparse" and weight.stype != "csr" and opt._updates_lazily(weight, state)
    )


class _Buffers:
    """The raw buffers behind the sparse arrays of one update, in place where possible."""

    def __init__(self) -> None:
        self._dense_copies: list[tuple[NDArray, Any]] = []

    def of(self, arr: NDArray) -> Any:
        """``arr``'s values as a dense raw array; writes to it reach ``arr`` (see :meth:`done`)."""
        if not arr._sparse:
            return arr._data
        if isinstance(arr, RowSparseNDArray):
            return arr._full_values()
        dense = arr._data  # csr: a dense copy, re-encoded by done()
        self._dense_copies.append((arr, dense))
        return dense

    def done(self) -> None:
        """Store the dense copies back into their (csr) arrays."""
        for arr, dense in self._dense_copies:
            arr._data = dense


def update(
    opt: Rule,
    xp: Any,
    index: int | str,
    weight: NDArray,
    grad: NDArray,
    state: Any,
    lr: float,
    wd: float,
) -> None:
    """Apply ``opt``'s rule to ``weight``, lazily or not (see the module docstring).

    The update count, ``lr`` and ``wd`` are the caller's; the device is made current there.
    """
    bufs = _Buffers()
    if is_lazy(opt, weight, grad, state):
        rsp = cast(RowSparseNDArray, grad)
        idx, g = rsp._sp_idx, rsp._sp_vals
        if idx.shape[0] == 0:
            return
        blocks: list[tuple[Any, Any]] = []

        def rows(buf: Any) -> Any:
            block = buf[idx]
            blocks.append((buf, block))
            return block

        w = rows(bufs.of(weight))
        st = _map(state, lambda a: _Buf(rows(bufs.of(a))))
        opt._lazy_step(xp, index, w, g, st, lr, wd)
        for buf, block in blocks:
            buf[idx] = block
    else:
        w = bufs.of(weight)
        st = _map(state, lambda a: _Buf(bufs.of(a)) if a._sparse else a)
        opt._step(xp, index, w, grad._data, st, lr, wd)
    bufs.done()


def copy_master(opt: Rule, weight: NDArray, master: NDArray, grad: NDArray, state: Any) -> None:
    """Copy the float32 ``master`` just updated from ``grad`` into ``weight`` (in its dtype):
    after a lazy update only the rows ``grad`` stores (the others did not change)."""
    if not is_lazy(opt, master, grad, state):
        weight[:] = master.astype(weight.dtype)
        return
    idx = cast(RowSparseNDArray, grad)._sp_idx
    if idx.shape[0] == 0:
        return
    ctx = weight._ctx
    be = ctx.backend
    with be.guard(ctx.device_id):
        bufs = _Buffers()
        dst = bufs.of(weight)
        src = bufs.of(master)
        dst[idx] = src[idx].astype(numpy.dtype(weight.dtype), copy=False)
        bufs.done()
