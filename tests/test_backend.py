"""Backends: NumPy for CPU contexts, the host allocator setting, CuPy errors without CuPy."""

import mxrs as mx
import numpy as np
import pytest
from mxrs import _backend


def test_cpu_contexts_share_the_numpy_backend():
    assert mx.cpu(0).backend is _backend.NUMPY and mx.cpu(5).backend is _backend.NUMPY
    assert mx.cpu_pinned(0).backend.xp is np


def test_allocator_left_alone_when_asked(monkeypatch):
    calls = []
    monkeypatch.setenv("MXRS_HOST_ALLOCATOR", "default")
    monkeypatch.setattr(_backend.ctypes, "CDLL", lambda name: calls.append(name))
    _backend._tune_host_allocator()
    assert calls == [] and _backend._allocator_tuned[0]


def test_allocator_tuning_calls_mallopt(monkeypatch):
    seen = []

    class FakeLibc:
        def mallopt(self, param, value):
            seen.append((param, value))
            return 1

    monkeypatch.delenv("MXRS_HOST_ALLOCATOR", raising=False)
    monkeypatch.setattr(_backend.sys, "platform", "linux")
    monkeypatch.setattr(_backend.ctypes, "CDLL", lambda name: FakeLibc())
    _backend._tune_host_allocator()
    assert (_backend._M_MMAP_THRESHOLD, 32 * 1024 * 1024) in seen


def test_numpy_backend_helpers():
    be = _backend.NUMPY
    target = np.zeros(3)
    be.scatter_add(target, np.array([0, 2, 0]), np.array([1.0, 2.0, 3.0]))
    np.testing.assert_array_equal(target, [4, 0, 2])
    view = be.as_strided(np.arange(6.0), (2, 3), (24, 8))
    with pytest.raises(ValueError):
        view[0, 0] = 1  # im2col views are read-only
    rng = be.make_rng(1, 0)
    u = be.uniform(rng, 2.0, 3.0, (100,), np.float32)
    assert u.dtype == np.float32 and 2 <= u.min() and u.max() < 3
    assert be.normal(rng, 0.0, 1.0, (4,), np.float16).dtype == np.float16
