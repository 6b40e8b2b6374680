"""The single-process stores: ``local`` (sum and update on CPU) and ``device`` (on the devices).

``device`` takes gradient compression as MXNet 1.9.1's device store does: each device's value is
encoded and decoded (with its own 2bit residual per key and device) before the merge, through the
codec the distributed stores use on the wire (``mxrs._native.compress_roundtrip``).
"""

from __future__ import annotations

from typing import Any, cast

import numpy as np

from .. import _native, _threaded
from ..base import KVStoreError
from ..context import Context, cpu
from ..ndarray import sparse
from ..ndarray.core.transfer import move_data
from ..ndarray.ndarray import NDArray, _wrap
from . import _nccl
from .base import Key, Keys, KVStore, Values, check_shapes, register
from .compression import compression_spec
from .rows import check_row_ids, row_sparse_requests, rows_of, take_rows


def reduce_sum(values: list[NDArray], ctx: Context) -> Any:
    """Sum the raw data of NDArrays ``values`` into a fresh raw array on ``ctx``: with NCCL
    where they are dense arrays on distinct GPUs, ``ctx`` among them."""
    first = values[0]
    if len(values) == 1 and first._sparse:
        return move_data(first._data, first._ctx, ctx)  # already a fresh dense copy
    if len(values) > 1 and ctx.device_type == "gpu":
        summed = _nccl_sum(values, ctx)
        if summed is not None:
            return summed
    acc = move_data(first._data, first._ctx, ctx)
    if acc is first._data:
        fresh = ctx.backend.xp.empty_like(acc)
        _threaded.copy(fresh, acc, ctx.backend.xp)
        acc = fresh
    for v in values[1:]:
        acc += move_data(v._data, v._ctx, ctx)
    return acc


def _nccl_sum(values: list[NDArray], ctx: Context) -> Any | None:
    if any(v._sparse or v._ctx.device_type != "gpu" for v in values):
        return None
    if len({(v.shape, v.dtype) for v in values}) != 1:
        return None
    devices = [v._ctx.device_id for v in values]
    return _nccl.reduce_to([v._data for v in values], devices, ctx.device_id)


def copy_into(dst: NDArray, src_raw: Any, src_ctx: Context) -> None:
    """Copy raw array ``src_raw`` living on ``src_ctx`` into NDArray ``dst`` in place (a
    sparse ``dst`` re-encodes it in its own storage type)."""
    moved = move_data(src_raw, src_ctx, dst._ctx)
    if dst._sparse:
        dst._data = moved.astype(dst.dtype, copy=moved is src_raw)
        return
    _threaded.copy(dst._data, moved, dst._ctx.backend.xp)


def merge(values: list[NDArray], ctx: Context) -> NDArray:
    """The sum of ``values`` on ``ctx``: row_sparse when all are, else dense."""
    if all(v.stype == "row_sparse" for v in values):
        return sparse.add_n(*[v.as_in_context(ctx) for v in values])
    return _wrap(reduce_sum(values, ctx), ctx)


#: The names of a store that keeps every key on CPU (MXNet's aliases of 'local').
_ON_CPU = ("local", "local_update_cpu", "local_allreduce_cpu")


