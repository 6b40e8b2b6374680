"""How a Trainer picks, fills and feeds its KVStore, by MXNet 1.9.1's rules.

:func:`choose_store` decides once, when the Trainer first needs the store, among three cases
(MXNet's ``Trainer._init_kvstore``):

* a sparse weight (``stype='row_sparse'``) among the Parameters: a store is always made, even
  for one device, and it runs the optimizer (``update_on_kvstore=False`` is a ValueError). It
  holds the whole table; each step, ``row_sparse_data`` pulls the rows a batch needs, backward
  fills the gradient, and ``step`` pushes it. The table is never pulled whole while training.
* dense weights with sparse gradients (``grad_stype='row_sparse'``, ``Embedding(sparse_grad=
  True)``): on one node the store only sums the gradients and the workers update
  (``update_on_kvstore`` False unless asked); a distributed store updates on the servers
  (False is a ValueError), and the dense weights are pulled back.
* dense weights and gradients: MXNet's ``_create_kvstore`` (no store for one device,
  ``update_on_kvstore`` True unless a 'local' store holds a Parameter above 16M elements,
  'dist_async' requires it).

:func:`init_keys` puts Parameters into the store and :func:`push_sparse` sends a step's sparse
gradients. Sparse Parameters are never sent while backward runs (see ``_overlap``): ``step``
pushes them, one key at a time, as MXNet does.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .. import kvstore as kvs
from .. import ndarray as nd
from ..base import InvalidUsageError, MXNetError
from .parameter import Parameter

__all__ = ["is_sparse", "arrays", "choose_store", "init_keys", "push_sparse", "store_method"]

_LOCAL_UPDATE_BOUND = 16 * 1024 * 1024  # 'local' stores update on workers above this size


def is_sparse(p: Parameter) -> bool:
    """bool: whether ``p``'s weight or gradient has a sparse storage type."""
    return p._stype != "default" or p._grad_stype != "default"


def arrays(p: Parameter) -> list[Any]:
    """``p``'s arrays on all its contexts, whatever its storage type (``list_data`` refuses a
    sparse weight)."""
    return p._check_and_get(p._data, list)


def choose_store(
    params: Sequence[Parameter], n_contexts: int, kvstore: Any, update_on_kvstore: bool | None
) -> tuple[kvs.KVStoreBase | None, bool]:
    """Return ``(store or None, update_on_kvstore)`` for a Trainer of ``params`` on
    ``n_contexts`` devices, given the Trainer's ``kvstore`` and ``update_on_kvstore`` arguments.

    Raises
    ------
    ValueError
        For ``update_on_kvstore=False`` where the store must update (sparse weights; sparse
        gradients on a distributed store), ``update_on_kvstore=True`` with a store that runs no
        optimizer, or a store that cannot sum sparse gradients.
    InvalidUsageError
        For sparse weights with a store that runs no optimizer.
    TypeError, MXNetError
        For a ``kvstore`` that is neither a name, a KVStore nor None.
    """
    kvstore = kvs.chosen(kvstore)
    if any(p._stype != "default" for p in params):
        return _sparse_weight_store(kvstore, update_on_kvstore)
    sparse_grads = any(p._grad_stype != "default" for p in params)
    if isinstance(kvstore, str):
        kv = None if n_contexts == 1 and "dist" not in kvstore else kvs.create(kvstore)
    elif kvstore is None or isinstance(kvstore, kvs.KVStoreBase):
        kv = kvstore
    elif sparse_grads:
        raise TypeError("kvstore must be KVStore, str or None")
    else:
        raise MXNetError(
            f"Trainer: kvstore must be a name, a KVStore or None, got {type(kvstore).__name__}"
        )
    if kv is None:
        return None, False
    if sparse_grads:
        return kv, _sparse_grad_update(kv, update_on_kvstore)
    return kv, _dense_update(kv, update_on_kvstore, params)


def _sparse_weight_store(kvstore: Any, update_on_kvstore: bool | None) -> tuple[Any, bool]:
    """MXNet's ``_create_sparse_kvstore``: always a store, always updating."""
    if isinstance(kvstore, kvs.KVStoreBase):
        kv = kvstore
    elif isinstance(kvstore, str):
        kv = kvs.create(kvstore)
    else:
        raise TypeError(
            f"Cannot create '{kvstore}' KVStore with row_sparse parameters. The type must be "
            "KVStore or str."
        )
    if not kv.is_capable("optimizer"):
        raise InvalidUsageError(
            "KVStore with sparse weight requires optimizer support. However, type(kv) does not "
            "support optimizer. Please consider other kvstore backends (e.g. dist_device) "
            "instead."
        )
    if update_on_kvstore is False:
        raise ValueError("Cannot set update_on_kvstore=False when sparse weights are present.")
    return kv, True


