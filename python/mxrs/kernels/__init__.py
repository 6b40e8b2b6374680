"""Kernel providers: who computes an operator's arithmetic.

An operator of :mod:`mxrs.ndarray` checks its shapes and attributes, keeps MXNet's semantics
and records autograd once; the arithmetic of its forward and backward passes is a kernel that
a *provider* serves, chosen per call by the arrays' backend and dtype:

- ``numpy`` / ``cupy``: the portable kernels (:mod:`mxrs.kernels.portable`), written once for
  NumPy and CuPy: every operator, every dtype, CPU and GPU.
- ``onednn``: oneDNN's CPU primitives (:mod:`mxrs.kernels.onednn`), for float32 arrays on the
  CPU and the operators in :data:`ONEDNN_OPS`; a shape oneDNN has no implementation for falls
  back to the portable kernel.
- ``cuda``: cuDNN's convolutions and fused CUDA kernels (:mod:`mxrs.kernels.cuda`), for
  float32 and float16 arrays on GPU contexts and the operators in :data:`CUDA_OPS`.

This table is the one place that says which provider serves which operator. oneDNN comes from
the ``onednn-cpu-gomp`` package, a dependency of mxrs on x86-64 Linux; where it cannot load,
mxrs says why once and computes with NumPy. ``MXRS_KERNELS=numpy`` keeps oneDNN out and
``MXRS_KERNELS=onednn`` insists on it (an error where it cannot load); :func:`use` switches
within a process. oneDNN's threads follow ``OMP_NUM_THREADS``.

On GPUs ``MXRS_GPU_KERNELS=cupy`` keeps to the portable CuPy kernels, and
``MXRS_GPU_KERNELS=cuda`` insists on cuDNN (an error where the ``nvidia-cudnn-frontend``
package cannot load it); by default the CUDA provider runs, with cuDNN where it loads.
"""

from __future__ import annotations

import contextlib
import os
import warnings
from collections.abc import Iterator
from typing import Any

from ..base import KernelError
from . import portable
from ._types import (
    ActKernels,
    ConvGeometry,
    ConvKernels,
    DeconvKernels,
    DenseKernels,
    LeakyKernels,
    LrnKernels,
    NormKernels,
    PoolGeometry,
    PoolKernels,
    SoftmaxKernels,
)
from .cuda import CUDA_DTYPES, CudaKernels

__all__ = [
    "ONEDNN_OPS",
    "CUDA_OPS",
    "ActKernels",
    "ConvGeometry",
    "ConvKernels",
    "DeconvKernels",
    "DenseKernels",
    "LeakyKernels",
    "LrnKernels",
    "PoolGeometry",
    "PoolKernels",
    "NormKernels",
    "SoftmaxKernels",
    "select",
    "use",
    "provider_name",
    "describe",
]

#: Operators the oneDNN provider serves (float32 on the CPU).
ONEDNN_OPS = frozenset(
    {
        "Convolution",
        "Deconvolution",
        "FullyConnected",
        "Pooling",
        "BatchNorm",
        "Activation",
        "softmax",
        "log_softmax",
        "LRN",
        "LeakyReLU",
    }
)

#: Operators the CUDA provider serves (float32 and float16 on GPUs).
CUDA_OPS = frozenset({"Convolution", "Deconvolution", "Pooling", "BatchNorm", "Activation"})

_CHOICES = ("auto", "numpy", "onednn")
_GPU_CHOICES = ("auto", "cupy", "cuda")

_state: dict[str, Any] = {"choice": None, "onednn": None, "why": None, "gpu": None, "cuda": {}}


def _choice() -> str:
    if _state["choice"] is None:
        choice = os.environ.get("MXRS_KERNELS", "auto").strip().lower() or "auto"
        if choice not in _CHOICES:
            raise KernelError(f"MXRS_KERNELS={choice!r}: choose one of {', '.join(_CHOICES)}")
        _state["choice"] = choice
    return _state["choice"]


