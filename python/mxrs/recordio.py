"""RecordIO (``mx.recordio``): files of binary records, read in order or by key.

The format is MXNet 1.9.1's, byte for byte. Each record is stored as one or more parts; a part
is the magic word ``0xced7230a``, a word ``lrec`` (the part's flag in its top 3 bits, its length
in the low 29) and the part's bytes, padded with zeros to a multiple of 4. A record whose bytes
hold the magic word at an offset that is a multiple of 4 is cut there, the magic word itself
left out: flag 0 marks a whole record, 1 its first part, 2 a middle part, 3 its last part.
The words are little-endian.

``pack``/``unpack`` put an ``IRHeader`` (flag, label, id, id2: ``uint32, float32, uint64,
uint64``) in front of a record's payload; a header with a list of labels carries their count in
``flag`` and the labels (float32) right after it. ``pack_img``/``unpack_img`` encode and decode
the payload as an image with OpenCV (``cv2``).
"""

from __future__ import annotations

import numbers
import os
import struct
from collections import namedtuple
from multiprocessing import current_process
from typing import IO, Any

import numpy as np

from .base import MXNetError

__all__ = [
    "IRHeader",
    "MXIndexedRecordIO",
    "MXRecordIO",
    "pack",
    "pack_img",
    "unpack",
    "unpack_img",
]

#: The word that starts every part of a record.
MAGIC = 0xCED7230A
_MAGIC_BYTES = struct.pack("<I", MAGIC)
_HEAD = struct.Struct("<II")
#: Records must be shorter than this (the length field has 29 bits).
MAX_RECORD_BYTES = 1 << 29


def encode_lrec(cflag: int, length: int) -> int:
    """The ``lrec`` word of a part: ``cflag`` in the top 3 bits, ``length`` in the low 29."""
    return (cflag << 29) | length


def decode_lrec(lrec: int) -> tuple[int, int]:
    """``(cflag, length)`` of an ``lrec`` word."""
    return (lrec >> 29) & 7, lrec & (MAX_RECORD_BYTES - 1)


def padded(length: int) -> int:
    """``length`` rounded up to a multiple of 4."""
    return (length + 3) & ~3


def encode_record(buf: bytes | bytearray | memoryview) -> bytes:
    """The bytes that store ``buf`` as one record: its parts, each with magic word and
    ``lrec``, cut at every magic word at an offset that is a multiple of 4, and padding."""
    data = memoryview(buf).cast("B")
    n = len(data)
    if n >= MAX_RECORD_BYTES:
        raise MXNetError(f"RecordIO: a record must be shorter than 2**29 bytes, got {n}")
    out = bytearray()
    raw = data.tobytes()
    start = 0  # first byte of the part being cut
    at = raw.find(_MAGIC_BYTES)
    while at != -1:
        if at % 4 == 0:
            out += _HEAD.pack(MAGIC, encode_lrec(1 if start == 0 else 2, at - start))
            out += raw[start:at]
            start = at + 4
            at = raw.find(_MAGIC_BYTES, start)
        else:
            at = raw.find(_MAGIC_BYTES, at + 1)
    out += _HEAD.pack(MAGIC, encode_lrec(3 if start else 0, n - start))
    out += raw[start:]
    out += bytes(padded(n) - n)
    return bytes(out)


def read_record(read: Any, where: str) -> bytes | None:
    """One record through ``read(nbytes) -> bytes`` (positioned at a record's first part);
    ``None`` at the end of the data. ``where`` names the file in error messages."""
    out = bytearray()
    first = True
    while True:
        head = read(8)
        if not head and first:
            return None
        if len(head) != 8:
            raise MXNetError(f"Invalid RecordIO file {where}: it ends inside a record header")
        magic, lrec = _HEAD.unpack(head)
        if magic != MAGIC:
            raise MXNetError(
                f"Invalid RecordIO file {where}: expected the magic word 0x{MAGIC:08x}, "
                f"found 0x{magic:08x}"
            )
        cflag, length = decode_lrec(lrec)
        body = read(padded(length))
        if len(body) != padded(length):
            raise MXNetError(f"Invalid RecordIO file {where}: it ends inside a record")
        out += body[:length]
        first = False
        if cflag in (0, 3):
            return bytes(out)
        out += _MAGIC_BYTES


