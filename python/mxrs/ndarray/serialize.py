"""Reading and writing Apache MXNet 1.x's binary NDArray file format (``nd.save`` / ``.params``).

Layout of a file, all integers little-endian:

* ``u64`` list magic ``0x112``, ``u64`` reserved (0);
* ``u64`` count of arrays, then each array;
* ``u64`` count of names (0 for a list, else one per array), each a ``u64`` length and the
  UTF-8 bytes.

An array is saved as ``u32`` magic, then per magic:

* ``0xF993FAC9`` (V2) and ``0xF993FACA`` (V3): ``i32`` storage type (0 dense), the shape as
  ``u32`` ndim and ``i64`` dims, the context (``i32`` device type, ``i32`` device id), the
  ``i32`` type flag and the raw data in C order. A V2 shape of ndim 0 (a V3 ndim of -1) is an
  array without data: nothing follows the shape. V3 is written for NumPy shape semantics, where
  ndim 0 is a scalar;
* ``0xF993FAC8`` (V1): as V2 without the storage type;
* anything else: the oldest layout, where that ``u32`` is already the ndim and the dims are
  ``u32``, followed by context, type flag and data as above.

:func:`save` writes V2, or V3 when an array is 0-d (only V3 can hold a scalar), as MXNet 1.9.1
does. :func:`load` reads every layout above, and also the NumPy ``.npz`` archives that earlier
mxrs versions wrote (recognised by their zip signature). Sparse storage types are refused.
"""

from __future__ import annotations

import io
import os
import struct
import sys
import zipfile
from collections.abc import Sequence

import numpy as np

from .._bfloat16 import BFLOAT16
from ..base import MXNetError
from .ndarray import NDArray

__all__ = ["save", "load"]

_LIST_MAGIC = 0x112
_MAGIC_V1 = 0xF993FAC8
_MAGIC_V2 = 0xF993FAC9
_MAGIC_V3 = 0xF993FACA

_DENSE = 0
_SPARSE_NAMES = {1: "row_sparse", 2: "csr"}

# Type flags of MXNet's element types (mshadow's TypeFlag numbering).
_FLAG_TO_DTYPE: dict[int, np.dtype] = {
    0: np.dtype(np.float32),
    1: np.dtype(np.float64),
    2: np.dtype(np.float16),
    3: np.dtype(np.uint8),
    4: np.dtype(np.int32),
    5: np.dtype(np.int8),
    6: np.dtype(np.int64),
    7: np.dtype(np.bool_),
    8: np.dtype(np.int16),
    9: np.dtype(np.uint16),
    10: np.dtype(np.uint32),
    11: np.dtype(np.uint64),
    12: BFLOAT16,
}
_DTYPE_TO_FLAG = {dt: flag for flag, dt in _FLAG_TO_DTYPE.items()}

_ZIP_SIGNATURE = b"PK"


# ----------------------------------------------------------------------------------------------
# Writing


def save(
    fname: str | os.PathLike[str], data: NDArray | Sequence[NDArray] | dict[str, NDArray]
) -> None:
    """Write ``data`` (an NDArray, a list of NDArrays or a dict of str to NDArray) to ``fname``.

    The whole file is built in memory first, so a bad argument leaves no partial file.

    Raises
    ------
    TypeError
        When ``data`` is not an NDArray, a list/tuple of them or a dict of str to them.
    MXNetError
        When an array's dtype has no MXNet type flag.
    """
    names: list[str]
    if isinstance(data, NDArray):
        arrays: list[NDArray] = [data]
        names = []
    elif isinstance(data, dict):
        names = list(data.keys())
        arrays = list(data.values())
        for k in names:
            if not isinstance(k, str):
                raise TypeError(f"save expects str keys in a dict of NDArrays, got {type(k)}")
    elif isinstance(data, (list, tuple)):
        arrays = list(data)
        names = []
    else:
        raise TypeError("save expects an NDArray, a list of NDArrays or a dict of NDArrays")
    for a in arrays:
        if not isinstance(a, NDArray):
            raise TypeError(f"save expects NDArrays, got {type(a)}")
    # written beside the target and renamed over it: a reader (another worker of the job
    # saving the same file) sees the old file or the new one, never half of one
    path = os.fspath(fname)
    tmp = f"{path}.{os.getpid()}.tmp"
    try:
        with open(tmp, "wb") as f:
            f.write(_dumps(arrays, names))
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)


