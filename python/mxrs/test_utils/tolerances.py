"""Default dtypes, tolerances and finite-difference steps of the comparison helpers, chosen by
the dtype (and device) of the data compared, as MXNet 1.9.1's ``test_utils`` chooses them."""

from __future__ import annotations

import numbers
import os
from typing import Any

import numpy as np

__all__ = [
    "default_dtype",
    "default_rtols",
    "default_atols",
    "default_numeric_eps",
    "effective_dtype",
    "get_tolerance",
    "get_tols",
    "get_atol",
    "get_rtol",
    "get_etol",
]

_FLOAT64 = np.dtype(np.float64)
_EXACT = (np.bool_, np.int8, np.uint8, np.int32, np.uint32, np.int64, np.uint64)


def default_dtype() -> type:
    """The dtype test data is made in when none is named: ``numpy.float32``."""
    return np.float32


def default_rtols() -> dict[np.dtype, float]:
    """Relative tolerances by dtype: 1e-2 for float16, 1e-4 for float32, 1e-5 for float64,
    0 (exact) for booleans and the 8-, 32- and 64-bit integers."""
    table: dict[np.dtype, float] = {
        np.dtype(np.float16): 1e-2,
        np.dtype(np.float32): 1e-4,
        np.dtype(np.float64): 1e-5,
    }
    table.update({np.dtype(t): 0 for t in _EXACT})
    return table


def default_atols() -> dict[np.dtype, float]:
    """Absolute tolerances by dtype: 1e-1 for float16, 1e-3 for float32, 1e-20 for float64,
    0 (exact) for booleans and the 8-, 32- and 64-bit integers."""
    table: dict[np.dtype, float] = {
        np.dtype(np.float16): 1e-1,
        np.dtype(np.float32): 1e-3,
        np.dtype(np.float64): 1e-20,
    }
    table.update({np.dtype(t): 0 for t in _EXACT})
    return table


def default_numeric_eps() -> dict[np.dtype, float]:
    """Finite-difference steps by dtype: 2**-6 (float16), 2**-9 (float32), 2**-14 (float64).
    Powers of two, so that adding the step to an input drops no bits of the step."""
    return {
        np.dtype(np.float16): 1.0 / 2**6,
        np.dtype(np.float32): 1.0 / 2**9,
        np.dtype(np.float64): 1.0 / 2**14,
    }


def effective_dtype(dat: Any) -> np.dtype:
    """The precision ``dat``'s values were computed in, for choosing comparison tolerances:
    float16 for float32 data on a GPU of compute capability 8.0 or later, where matrix
    products and convolutions round their inputs to TF32 (unless ``MXRS_CUDNN_TF32=0`` or
    ``NVIDIA_TF32_OVERRIDE=0``); otherwise ``dat``'s own dtype.

    Parameters
    ----------
    dat : numpy.ndarray or NDArray
        Anything with a ``dtype`` (and, for device data, a ``ctx``).
    """
    dtype = np.dtype(dat.dtype)
    ctx = getattr(dat, "ctx", None)
    if dtype != np.float32 or ctx is None or getattr(ctx, "device_type", "cpu") != "gpu":
        return dtype
    off = ("0", "false", "no")
    if os.environ.get("MXRS_CUDNN_TF32", "1").strip() in off:
        return dtype
    if os.environ.get("NVIDIA_TF32_OVERRIDE") == "0":
        return dtype
    try:
        import cupy

        major = int(cupy.cuda.Device(ctx.device_id).compute_capability) // 10
    except Exception:  # no CuPy or no such device: nothing rounds to TF32
        return dtype
    return np.dtype(np.float16) if major >= 8 else dtype


def _with_dtype(dat: Any) -> Any:
    """``dat`` itself if it has a dtype, else as a NumPy array (numbers, lists)."""
    return dat if hasattr(dat, "dtype") else np.asarray(dat)


def get_tolerance(dat: Any, tol: Any, default_tol: dict) -> float:
    """The tolerance for comparing ``dat``.

    Parameters
    ----------
    dat : numpy.ndarray or NDArray
        The data compared: its :func:`effective_dtype` picks the entry.
    tol : float, dict of dtype to float, or None
        A number is returned as it is; a dict is looked up first, then ``default_tol``.
    default_tol : dict of dtype to float
        E.g. :func:`default_rtols`; a dtype found in neither is compared exactly (0).

    Returns
    -------
    float
    """
    if isinstance(tol, numbers.Number):
        return tol  # type: ignore[return-value]
    dtype = effective_dtype(_with_dtype(dat))
    tol = {} if tol is None else tol
    if dtype in tol:
        return tol[dtype]
    return default_tol.get(dtype, 0)


def get_tols(x: Any, y: Any, rtol: Any, atol: Any) -> tuple[float, float]:
    """The ``(rtol, atol)`` for comparing ``x`` with ``y``: each given number as it is,
    otherwise the larger of the two data's tolerances (see :func:`get_tolerance`)."""
    if isinstance(x, numbers.Number):
        x = np.array(x)
    if isinstance(y, numbers.Number):
        y = np.array(y)
    rtols, atols = default_rtols(), default_atols()
    return (
        max(get_tolerance(x, rtol, rtols), get_tolerance(y, rtol, rtols)),
        max(get_tolerance(x, atol, atols), get_tolerance(y, atol, atols)),
    )


def get_atol(atol: float | None = None, dtype: Any = _FLOAT64) -> float:
    """``atol``, or when None the default absolute tolerance of ``dtype`` (float64: 1e-20)."""
    return default_atols()[np.dtype(dtype)] if atol is None else atol


def get_rtol(rtol: float | None = None, dtype: Any = _FLOAT64) -> float:
    """``rtol``, or when None the default relative tolerance of ``dtype`` (float64: 1e-5)."""
    return default_rtols()[np.dtype(dtype)] if rtol is None else rtol


def get_etol(etol: float | None = None) -> float:
    """``etol`` (the share of elements allowed to differ), or 0 when None."""
    return 0 if etol is None else etol
