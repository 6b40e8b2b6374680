"""The GPU side of the kernel seam, as far as a machine without a GPU can check it: the choice
of provider, the errors that name what is missing, and the CUDA provider's fallback to the
portable kernels where cuDNN does not load. (``tests/test_gpu_kernels.py`` checks the numbers
on a GPU.)"""

import sys
import types
import warnings

import numpy as np
import pytest
from gradcheck import rand
from mxrs import kernels
from mxrs.base import KernelError
from mxrs.kernels import ConvGeometry, cudnn, portable
from mxrs.kernels.cuda import CudaKernels


class _FakeGpuBackend:
    """A backend that calls itself CuPy but computes with NumPy: enough to drive selection and
    the portable fallback without a GPU."""

    name = "cupy"
    xp = np

    def as_strided(self, arr, shape, strides):
        return np.lib.stride_tricks.as_strided(arr, shape, strides, writeable=False)


@pytest.fixture
def fresh(monkeypatch):
    """Kernel selection state as a new process has it; restored afterwards."""
    monkeypatch.setitem(kernels._state, "gpu", None)
    monkeypatch.setitem(kernels._state, "cuda", {})
    monkeypatch.setattr(cudnn, "_loaded", {})
    monkeypatch.setitem(sys.modules, "cudnn", None)  # the frontend is not installed
    return _FakeGpuBackend()


def test_an_unknown_gpu_choice_is_named(fresh, monkeypatch):
    monkeypatch.setenv("MXRS_GPU_KERNELS", "tensorrt")
    with pytest.raises(KernelError, match="MXRS_GPU_KERNELS='tensorrt'.*auto, cupy, cuda"):
        kernels.select("Convolution", fresh, np.dtype(np.float32))


def test_insisting_on_cuda_without_the_frontend_says_what_to_install(fresh, monkeypatch):
    monkeypatch.setenv("MXRS_GPU_KERNELS", "cuda")
    with pytest.raises(KernelError, match="nvidia-cudnn-frontend"):
        kernels.select("Convolution", fresh, np.dtype(np.float32))


def test_cupy_choice_keeps_the_portable_kernels(fresh, monkeypatch):
    monkeypatch.setenv("MXRS_GPU_KERNELS", "cupy")
    k = kernels.select("Convolution", fresh, np.dtype(np.float32))
    assert k is portable.for_backend(fresh)
    assert not kernels._state["cuda"]  # the CUDA provider was never made


def test_use_switches_the_gpu_choice_within_a_block(fresh, monkeypatch):
    monkeypatch.setenv("MXRS_GPU_KERNELS", "auto")
    with kernels.use("cupy"):
        assert kernels.select("Pooling", fresh, np.dtype(np.float32)).name == "cupy"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        assert kernels.select("Pooling", fresh, np.dtype(np.float32)).name == "cuda"
    with pytest.raises(KernelError, match="nvidia-cudnn-frontend"), kernels.use("cuda"):
        kernels.select("Pooling", fresh, np.dtype(np.float32))


def test_other_dtypes_and_operators_stay_portable_on_gpus(fresh):
    assert kernels.select("Convolution", fresh, np.dtype(np.float64)).name == "cupy"
    assert kernels.select("softmax", fresh, np.dtype(np.float32)).name == "cupy"
    assert not kernels._state["cuda"]


def test_without_cudnn_convolutions_fall_back_and_say_why(fresh, monkeypatch):
    monkeypatch.setenv("MXRS_GPU_KERNELS", "auto")
    with pytest.warns(RuntimeWarning, match="GPU convolutions with CuPy.*nvidia-cudnn-frontend"):
        k = kernels.select("Convolution", fresh, np.dtype(np.float32))
    assert isinstance(k, CudaKernels)
    assert k.describe() == {"convolution": "cupy", "why": k._why}
    x, w, b = rand(2, 3, 6, 5), rand(4, 3, 3, 3, seed=1), rand(4, seed=2)
    geom = ConvGeometry((1, 1), (1, 1), (1, 1), 1)
    y, grad = k.convolution(x, w, b, geom, (6, 5), True)
    want, wgrad = portable.for_backend(fresh).convolution(x, w, b, geom, (6, 5), True)
    np.testing.assert_allclose(y, want)
    g = rand(*y.shape, seed=3)
    for got, exp in zip(grad(g, (True, True, True)), wgrad(g, (True, True, True)), strict=True):
        np.testing.assert_allclose(got, exp)


