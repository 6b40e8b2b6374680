"""Batches over the rows of a file read whole: the position, the rounded last batch and the
epoch that starts after it, shared by ``CSVIter`` and ``LibSVMIter``."""

from __future__ import annotations

from typing import Any

import numpy as np

from .dataiter import DataIter

__all__ = ["RowBatches"]


class RowBatches(DataIter):
    """Steps through ``n_rows`` rows ``batch_size`` at a time.

    A last batch that the rows do not fill is completed from the first rows (``pad`` counts
    them); with ``round_batch`` the next epoch starts after those rows, without it at the first
    row again. Subclasses set ``n_rows`` and give ``getdata``/``getlabel`` for ``self._rows``:
    one NDArray each, as MXNet's built-in (C++) iterators return them.
    """

    n_rows: int
    _one_array = True

    def __init__(self, batch_size: int, round_batch: bool) -> None:
        super().__init__(int(batch_size))
        self.round_batch = bool(round_batch)
        self._pos = 0
        self._overflow = 0
        self._rows = np.arange(0)
        self._pad = 0

    def reset(self) -> None:
        """Start the next epoch (after the rows a rounded last batch borrowed)."""
        self._pos = self._overflow if self.round_batch else 0
        self._overflow = 0

    def iter_next(self) -> bool:
        """Move to the next batch; ``False`` when all rows were read."""
        n = self.n_rows
        if self._pos >= n:
            return False
        end = self._pos + self.batch_size
        self._rows = np.arange(self._pos, end) % n
        self._pad = max(0, end - n)
        self._overflow = end % n if self._pad else 0
        self._pos = end
        return True

    def getdata(self) -> Any:
        """The data of the current batch (one NDArray)."""
        raise NotImplementedError

    def getlabel(self) -> Any:
        """The labels of the current batch (one NDArray)."""
        raise NotImplementedError

    def getindex(self) -> np.ndarray:
        """The row numbers of the current batch."""
        return self._rows.astype(np.uint64)

    def getpad(self) -> int:
        """Rows at the end of the batch borrowed from the start of the file."""
        return self._pad