def _uri(uri: Any) -> str:
    if isinstance(uri, bytes):
        return uri.decode("utf-8")
    return os.fspath(uri)


class MXRecordIO:
    """Reads or writes a RecordIO file, one record after the other.

    Parameters
    ----------
    uri : str
        Path of the record file.
    flag : str
        ``'w'`` to write (the file is truncated), ``'r'`` to read.

    Examples
    --------
    >>> record = mx.recordio.MXRecordIO('tmp.rec', 'w')
    >>> for i in range(5):
    ...     record.write(b'record_%d' % i)
    >>> record.close()
    >>> record = mx.recordio.MXRecordIO('tmp.rec', 'r')
    >>> record.read()
    b'record_0'
    """

    def __init__(self, uri: Any, flag: str) -> None:
        self.uri = _uri(uri)
        self.handle: IO[bytes] | None = None
        self.flag = flag
        self.pid: int | None = None
        self.is_open = False
        self.writable = False
        self.open()

    def open(self) -> None:
        """Open the record file (for writing it is truncated)."""
        if self.flag == "w":
            mode, self.writable = "wb", True
        elif self.flag == "r":
            mode, self.writable = "rb", False
        else:
            raise ValueError(f"Invalid flag {self.flag}")
        try:
            self.handle = open(self.uri, mode)  # noqa: SIM115 (held until close)
        except OSError as err:
            what = "writing" if self.writable else "reading"
            raise MXNetError(f"MXRecordIO: cannot open {self.uri} for {what}: {err}") from err
        self.pid = current_process().pid
        self.is_open = True

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:  # noqa: BLE001 (an interpreter shutting down may have lost modules)
            pass

    def __getstate__(self) -> dict[str, Any]:
        """Pickling closes the file; the copy reopens it if it was open (as MXNet 1.9.1 does,
        so a copy sent to another process opens its own)."""
        is_open = self.is_open
        self.close()
        d = dict(self.__dict__)
        d["is_open"] = is_open
        d["handle"] = None
        return d

    def __setstate__(self, d: dict[str, Any]) -> None:
        """Restore a pickled record file, reopening it if it was open."""
        self.__dict__ = d
        is_open = d["is_open"]
        self.is_open = False
        self.handle = None
        if is_open:
            self.open()

    def _check_pid(self, allow_reset: bool = False) -> None:
        """Refuse to go on in another process than the one that opened the file, or, with
        ``allow_reset``, reopen the file in this one."""
        if self.pid != current_process().pid:
            if allow_reset:
                self.reset()
            elif not self.is_open:
                raise RuntimeError(f"MXRecordIO: {self.uri} is closed")
            else:
                raise RuntimeError("Forbidden operation in multiple processes")

    def close(self) -> None:
        """Close the record file."""
        if not self.is_open:
            return
        if self.handle is not None:
            self.handle.close()
            self.handle = None
        self.is_open = False
        self.pid = None

    def reset(self) -> None:
        """Go back to the first record (reopens the file; a file opened with ``'w'`` is
        truncated to empty)."""
        self.close()
        self.open()

    def write(self, buf: bytes | bytearray | memoryview) -> None:
        """Append ``buf`` (bytes) as a record."""
        if not self.writable:
            raise MXNetError(f"MXRecordIO: {self.uri} was opened for reading, not writing")
        if isinstance(buf, str):
            raise TypeError("MXRecordIO.write: buf must be bytes, not str")
        self._check_pid(allow_reset=False)
        assert self.handle is not None
        self.handle.write(encode_record(buf))

    def read(self) -> bytes | None:
        """The next record as bytes, or ``None`` after the last."""
        if self.writable:
            raise MXNetError(f"MXRecordIO: {self.uri} was opened for writing, not reading")
        self._check_pid(allow_reset=False)
        assert self.handle is not None
        return read_record(self.handle.read, self.uri)

    def tell(self) -> int:
        """The position in the file, in bytes: where the next record is written (or read)."""
        if not self.is_open or self.handle is None:
            raise MXNetError(f"MXRecordIO: {self.uri} is closed")
        return self.handle.tell()


