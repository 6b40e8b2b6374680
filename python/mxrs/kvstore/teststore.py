"""``teststore``: the store written in Python on :class:`~.base.KVStoreBase` that MXNet 1.9.1
ships for testing code against the KVStore interface.

It keeps nothing: ``broadcast`` copies the value into the outputs and ``pushpull`` sums a
key's values (on the first value's device) into the outputs. It runs no optimizer
(``is_capable('optimizer')`` is False), so a Gluon Trainer given it updates on the workers.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from ..ndarray.ndarray import NDArray
from .base import Keys, KVStoreBase, Values, check_key

__all__ = ["TestStore"]


def _per_key(key: Keys, value: Any, out: Any) -> list[tuple[Any, Any]]:
    """``[(value, out)]`` for one key, or one pair per key of a list of keys."""
    if isinstance(key, (list, tuple)):
        n = len(key)
        if not isinstance(value, (list, tuple)) or len(value) != n:
            raise ValueError(f"TestStore: {n} keys need a list of {n} values, got {value!r}")
        if out is not None and (not isinstance(out, (list, tuple)) or len(out) != n):
            raise ValueError(f"TestStore: {n} keys need a list of {n} outputs, got {out!r}")
        for k in key:
            check_key(k, "TestStore")
        return list(zip(value, [None] * n if out is None else out, strict=True))
    check_key(key, "TestStore")
    return [(value, out)]


def _arrays(what: str, x: Any) -> list[NDArray]:
    """``x`` (an NDArray or a list of them) as a list."""
    xs = list(x) if isinstance(x, (list, tuple)) else [x]
    for a in xs:
        if not isinstance(a, NDArray):
            raise TypeError(f"TestStore: {what} must be NDArrays, got {type(a).__name__}")
    return xs


@KVStoreBase.register
class TestStore(KVStoreBase):
    """A key-value store for testing (``mx.kv.create('teststore')``), as MXNet 1.9.1's."""

    __test__ = False  # not a pytest test class

    def broadcast(self, key: Keys, value: Values, out: Values, priority: int = 0) -> None:
        """Copy ``value`` into ``out`` (an array or a list of arrays, on any devices)."""
        for v, o in _per_key(key, value, out):
            (src,) = _arrays("broadcast values", v)
            for dst in _arrays("broadcast outputs", o):
                dst[:] = src

    def pushpull(
        self, key: Keys, value: Values, out: Values | None = None, priority: int = 0
    ) -> None:
        """Sum a key's values (a list, one per device; summed on the first one's device) and
        write the sum into ``out``, or into every value when ``out`` is None. A single value
        is copied into ``out`` as it is."""
        for v, o in _per_key(key, value, out):
            values = _arrays("pushed values", v)
            if isinstance(v, NDArray):
                if o is not None:
                    for dst in _arrays("outputs", o):
                        dst[:] = v
                continue
            total = _sum(values)
            for dst in values if o is None else _arrays("outputs", o):
                dst[:] = total

    @staticmethod
    def is_capable(capability: str) -> bool:
        """False for :attr:`~.base.KVStoreBase.OPTIMIZER`: this store runs no optimizer.

        Raises
        ------
        ValueError
            For another capability.
        """
        if capability.lower() == KVStoreBase.OPTIMIZER:
            return False
        raise ValueError(f"Unknown capability: {capability}")

    @property
    def type(self) -> str:
        """str: ``'teststore'``."""
        return "teststore"

    @property
    def rank(self) -> int:
        """int: 0 (one worker)."""
        return 0

    @property
    def num_workers(self) -> int:
        """int: 1."""
        return 1

    def set_optimizer(self, optimizer: Any) -> None:
        """Not supported: this store runs no optimizer.

        Raises
        ------
        NotImplementedError
        """
        raise NotImplementedError("the teststore KVStore runs no optimizer")

    def save_optimizer_states(
        self, fname: str | os.PathLike[str], dump_optimizer: bool = False
    ) -> None:
        """Not supported: this store has no optimizer states.

        Raises
        ------
        NotImplementedError
        """
        raise NotImplementedError("the teststore KVStore has no optimizer states to save")

    def load_optimizer_states(self, fname: str | os.PathLike[str]) -> None:
        """Not supported: this store has no optimizer states.

        Raises
        ------
        NotImplementedError
        """
        raise NotImplementedError("the teststore KVStore has no optimizer states to load")

    def __repr__(self) -> str:
        return "<TestStore type=teststore>"


def _sum(values: Sequence[NDArray]) -> NDArray:
    """The sum of ``values`` on the first one's context (a new array)."""
    ctx = values[0].context
    total = values[0].copy()
    for v in values[1:]:
        total += v.as_in_context(ctx)
    return total
