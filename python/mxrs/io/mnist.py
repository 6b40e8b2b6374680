"""``MNISTIter``: batches of MNIST read from IDX files."""

from __future__ import annotations

import gzip
import logging
import os
import struct
from typing import Any

import numpy as np

from ..ndarray import array
from .batch import DataDesc
from .dataiter import DataIter

__all__ = ["MNISTIter", "read_idx"]

#: The element types an IDX file can hold, by the type byte of its magic number.
_IDX_DTYPES: dict[int, np.dtype[Any]] = {
    0x08: np.dtype(np.uint8),
    0x09: np.dtype(np.int8),
    0x0B: np.dtype(">i2"),
    0x0C: np.dtype(">i4"),
    0x0D: np.dtype(">f4"),
    0x0E: np.dtype(">f8"),
}


def read_idx(path: str | os.PathLike[str]) -> np.ndarray:
    """The array stored in the IDX file at ``path`` (gzip-compressed or not).

    An IDX file is a big-endian header (two zero bytes, a type byte, the number of dimensions,
    then each dimension as a 32-bit integer) followed by the elements in row-major order.
    """
    with open(path, "rb") as f:
        raw = f.read()
    if raw[:2] == b"\x1f\x8b":
        raw = gzip.decompress(raw)
    if len(raw) < 4 or raw[0] != 0 or raw[1] != 0 or raw[2] not in _IDX_DTYPES:
        raise ValueError(f"{os.fspath(path)}: not an IDX file (bad magic number {raw[:4]!r})")
    dtype, ndim = _IDX_DTYPES[raw[2]], raw[3]
    header = 4 + 4 * ndim
    if len(raw) < header:
        raise ValueError(f"{os.fspath(path)}: IDX header cut short")
    shape = struct.unpack(f">{ndim}I", raw[4:header])
    count = int(np.prod(shape, dtype=np.int64))
    if len(raw) - header < count * dtype.itemsize:
        raise ValueError(
            f"{os.fspath(path)}: IDX file holds {len(raw) - header} bytes of data, "
            f"{count * dtype.itemsize} expected for shape {shape}"
        )
    data = np.frombuffer(raw, dtype=dtype, count=count, offset=header)
    return data.reshape(shape).astype(dtype.newbyteorder("="))


def _part(count: int, num_parts: int, part_index: int) -> tuple[int, int]:
    """The [start, end) range of samples that part ``part_index`` of ``num_parts`` gets."""
    return int(count / num_parts * part_index), int(count / num_parts * (part_index + 1))


class MNISTIter(DataIter):
    """Iterates over MNIST images and labels stored as IDX files.

    Pixels come as float32 scaled by 1/256 (so in [0, 1)); labels as float32. Each batch holds
    ``batch_size`` images; the samples that do not fill a last batch are skipped.

    Parameters
    ----------
    image : str
        Path of the images file (``train-images-idx3-ubyte``, gzip-compressed or not).
    label : str
        Path of the labels file (``train-labels-idx1-ubyte``).
    batch_size : int, default 128
    shuffle : bool, default True
        Shuffle the samples once, when the files are read (with ``seed``).
    flat : bool, default False
        Images as ``(batch, rows * cols)`` instead of ``(batch, 1, rows, cols)``.
    seed : int, default 0
        Seed of the shuffle.
    silent : bool, default False
        Do not log (at INFO level) what was loaded.
    num_parts, part_index : int, default 1, 0
        Read only part ``part_index`` of ``num_parts`` equal contiguous parts of the data
        (one per worker of a distributed job).
    data_name, label_name : str
        Names in ``provide_data`` / ``provide_label``.
    **kwargs
        Accepted and ignored (``prefetch_buffer``, ``ctx``, ``dtype``, ``input_shape``...).
    """

    _one_array = True  # getdata/getlabel give one NDArray each, as MXNet's MNISTIter

    def __init__(
        self,
        image: str | os.PathLike[str] = "./train-images-idx3-ubyte",
        label: str | os.PathLike[str] = "./train-labels-idx1-ubyte",
        batch_size: int = 128,
        shuffle: bool = True,
        flat: bool = False,
        seed: int = 0,
        silent: bool = False,
        num_parts: int = 1,
        part_index: int = 0,
        data_name: str = "data",
        label_name: str = "softmax_label",
        **kwargs: Any,
    ) -> None:
        super().__init__(int(batch_size))
        if self.batch_size <= 0:
            raise ValueError(f"MNISTIter: batch_size must be positive, got {batch_size}")
        if num_parts <= 0 or not 0 <= part_index < num_parts:
            raise ValueError(
                f"MNISTIter: need 0 <= part_index < num_parts, got part_index={part_index}, "
                f"num_parts={num_parts}"
            )
        images = read_idx(image)
        labels = read_idx(label)
        if images.ndim != 3:
            raise ValueError(f"MNISTIter: {image} holds a {images.shape} array, not images")
        if labels.ndim != 1 or labels.shape[0] != images.shape[0]:
            raise ValueError(
                f"MNISTIter: {image} holds {images.shape[0]} images but {label} holds "
                f"labels of shape {labels.shape}"
            )
        start, end = _part(images.shape[0], num_parts, part_index)
        self._index = np.arange(start, end)
        if shuffle:
            np.random.RandomState(seed).shuffle(self._index)
        self._images = images[self._index].astype(np.float32) * np.float32(1.0 / 256.0)
        self._labels = labels[self._index].astype(np.float32)
        if flat:
            self._images = self._images.reshape(self._images.shape[0], -1)
        else:
            self._images = self._images[:, None, :, :]
        self.data_name, self.label_name = data_name, label_name
        self.cursor = -self.batch_size
        if not silent:
            logging.getLogger(__name__).info(
                "MNISTIter: load %d images, shuffle=%d, shape=%s",
                self.num_data,
                int(bool(shuffle)),
                self.provide_data[0].shape,
            )

    @property
    def provide_data(self) -> list[DataDesc]:
        """The image batch: ``(batch, 1, rows, cols)``, or ``(batch, rows * cols)`` when flat."""
        return [DataDesc(self.data_name, (self.batch_size, *self._images.shape[1:]), np.float32)]

    @property
    def provide_label(self) -> list[DataDesc]:
        """The label batch: ``(batch,)``."""
        return [DataDesc(self.label_name, (self.batch_size,), np.float32)]

    @property
    def num_data(self) -> int:
        """Samples this iterator reads (of its part)."""
        return int(self._images.shape[0])

    def reset(self) -> None:
        """Back to the first batch (the order stays as shuffled on construction)."""
        self.cursor = -self.batch_size

    def iter_next(self) -> bool:
        """Move to the next full batch; ``False`` when no full batch is left."""
        self.cursor += self.batch_size
        return self.cursor + self.batch_size <= self.num_data

    def getdata(self) -> Any:
        """The images of the current batch (one NDArray, as MXNet's MNISTIter gives it)."""
        return array(self._images[self.cursor : self.cursor + self.batch_size])

    def getlabel(self) -> Any:
        """The labels of the current batch (one NDArray)."""
        return array(self._labels[self.cursor : self.cursor + self.batch_size])

    def getindex(self) -> np.ndarray:
        """The positions in the files of the current batch's samples."""
        return self._index[self.cursor : self.cursor + self.batch_size].astype(np.uint64)

    def getpad(self) -> int:
        """Always 0: incomplete batches are skipped."""
        return 0