class MXIndexedRecordIO(MXRecordIO):
    """Reads or writes a RecordIO file with an index file, for reading records by key.

    The index file has a line ``key<TAB>position`` per record, the position being the byte
    offset of the record in the record file.

    Parameters
    ----------
    idx_path : str
        Path of the index file.
    uri : str
        Path of the record file.
    flag : str
        ``'w'`` to write, ``'r'`` to read.
    key_type : type, default int
        The type of the keys (applied to those read from the index file).

    Examples
    --------
    >>> record = mx.recordio.MXIndexedRecordIO('tmp.idx', 'tmp.rec', 'w')
    >>> for i in range(5):
    ...     record.write_idx(i, b'record_%d' % i)
    >>> record.close()
    >>> record = mx.recordio.MXIndexedRecordIO('tmp.idx', 'tmp.rec', 'r')
    >>> record.read_idx(3)
    b'record_3'
    """

    def __init__(self, idx_path: Any, uri: Any, flag: str, key_type: Any = int) -> None:
        self.idx_path = _uri(idx_path)
        self.idx: dict[Any, int] = {}
        self.keys: list[Any] = []
        self.key_type = key_type
        self.fidx: IO[str] | None = None
        super().__init__(uri, flag)

    def open(self) -> None:
        """Open the record file and the index file (reading the index)."""
        super().open()
        self.idx = {}
        self.keys = []
        try:
            self.fidx = open(self.idx_path, self.flag)  # noqa: SIM115 (held until close)
        except OSError as err:
            super().close()
            raise MXNetError(
                f"MXIndexedRecordIO: cannot open the index file {self.idx_path}: {err}"
            ) from err
        if not self.writable:
            for n, line in enumerate(self.fidx, 1):
                fields = line.strip().split("\t")
                if fields == [""]:
                    continue
                if len(fields) < 2:
                    raise MXNetError(
                        f"MXIndexedRecordIO: line {n} of {self.idx_path} is not key<TAB>position"
                    )
                key = self.key_type(fields[0])
                self.idx[key] = int(fields[1])
                self.keys.append(key)

    def close(self) -> None:
        """Close the record file and the index file."""
        if not self.is_open:
            return
        super().close()
        if self.fidx is not None:
            self.fidx.close()

    def __getstate__(self) -> dict[str, Any]:
        """Pickling closes the files; the copy reopens them if they were open."""
        d = super().__getstate__()
        d["fidx"] = None
        return d

    def seek(self, idx: Any) -> None:
        """Move the read position to the record with key ``idx``."""
        if self.writable:
            raise MXNetError(f"MXIndexedRecordIO: {self.uri} was opened for writing, not reading")
        self._check_pid(allow_reset=True)
        try:
            pos = self.idx[idx]
        except KeyError:
            raise KeyError(
                f"MXIndexedRecordIO: no record with key {idx!r} in {self.idx_path}"
            ) from None
        assert self.handle is not None
        self.handle.seek(pos)

    def read_idx(self, idx: Any) -> bytes | None:
        """The record with key ``idx``."""
        self.seek(idx)
        return self.read()

    def write_idx(self, idx: Any, buf: bytes | bytearray | memoryview) -> None:
        """Append ``buf`` as a record with key ``idx``."""
        key = self.key_type(idx)
        pos = self.tell()
        self.write(buf)
        assert self.fidx is not None
        self.fidx.write(f"{key}\t{pos}\n")
        self.idx[key] = pos
        self.keys.append(key)


IRHeader = namedtuple("HEADER", ["flag", "label", "id", "id2"])  # type: ignore[name-match]
IRHeader.__doc__ = """The header ``pack`` puts in front of a record (``HEADER`` namedtuple).

Parameters
----------
flag : int
    Free for the user when ``label`` is a number; the number of labels otherwise.
label : float or array of float
    The record's label(s).
id : int
    The record's id (usually unique).
id2 : int
    Higher bits of the id; usually 0.
"""

