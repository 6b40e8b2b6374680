"""How a module's gradients meet its KVStore: which store, and the two ways to update.

MXNet's rules: one context and no dist store needs no store; 'local' keeps the optimizer off
the store when a parameter passes 16M elements; ``MXNET_UPDATE_ON_KVSTORE=0`` keeps it off
everywhere. With the optimizer on the store, each parameter's gradients are pushed and the
updated weights pulled into every context (one ``pushpull``); without, the summed gradient is
pulled back and every context runs the optimizer on its own copy (keys ``index * contexts + k``,
so each copy has its own state, as in MXNet).
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from .. import kvstore as _kvs
from ..base import MXNetError
from ..ndarray import NDArray

__all__ = ["create_kvstore", "init_kvstore", "update_locally", "update_on_kvstore"]


def create_kvstore(
    kvstore: Any, num_device: int, arg_params: dict[str, NDArray]
) -> tuple[Any, bool]:
    """The store a module uses and whether the optimizer runs on it, by MXNet's rules.

    No store for one context unless it is a dist store; 'local' keeps the optimizer off the
    store when a parameter passes 16M elements; ``MXNET_UPDATE_ON_KVSTORE=0`` turns it off.
    """
    update_on_kvstore = bool(int(os.getenv("MXNET_UPDATE_ON_KVSTORE", "1")))
    kvstore = _kvs.chosen(kvstore)
    if kvstore is None:
        kv = None
    elif isinstance(kvstore, _kvs.KVStoreBase):
        kv = kvstore
    elif isinstance(kvstore, str):
        if num_device == 1 and "dist" not in kvstore:
            kv = None
        else:
            kv = _kvs.create(kvstore)
            sizes = [int(np.prod(p.shape)) for p in arg_params.values()]
            if kvstore == "local" and sizes and max(sizes) > 1024 * 1024 * 16:
                update_on_kvstore = False
    else:
        raise MXNetError(f"kvstore must be a KVStore, a str or None, not {type(kvstore).__name__}")
    if kv is None:
        return None, False
    return kv, update_on_kvstore and kv.is_capable("optimizer")


def init_kvstore(kv: Any, names: list[str], arg_params: dict[str, NDArray],
                 param_arrays: list[list[NDArray]], update_on_kvstore: bool) -> None:  # fmt: skip
    """Put every parameter on the store (rank 0's values win on a dist store) and, when the
    store runs the optimizer, pull them into every context."""
    if not names:
        return
    kv.init(names, [arg_params[n] for n in names])
    if update_on_kvstore:
        kv.pull(names, out=param_arrays)


def update_on_kvstore(param_arrays: list[list[NDArray]], grad_arrays: list[list[Any]],
                      names: list[str], kv: Any) -> None:  # fmt: skip
    """Push each parameter's gradients; the store applies the optimizer and the new weights
    come back into every context."""
    for idx, (args, grads) in enumerate(zip(param_arrays, grad_arrays, strict=True)):
        if grads[0] is not None:
            kv.pushpull(names[idx], grads, out=args, priority=-idx)


def update_locally(param_arrays: list[list[NDArray]], grad_arrays: list[list[Any]],
                   names: list[str], kv: Any, updater: Any, n_dev: int) -> None:  # fmt: skip
    """Sum the gradients through ``kv`` (if any), then run ``updater`` on every context."""
    per_dev: list[list[tuple[int, Any, NDArray]]] = [[] for _ in range(n_dev)]
    for idx, (args, grads) in enumerate(zip(param_arrays, grad_arrays, strict=True)):
        if grads[0] is None:
            continue
        if kv is not None:
            kv.pushpull(names[idx], grads, priority=-idx)
        for k, (w, g) in enumerate(zip(args, grads, strict=True)):
            per_dev[k].append((idx * n_dev + k, g, w))
    for updates in per_dev:
        if updates:
            index, grad, weight = zip(*updates, strict=True)
            updater(list(index), list(grad), list(weight))