def _dumps(arrays: list[NDArray], names: list[str]) -> bytes:
    """Encode ``arrays`` (with ``names``, or none for a list) in MXNet's list format."""
    hosts = [a.asnumpy() for a in arrays]
    magic = _MAGIC_V3 if any(h.ndim == 0 for h in hosts) else _MAGIC_V2
    parts = [struct.pack("<QQQ", _LIST_MAGIC, 0, len(hosts))]
    for a, h in zip(arrays, hosts, strict=True):
        parts.append(_dump_array(h, a.context.device_typeid, a.context.device_id, magic))
    parts.append(struct.pack("<Q", len(names)))
    for name in names:
        raw = name.encode("utf-8")
        parts.append(struct.pack("<Q", len(raw)))
        parts.append(raw)
    return b"".join(parts)


def _dump_array(host: np.ndarray, dev_type: int, dev_id: int, magic: int) -> bytes:
    """Encode one dense array with array magic ``magic`` (V2 or V3)."""
    flag = _DTYPE_TO_FLAG.get(host.dtype)
    if flag is None:
        raise MXNetError(
            f"cannot save an array of dtype {host.dtype}: MXNet's NDArray format stores "
            f"only {', '.join(str(d) for d in _FLAG_TO_DTYPE.values())}"
        )
    head = struct.pack("<IiI", magic, _DENSE, host.ndim)
    dims = struct.pack(f"<{host.ndim}q", *host.shape)
    tail = struct.pack("<iii", dev_type, dev_id, flag)
    body = np.ascontiguousarray(host, dtype=host.dtype.newbyteorder("<")).tobytes()
    return head + dims + tail + body


# ----------------------------------------------------------------------------------------------
# Reading


def load(fname: str | os.PathLike[str]) -> list[np.ndarray] | dict[str, np.ndarray]:
    """Read a file of :func:`save` or of MXNet's ``nd.save``: a list or a dict of host arrays
    (``nd.load`` makes them NDArrays on the context asked for).

    Raises
    ------
    MXNetError
        When the file is truncated, is not an NDArray file, or holds sparse arrays or element
        types mxrs cannot represent; the message names the file.
    """
    with open(fname, "rb") as f:
        buf = f.read()
    if buf.startswith(_ZIP_SIGNATURE):
        return _load_npz(buf, fname)
    return _Reader(buf, os.fspath(fname)).read_file()


def _load_npz(
    buf: bytes, fname: str | os.PathLike[str]
) -> list[np.ndarray] | dict[str, np.ndarray]:
    """Read ``buf`` (from ``fname``): a NumPy ``.npz`` archive of an earlier mxrs ``nd.save``.

    Its members are ``d:<name>`` for a dict and ``l:<8-digit index>`` for a list.
    """
    try:
        with np.load(io.BytesIO(buf), allow_pickle=False) as z:
            keys = list(z.keys())
            if any(k.startswith("d:") for k in keys):
                return {k[2:]: z[k] for k in keys}
            if all(k.startswith("l:") for k in keys):
                return [z[k] for k in sorted(keys)]
    except (OSError, ValueError, EOFError, zipfile.BadZipFile) as e:
        raise MXNetError(f"{os.fspath(fname)}: corrupt .npz archive of NDArrays: {e}") from e
    raise MXNetError(f"{os.fspath(fname)}: .npz archive not written by mxrs.nd.save")