_IR_FORMAT = "<IfQQ"
_IR_SIZE = struct.calcsize(_IR_FORMAT)


def pack(header: Any, s: bytes | bytearray | memoryview) -> bytes:
    """Put ``header`` (an ``IRHeader`` or a 4-tuple) in front of the bytes ``s``.

    A number as ``header.label`` is stored in the header (``flag`` 0); an array of labels is
    stored after it, as float32, with their count as ``flag``.

    Examples
    --------
    >>> header = mx.recordio.IRHeader(0, [1, 2, 3], 2574, 0)
    >>> packed = mx.recordio.pack(header, b'payload')
    """
    header = IRHeader(*header)
    if isinstance(s, str):
        raise TypeError("pack: s must be bytes, not str")
    payload = bytes(s)
    if isinstance(header.label, numbers.Number):
        header = header._replace(flag=0)
    else:
        label = np.asarray(header.label, dtype=np.float32)
        header = header._replace(flag=label.size, label=0)
        payload = label.tobytes() + payload
    return struct.pack(_IR_FORMAT, *header) + payload


def unpack(s: bytes | bytearray | memoryview) -> tuple[Any, bytes]:
    """Split a packed record into its ``IRHeader`` and payload.

    When the header's ``flag`` is positive, ``label`` becomes the array of ``flag`` float32
    labels stored after the header.

    Examples
    --------
    >>> header, payload = mx.recordio.unpack(packed)
    """
    s = bytes(s)
    if len(s) < _IR_SIZE:
        raise MXNetError(f"unpack: a packed record has at least {_IR_SIZE} bytes, got {len(s)}")
    header = IRHeader(*struct.unpack(_IR_FORMAT, s[:_IR_SIZE]))
    s = s[_IR_SIZE:]
    if header.flag > 0:
        if len(s) < 4 * header.flag:
            raise MXNetError(
                f"unpack: the header announces {header.flag} labels but the record holds "
                f"{len(s)} bytes after it"
            )
        header = header._replace(label=np.frombuffer(s, np.float32, header.flag))
        s = s[header.flag * 4 :]
    return header, s


def unpack_img(s: bytes | bytearray | memoryview, iscolor: int = -1) -> tuple[Any, np.ndarray]:
    """Split a packed record into its ``IRHeader`` and the image decoded from the payload.

    Parameters
    ----------
    s : bytes
        A record made by ``pack_img``.
    iscolor : int, default -1
        OpenCV's ``imread`` flag: -1 as stored (alpha kept), 0 grayscale, 1 BGR color.

    Returns
    -------
    header : IRHeader
    img : numpy.ndarray
        The image, ``(height, width)`` or ``(height, width, channels)``, BGR(A) uint8.
    """
    import cv2

    header, payload = unpack(s)
    img = cv2.imdecode(np.frombuffer(payload, dtype=np.uint8), iscolor)
    if img is None:
        raise MXNetError(f"unpack_img: OpenCV cannot decode the payload of record id {header.id}")
    return header, img


def pack_img(header: Any, img: np.ndarray, quality: int = 95, img_fmt: str = ".jpg") -> bytes:
    """Encode ``img`` with OpenCV and put ``header`` in front of it.

    Parameters
    ----------
    header : IRHeader
    img : numpy.ndarray
        A BGR(A) or grayscale uint8 image, as OpenCV holds images.
    quality : int, default 95
        JPEG quality (1-100), or PNG compression level (0-9).
    img_fmt : str, default '.jpg'
        The encoding: ``'.jpg'``/``'.jpeg'``, ``'.png'``, or another extension OpenCV knows.
    """
    import cv2

    params: list[int] = []
    if img_fmt.upper() in (".JPG", ".JPEG"):
        params = [cv2.IMWRITE_JPEG_QUALITY, quality]
    elif img_fmt.upper() == ".PNG":
        params = [cv2.IMWRITE_PNG_COMPRESSION, quality]
    ok, buf = cv2.imencode(img_fmt, np.asarray(img), params)
    if not ok:
        raise MXNetError(f"pack_img: OpenCV failed to encode the image as {img_fmt}")
    return pack(header, buf.tobytes())
