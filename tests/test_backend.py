"""Backends: NumPy for CPU contexts, the host allocator setting, CuPy errors without CuPy."""

import os
import subprocess
import sys

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
    assert (_backend._M_MMAP_MAX, 0) in seen


REUSE = """
import resource, numpy as np, mxrs as mx
mx.nd.ones(1)  # the first CPU array tunes the allocator
def faults():
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for n in (8 << 20, 40 << 20, 64 << 20):
    a = np.empty(n, np.uint8); a.fill(1); del a
    before = faults()
    b = np.empty(n, np.uint8); b.fill(1); del b
    print(n >> 20, faults() - before)
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's allocator")
@pytest.mark.parametrize("allocator", ["pooled", "default"])
def test_a_freed_large_block_is_reused_without_page_faults(allocator):
    """A step's large temporaries come back from the heap already mapped: touching a block of
    the size just freed faults no page in (glibc's default maps large blocks afresh)."""
    env = dict(os.environ, MXRS_HOST_ALLOCATOR=allocator)
    out = subprocess.run(
        [sys.executable, "-c", REUSE], env=env, capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 0, out.stderr
    faults = {int(mib): int(n) for mib, n in (line.split() for line in out.stdout.splitlines())}
    if allocator == "pooled":
        assert all(n < 8 for n in faults.values()), faults
    else:  # 64 MiB mapped afresh: at least one fault per 2 MiB page
        assert faults[64] >= 32, faults


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
