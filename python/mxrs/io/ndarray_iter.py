"""``NDArrayIter``: batches over arrays held in memory."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from ..ndarray import NDArray, array, concat
from .batch import DataBatch, DataDesc
from .dataiter import DataIter

__all__ = ["NDArrayIter"]

#: The ways NDArrayIter can treat a last batch that the data does not fill.
_LAST_BATCH_HANDLES = ("pad", "discard", "roll_over")

#: A named input: (name, array).
_Source = list[tuple[str, NDArray]]


def _as_named_arrays(data: Any, allow_empty: bool, default_name: str, what: str) -> _Source:
    """``data`` as ``[(name, NDArray), ...]`` sorted by name.

    A single array is called ``default_name``; a list of several arrays gets the names
    ``_0_<default_name>``, ``_1_<default_name>``...; a dict keeps its keys. Values that are not
    NDArrays go through ``mx.nd.array`` (float32 unless already an NDArray).
    """
    if data is None:
        data = []
    if isinstance(data, (NDArray, np.ndarray)):
        data = [data]
    if isinstance(data, (list, tuple)):
        if len(data) == 1:
            named: dict[str, Any] = {default_name: data[0]}
        else:
            named = {f"_{i}_{default_name}": d for i, d in enumerate(data)}
    elif isinstance(data, Mapping):
        named = dict(data)
    else:
        raise TypeError(
            f"NDArrayIter: {what} must be an NDArray, a numpy.ndarray, a list of them or a dict "
            f"of them, got {type(data).__name__}"
        )
    if not named and not allow_empty:
        raise ValueError(f"NDArrayIter: {what} holds no arrays")
    out: _Source = []
    for name in sorted(named):
        value = named[name]
        if not isinstance(value, NDArray):
            try:
                value = array(value)
            except Exception as err:
                raise TypeError(
                    f"NDArrayIter: {what} '{name}' is a {type(value).__name__}, which cannot be "
                    "made into an NDArray"
                ) from err
        if value.ndim == 0:
            raise ValueError(f"NDArrayIter: {what} '{name}' is a scalar; it needs a batch axis")
        out.append((str(name), value))
    return out


def _rows(a: NDArray, order: NDArray, idx: np.ndarray) -> NDArray:
    """The rows ``idx`` of ``a`` (``order`` as an NDArray): a CSRNDArray's through SciPy."""
    if a.stype == "csr":
        rows = a.asscipy()[idx]  # type: ignore[attr-defined]  # a CSRNDArray's
        return array(rows, ctx=a.context, dtype=a.dtype)
    return a[order]


