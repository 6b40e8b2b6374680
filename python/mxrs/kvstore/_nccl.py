"""Sums of one process's GPU arrays through NCCL (``cupy.cuda.nccl``).

The ``device`` and ``dist_device_sync`` stores sum a key's values from several GPUs on one of
them: one NCCL reduce over a communicator of those GPUs (created once per set of devices and
kept), on each device's current stream, instead of a peer copy and an add per device. Where
NCCL is missing, or the values share a device, the caller copies and adds instead.
"""

from __future__ import annotations

from typing import Any

import numpy

__all__ = ["available", "reduce_to"]

_comms: dict[tuple[int, ...], list[Any]] = {}
_state: dict[str, Any] = {}


def _nccl() -> Any:
    if "module" not in _state:
        try:
            from cupy.cuda import nccl

            nccl.get_version()
            _state["module"] = nccl
        except Exception:  # ImportError, or a CuPy built without NCCL
            _state["module"] = None
    return _state["module"]


def available() -> bool:
    """Whether NCCL can sum GPU arrays in this process."""
    return _nccl() is not None


def _dtype_code(nccl: Any, dtype: Any) -> int | None:
    return {
        "float32": nccl.NCCL_FLOAT32,
        "float16": nccl.NCCL_FLOAT16,
        "float64": nccl.NCCL_FLOAT64,
        "int32": nccl.NCCL_INT32,
        "int64": nccl.NCCL_INT64,
        "uint8": nccl.NCCL_UINT8,
        "int8": nccl.NCCL_INT8,
    }.get(numpy.dtype(dtype).name)


def reduce_to(arrays: list[Any], devices: list[int], root: int) -> Any | None:
    """The sum of CuPy ``arrays`` (one per distinct device of ``devices``, same shape and dtype)
    as a new array on device ``root`` (one of ``devices``); None where NCCL cannot do it."""
    nccl = _nccl()
    if nccl is None or len(set(devices)) != len(devices) or root not in devices:
        return None
    code = _dtype_code(nccl, arrays[0].dtype)
    if code is None:
        return None
    import cupy

    key = tuple(devices)
    comms = _comms.get(key)
    if comms is None:
        comms = _comms[key] = nccl.NcclCommunicator.initAll(list(devices))
    rank = devices.index(root)
    srcs = []
    for dev, a in zip(devices, arrays, strict=True):
        with cupy.cuda.Device(dev):
            srcs.append(cupy.ascontiguousarray(a))
    with cupy.cuda.Device(root):
        out = cupy.empty_like(srcs[rank])
    nccl.groupStart()
    try:
        for comm, dev, src in zip(comms, devices, srcs, strict=True):
            with cupy.cuda.Device(dev):
                recv = out if dev == root else src
                stream = cupy.cuda.get_current_stream().ptr
                comm.reduce(
                    src.data.ptr, recv.data.ptr, src.size, code, nccl.NCCL_SUM, rank, stream
                )
    finally:
        nccl.groupEnd()
    return out
