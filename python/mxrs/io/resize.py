"""``ResizeIter``: a fixed number of batches per epoch from another iterator."""

from __future__ import annotations

from typing import Any

from .batch import DataBatch
from .dataiter import DataIter

__all__ = ["ResizeIter"]


class ResizeIter(DataIter):
    """Makes every epoch of ``data_iter`` exactly ``size`` batches long.

    Shorter epochs are stretched by resetting ``data_iter`` when it runs out; longer ones are
    cut, and (with ``reset_internal=False``) the next epoch goes on where the last one stopped.

    Parameters
    ----------
    data_iter : DataIter
        The iterator to read from.
    size : int
        Batches per epoch.
    reset_internal : bool, default True
        Whether ``reset`` also resets ``data_iter``.
    """

    def __init__(self, data_iter: Any, size: int, reset_internal: bool = True) -> None:
        super().__init__(data_iter.batch_size)
        if int(size) < 0:
            raise ValueError(f"ResizeIter: size must be non-negative, got {size}")
        self.data_iter = data_iter
        self.size = int(size)
        self.reset_internal = reset_internal
        self.cur = 0
        self.current_batch: DataBatch | None = None
        self.provide_data = data_iter.provide_data
        self.provide_label = data_iter.provide_label
        if hasattr(data_iter, "default_bucket_key"):
            self.default_bucket_key = data_iter.default_bucket_key

    def reset(self) -> None:
        """Start a new epoch of ``size`` batches."""
        self.cur = 0
        if self.reset_internal:
            self.data_iter.reset()

    def iter_next(self) -> bool:
        """Fetch the next batch, resetting ``data_iter`` when it runs out."""
        if self.cur >= self.size:
            return False
        try:
            self.current_batch = self.data_iter.next()
        except StopIteration:
            self.data_iter.reset()
            try:
                self.current_batch = self.data_iter.next()
            except StopIteration:
                raise ValueError("ResizeIter: the wrapped iterator yields no batches") from None
        self.cur += 1
        return True

    def next(self) -> DataBatch:
        """The next batch (the wrapped iterator's own ``DataBatch``)."""
        if not self.iter_next():
            raise StopIteration
        assert self.current_batch is not None
        return self.current_batch

    def _current(self) -> DataBatch:
        if self.current_batch is None:
            raise RuntimeError("ResizeIter: no current batch; call next() first")
        return self.current_batch

    def getdata(self) -> Any:
        """The data arrays of the current batch."""
        return self._current().data

    def getlabel(self) -> Any:
        """The label arrays of the current batch."""
        return self._current().label

    def getindex(self) -> Any:
        """The sample indices of the current batch."""
        return self._current().index

    def getpad(self) -> int | None:
        """Filler samples at the end of the current batch."""
        return self._current().pad
