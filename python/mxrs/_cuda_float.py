"""Elementwise CUDA kernels written once, in float32 arithmetic, for float32 and float16 arrays.

A :class:`FloatKernel` is a body of C statements over ``float`` variables named for its inputs,
its per-channel parameters and its scalars, assigning ``float`` variables named for its
outputs. It runs one of two ways:

- **vectorized** (a raw kernel): where every array is contiguous and its data 16-byte aligned,
  each thread loads and stores 16 bytes of every array (eight float16 or four float32
  elements), which is what memory-bound kernels need to approach the device's bandwidth; the
  last ``n % 8`` (or ``% 4``) elements are done one each by the first threads.
- otherwise as CuPy's ``ElementwiseKernel`` (one element per thread, any strides), the same
  body between conversions.

Per-channel parameters are float32 arrays of ``C`` values, indexed by the channel of an array
laid out ``(N, C, inner)``; float16 elements convert to and from float32 with PTX's ``cvt``
(round to nearest even), so no CUDA header is needed.
"""

from __future__ import annotations

import math
from typing import Any

import numpy

_F32 = numpy.dtype(numpy.float32)
_F16 = numpy.dtype(numpy.float16)
_CTYPE = {_F32: "float", _F16: "unsigned short"}

_BLOCK = 256
_MAX_BLOCKS = 4096  # a grid-stride loop covers the rest

_PRELUDE = r"""
__device__ __forceinline__ float mx_load(float v) { return v; }
__device__ __forceinline__ float mx_load(unsigned short h) {
    float f;
    asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
    return f;
}
__device__ __forceinline__ void mx_store(float& d, float v) { d = v; }
__device__ __forceinline__ void mx_store(unsigned short& d, float v) {
    unsigned short h;
    asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(v));
    d = h;
}
"""


