"""Data-parallel helpers: splitting a batch across devices, clipping gradients, hook handles.

``split_data`` and ``split_and_load`` follow MXNet 1.9.1 to the slice: an even split, or (with
``even_split=False``) ``size // n`` samples per slice, the first ``size % n`` slices taking one
more (100 in 3: 34, 33, 33); with fewer samples than slices the trailing slices are empty.
``work_load_list`` splits by weights with the rule of MXNet's executor manager: each slice gets
``round(batch_size * w / sum(w))`` samples, the last slice also takes what rounding left over,
and an empty slice is an error.

``download``, ``check_sha1`` and ``replace_file`` (fetching files, e.g. pretrained weights)
live in :mod:`mxrs.gluon.download` and are re-exported here.

Examples
--------
>>> data = mx.nd.arange(8).reshape((8, 1))
>>> [s.shape for s in split_and_load(data, [mx.cpu(0), mx.cpu(1)], work_load_list=[3, 1])]
[(6, 1), (2, 1)]
"""

from __future__ import annotations

import math
import warnings
import weakref
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Literal

from .. import ndarray
from ..base import MXNetError
from ..context import Context
from ..ndarray import NDArray
from ..ndarray.core.array import check_writable
from .download import check_sha1, download, replace_file

__all__ = [
    "download",
    "check_sha1",
    "replace_file",
    "split_data",
    "split_and_load",
    "split_data_by_work_load",
    "clip_global_norm",
    "HookHandle",
    "SplitError",
]


class SplitError(MXNetError, ValueError):
    """A batch cannot be split as asked (a ``ValueError`` too, as MXNet raises)."""


def _slice_axis(data: NDArray, batch_axis: int, begin: int, end: int) -> NDArray:
    if batch_axis == 0:
        return data[begin:end]
    return ndarray.slice_axis(data, batch_axis, begin, end)


def split_data(
    data: NDArray, num_slice: int, batch_axis: int = 0, even_split: bool = True
) -> list[NDArray]:
    """Split an NDArray into ``num_slice`` slices along ``batch_axis``.

    Parameters
    ----------
    data : NDArray
        A batch of data.
    num_slice : int
        Number of slices wanted.
    batch_axis : int, default 0
        The axis to slice along.
    even_split : bool, default True
        Require every slice to have the same size. Otherwise, as in MXNet 1.9.1, each slice gets
        ``size // num_slice`` samples and the first ``size % num_slice`` slices one more; with
        ``size < num_slice`` the last ``num_slice - size`` slices are empty.

    Returns
    -------
    list of NDArray
        ``num_slice`` slices, a list even when ``num_slice`` is 1.

    Raises
    ------
    SplitError
        When ``even_split`` and ``num_slice`` does not divide the axis.

    Examples
    --------
    >>> [s.shape[0] for s in split_data(mx.nd.zeros((7, 2)), 3, even_split=False)]
    [3, 2, 2]
    >>> [s.shape[0] for s in split_data(mx.nd.zeros((2, 2)), 3, even_split=False)]
    [1, 1, 0]
    """
    size = data.shape[batch_axis]
    if even_split and size % num_slice != 0:
        raise SplitError(
            f"data with shape {data.shape} cannot be evenly split into {num_slice} slices "
            f"along axis {batch_axis}. Use a batch size that's multiple of {num_slice} or set "
            "even_split=False to allow uneven partitioning of data."
        )
    if batch_axis != 0 and even_split:
        out = ndarray.split(data, num_outputs=num_slice, axis=batch_axis)
        return out if isinstance(out, list) else [out]
    step, extra = divmod(size, num_slice)
    bounds = [0]
    for i in range(num_slice):
        bounds.append(bounds[-1] + step + (1 if i < extra else 0))
    return [_slice_axis(data, batch_axis, bounds[i], bounds[i + 1]) for i in range(num_slice)]


def _work_load_slices(batch_size: int, work_load_list: Sequence[float]) -> list[tuple[int, int]]:
    """Return MXNet's slices of ``batch_size`` samples for weights ``work_load_list``."""
    total = sum(work_load_list)
    if total <= 0 or any(w < 0 for w in work_load_list):
        raise SplitError(
            f"work_load_list must hold non-negative weights with a positive sum, "
            f"got {list(work_load_list)}"
        )
    counts = [round(w * batch_size / total) for w in work_load_list]
    if sum(counts) < batch_size:
        counts[-1] += batch_size - sum(counts)
    slices = []
    end = 0
    for n in counts:
        begin = int(min(end, batch_size))
        end = int(min(begin + n, batch_size))
        if begin >= end:
            raise SplitError(
                f"Too many slices. Some splits are empty: a batch of {batch_size} "
                f"split by work load {list(work_load_list)}"
            )
        slices.append((begin, end))
    return slices


def split_data_by_work_load(
    data: NDArray, work_load_list: Sequence[float], batch_axis: int = 0
) -> list[NDArray]:
    """Split an NDArray along ``batch_axis`` in proportion to ``work_load_list``.

    Parameters
    ----------
    data : NDArray
    work_load_list : list of float
        One weight per slice, e.g. ``[3, 1]`` for a device three times as fast as another.
    batch_axis : int, default 0

    Returns
    -------
    list of NDArray

    Raises
    ------
    SplitError
        When some slice would be empty.
    """
    slices = _work_load_slices(data.shape[batch_axis], list(work_load_list))
    return [_slice_axis(data, batch_axis, b, e) for b, e in slices]


