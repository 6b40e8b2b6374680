"""The single-process stores: ``local`` (sum and update on CPU) and ``device`` (on the devices)."""

from __future__ import annotations

from typing import Any

from ..base import KVStoreError
from ..context import Context, cpu
from ..ndarray._transfer import move_data
from ..ndarray.ndarray import NDArray, _wrap
from .base import Key, Keys, KVStoreBase, Values, check_shapes, key_value_pairs, register


def reduce_sum(values: list[NDArray], ctx: Context) -> Any:
    """Sum the raw data of NDArrays ``values`` into a fresh raw array on ``ctx``."""
    first = values[0]
    acc = move_data(first._data, first._ctx, ctx)
    if acc is first._data:
        acc = acc.copy()
    for v in values[1:]:
        acc += move_data(v._data, v._ctx, ctx)
    return acc


def copy_into(dst: NDArray, src_raw: Any, src_ctx: Context) -> None:
    """Copy raw array ``src_raw`` living on ``src_ctx`` into NDArray ``dst`` in place."""
    moved = move_data(src_raw, src_ctx, dst._ctx)
    dst._ctx.backend.xp.copyto(dst._data, moved)


@register("local", "device")
class LocalKVStore(KVStoreBase):
    """A KVStore inside one process.

    ``local`` keeps every key on CPU and sums the pushed values there; ``device`` keeps each key
    on the device of the value it was initialised with and sums there, so gradients of several
    GPUs are reduced without a trip through host memory.
    """

    def __init__(self, name: str = "local") -> None:
        super().__init__(name)
        self._store: dict[Key, NDArray] = {}

    def _home(self, value: NDArray) -> Context:
        return cpu(0) if self._type == "local" else value._ctx

    def init(self, key: Keys, value: Values) -> None:
        """Initialise keys; a list of values per key uses its first value (MXNet's rule).

        Raises
        ------
        KVStoreError
            When a key is initialised twice.
        """
        for k, vals in key_value_pairs(key, value, "init"):
            if k in self._store:
                raise KVStoreError(f"KVStore.init: key {k!r} is already initialised")
            home = self._home(vals[0])
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
        pairs = key_value_pairs(key, value, "push")
        for k, vals in pairs:
            check_shapes("push", k, self._stored(k, "push").shape, vals, "pushed value")
        for k, vals in pairs:
            stored = self._store[k]
            merged = reduce_sum(vals, stored._ctx)
            if self._updater is not None:
                self._updater(k, _wrap(merged, stored._ctx), stored)
            else:
                stored._ctx.backend.xp.copyto(stored._data, merged.astype(stored.dtype, copy=False))

    def pull(
        self, key: Keys, out: Values | None = None, priority: int = 0, ignore_sparse: bool = True
    ) -> None:
        """Copy each key's value into its output array(s), on their own devices."""
        if out is None:
            raise KVStoreError("KVStore.pull: out is required")
        for k, outs in key_value_pairs(key, out, "pull"):
            stored = self._stored(k, "pull")
            check_shapes("pull", k, stored.shape, outs, "output array")
            for o in outs:
                copy_into(o, stored._data, stored._ctx)
