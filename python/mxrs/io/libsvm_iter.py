"""``LibSVMIter``: batches of sparse (CSR) rows read from LibSVM text files."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..base import MXNetError
from ..ndarray import array
from ..ndarray.sparse import csr_matrix
from ._row_batches import RowBatches
from .batch import DataDesc

__all__ = ["LibSVMIter"]


class _Rows:
    """A LibSVM file's rows: each line's leading number, and its ``index:value`` pairs as
    CSR arrays (``indptr`` per row)."""

    def __init__(self, path: str, width: int, part: tuple[int, int], what: str) -> None:
        with open(path, "rb") as f:
            raw = f.read()
        lines = _part_lines(raw, *part)
        self.first = np.zeros(len(lines), dtype=np.float32)
        indptr = [0]
        cols: list[int] = []
        vals: list[float] = []
        for k, line in enumerate(lines):
            tokens = line.split()
            if not tokens:
                raise MXNetError(f"LibSVMIter: line {k + 1} of {path} is empty")
            self.first[k] = _number(tokens[0], path, k)
            for tok in tokens[1:]:
                idx, sep, val = tok.partition(b":")
                if not sep:
                    raise MXNetError(
                        f"LibSVMIter: {path} line {k + 1}: {tok.decode(errors='replace')!r} is "
                        "not index:value"
                    )
                col = int(_number(idx, path, k))
                if col < 0 or col >= width or col != _number(idx, path, k):
                    raise MXNetError(
                        f"LibSVMIter: {path} line {k + 1}: index {idx.decode()} is outside "
                        f"[0, {width}) of {what}"
                    )
                cols.append(col)
                vals.append(_number(val, path, k))
            indptr.append(len(cols))
        self.indptr = np.asarray(indptr, dtype=np.int64)
        self.indices = np.asarray(cols, dtype=np.int64)
        self.values = np.asarray(vals, dtype=np.float32)
        self.width = width

    def __len__(self) -> int:
        return len(self.first)

    def csr(self, rows: np.ndarray) -> Any:
        """Rows ``rows`` as a CSR array ``(len(rows), width)``, in that order."""
        starts, ends = self.indptr[rows], self.indptr[rows + 1]
        counts = ends - starts
        spans = [np.arange(s, e, dtype=np.int64) for s, e in zip(starts, ends, strict=True)]
        take = np.concatenate([np.zeros(0, dtype=np.int64), *spans])
        indptr = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
        return csr_matrix(
            (self.values[take], self.indices[take], indptr), shape=(len(rows), self.width)
        )


def _number(tok: bytes, path: str, k: int) -> float:
    try:
        return float(tok)
    except ValueError:
        raise MXNetError(
            f"LibSVMIter: {path} line {k + 1}: {tok.decode(errors='replace')!r} is not a number"
        ) from None


def _part_lines(raw: bytes, num_parts: int, part_index: int) -> list[bytes]:
    """The lines of part ``part_index`` of ``num_parts``: the file is cut into equal byte
    ranges, and a line belongs to the part its first byte is in (as MXNet splits files)."""
    starts, at = [], 0
    for line in raw.splitlines(keepends=True):
        if line.strip():
            starts.append((at, line))
        at += len(line)
    lo, hi = len(raw) * part_index // num_parts, len(raw) * (part_index + 1) // num_parts
    return [line for start, line in starts if lo <= start < hi]


class LibSVMIter(RowBatches):
    """Iterates over the rows of a LibSVM file (``label index:value index:value ...``, indices
    from 0) as CSR data batches.

    The labels are each line's leading number, or, with ``label_libsvm``, the rows of a second
    LibSVM file as CSR labels (its leading numbers are ignored). A last batch the rows do not
    fill is completed from the first rows (``pad`` counts them) and the next epoch starts after
    those rows (``round_batch``; without it, at the first row again).

    Parameters
    ----------
    data_libsvm : str
        Path of the data file.
    data_shape : tuple of int
        ``(features,)``: the width of a data row.
    label_libsvm : str, optional
        Path of a sparse label file with the same number of lines.
    label_shape : tuple of int, default (1,)
        ``(width,)`` of a sparse label row.
    batch_size : int, default 1
    round_batch : bool, default True
    num_parts, part_index : int, default 1 and 0
        Read only part ``part_index`` of the file cut into ``num_parts`` (a worker's share).
    data_name, label_name : str

    Raises
    ------
    MXNetError
        For a missing file, a malformed line or an index outside the row (the message names
        the file and line), label and data files of different lengths, or bad sizes.
    """

    def __init__(
        self,
        data_libsvm: str | os.PathLike[str],
        data_shape: Sequence[int],
        label_libsvm: str | os.PathLike[str] | None = None,
        label_shape: Sequence[int] = (1,),
        batch_size: int = 1,
        round_batch: bool = True,
        num_parts: int = 1,
        part_index: int = 0,
        data_name: str = "data",
        label_name: str = "softmax_label",
        **kwargs: Any,
    ) -> None:
        super().__init__(batch_size, round_batch)
        if self.batch_size <= 0:
            raise MXNetError(f"LibSVMIter: batch_size must be positive, got {batch_size}")
        if len(tuple(data_shape)) != 1:
            raise MXNetError(f"LibSVMIter: data_shape must be (features,), got {data_shape}")
        if not 0 <= part_index < num_parts:
            raise MXNetError(
                f"LibSVMIter: part_index {part_index} is outside [0, num_parts={num_parts})"
            )
        part = (int(num_parts), int(part_index))
        path = os.fspath(data_libsvm)
        if not os.path.isfile(path):
            raise MXNetError(f"LibSVMIter: data_libsvm {path} does not exist")
        self._data = _Rows(path, int(tuple(data_shape)[0]), part, "data_shape")
        self.n_rows = len(self._data)
        if self.n_rows == 0:
            raise MXNetError(f"LibSVMIter: {path} holds no rows (in part {part_index})")
        self._label: _Rows | None = None
        if label_libsvm is not None and label_libsvm != "NULL":
            lpath = os.fspath(label_libsvm)
            if not os.path.isfile(lpath):
                raise MXNetError(f"LibSVMIter: label_libsvm {lpath} does not exist")
            self._label = _Rows(lpath, int(tuple(label_shape)[0]), part, "label_shape")
            if len(self._label) != self.n_rows:
                raise MXNetError(
                    f"LibSVMIter: {path} has {self.n_rows} rows but {lpath} has {len(self._label)}"
                )
        self.data_name, self.label_name = data_name, label_name

    @property
    def provide_data(self) -> list[DataDesc]:
        """The data batch: ``(batch, features)``, CSR."""
        return [DataDesc(self.data_name, (self.batch_size, self._data.width), np.float32)]

    @property
    def provide_label(self) -> list[DataDesc]:
        """The label batch: ``(batch,)``, or ``(batch, width)`` CSR with ``label_libsvm``."""
        if self._label is None:
            return [DataDesc(self.label_name, (self.batch_size,), np.float32)]
        return [DataDesc(self.label_name, (self.batch_size, self._label.width), np.float32)]

    def getdata(self) -> Any:
        """The data of the current batch: one CSR array, as MXNet's LibSVMIter gives it."""
        return self._data.csr(self._rows)

    def getlabel(self) -> Any:
        """The labels of the current batch: one array (CSR with ``label_libsvm``)."""
        if self._label is None:
            return array(self._data.first[self._rows], dtype=np.float32)
        return self._label.csr(self._rows)
