"""The row-sparse side every store shares: checking a ``row_sparse_pull``'s outputs and row ids,
and taking rows of a stored value into a row_sparse array."""

from __future__ import annotations

from typing import Any, cast

import numpy as np

from .._sparse_rows import unique_ids
from ..base import MXNetError
from ..ndarray import sparse as _sparse
from ..ndarray.ndarray import NDArray, _wrap
from ..ndarray.sparse._storage import rsp_rows
from .base import Key, Keys, Values, key_value_pairs

__all__ = ["row_sparse_requests", "check_row_ids", "take_rows", "rows_of"]


def row_sparse_requests(
    key: Keys, out: Values | None, row_ids: Any
) -> list[tuple[Key, NDArray, np.ndarray]]:
    """The ``(key, output array, row ids)`` of a ``row_sparse_pull``, checked.

    ``row_ids`` is one NDArray for every output, or has the structure of ``out`` (one per
    output array, or one per key for all its outputs). Ids become sorted, unique int64.

    Raises
    ------
    MXNetError
        When ``out`` or ``row_ids`` is missing, an output is not row_sparse, or the row ids
        do not pair with the outputs.
    """
    what = "row_sparse_pull"
    if out is None or row_ids is None:
        raise MXNetError(f"KVStore.{what}: out and row_ids are both required")
    pairs = key_value_pairs(key, out, what)
    for k, outs in pairs:
        for o in outs:
            if o.stype != "row_sparse":
                raise MXNetError(
                    f"KVStore.{what}: key {k!r}: the output array must be row_sparse, not "
                    f"{o.stype} (use pull for dense arrays)"
                )
    if isinstance(row_ids, NDArray):
        ids_per_key: list[list[Any]] = [[row_ids]] * len(pairs)
    elif isinstance(row_ids, (list, tuple)) and len(row_ids) == 1 and len(pairs) == 1:
        ids_per_key = [list(row_ids)]
    else:
        ids_per_key = [v for _, v in key_value_pairs(key, row_ids, what)]
    requests = []
    for (k, outs), ids in zip(pairs, ids_per_key, strict=True):
        if len(ids) not in (1, len(outs)):
            raise MXNetError(
                f"KVStore.{what}: key {k!r} has {len(outs)} output arrays but {len(ids)} row_ids"
            )
        for i, o in enumerate(outs):
            requests.append((k, o, _row_ids(ids[0] if len(ids) == 1 else ids[i])))
    return requests


def _row_ids(ids: Any) -> np.ndarray:
    host = ids.asnumpy() if isinstance(ids, NDArray) else np.asarray(ids)
    return unique_ids(np, host.reshape(-1).astype(np.int64))


def check_row_ids(key: Key, ids: np.ndarray, rows: int) -> None:
    """Raise MXNetError naming ``key`` and the id if a row id is outside ``[0, rows)``."""
    if ids.size and (ids[0] < 0 or ids[-1] >= rows):
        bad = int(ids[0]) if ids[0] < 0 else int(ids[-1])
        raise MXNetError(
            f"KVStore.row_sparse_pull: key {key!r}: row id {bad} is out of range for {rows} rows"
        )


def take_rows(out: NDArray, rows: NDArray) -> None:
    """Make row_sparse ``out`` hold ``rows``, a fresh row_sparse array on its context (its
    components are taken, not copied; values cast to ``out``'s dtype)."""
    cast(Any, out)._assign_components(rows, np.dtype(out.dtype))


def rows_of(stored: NDArray, ids: np.ndarray, ctx: Any) -> NDArray:
    """Rows ``ids`` (sorted, unique, in range) of ``stored`` as a row_sparse array on ``ctx``."""
    from_ctx, be = stored._ctx, stored._ctx.backend
    raw_ids = be.asarray(ids, np.int64, from_ctx.device_id)
    if isinstance(stored, _sparse.RowSparseNDArray):
        dense_rows = rsp_rows(be, stored._sp_idx, stored._sp_vals, raw_ids)
    else:
        dense_rows = stored._data[raw_ids]
    moved = _sparse.row_sparse_array(
        (_wrap(dense_rows, from_ctx), _wrap(raw_ids, from_ctx)), shape=stored.shape, ctx=ctx
    )
    return moved