def test_a_broken_frontend_is_reported_with_its_error(monkeypatch):
    monkeypatch.setattr(cudnn, "_loaded", {})
    broken = types.ModuleType("cudnn")

    def backend_version():
        raise RuntimeError("Unable to find symbol cudnnGetVersion")

    broken.backend_version = backend_version
    monkeypatch.setitem(sys.modules, "cudnn", broken)
    with pytest.raises(KernelError, match="RuntimeError: Unable to find symbol cudnnGetVersion"):
        cudnn.load()
    # remembered: the second call says the same without trying again
    monkeypatch.setitem(sys.modules, "cudnn", None)
    with pytest.raises(KernelError, match="cudnnGetVersion"):
        cudnn.load()


class _FakeCudnn:
    """cuDNN's three convolution graphs computed by the portable kernel, to check the CUDA
    provider's wiring (which graph, which operands, which shapes) without a GPU; ``refuse``
    names graph kinds it has no engine for."""

    def __init__(self, backend, refuse=()):
        self.k = portable.for_backend(backend)
        self.refuse = set(refuse)
        self.ran = []

    def plan(self, key):
        from mxrs.base import KernelUnsupportedError

        if key[0] in self.refuse:
            raise KernelUnsupportedError(f"no engine for {key[0]}")
        return key

    def execute(self, key, a, b):
        kind, _, _, _, out, stride, pad, dilate, _ = key
        geom = ConvGeometry(stride, pad, dilate, 1)
        self.ran.append(kind)
        if kind == "fprop":
            return self.k.convolution(a, b, None, geom, out[2:], True)[0]
        if kind == "dgrad":  # a: the output gradient, b: the weight
            x = np.zeros(out)
            return self.k.convolution(x, b, None, geom, a.shape[2:], True)[1](a, (True, False))[0]
        w = np.zeros(out)  # wgrad; a: the image, b: the output gradient
        return self.k.convolution(a, w, None, geom, b.shape[2:], True)[1](b, (False, True))[1]


@pytest.mark.parametrize("refuse", [(), ("wgrad",), ("dgrad",), ("dgrad", "fprop")])
def test_the_cuda_provider_wires_cudnn_graphs_as_the_portable_kernels_compute(fresh, refuse):
    k = CudaKernels(fresh)
    k._cudnn = fake = _FakeCudnn(fresh, refuse)
    ref = portable.for_backend(fresh)
    geom = ConvGeometry((2, 1), (1, 1), (1, 1), 1)
    x, w, b = rand(2, 3, 7, 6), rand(4, 3, 3, 3, seed=1), rand(4, seed=2)
    out = (4, 6)
    for got, want in [
        (k.convolution(x, w, b, geom, out, True), ref.convolution(x, w, b, geom, out, True)),
        (
            k.deconvolution(rand(2, 4, *out), w, b[:3], geom, (0, 0), (7, 6), True),
            ref.deconvolution(rand(2, 4, *out), w, b[:3], geom, (0, 0), (7, 6), True),
        ),
    ]:
        (y, grad), (y_ref, grad_ref) = got, want
        np.testing.assert_allclose(y, y_ref, rtol=1e-12, atol=1e-12)
        g = rand(*y.shape, seed=5)
        for a, e in zip(grad(g, (True, True, True)), grad_ref(g, (True, True, True)), strict=True):
            np.testing.assert_allclose(a, e, rtol=1e-6, atol=1e-6)  # the bias sums in float32
    # what cuDNN ran: every graph it has an engine for, the forward pass first
    assert not set(fake.ran) & set(refuse)
    if "fprop" not in refuse:
        assert fake.ran[0] == "fprop" and ("wgrad" in fake.ran) == ("wgrad" not in refuse)


def test_vectorized_kernels_take_only_cupy_arrays():
    """The GPU's float kernels refuse NumPy arrays, so host gradients add as NumPy adds."""
    from mxrs import _cuda_float
    from mxrs._sparse_rows import add_grads

    a, b = np.ones(5, np.float32), np.full(5, 2.0, np.float32)
    assert not _cuda_float.ADD.accepts((a, b))
    out = add_grads(a, b)
    assert type(out) is np.ndarray and out.tolist() == [3.0] * 5