@register(*_ON_CPU, "device", "local_allreduce_device")
class LocalKVStore(KVStore):
    """A KVStore inside one process.

    ``local`` (also ``local_update_cpu``, ``local_allreduce_cpu``) keeps every key on CPU and
    sums the pushed values there; ``device`` (also ``local_allreduce_device``) keeps each key on
    the device of the value it was initialised with and sums there, so gradients of several GPUs
    are reduced without a trip through host memory.
    """

    def __init__(self, name: str = "local") -> None:
        super().__init__(name)
        self._store: dict[Key, NDArray] = {}
        self._compression: tuple[str, float] | None = None
        # 2bit residuals by (key, device)
        self._residuals: dict[tuple[Key, Context], np.ndarray] = {}

    def _home(self, value: NDArray) -> Context:
        return cpu(0) if self._type in _ON_CPU else value._ctx

    def init(self, key: Keys, value: Values) -> None:
        """Initialise keys; a list of values per key uses its first value (MXNet's rule).

        Raises
        ------
        KVStoreError
            When a key is initialised twice.
        """
        for k, vals in self._pairs(key, value, "init"):
            if k in self._store:
                raise KVStoreError(f"KVStore.init: key {k!r} is already initialised")
            home = self._home(vals[0])
            if vals[0]._sparse:
                self._store[k] = vals[0].copyto(home)
            else:
                self._store[k] = _wrap(reduce_sum(vals[:1], home), home)

    def _stored(self, k: Key, what: str) -> NDArray:
        stored = self._store.get(k)
        if stored is None:
            raise KVStoreError(f"KVStore.{what}: key {k!r} was never initialised (call init first)")
        return stored

    def push(self, key: Keys, value: Values, priority: int = 0) -> None:
        """Sum each key's values on the key's home device, then update or store the sum.

        Raises
        ------
        ShapeMismatchError
            When a value's shape differs from the key's; nothing is changed then.
        """
        pairs = self._pairs(key, value, "push")
        for k, vals in pairs:
            check_shapes("push", k, self._stored(k, "push").shape, vals, "pushed value")
            if self._compression is not None:
                self._check_compressible(k, vals)
        for k, vals in pairs:
            stored = self._store[k]
            self._meter.local(pushed=vals)
            if self._compression is not None:
                vals = [self._through_compression(k, v) for v in vals]
            merged = merge(vals, stored._ctx)
            if self._updater is not None:
                self._updater(k, merged, stored)
            elif stored._sparse:
                cast(Any, stored)._assign(merged.astype(stored.dtype, copy=False))
            else:
                xp = stored._ctx.backend.xp
                xp.copyto(stored._data, merged._data.astype(stored.dtype, copy=False))

    def set_gradient_compression(self, compression_params: dict[str, Any]) -> None:
        """Compress each device's pushed value before the merge ('device' only, as in MXNet).

        Parameters and errors as :meth:`KVStore.set_gradient_compression`. It may be set
        after ``init``, and set again, as MXNet allows; 2bit residuals carry over.
        """
        if self._type in _ON_CPU:
            super().set_gradient_compression(compression_params)
        self._compression = compression_spec(compression_params)

    def _check_compressible(self, k: Key, vals: list[NDArray]) -> None:
        """Raise unless every value of ``k`` is float32 (all that compression takes)."""
        assert self._compression is not None  # called only with compression set
        for v in vals:
            if v.dtype != np.float32:
                raise KVStoreError(
                    f"KVStore.push: gradient compression {self._compression[0]} applies to "
                    f"float32 values; key {k!r} got {np.dtype(v.dtype).name}"
                )

    def _through_compression(self, k: Key, v: NDArray) -> NDArray:
        """``v`` as the merge sees it after compression (a new array on ``v``'s device)."""
        assert self._compression is not None  # called only with compression set
        kind, threshold = self._compression
        host = np.ascontiguousarray(move_data(v._data, v._ctx, cpu(0)))
        residual = None
        if kind == "2bit":
            residual = self._residuals.get((k, v._ctx))
            if residual is None:
                residual = self._residuals[(k, v._ctx)] = np.zeros(host.shape, np.float32)
        out = _native.compress_roundtrip(kind, threshold, host, residual)
        return _wrap(move_data(out, cpu(0), v._ctx), v._ctx)

    def pull(
        self, key: Keys, out: Values | None = None, priority: int = 0, ignore_sparse: bool = True
    ) -> None:
        """Copy each key's value into its output array(s), on their own devices.

        With ``ignore_sparse`` (the default, as in MXNet) sparse output arrays are left as
        they are: use :meth:`row_sparse_pull` for them.
        """
        if out is None:
            raise KVStoreError("KVStore.pull: out is required")
        for k, outs in self._pairs(key, out, "pull"):
            stored = self._stored(k, "pull")
            check_shapes("pull", k, stored.shape, outs, "output array")
            written = [o for o in outs if not (o._sparse and ignore_sparse)]
            for o in written:
                if stored._sparse:
                    stored.copyto(o)
                else:
                    copy_into(o, stored._data, stored._ctx)
            self._meter.local(pulled=written)

    def row_sparse_pull(
        self, key: Keys, out: Values | None = None, priority: int = 0, row_ids: Any = None
    ) -> None:
        """Copy only rows ``row_ids`` of each key's value into row_sparse output arrays.

        Parameters and errors as :meth:`KVStore.row_sparse_pull`.
        """
        requests = row_sparse_requests(key, out, row_ids)
        self._check_key_types([k for k, _, _ in requests], "row_sparse_pull")
        for k, o, ids in requests:
            stored = self._stored(k, "row_sparse_pull")
            check_shapes("row_sparse_pull", k, stored.shape, [o], "output array")
            check_row_ids(k, ids, stored.shape[0])
        for k, o, ids in requests:
            take_rows(o, rows_of(self._store[k], ids, o._ctx))
            self._meter.local(pulled=[o])
