"""The records of one part of a RecordIO file (a worker's share), read by byte offset.

The file is cut as MXNet 1.9.1 cuts it for ``num_parts`` workers. Without an index file, into
``num_parts`` equal byte ranges (their size rounded up to a multiple of 4): a record belongs to
the part its first byte is in. With an index file, the records (sorted by offset) are cut into
``num_parts`` runs of ``ceil(count / num_parts)``.
"""

from __future__ import annotations

import mmap
import os
import struct
import threading

import numpy as np

from ..base import MXNetError
from ..recordio import MAGIC, decode_lrec, padded, read_record

__all__ = ["RecordPart"]

_WORD = struct.Struct("<I")
_HEAD = struct.Struct("<II")


class RecordPart:
    """The byte offsets of the records of part ``part_index`` of ``num_parts`` of a RecordIO
    file, and ``read(offset)`` to get one record (safe from several threads at once).

    Parameters
    ----------
    path : str
        The RecordIO file.
    idx_path : str or None
        Its index file (``key<TAB>offset`` lines), or ``None`` to find the records by scanning.
    part_index, num_parts : int
    """

    def __init__(self, path: str, idx_path: str | None, part_index: int, num_parts: int) -> None:
        self.path = path
        if not os.path.isfile(path):
            raise MXNetError(f"RecordIO file {path} does not exist")
        self.size = os.path.getsize(path)
        if idx_path:
            self.offsets = _part_of_index(idx_path, part_index, num_parts)
        else:
            self.offsets = _scan_part(path, self.size, part_index, num_parts)
        self._fd: int | None = os.open(path, os.O_RDONLY)
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self.offsets)

    def read(self, offset: int) -> bytes:
        """The record that starts at byte ``offset``."""
        fd = self._fd
        if fd is None:
            raise MXNetError(f"RecordIO file {self.path} is closed")
        at = [int(offset)]

        def _read(n: int) -> bytes:
            data = os.pread(fd, n, at[0])
            at[0] += len(data)
            return data

        rec = read_record(_read, self.path)
        if rec is None:
            raise MXNetError(f"RecordIO file {self.path}: no record at byte {offset}")
        return rec

    def close(self) -> None:
        """Close the file."""
        with self._lock:
            if self._fd is not None:
                os.close(self._fd)
                self._fd = None


def _part_of_index(idx_path: str, part_index: int, num_parts: int) -> np.ndarray:
    if not os.path.isfile(idx_path):
        raise MXNetError(f"RecordIO index file {idx_path} does not exist")
    offsets = []
    with open(idx_path) as f:
        for n, line in enumerate(f, 1):
            fields = line.split()
            if not fields:
                continue
            if len(fields) < 2:
                raise MXNetError(f"line {n} of the index file {idx_path} is not key<TAB>offset")
            try:
                offsets.append(int(fields[1]))
            except ValueError:
                raise MXNetError(
                    f"line {n} of the index file {idx_path}: {fields[1]!r} is not an offset"
                ) from None
    ordered = np.sort(np.asarray(offsets, dtype=np.int64))
    step = -(-len(ordered) // num_parts)
    return ordered[part_index * step : (part_index + 1) * step]


def _scan_part(path: str, size: int, part_index: int, num_parts: int) -> np.ndarray:
    step = padded(-(-size // num_parts))
    lo, hi = min(step * part_index, size), min(step * (part_index + 1), size)
    if lo >= hi:
        return np.zeros(0, dtype=np.int64)
    starts = []
    with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mm:
        pos = _first_head(mm, lo, size)
        while pos < hi:
            if pos + 8 > size:
                raise MXNetError(f"Invalid RecordIO file {path}: it ends inside a record header")
            magic, lrec = _HEAD.unpack_from(mm, pos)
            if magic != MAGIC:
                raise MXNetError(
                    f"Invalid RecordIO file {path}: no record header at byte {pos} (found "
                    f"0x{magic:08x} instead of the magic word 0x{MAGIC:08x})"
                )
            cflag, length = decode_lrec(lrec)
            if cflag in (0, 1):
                starts.append(pos)
            pos += 8 + padded(length)
    return np.asarray(starts, dtype=np.int64)


def _first_head(mm: mmap.mmap, at: int, size: int) -> int:
    """The offset of the first record head (magic word, then flag 0 or 1) at or after ``at``
    (a multiple of 4), or ``size``."""
    while at + 8 <= size:
        found = mm.find(_WORD.pack(MAGIC), at)
        if found < 0 or found + 8 > size:
            return size
        if found % 4 == 0 and decode_lrec(_WORD.unpack_from(mm, found + 4)[0])[0] in (0, 1):
            return found
        at = found + 1 if found % 4 else found + 4
    return size
