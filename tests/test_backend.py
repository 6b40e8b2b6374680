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
@pytest.mark.parametrize("allocator", ["staggered", "pooled", "default"])
def test_a_freed_large_block_is_reused_without_page_faults(allocator):
    """A step's large temporaries come back from the heap already mapped: touching a block of
    the size just freed faults no page in (glibc's default maps large blocks afresh)."""
    env = dict(os.environ, MXRS_HOST_ALLOCATOR=allocator)
    out = subprocess.run(
        [sys.executable, "-c", REUSE], env=env, capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 0, out.stderr
    faults = {int(mib): int(n) for mib, n in (line.split() for line in out.stdout.splitlines())}
    if allocator != "default":
        assert all(n < 8 for n in faults.values()), faults
    else:  # 64 MiB mapped afresh: at least one fault per 2 MiB page
        assert faults[64] >= 32, faults


STAGGER = """
import numpy as np, mxrs as mx
mx.nd.ones(1)  # the first CPU array tunes the allocator
print(np._core.multiarray.get_handler_name())
blocks = [np.empty(1 << 18, np.float32) for _ in range(16)]
print(*[b.ctypes.data % 4096 for b in blocks])
z = np.zeros(1 << 20)
r = np.arange(70000.0)
r.resize(140000, refcheck=False)  # a realloc keeps the values
print(int(z.any()), r[69999], r[70000], np._core.multiarray.get_handler_name(r))
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's allocator")
@pytest.mark.parametrize("allocator", ["staggered", "pooled", "default"])
def test_large_arrays_start_one_cache_line_apart_in_their_pages(allocator):
    """Whole-page arrays allocated one after another start on different cache lines of their
    pages (glibc's heap alone puts them 16 bytes apart), and behave as arrays do."""
    env = dict(os.environ, MXRS_HOST_ALLOCATOR=allocator)
    out = subprocess.run(
        [sys.executable, "-c", STAGGER], env=env, capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 0, out.stderr
    name, offsets, rest = out.stdout.splitlines()
    offsets = [int(o) for o in offsets.split()]
    if allocator == "staggered":
        assert name == "mxrs_staggered"
        assert all(o % 64 == 0 for o in offsets), offsets
        assert len({o // 64 for o in offsets}) == 16, offsets
        assert rest.split() == ["0", "69999.0", "0.0", "mxrs_staggered"]
    else:
        assert name == "default_allocator"
        assert len({o // 64 for o in offsets}) < 8, offsets  # what staggering mends
        assert rest.split()[-1] == "default_allocator"


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
