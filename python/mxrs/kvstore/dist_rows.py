"""Row-sparse keys on the distributed stores: only the rows a batch touches cross the wire.

A key initialised with a row_sparse value is a *row key* on the servers (``Worker.init_rows``):
its table is split over the servers by row ranges (MXNet's rule for big arrays), a row_sparse
push sends each server the ids and values of its rows only (``push_rows``; the servers sum the
workers' rows of a ``dist_sync`` round and apply the optimizer to those rows alone, lazily),
and ``row_sparse_pull`` asks each server for the requested rows only (``pull_rows``).

Pushes return at once, as dense ones do (their errors surface at the next call); a
``row_sparse_pull`` returns once its rows have arrived (the caller needs them next: the
forward pass of the batch that asked for them). A row_sparse value pushed to a key that was
initialised dense is sent dense, and a dense value pushed to a row key goes whole.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

import numpy as np

from ..base import KVStoreError
from ..context import cpu
from ..ndarray import _pending
from ..ndarray.ndarray import _wrap
from ..ndarray.sparse import RowSparseNDArray, add_n, row_sparse_array
from .base import Key, Keys, Values
from .rows import check_row_ids, row_sparse_requests, rows_of, take_rows
from .wire import priority as priority_arg
from .wire import wire_key

if TYPE_CHECKING:
    from ..ndarray.ndarray import NDArray
    from ._meter import Meter

__all__ = ["RowKeys"]


class RowKeys:
    """The row-sparse part of :class:`~.dist.DistKVStore` (a mixin over its ``_worker`` and
    ``_keys``; ``_row_keys`` holds the keys initialised row_sparse)."""

    _worker: Any
    _keys: dict[Key, tuple[int, tuple[int, ...], np.dtype]]
    _row_keys: set[Key]
    _compression: tuple[str, float] | None
    _meter: Meter

    if TYPE_CHECKING:  # provided by the store

        def _layout(self, k: Key, what: str) -> tuple[int, tuple[int, ...], np.dtype]: ...

    def _init_rows(self, pairs: list[tuple[Key, list[NDArray]]]) -> None:
        """Initialise the row_sparse-valued keys of ``pairs`` as row keys (waits)."""
        keys, arrays = [], []
        for k, vals in pairs:
            host = np.ascontiguousarray(vals[0].asnumpy())
            if host.ndim < 1:
                raise KVStoreError(f"KVStore.init: row_sparse key {k!r} needs at least 1 dimension")
            keys.append(k)
            arrays.append(host)
        wires = [wire_key(k) for k in keys]
        self._worker.init_rows(wires, arrays).wait()
        for k, w, host in zip(keys, wires, arrays, strict=True):
            self._keys[k] = (w, host.shape, host.dtype)
            self._row_keys.add(k)

    def _split_row_pushes(
        self, pairs: list[tuple[Key, list[NDArray]]], what: str
    ) -> list[tuple[Key, list[NDArray]]]:
        """Send the row_sparse pushes to row keys (checked first, then all sent); returns the
        other pairs, for the dense path."""
        rows, rest = [], []
        for k, vals in pairs:
            if k in self._row_keys and all(v.stype == "row_sparse" for v in vals):
                rows.append((k, vals))
            else:
                rest.append((k, vals))
        if not rows:
            return rest
        if self._compression is not None:
            raise KVStoreError(
                f"KVStore.{what}: gradient compression does not apply to row_sparse pushes "
                f"(key {rows[0][0]!r}), as in MXNet"
            )
        wires, ids, values = [], [], []
        for k, vals in rows:
            wire, shape, dtype = self._layout(k, what)
            for v in vals:
                if tuple(v.shape) != shape:
                    raise KVStoreError(
                        f"KVStore.{what}: key {k!r} holds shape {shape}, the pushed value has "
                        f"shape {tuple(v.shape)}"
                    )
            merged = add_n(*[v.as_in_context(cpu(0)) for v in vals]) if len(vals) > 1 else vals[0]
            idx, vals_host = _host_rows(cast(RowSparseNDArray, merged), dtype)
            wires.append(wire)
            ids.append(idx)
            values.append(vals_host)
        ticket = self._worker.push_rows(wires, ids, values)
        _pending.track(self._meter.request(ticket, rows, values))
        return rest

    def row_sparse_pull(
        self, key: Keys, out: Values | None = None, priority: int = 0, row_ids: Any = None
    ) -> None:
        """Fetch only rows ``row_ids`` of each key into row_sparse arrays ``out``; returns once
        they are there. Parameters and errors as :meth:`KVStore.row_sparse_pull`."""
        _pending.check()
        requests = row_sparse_requests(key, out, row_ids)
        for k, o, ids in requests:
            _, shape, _ = self._layout(k, "row_sparse_pull")
            if tuple(o.shape) != shape:
                raise KVStoreError(
                    f"KVStore.row_sparse_pull: key {k!r} holds shape {shape}, the output array "
                    f"has shape {tuple(o.shape)}"
                )
            check_row_ids(k, ids, shape[0])
        row_reqs = [(k, o, ids) for k, o, ids in requests if k in self._row_keys]
        if row_reqs:
            wires, idss, bufs = [], [], []
            for k, _, ids in row_reqs:
                wire, shape, dtype = self._keys[k]
                wires.append(wire)
                idss.append(ids)
                bufs.append(np.empty((ids.shape[0],) + shape[1:], dtype))
            ticket = self._worker.pull_rows(wires, idss, bufs, priority_arg(priority))
            self._meter.request(ticket, pulled=row_reqs, pull_arrays=bufs).wait()
            for (_, o, ids), buf in zip(row_reqs, bufs, strict=True):
                rows = row_sparse_array((buf, ids), shape=o.shape, ctx=o._ctx, dtype=o.dtype)
                take_rows(o, rows)
        for k, o, ids in requests:
            if k in self._row_keys:
                continue
            _, shape, dtype = self._keys[k]
            buf = np.empty(shape, dtype)
            ticket = self._worker.pull([self._keys[k][0]], [buf], priority_arg(priority))
            self._meter.request(ticket, pulled=[(k,)], pull_arrays=[buf]).wait()
            take_rows(o, rows_of(_wrap(buf, cpu(0)), ids, o._ctx))

    def _pull_sparse_outs(self, pairs: list[tuple[Key, list[NDArray]]], priority: int) -> None:
        """Fill sparse output arrays of a ``pull(ignore_sparse=False)`` with whole values."""
        for k, outs in pairs:
            wire, shape, dtype = self._layout(k, "pull")
            for o in outs:
                if tuple(o.shape) != shape:
                    raise KVStoreError(
                        f"KVStore.pull: key {k!r} holds shape {shape}, the output array has "
                        f"shape {tuple(o.shape)}"
                    )
        for k, outs in pairs:
            wire, shape, dtype = self._keys[k]
            buf = np.empty(shape, dtype)
            ticket = self._worker.pull([wire], [buf], priority_arg(priority))
            self._meter.request(ticket, pulled=[(k,)], pull_arrays=[buf]).wait()
            for o in outs:
                o._data = o._ctx.backend.asarray(buf, o.dtype, o._ctx.device_id)


def _host_rows(v: RowSparseNDArray, dtype: np.dtype) -> tuple[np.ndarray, np.ndarray]:
    """A row_sparse value's ids and rows as contiguous host arrays of the key's dtype."""
    be = v._ctx.backend
    idx = v._sp_idx if be.xp is np else be.to_host(v._sp_idx)
    vals = v._sp_vals if be.xp is np else be.to_host(v._sp_vals)
    return (
        np.ascontiguousarray(idx, dtype=np.int64),
        np.ascontiguousarray(vals, dtype=dtype),
    )