class _Reader:
    """Cursor over the bytes of an MXNet NDArray file; every read checks the bounds."""

    def __init__(self, buf: bytes, fname: str) -> None:
        self._buf = buf
        self._pos = 0
        self._fname = fname

    def _fail(self, what: str) -> MXNetError:
        return MXNetError(f"{self._fname}: not a valid MXNet NDArray file: {what}")

    def _take(self, n: int, what: str) -> bytes:
        left = len(self._buf) - self._pos
        if n > left:
            raise self._fail(
                f"file is truncated: {what} needs {n} bytes at offset {self._pos}, only {left} left"
            )
        out = self._buf[self._pos : self._pos + n]
        self._pos += n
        return out

    def _unpack(self, fmt: str, what: str) -> tuple[int, ...]:
        return struct.unpack("<" + fmt, self._take(struct.calcsize("<" + fmt), what))

    def read_file(self) -> list[np.ndarray] | dict[str, np.ndarray]:
        """Parse the whole buffer: a list, or a dict when the file names its arrays."""
        if len(self._buf) < 8:
            raise self._fail(f"file is truncated: {len(self._buf)} bytes, no header")
        (magic,) = self._unpack("Q", "list magic")
        if magic != _LIST_MAGIC:
            raise self._fail(f"unknown magic number 0x{magic:x} (expected 0x{_LIST_MAGIC:x})")
        self._unpack("Q", "reserved header field")
        (count,) = self._unpack("Q", "array count")
        # Each array takes at least 4 bytes, which bounds a garbage count before any loop.
        if count * 4 > len(self._buf) - self._pos:
            raise self._fail(f"file is truncated: it claims {count} arrays")
        hosts = [self._read_array(i) for i in range(count)]
        (n_names,) = self._unpack("Q", "name count")
        if n_names not in (0, count):
            raise self._fail(f"{n_names} names for {count} arrays")
        names = []
        for i in range(n_names):
            (length,) = self._unpack("Q", f"length of name #{i}")
            raw = self._take(length, f"name #{i}")
            try:
                names.append(raw.decode("utf-8"))
            except UnicodeDecodeError as e:
                raise self._fail(f"name #{i} is not UTF-8: {e}") from e
        if self._pos != len(self._buf):
            raise self._fail(f"{len(self._buf) - self._pos} unexpected bytes after the names")
        if n_names:
            return dict(zip(names, hosts, strict=True))
        return hosts

    def _read_array(self, index: int) -> np.ndarray:
        """Parse array ``index`` (for messages) in any of the layouts the module describes."""
        what = f"array #{index}"
        (magic,) = self._unpack("I", f"magic of {what}")
        if magic in (_MAGIC_V2, _MAGIC_V3):
            (stype,) = self._unpack("i", f"storage type of {what}")
            if stype in _SPARSE_NAMES:
                raise MXNetError(
                    f"{self._fname}: {what} has {_SPARSE_NAMES[stype]} storage; sparse arrays "
                    "are not supported yet by mxrs (convert them with .tostype('default') in "
                    "MXNet before saving)"
                )
            if stype != _DENSE:
                raise self._fail(f"{what} has unknown storage type {stype}")
            (ndim,) = self._unpack("i" if magic == _MAGIC_V3 else "I", f"ndim of {what}")
            shape = self._read_dims(ndim, "q", what)
            no_data = ndim < 0 if magic == _MAGIC_V3 else ndim == 0
        elif magic == _MAGIC_V1:
            (ndim,) = self._unpack("I", f"ndim of {what}")
            shape = self._read_dims(ndim, "q", what)
            no_data = ndim == 0
        else:  # the oldest layout: the first word is already the ndim, dims are u32
            shape = self._read_dims(magic, "I", what)
            no_data = magic == 0
        if no_data:
            raise self._fail(
                f"{what} is an empty MXNet NDArray without shape or data, which mxrs cannot "
                "represent"
            )
        self._unpack("ii", f"context of {what}")
        (flag,) = self._unpack("i", f"type flag of {what}")
        dtype = _FLAG_TO_DTYPE.get(flag)
        if dtype is None:
            raise self._fail(f"{what} has type flag {flag}: unknown")
        size = 1
        for d in shape:
            size *= d
        raw = self._take(size * dtype.itemsize, f"data of {what} {shape} {dtype}")
        host = np.frombuffer(raw, dtype=dtype.newbyteorder("<")).reshape(shape)
        if sys.byteorder != "little":
            host = host.astype(dtype)
        return host

    def _read_dims(self, ndim: int, code: str, what: str) -> tuple[int, ...]:
        """Read ``ndim`` dims of struct code ``code``; reject impossible shapes."""
        if ndim <= 0:
            return ()
        if ndim > 32:
            raise self._fail(f"{what} claims {ndim} dimensions")
        dims = self._unpack(f"{ndim}{code}", f"shape of {what}")
        if any(d < 0 for d in dims):
            raise self._fail(f"{what} has an unknown or negative dimension in shape {dims}")
        return tuple(int(d) for d in dims)