class NDArrayIter(DataIter):
    """Iterates over arrays in memory, ``batch_size`` samples (rows of axis 0) at a time.

    Parameters
    ----------
    data : NDArray, numpy.ndarray, list of them or dict of name -> array
        The inputs. One array is called ``data_name``; several in a list are called
        ``_0_<data_name>``, ``_1_<data_name>``...; a dict gives the names. Arrays are listed
        (in ``provide_data`` and in each batch) sorted by name.
    label : same kinds as ``data``, or None
        The labels, named after ``label_name`` in the same way.
    batch_size : int, default 1
    shuffle : bool, default False
        Shuffle the samples (with ``numpy.random``) on construction and at every ``reset``.
    last_batch_handle : {'pad', 'discard', 'roll_over'}, default 'pad'
        What to do with the samples left over when ``batch_size`` does not divide their number:
        ``'pad'`` fills the last batch by wrapping around to the first samples (``batch.pad``
        says how many are repeats); ``'discard'`` drops them; ``'roll_over'`` keeps them for the
        first batch of the next epoch (after ``reset``), whose ``pad`` then says how many of its
        samples came from the previous epoch.
    data_name, label_name : str
        The names of a single data / label array.
    """

    def __init__(
        self,
        data: Any,
        label: Any = None,
        batch_size: int = 1,
        shuffle: bool = False,
        last_batch_handle: str = "pad",
        data_name: str = "data",
        label_name: str = "softmax_label",
    ) -> None:
        super().__init__(batch_size)
        if last_batch_handle not in _LAST_BATCH_HANDLES:
            raise ValueError(
                f"NDArrayIter: last_batch_handle must be one of {_LAST_BATCH_HANDLES}, "
                f"got {last_batch_handle!r}"
            )
        if int(batch_size) <= 0:
            raise ValueError(f"NDArrayIter: batch_size must be positive, got {batch_size}")
        self.data = _as_named_arrays(data, False, data_name, "data")
        self.label = _as_named_arrays(label, True, label_name, "label")
        if last_batch_handle != "discard" and any(
            a.stype == "csr" for _, a in self.data + self.label
        ):
            raise NotImplementedError(
                "NDArrayIter only supports CSRNDArray (or scipy.sparse.csr_matrix) inputs with "
                "last_batch_handle='discard'"
            )
        self.num_data = int(self.data[0][1].shape[0])
        for name, arr in self.data + self.label:
            if arr.shape[0] < self.num_data:
                raise ValueError(
                    f"NDArrayIter: every array needs a sample for each of the first data array's; "
                    f"'{self.data[0][0]}' has {self.num_data} but '{name}' has {arr.shape[0]}"
                )
        # as MXNet, the first data array sets the samples: longer arrays' extra rows are unused
        self.data = [(n, a[: self.num_data]) for n, a in self.data]
        self.label = [(n, a[: self.num_data]) for n, a in self.label]
        self.batch_size = int(batch_size)
        self.shuffle = bool(shuffle)
        self.last_batch_handle = last_batch_handle
        self.idx = np.arange(self.num_data)
        # The start of the current batch in the (possibly shuffled) sample order. Negative
        # while the first batch of an epoch under 'roll_over' still owes -cursor samples carried
        # over from the previous epoch.
        self.cursor = -self.batch_size
        self._carry_data: list[NDArray] | None = None
        self._carry_label: list[NDArray] | None = None
        self.reset()

    # ------------------------------------------------------------------ descriptions
    @property
    def provide_data(self) -> list[DataDesc]:
        """``DataDesc`` of each data array of a batch."""
        return [DataDesc(k, (self.batch_size, *v.shape[1:]), v.dtype) for k, v in self.data]

    @property
    def provide_label(self) -> list[DataDesc]:
        """``DataDesc`` of each label array of a batch."""
        return [DataDesc(k, (self.batch_size, *v.shape[1:]), v.dtype) for k, v in self.label]

    # ------------------------------------------------------------------ epochs
    def _shuffle_data(self) -> None:
        """Reorder the samples at random (the same order for data and labels)."""
        np.random.shuffle(self.idx)
        order = array(self.idx, dtype="int64")
        self.data = [(k, _rows(v, order, self.idx)) for k, v in self.data]
        self.label = [(k, _rows(v, order, self.idx)) for k, v in self.label]

    def hard_reset(self) -> None:
        """Start over, dropping any samples carried over under 'roll_over'."""
        if self.shuffle:
            self._shuffle_data()
        self.cursor = -self.batch_size
        self._carry_data = None
        self._carry_label = None

    def reset(self) -> None:
        """Start the next epoch (reshuffling when ``shuffle``; see ``last_batch_handle``)."""
        if self.shuffle:
            self._shuffle_data()
        leftover = self.num_data - self.cursor
        if self.last_batch_handle == "roll_over" and 0 < leftover < self.batch_size:
            # The last, incomplete batch of this epoch opens the next one.
            self.cursor = -leftover - self.batch_size
        else:
            self.cursor = -self.batch_size

    # ------------------------------------------------------------------ batches
    def iter_next(self) -> bool:
        """Move the cursor to the next batch; ``False`` past the end of the data."""
        self.cursor += self.batch_size
        return self.cursor < self.num_data

    def next(self) -> DataBatch:
        """The next batch; ``StopIteration`` at the end of the epoch."""
        if not self.iter_next():
            raise StopIteration
        data = self.getdata()
        label = self.getlabel()
        if self.cursor < 0:
            # The carried samples are in this batch now.
            self._carry_data = self._carry_label = None
        if data[0].shape[0] != self.batch_size:
            # An incomplete last batch ('discard' or 'roll_over'): kept for 'roll_over'.
            self._carry_data = data
            self._carry_label = label
            raise StopIteration
        return DataBatch(data=data, label=label, pad=self.getpad(), index=None)

    def _batch_of(self, source: _Source, carried: list[NDArray] | None) -> list[NDArray]:
        """The arrays of ``source`` for the batch at the cursor."""
        if self.cursor >= self.num_data:
            raise StopIteration("NDArrayIter: the epoch is over; call reset()")
        bs = self.batch_size
        if self.cursor < 0:
            # First batch after a 'roll_over' epoch: the carried samples, then fresh ones.
            end = self.cursor + bs
            if carried is None:
                raise RuntimeError("NDArrayIter: no samples were carried over from last epoch")
            return [concat(c, v[:end], dim=0) for c, (_, v) in zip(carried, source, strict=True)]
        if self.cursor + bs > self.num_data and self.last_batch_handle == "pad":
            # Wrap around to the first samples (several times when batch_size > num_data).
            where = array(np.arange(self.cursor, self.cursor + bs) % self.num_data, dtype="int64")
            return [v[where] for _, v in source]
        end = min(self.cursor + bs, self.num_data)
        return [v[self.cursor : end] for _, v in source]

    def getdata(self) -> list[NDArray]:
        """The data arrays of the current batch."""
        return self._batch_of(self.data, self._carry_data)

    def getlabel(self) -> list[NDArray]:
        """The label arrays of the current batch."""
        return self._batch_of(self.label, self._carry_label)

    def getpad(self) -> int:
        """Filler samples at the end of the batch ('pad'), or samples carried into it."""
        if self.last_batch_handle == "pad" and self.cursor + self.batch_size > self.num_data:
            return self.cursor + self.batch_size - self.num_data
        if self.last_batch_handle == "roll_over" and -self.batch_size < self.cursor < 0:
            return -self.cursor
        return 0