class FloatKernel:
    """One elementwise computation (see the module docstring).

    ``ins`` and ``outs`` name the arrays (all of one dtype, float32 or float16, and one size),
    ``channel`` the per-channel float32 parameters, ``scalars`` the float32 scalars; ``body``
    assigns every output from them.
    """

    def __init__(
        self,
        name: str,
        ins: tuple[str, ...],
        outs: tuple[str, ...],
        body: str,
        channel: tuple[str, ...] = (),
        scalars: tuple[str, ...] = (),
    ) -> None:
        self.name = name
        self.ins, self.outs, self.channel, self.scalars = ins, outs, channel, scalars
        self.body = body
        self._raw: dict[numpy.dtype, Any] = {}
        self._ew: Any = None

    def source(self, dtype: Any) -> str:
        """The vectorized kernel's CUDA source for arrays of ``dtype``."""
        ct = _CTYPE[numpy.dtype(dtype)]
        params = [f"const T* __restrict__ {a}_" for a in self.ins]
        params += [f"T* __restrict__ {a}_" for a in self.outs]
        params += [f"const float* __restrict__ {a}_" for a in self.channel]
        params += [f"float {a}" for a in self.scalars]
        params += ["long long n", "long long inner", "int C"]
        vec_in = "".join(
            f"        uint4 r_{a} = reinterpret_cast<const uint4*>({a}_)[j];\n"
            f"        const T* v_{a} = reinterpret_cast<const T*>(&r_{a});\n"
            for a in self.ins
        )
        vec_out = "".join(
            f"        uint4 r_{a};\n        T* v_{a} = reinterpret_cast<T*>(&r_{a});\n"
            for a in self.outs
        )
        per = self.channel != ()
        chan = "".join(f"float {a} = {a}_[c]; " for a in self.channel)
        loads_v = "".join(f"float {a} = mx_load(v_{a}[k]); " for a in self.ins)
        loads_s = "".join(f"float {a} = mx_load({a}_[i]); " for a in self.ins)
        decl = "".join(f"float {a}; " for a in self.outs)
        stores_v = "".join(f"mx_store(v_{a}[k], {a}); " for a in self.outs)
        stores_s = "".join(f"mx_store({a}_[i], {a}); " for a in self.outs)
        writes = "".join(f"        reinterpret_cast<uint4*>({a}_)[j] = r_{a};\n" for a in self.outs)
        start = (
            "        long long i0 = j * V, q = i0 / inner, r = i0 - q * inner;\n"
            "        int c = (int)(q % C);\n"
            if per
            else ""
        )
        advance = "if (++r == inner) { r = 0; if (++c == C) c = 0; } " if per else ""
        tail_c = "int c = (int)((i / inner) % C); " if per else ""
        return f"""{_PRELUDE}
typedef {ct} T;
extern "C" __global__ void mxrs_{self.name}({", ".join(params)}) {{
    const int V = 16 / sizeof(T);
    long long nvec = n / V;
    long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    long long step = (long long)gridDim.x * blockDim.x;
    for (long long j = t; j < nvec; j += step) {{
{vec_in}{vec_out}{start}        #pragma unroll
        for (int k = 0; k < V; ++k) {{
            {chan}{loads_v}{decl}
            {{ {self.body} }}
            {stores_v}{advance}
        }}
{writes}    }}
    long long i = nvec * V + t;
    if (i < n) {{
        {tail_c}{chan}{loads_s}{decl}
        {{ {self.body} }}
        {stores_s}
    }}
}}
"""

    @staticmethod
    def accepts(ins: tuple[Any, ...]) -> bool:
        """Whether the kernel takes arrays ``ins``: CuPy arrays of one dtype, float32 or
        float16, and one shape."""
        x = ins[0]
        if not type(x).__module__.startswith("cupy"):
            return False
        return getattr(x, "dtype", None) in _CTYPE and all(
            getattr(a, "dtype", None) == x.dtype and a.shape == x.shape for a in ins
        )

    def __call__(
        self,
        ins: tuple[Any, ...],
        channel: tuple[Any, ...] = (),
        scalars: tuple[float, ...] = (),
        layout: tuple[int, int] = (1, 1),
    ) -> tuple[Any, ...]:
        """The outputs (new arrays shaped as ``ins[0]``) for CuPy arrays ``ins`` (which
        :meth:`accepts`); ``channel``
        arrays hold ``C`` float32 values each, for inputs laid out ``(N, C, inner)`` where
        ``layout`` is ``(C, inner)``."""
        import cupy

        x = ins[0]
        with x.device:
            return self._run(cupy, ins, channel, scalars, layout)

    def _run(
        self,
        cupy: Any,
        ins: tuple[Any, ...],
        channel: tuple[Any, ...],
        scalars: tuple[float, ...],
        layout: tuple[int, int],
    ) -> tuple[Any, ...]:
        x = ins[0]
        outs = tuple(cupy.empty(x.shape, dtype=x.dtype) for _ in self.outs)
        if x.size == 0:
            return outs
        chans = tuple(cupy.ascontiguousarray(c, dtype=numpy.float32) for c in channel)
        scal = tuple(numpy.float32(s) for s in scalars)
        if _vectorizable(ins):
            v = 16 // x.dtype.itemsize
            work = max(x.size // v, x.size % v, 1)
            grid = min(math.ceil(work / _BLOCK), _MAX_BLOCKS)
            dims = (numpy.int64(x.size), numpy.int64(layout[1]), numpy.int32(layout[0]))
            self._kernel(cupy, x.dtype)((grid,), (_BLOCK,), (*ins, *outs, *chans, *scal, *dims))
            return outs
        chans = tuple(c.reshape(1, layout[0], 1) for c in chans)
        ins = tuple(a.reshape(x.shape[0], layout[0], -1) if channel else a for a in ins)
        views = tuple(o.reshape(ins[0].shape) for o in outs)
        self._elementwise(cupy)(*ins, *chans, *scal, *views)
        return outs

    def _kernel(self, cupy: Any, dtype: numpy.dtype) -> Any:
        k = self._raw.get(dtype)
        if k is None:
            k = cupy.RawKernel(self.source(dtype), "mxrs_" + self.name, options=("-std=c++17",))
            self._raw[dtype] = k
        return k

    def _elementwise(self, cupy: Any) -> Any:
        if self._ew is None:
            params = [f"T {a}_" for a in self.ins]
            params += [f"float32 {a}_" for a in self.channel]
            params += [f"float32 {a}" for a in self.scalars]
            loads = "".join(f"float {a} = (float){a}_; " for a in self.ins + self.channel)
            decl = "".join(f"float {a}; " for a in self.outs)
            stores = "".join(f"{a}_ = (T){a}; " for a in self.outs)
            body = f"{loads}{decl}{{ {self.body} }} {stores}"
            outs = ", ".join(f"T {a}_" for a in self.outs)
            self._ew = cupy.ElementwiseKernel(
                ", ".join(params), outs, body, "mxrs_" + self.name + "_strided"
            )
        return self._ew


def _vectorizable(arrays: tuple[Any, ...]) -> bool:
    """Whether 16-byte loads can read ``arrays``: one float32 or float16 dtype, one size,
    C-contiguous, aligned data."""
    x = arrays[0]
    if x.dtype not in _CTYPE:
        return False
    return all(
        a.dtype == x.dtype and a.size == x.size and a.flags.c_contiguous and a.data.ptr % 16 == 0
        for a in arrays
    )


#: The sum of two arrays.
ADD = FloatKernel("add", ("a", "b"), ("y",), "y = a + b;")


def add(a: Any, b: Any) -> Any:
    """``a + b`` for raw arrays; CuPy's in one vectorized kernel where both are float32 or float16
    of one shape (gradient sums), by CuPy otherwise."""
    if ADD.accepts((a, b)):
        return ADD((a, b))[0]
    return a + b
