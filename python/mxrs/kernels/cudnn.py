"""cuDNN's convolutions through NVIDIA's cuDNN Frontend graphs (``import cudnn``).

A convolution's forward pass, data gradient and weight gradient are each a one-node graph
(``conv_fprop``, ``conv_dgrad``, ``conv_wgrad``) over channels-first tensors, built once per
shape, element type and geometry (heuristics mode A, then the fallback list) and kept, at most
:data:`CACHE_SIZE` of them, least recently used first out. A deconvolution is the same three
graphs the other way round. Graphs run on CuPy's current stream, with their workspace taken
from CuPy's memory pool, and never wait for the device.

The frontend comes from the ``nvidia-cudnn-frontend`` package and loads ``libcudnn.so.9`` from
the ``nvidia-cudnn-cu13`` or ``nvidia-cudnn-cu12`` package (found through its installed files),
else from the loader's path. A geometry cuDNN has no engine for raises
:class:`~mxrs.base.KernelUnsupportedError` once, and the caller computes it another way.

float32 convolutions may use TF32 tensor cores, as cuDNN (and PyTorch, and MXNet with
``MXNET_CUDA_ALLOW_TENSOR_CORE``) do by default; ``MXRS_CUDNN_TF32=0`` keeps them to full
float32 arithmetic. float16 graphs compute in float32.
"""

from __future__ import annotations

import ctypes
import importlib
import importlib.metadata
import os
from collections import OrderedDict
from typing import Any

import numpy

from ..base import KernelError, KernelUnsupportedError

__all__ = ["CudnnConv", "CACHE_SIZE", "load"]

#: Graphs kept built at once (a ResNet-50 step uses about 150: three per convolution shape).
CACHE_SIZE = 1024

_LIB = "libcudnn.so.9"
_PACKAGES = ("nvidia-cudnn-cu13", "nvidia-cudnn-cu12")

#: Where the frontend was looked for and why it did not load (None before the first try).
_loaded: dict[str, Any] = {}


def _preload_library() -> None:
    """Load ``libcudnn.so.9`` from an installed ``nvidia-cudnn-cu*`` package, so the frontend
    finds it however pip laid the environment out (``--target``, layered environments)."""
    for dist_name in _PACKAGES:
        try:
            files = importlib.metadata.distribution(dist_name).files or []
        except importlib.metadata.PackageNotFoundError:
            continue
        for f in files:
            if f.name == _LIB:
                path = str(f.locate())
                if os.path.exists(path):
                    ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL)
                    return


def load() -> Any:
    """The ``cudnn`` module, imported once.

    Raises
    ------
    KernelError
        When the frontend package is missing or cannot load cuDNN; the message says which.
    """
    if "module" in _loaded:
        return _loaded["module"]
    if "why" in _loaded:
        raise KernelError(_loaded["why"])
    try:
        _preload_library()
        mod = importlib.import_module("cudnn")
        mod.backend_version()  # fails here, not at the first graph, when libcudnn is missing
    except Exception as err:  # ImportError, OSError, RuntimeError from the binding
        _loaded["why"] = (
            f"cuDNN Frontend is not usable ({type(err).__name__}: {err}); "
            "pip install nvidia-cudnn-frontend nvidia-cudnn-cu13"
        )
        raise KernelError(_loaded["why"]) from err
    _loaded["module"] = mod
    return mod


def _strides(shape: tuple[int, ...]) -> list[int]:
    out, acc = [], 1
    for s in reversed(shape):
        out.append(acc)
        acc *= s
    return out[::-1]


def _as4d(shape: tuple[int, ...]) -> tuple[int, ...]:
    """cuDNN's convolutions take 4-D or 5-D tensors: 1-D data gets a unit height."""
    return shape[:2] + (1,) + shape[2:] if len(shape) == 3 else shape


def _geom4d(vals: tuple[int, ...], fill: int) -> list[int]:
    return [fill, *vals] if len(vals) == 1 else list(vals)


class _Plan:
    """A built graph: its tensors' ids, workspace size, output shape and the handle it runs on."""

    __slots__ = ("graph", "ids", "workspace", "shape", "dtype", "handle", "device")

    def __init__(self, graph, ids, workspace, shape, dtype, handle, device):
        self.graph, self.ids, self.workspace = graph, ids, workspace
        self.shape, self.dtype, self.handle, self.device = shape, dtype, handle, device


