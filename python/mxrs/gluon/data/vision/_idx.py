"""Reading and writing gzip-compressed IDX files, the format MNIST and Fashion-MNIST ship in.

An IDX file is a big-endian header, two zero bytes, a type code (0x08 for unsigned bytes) and
the number of dimensions, then one 32-bit size per dimension, then the values in C order.
MNIST's image files have magic number 2051 (uint8, 3 dimensions: count, rows, columns) and its
label files 2049 (uint8, 1 dimension).
"""

import gzip
import os
import struct
import tempfile
import zlib

import numpy as np

from ....base import MXNetError

IMAGES_MAGIC = 2051
LABELS_MAGIC = 2049
_UBYTE = 0x08


def read_idx(path, magic):
    """Return the uint8 array stored in the gzip'd IDX file ``path``.

    Parameters
    ----------
    path : str
        A ``.gz`` file.
    magic : int
        The magic number the file must start with (:data:`IMAGES_MAGIC` or
        :data:`LABELS_MAGIC`).

    Raises
    ------
    MXNetError
        When the file is not gzip, has another magic number, or holds more or fewer values
        than its header promises.
    """
    try:
        with gzip.open(path, "rb") as f:
            raw = f.read()
    except (OSError, EOFError, zlib.error) as err:
        raise MXNetError(f"{path} is not a readable gzip file: {err}") from None
    if len(raw) < 4:
        raise MXNetError(f"{path} is too short to be an IDX file ({len(raw)} bytes)")
    (found,) = struct.unpack(">I", raw[:4])
    if found != magic:
        raise MXNetError(
            f"{path} has IDX magic number {found}, expected {magic} "
            f"({'images' if magic == IMAGES_MAGIC else 'labels'} file)"
        )
    ndim = magic & 0xFF
    header = 4 + 4 * ndim
    if len(raw) < header:
        raise MXNetError(f"{path} ends inside its IDX header")
    shape = struct.unpack(f">{ndim}I", raw[4:header])
    expected = int(np.prod(shape, dtype=np.int64))
    if len(raw) - header != expected:
        raise MXNetError(
            f"{path}: the IDX header promises shape {shape} ({expected} values) "
            f"but the file holds {len(raw) - header}"
        )
    return np.frombuffer(raw, dtype=np.uint8, offset=header).reshape(shape)


def write_idx(path, array):
    """Write a uint8 array to ``path`` as a gzip'd IDX file, atomically and reproducibly.

    The gzip header records the file name without ``.gz`` and a zero time stamp, so equal
    arrays always give byte-identical files.

    Parameters
    ----------
    path : str
        Destination, ending in ``.gz``.
    array : numpy.ndarray
        uint8 values, 1 to 255 dimensions.
    """
    array = np.ascontiguousarray(array)
    if array.dtype != np.uint8:
        raise MXNetError(f"write_idx stores uint8 arrays only, got {array.dtype}")
    header = struct.pack(f">I{array.ndim}I", (_UBYTE << 8) | array.ndim, *array.shape)
    folder = os.path.dirname(os.path.abspath(path))
    name = os.path.basename(path)
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=f".{name}.", suffix=".tmp")
    try:
        with (
            os.fdopen(fd, "wb") as raw,
            gzip.GzipFile(
                filename=name[:-3] if name.endswith(".gz") else name,
                mode="wb",
                fileobj=raw,
                compresslevel=9,
                mtime=0,
            ) as f,
        ):
            f.write(header)
            f.write(array.tobytes())
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