def split_and_load(
    data: Any,
    ctx_list: Context | Sequence[Context],
    batch_axis: int = 0,
    even_split: bool = True,
    work_load_list: Sequence[float] | None = None,
) -> list[NDArray]:
    """Split a batch along ``batch_axis`` and load slice ``i`` onto ``ctx_list[i]``.

    Parameters
    ----------
    data : NDArray or array_like
        A batch; NumPy arrays and lists are converted with ``mx.nd.array`` first.
    ctx_list : list of Context
    batch_axis : int, default 0
    even_split : bool, default True
        See :func:`split_data`.
    work_load_list : list of float, optional
        Split in proportion to these weights instead (see :func:`split_data_by_work_load`).

    Returns
    -------
    list of NDArray
        One slice per context, in ``ctx_list`` order (empty ones too, when the batch has fewer
        samples than there are contexts and ``even_split`` is False). With one context, the
        whole batch on it.
    """
    if isinstance(ctx_list, Context):
        ctx_list = [ctx_list]
    if not isinstance(data, ndarray.NDArray):
        data = ndarray.array(data, ctx=ctx_list[0])
    if work_load_list is not None:
        if len(work_load_list) != len(ctx_list):
            raise SplitError(
                f"work_load_list has {len(work_load_list)} entries for {len(ctx_list)} contexts"
            )
        slices = split_data_by_work_load(data, work_load_list, batch_axis)
    elif len(ctx_list) == 1:
        return [data.as_in_context(ctx_list[0])]
    else:
        slices = split_data(data, len(ctx_list), batch_axis, even_split)
    return [s.as_in_context(ctx) for s, ctx in zip(slices, ctx_list, strict=True)]


def clip_global_norm(
    arrays: Sequence[NDArray], max_norm: float, check_isfinite: bool = True
) -> float | NDArray:
    """Rescale ``arrays`` in place so that their joint 2-norm is at most ``max_norm``.

    Parameters
    ----------
    arrays : list of NDArray
    max_norm : float
    check_isfinite : bool, default True
        Warn when the norm is NaN or infinite, and return it as a float.

    Returns
    -------
    float or NDArray
        The joint norm before scaling (an NDArray of shape (1,) when not ``check_isfinite``).
    """
    if not arrays:
        raise MXNetError("clip_global_norm needs at least one array")
    for arr in arrays:  # all or none: refuse before scaling any (a gradient already sent)
        check_writable(arr)
    ctx = arrays[0].context
    total = None
    for arr in arrays:
        flat = arr.reshape((-1,))
        sq = ndarray.dot(flat, flat).as_in_context(ctx)
        total = sq if total is None else total + sq
    assert total is not None  # arrays is not empty
    total_norm = ndarray.sqrt(total)
    if check_isfinite:
        norm = float(total_norm.asscalar())
        if not math.isfinite(norm):
            warnings.warn(
                UserWarning("nan or inf is detected. Clipping results will be undefined."),
                stacklevel=2,
            )
    scale = ndarray.minimum(max_norm / (total_norm + 1e-8), 1.0)
    for arr in arrays:
        arr *= scale.as_in_context(arr.context)
    return norm if check_isfinite else total_norm


# ----------------------------------------------------------------- helpers for Gluon
def _indent(s: str, num_spaces: int) -> str:
    """Indent every line of ``s`` but the first by ``num_spaces`` spaces."""
    lines = s.split("\n")
    if len(lines) == 1:
        return s
    return "\n".join([lines[0]] + [" " * num_spaces + line for line in lines[1:]])


def _brief_print_list(lst: Iterable[Any], limit: int = 7) -> str:
    """Quote at most ``limit`` items of ``lst``, eliding the middle."""
    lst = list(lst)
    if len(lst) > limit:
        return (
            _brief_print_list(lst[: limit // 2], limit)
            + ", ..., "
            + _brief_print_list(lst[-limit // 2 :], limit)
        )
    return ", ".join(f"'{i}'" for i in lst)


class HookHandle:
    """A handle to a registered forward hook; ``detach()`` (or leaving a ``with``) removes it."""

    def __init__(self) -> None:
        self._hooks_dict_ref: weakref.ref[dict[int, Callable[..., Any]]] | None = None
        self._id: int | None = None

    def attach(self, hooks_dict: dict[int, Callable[..., Any]], hook: Callable[..., Any]) -> None:
        """Register ``hook`` in ``hooks_dict``."""
        if self._hooks_dict_ref is not None:
            raise MXNetError("The same handle cannot be attached twice.")
        self._id = id(hook)
        hooks_dict[self._id] = hook
        self._hooks_dict_ref = weakref.ref(hooks_dict)

    def detach(self) -> None:
        """Remove the hook (a no-op when it is already gone)."""
        hooks = self._hooks_dict_ref() if self._hooks_dict_ref is not None else None
        if hooks is not None and self._id in hooks:
            del hooks[self._id]

    def __enter__(self) -> HookHandle:
        return self

    def __exit__(self, *exc: object) -> Literal[False]:
        self.detach()
        return False