def _onednn() -> Any:
    """The oneDNN provider, loaded on first use; None where it is off or cannot load."""
    choice = _choice()
    if choice == "numpy":
        return None
    if _state["onednn"] is None and _state["why"] is None:
        from . import onednn

        try:
            _state["onednn"] = onednn.OnednnKernels()
        except KernelError as err:
            _state["why"] = str(err)
            if choice == "auto":
                warnings.warn(
                    f"mxrs computes with NumPy: {err} (MXRS_KERNELS=numpy silences this)",
                    RuntimeWarning,
                    stacklevel=4,
                )
    if _state["onednn"] is None and choice == "onednn":
        raise KernelError(f"MXRS_KERNELS=onednn, but {_state['why']}")
    return _state["onednn"]


def _gpu_choice() -> str:
    if _state["gpu"] is None:
        choice = os.environ.get("MXRS_GPU_KERNELS", "auto").strip().lower() or "auto"
        if choice not in _GPU_CHOICES:
            raise KernelError(
                f"MXRS_GPU_KERNELS={choice!r}: choose one of {', '.join(_GPU_CHOICES)}"
            )
        _state["gpu"] = choice
    return _state["gpu"]


def _cuda(backend: Any) -> Any:
    """The CUDA provider of ``backend``; None where ``MXRS_GPU_KERNELS=cupy``."""
    choice = _gpu_choice()
    if choice == "cupy":
        return None
    k = _state["cuda"].get(id(backend))
    new = k is None
    if k is None:
        k = _state["cuda"][id(backend)] = CudaKernels(backend)
    if k.cudnn() is None:
        if choice == "cuda":
            raise KernelError(f"MXRS_GPU_KERNELS=cuda, but {k.describe()['why']}")
        if new:
            warnings.warn(
                f"mxrs computes GPU convolutions with CuPy: {k.describe()['why']} "
                "(MXRS_GPU_KERNELS=cupy silences this)",
                RuntimeWarning,
                stacklevel=4,
            )
    return k


def select(op: str, backend: Any, dtype: Any) -> Any:
    """The provider computing ``op`` on arrays of ``backend`` (``mxrs._backend``) and ``dtype``."""
    if backend.name == "numpy":
        if op in ONEDNN_OPS and dtype == portable.FLOAT32:
            k = _onednn()
            if k is not None:
                return k
    elif op in CUDA_OPS and dtype in CUDA_DTYPES:
        k = _cuda(backend)
        if k is not None:
            return k
    return portable.for_backend(backend)


@contextlib.contextmanager
def use(name: str) -> Iterator[None]:
    """Compute with provider ``name`` inside the block: on the CPU ``'numpy'``, ``'onednn'`` or
    ``'auto'``; on GPUs ``'cupy'`` or ``'cuda'``.

    Raises
    ------
    KernelError
        For another name, ``'onednn'`` where oneDNN cannot load, or ``'cuda'`` where CuPy or
        cuDNN cannot.
    """
    if name in ("cupy", "cuda"):
        before_gpu = _gpu_choice()
        _state["gpu"] = name
        try:
            yield
        finally:
            _state["gpu"] = before_gpu
        return
    if name not in _CHOICES:
        choices = ", ".join(dict.fromkeys(_CHOICES + _GPU_CHOICES))
        raise KernelError(f"unknown kernel provider {name!r}: choose one of {choices}")
    before = _choice()
    _state["choice"] = name
    try:
        if name == "onednn":
            _onednn()
        yield
    finally:
        _state["choice"] = before


def provider_name(op: str = "Convolution") -> str:
    """The provider that serves ``op`` on float32 CPU arrays now: ``'onednn'`` or ``'numpy'``."""
    from .._backend import NUMPY

    return select(op, NUMPY, portable.FLOAT32).name


def describe() -> dict[str, Any]:
    """What computes: the provider of each oneDNN-capable operator, oneDNN's version and
    implementations seen so far, or why oneDNN is not in use; under ``'gpu'``, once GPU arrays
    have been computed on, whether cuDNN serves the convolutions (its version and graphs) or
    why not."""
    k = _onednn()
    info: dict[str, Any] = {"choice": _choice(), "provider": "onednn" if k else "numpy"}
    if k is not None:
        info.update(k.describe())
    elif _state["why"]:
        info["why"] = _state["why"]
    for gpu in _state["cuda"].values():  # once a GPU array has met a CUDA_OPS operator
        info["gpu"] = {"choice": _gpu_choice(), **gpu.describe()}
    return info
