"""DLPack: sharing an NDArray's memory with other libraries (PyTorch, JAX, CuPy...) without a
copy, as MXNet's ``to_dlpack_for_read``, ``to_dlpack_for_write`` and ``from_dlpack`` do."""

from __future__ import annotations

import ctypes
from typing import Any

import numpy as np

from ..base import MXNetError
from ..context import Context
from .ndarray import NDArray, _wrap

__all__ = ["to_dlpack_for_read", "to_dlpack_for_write", "from_dlpack"]

_CPU, _CUDA = 1, 2  # DLPack's device types


def _capsule_of(data: NDArray) -> Any:
    data.wait_to_read()
    raw = data._data
    if not hasattr(raw, "__dlpack__"):
        raise MXNetError(f"{type(raw).__name__} arrays cannot be shared through DLPack")
    return raw.__dlpack__()


def to_dlpack_for_read(data: NDArray) -> Any:
    """A DLPack capsule (``"dltensor"``) of ``data``'s memory, once pending writes are done;
    its consumer reads the very same memory."""
    return _capsule_of(data)


def to_dlpack_for_write(data: NDArray) -> Any:
    """A DLPack capsule of ``data``'s memory for its consumer to write into: writes show in
    ``data``."""
    return _capsule_of(data)


class _Device(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class _DType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _Tensor(ctypes.Structure):
    """DLPack's DLTensor, the head of the DLManagedTensor a ``"dltensor"`` capsule holds."""

    _fields_ = [
        ("data", ctypes.c_void_p),
        ("device", _Device),
        ("ndim", ctypes.c_int32),
        ("dtype", _DType),
        ("shape", ctypes.POINTER(ctypes.c_int64)),
        ("strides", ctypes.POINTER(ctypes.c_int64)),
        ("byte_offset", ctypes.c_uint64),
    ]


#: DLPack's type codes: int, uint, float, bool.
_KINDS = {0: "i", 1: "u", 2: "f", 6: "b"}


class _Producer:
    """Hands CuPy a capsule through the ``__dlpack__`` protocol it consumes."""

    def __init__(self, capsule: Any, device: tuple[int, int]) -> None:
        self.capsule, self.device = capsule, device

    def __dlpack__(self, stream: Any = None, **kwargs: Any) -> Any:
        return self.capsule

    def __dlpack_device__(self) -> tuple[int, int]:
        return self.device


def _tensor_of(capsule: Any) -> _Tensor:
    get = ctypes.pythonapi.PyCapsule_GetPointer
    get.restype, get.argtypes = ctypes.c_void_p, [ctypes.py_object, ctypes.c_char_p]
    try:
        ptr = get(capsule, b"dltensor")
    except ValueError:
        raise MXNetError(
            f"from_dlpack: expected a DLPack capsule (named 'dltensor') or an array with "
            f"__dlpack__, got {type(capsule).__name__}"
        ) from None
    return _Tensor.from_address(ptr)


def _host_array(capsule: Any, t: _Tensor) -> np.ndarray:
    """A writable NumPy array on a CPU tensor's memory; it keeps the capsule (whose deleter
    frees the memory) alive."""
    kind = _KINDS.get(t.dtype.code)
    if kind is None or t.dtype.lanes != 1:
        raise MXNetError(f"from_dlpack: DLPack type code {t.dtype.code} is not supported")
    dtype = np.dtype(f"{kind}{t.dtype.bits // 8}") if kind != "b" else np.dtype(bool)
    shape = tuple(t.shape[i] for i in range(t.ndim))
    if t.strides:
        steps = [t.strides[i] for i in range(t.ndim)]
    else:  # no strides: C order
        steps = [int(np.prod(shape[i + 1 :])) for i in range(t.ndim)]
    strides = tuple(st * dtype.itemsize for st in steps)
    spans = ((n - 1) * abs(st) for n, st in zip(shape, strides, strict=True) if n)
    extent = dtype.itemsize + sum(spans)
    buf = (ctypes.c_char * max(int(t.byte_offset) + extent, 1)).from_address(t.data)
    buf._mxrs_capsule = capsule  # the memory lives as long as the array
    view = memoryview(buf).cast("B")
    return np.ndarray(shape, dtype, buffer=view, offset=int(t.byte_offset), strides=strides)


def from_dlpack(dlpack: Any) -> NDArray:
    """An NDArray on the memory of a DLPack capsule (or of an object with ``__dlpack__``), no
    copy, writable: on the CPU as ``cpu(0)``, on a CUDA device as ``gpu(id)``.

    Raises
    ------
    MXNetError
        For something that is no DLPack capsule, a type DLPack has and NumPy lacks, or memory
        of another kind of device.
    """
    capsule = dlpack.__dlpack__() if hasattr(dlpack, "__dlpack__") else dlpack
    t = _tensor_of(capsule)
    kind, dev = t.device.device_type, t.device.device_id
    if kind == _CPU:
        return _wrap(_host_array(capsule, t), Context("cpu", 0))
    if kind == _CUDA:
        import cupy

        return _wrap(cupy.from_dlpack(_Producer(capsule, (kind, dev))), Context("gpu", dev))
    raise MXNetError(f"from_dlpack: memory of DLPack device type {kind} is not supported")