def _sparse_grad_update(kv: kvs.KVStoreBase, update_on_kvstore: bool | None) -> bool:
    """Dense weights, sparse gradients: update on the store only when distributed (or asked)."""
    distributed = "dist" in kv.type
    update = distributed
    if update_on_kvstore is not None:
        if update_on_kvstore is False and distributed:
            raise ValueError(
                "Cannot set update_on_kvstore=False on dist kvstore when sparse gradients are "
                "present."
            )
        update = update_on_kvstore
    if not isinstance(kv, (kvs.LocalKVStore, kvs.DistKVStore)):
        raise ValueError(f"Cannot use {type(kv)} for multi-device training with sparse gradients")
    return update


def _dense_update(
    kv: kvs.KVStoreBase, update_on_kvstore: bool | None, params: Sequence[Parameter]
) -> bool:
    """Dense weights and gradients: MXNet's ``_create_kvstore`` and the Trainer's checks."""
    if "async" in kv.type and update_on_kvstore is False:
        raise MXNetError(
            "Trainer: dist_async stores update on the servers; set "
            "update_on_kvstore=True (or leave it None)"
        )
    if not kv.is_capable("optimizer"):
        if update_on_kvstore:
            raise ValueError(
                f"Trainer: the {kv.type!r} KVStore cannot run the optimizer; use "
                "update_on_kvstore=False (or leave it None)"
            )
        return False
    if update_on_kvstore is not None:
        return update_on_kvstore
    if kv.type == "local":
        return max((_size(p.shape) for p in params), default=0) <= _LOCAL_UPDATE_BOUND
    return True


def store_method(kv: kvs.KVStoreBase, name: str) -> Any:
    """``kv``'s method ``name``, which mxrs's stores all have and a store written on
    :class:`~mxrs.kvstore.KVStoreBase` alone may lack.

    Raises
    ------
    MXNetError
        Naming the store's class and the method, when it has none.
    """
    fn = getattr(kv, name, None)
    if fn is None:
        raise MXNetError(
            f"Trainer: the {type(kv).__name__} KVStore has no {name}() method, which this "
            "training needs"
        )
    return fn


def init_keys(
    kv: kvs.KVStoreBase,
    keyed: Sequence[tuple[int, Parameter]],
    update_on_kvstore: bool,
    distributed: bool,
) -> None:
    """Put the initialised Parameters ``keyed`` (key, Parameter) into ``kv``.

    A dense weight is broadcast from its first copy into every copy (all workers start from
    rank 0's values): in one batched ``broadcast`` on mxrs's stores, one ``broadcast`` per
    Parameter on a store written on ``KVStoreBase`` alone, as MXNet's Trainer calls it. A sparse
    weight is only initialised. Where the store only sums row_sparse gradients (one node,
    workers update), its key holds the row_sparse sum of the last push, as MXNet's local store
    does, not the weight; on a distributed store a dense weight with row_sparse gradients is a
    row key.
    """
    if not isinstance(kv, kvs.KVStore):
        for i, p in keyed:
            arrs = arrays(p)
            if p._stype != "default":
                store_method(kv, "init")(i, arrs[0])
            else:
                kv.broadcast(i, arrs[0], arrs)
        return
    dense: list[tuple[int, Parameter]] = []
    for i, p in keyed:
        arrs = arrays(p)
        if p._stype != "default":
            kv.init(i, arrs[0])
        elif p._grad_stype == "row_sparse" and not update_on_kvstore and not distributed:
            first = arrs[0]
            kv.init(i, nd.sparse.zeros("row_sparse", first.shape, first.context, first.dtype))
            for a in arrs[1:]:
                first.copyto(a)
        elif p._grad_stype == "row_sparse" and distributed:
            # a row key on the servers: row_sparse gradients cross the wire as rows and the
            # servers update those rows only (MXNet's lazy update); the weight is pulled whole
            kv.init(i, arrs[0].tostype("row_sparse"))
            kv.pull(i, arrs)
        else:
            dense.append((i, p))
    if dense:
        idx = [i for i, _ in dense]
        kv.broadcast(idx, [arrays(p)[0] for _, p in dense], [arrays(p) for _, p in dense])


def push_sparse(
    kv: kvs.KVStoreBase,
    keyed: Sequence[tuple[int, Parameter]],
    update_on_kvstore: bool,
    distributed: bool,
) -> None:
    """Push the gradients of sparse Parameters ``keyed`` (key, Parameter); pull back a dense
    weight's new value (``update_on_kvstore``) or its summed gradient, never a sparse weight
    (``row_sparse_data`` fetches its rows). A distributed store leaves sparse outputs alone
    (``ignore_sparse``), as in MXNet."""
    push, pull = store_method(kv, "push"), store_method(kv, "pull")
    for i, p in keyed:
        grads = p.list_grad()
        push(i, grads, priority=-i)
        if p._stype == "default":
            outs = arrays(p) if update_on_kvstore else grads
            pull(i, outs, priority=-i, ignore_sparse=distributed)


def _size(shape: Sequence[int] | None) -> int:
    n = 1
    for d in shape or ():
        n *= max(int(d), 0)
    return n
