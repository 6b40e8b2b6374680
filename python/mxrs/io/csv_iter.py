"""``CSVIter``: batches read from CSV files of numbers."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..ndarray import array
from ._row_batches import RowBatches
from .batch import DataDesc

__all__ = ["CSVIter"]


def _read_csv(path: str | os.PathLike[str], shape: tuple[int, ...], dtype: Any) -> np.ndarray:
    """The rows of the CSV file at ``path``, each reshaped to ``shape``."""
    rows = np.loadtxt(path, delimiter=",", dtype=dtype, ndmin=2)
    size = int(np.prod(shape, dtype=np.int64))
    if rows.shape[1] != size:
        raise ValueError(
            f"CSVIter: {os.fspath(path)} has {rows.shape[1]} columns, "
            f"but shape {shape} needs {size}"
        )
    return rows.reshape((rows.shape[0], *shape))


class CSVIter(RowBatches):
    """Iterates over the rows of a CSV file (and, optionally, of a labels CSV file).

    Every row is one sample, reshaped to ``data_shape``. With ``round_batch`` a last batch that
    the rows do not fill is completed from the first rows (``pad`` counts them), and the next
    epoch starts after those rows; without it the next epoch starts at the first row again.

    Parameters
    ----------
    data_csv : str
        Path of the data file.
    data_shape : tuple of int
        Shape of one sample.
    label_csv : str or None
        Path of the labels file; without one every label is 0.
    label_shape : tuple of int, default (1,)
        Shape of one label; ``(1,)`` gives label batches of shape ``(batch,)``.
    batch_size : int, default 1
    round_batch : bool, default True
    dtype : str, default 'float32'
    """

    def __init__(
        self,
        data_csv: str | os.PathLike[str],
        data_shape: Sequence[int],
        label_csv: str | os.PathLike[str] | None = None,
        label_shape: Sequence[int] = (1,),
        batch_size: int = 1,
        round_batch: bool = True,
        dtype: str = "float32",
        data_name: str = "data",
        label_name: str = "softmax_label",
        **kwargs: Any,
    ) -> None:
        super().__init__(batch_size, round_batch)
        if self.batch_size <= 0:
            raise ValueError(f"CSVIter: batch_size must be positive, got {batch_size}")
        self._data = _read_csv(data_csv, tuple(data_shape), dtype)
        n = self._data.shape[0]
        if n == 0:
            raise ValueError(f"CSVIter: {os.fspath(data_csv)} holds no rows")
        label_shape = tuple(label_shape)
        if label_csv is None or label_csv == "NULL":
            self._label = np.zeros((n, *label_shape), dtype=dtype)
        else:
            self._label = _read_csv(label_csv, label_shape, dtype)
            if self._label.shape[0] != n:
                raise ValueError(
                    f"CSVIter: {os.fspath(data_csv)} has {n} rows but {os.fspath(label_csv)} "
                    f"has {self._label.shape[0]}"
                )
        if label_shape == (1,):
            self._label = self._label.reshape(n)
        self.n_rows = n
        self.data_name, self.label_name = data_name, label_name

    @property
    def provide_data(self) -> list[DataDesc]:
        """The data batch: ``(batch, *data_shape)``."""
        return [
            DataDesc(self.data_name, (self.batch_size, *self._data.shape[1:]), self._data.dtype)
        ]

    @property
    def provide_label(self) -> list[DataDesc]:
        """The label batch: ``(batch, *label_shape)`` (``(batch,)`` for ``(1,)``)."""
        shape = (self.batch_size, *self._label.shape[1:])
        return [DataDesc(self.label_name, shape, self._label.dtype)]

    def getdata(self) -> Any:
        """The data of the current batch (one NDArray, as MXNet's CSVIter gives it)."""
        return array(self._data[self._rows], dtype=self._data.dtype)

    def getlabel(self) -> Any:
        """The labels of the current batch (one NDArray)."""
        return array(self._label[self._rows], dtype=self._label.dtype)