class CudnnConv:
    """Convolution graphs of one process: forward, data gradient and weight gradient."""

    def __init__(self) -> None:
        self.cudnn = load()
        import cupy

        self._cupy = cupy
        self._dtypes = {
            numpy.dtype(numpy.float32): self.cudnn.data_type.FLOAT,
            numpy.dtype(numpy.float16): self.cudnn.data_type.HALF,
        }
        self._handles: dict[int, int] = {}
        self._streams: dict[int, int] = {}
        self._plans: OrderedDict[tuple, _Plan] = OrderedDict()
        self.tf32 = os.environ.get("MXRS_CUDNN_TF32", "1").strip() not in ("0", "false", "no")
        self.built = 0
        self.unsupported: dict[str, str] = {}

    def version(self) -> str:
        """cuDNN's version as the loaded library reports it."""
        return str(self.cudnn.backend_version_string())

    def _handle(self, dev: int) -> int:
        h = self._handles.get(dev)
        if h is None:
            with self._cupy.cuda.Device(dev):
                h = self._handles[dev] = self.cudnn.create_handle()
        return h

    def _finish(self, g: Any, dt: Any) -> int:
        """Validate and build ``g`` (of element type ``dt``); return its workspace size."""
        cudnn = self.cudnn
        g.validate()
        g.build_operation_graph()
        g.create_execution_plans([cudnn.heur_mode.A, cudnn.heur_mode.FALLBACK])
        if not self.tf32 and dt == cudnn.data_type.FLOAT:
            g.deselect_numeric_notes([cudnn.numerical_note.TENSOR_CORE])
        g.check_support()
        g.build_plans()
        return int(g.get_workspace_size())

    def _build(self, key: tuple) -> _Plan:
        kind, a_shape, b_shape, dtype, out_shape, stride, pad, dilate, dev = key
        cudnn = self.cudnn
        dt = self._dtypes[numpy.dtype(dtype)]
        f32 = cudnn.data_type.FLOAT
        a4, b4, o4 = _as4d(a_shape), _as4d(b_shape), _as4d(out_shape)
        geom = {
            "padding": _geom4d(pad, 0),
            "stride": _geom4d(stride, 1),
            "dilation": _geom4d(dilate, 1),
        }
        handle = self._handle(dev)
        g = cudnn.pygraph(
            io_data_type=dt, intermediate_data_type=f32, compute_data_type=f32, handle=handle
        )
        ta = g.tensor(name="A", dim=list(a4), stride=_strides(a4), data_type=dt)
        tb = g.tensor(name="B", dim=list(b4), stride=_strides(b4), data_type=dt)
        if kind == "fprop":
            to = g.conv_fprop(image=ta, weight=tb, compute_data_type=f32, **geom)
        elif kind == "dgrad":
            to = g.conv_dgrad(loss=ta, filter=tb, compute_data_type=f32, **geom)
        else:
            to = g.conv_wgrad(image=ta, loss=tb, compute_data_type=f32, **geom)
        to.set_output(True)
        to.set_dim(list(o4))
        to.set_stride(_strides(o4))
        to.set_data_type(dt)
        with self._cupy.cuda.Device(dev):
            ws = self._finish(g, dt)
        ids = (ta.get_uid(), tb.get_uid(), to.get_uid())
        return _Plan(g, ids, ws, out_shape, numpy.dtype(dtype), handle, dev)

    def plan(self, key: tuple) -> _Plan:
        """The built graph for ``key``: ``(kind, a's shape, b's shape, dtype, output shape,
        stride, pad, dilate, device)``, where ``kind`` is ``'fprop'`` (``a`` the image, ``b``
        the weight), ``'dgrad'`` (``a`` the output gradient, ``b`` the weight) or ``'wgrad'``
        (``a`` the image, ``b`` the output gradient).

        Raises
        ------
        KernelUnsupportedError
            When cuDNN has no engine for it.
        """
        p = self._plans.get(key)
        if p is not None:
            self._plans.move_to_end(key)
            return p
        try:
            p = self._build(key)
        except Exception as err:
            what = f"{key[0]} {key[1:]}"
            self.unsupported[what] = f"{type(err).__name__}: {err}"
            raise KernelUnsupportedError(f"cuDNN has no engine for {what}: {err}") from err
        self.built += 1
        self._plans[key] = p
        if len(self._plans) > CACHE_SIZE:
            self._plans.popitem(last=False)
        return p

    def execute(self, p: _Plan, a: Any, b: Any) -> Any:
        """Run plan ``p`` on C-contiguous CuPy arrays ``a`` and ``b`` (of the plan's shapes,
        on its device) on the current stream; a new output array.

        Raises
        ------
        KernelError
            When the execution fails.
        """
        cupy = self._cupy
        out = cupy.empty(p.shape, dtype=p.dtype)
        work = cupy.empty(p.workspace, dtype=numpy.uint8) if p.workspace else None
        stream = cupy.cuda.get_current_stream().ptr
        if self._streams.get(p.handle) != stream:
            self.cudnn.set_stream(handle=p.handle, stream=stream)
            self._streams[p.handle] = stream
        ua, ub, uo = p.ids
        try:
            p.graph._execute(
                {ua: a.data.ptr, ub: b.data.ptr, uo: out.data.ptr},
                0 if work is None else work.data.ptr,
                p.handle,
            )
        except Exception as err:
            raise KernelError(f"cuDNN convolution on {a.shape} x {b.shape} failed: {err}") from err
        return out

    def describe(self) -> dict[str, Any]:
        """cuDNN's version, graphs built so far, TF32, and the geometries it had no engine for."""
        return {
            "cudnn": self.version(),
            "graphs_built": self.built,
            "tf32": self.tf32,
            "unsupported": dict(self.unsupported),
        }
