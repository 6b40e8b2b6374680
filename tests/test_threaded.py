"""Copies and sums of long float32 arrays over the kernels' threads (``mxrs._threaded``): the
same values as NumPy's, fresh arrays where NumPy makes them, NumPy's own results for anything
else, and the places that use them (residual additions, gradient sums, the local KVStore)
giving NumPy's numbers on one thread and two.
"""

import os
import subprocess
import sys

import mxrs as mx
import numpy as np
import pytest
from mxrs import _threaded, autograd

LONG = (3, 257, 129)  # above the threshold, not a multiple of any split


def _pair(shape, dtype=np.float32, seed=0):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal(shape).astype(dtype), rng.standard_normal(shape).astype(dtype))


def test_a_long_sum_is_numpys_in_a_new_array():
    a, b = _pair(LONG)
    assert a.size >= _threaded.THRESHOLD
    out = _threaded.add(a, b)
    np.testing.assert_array_equal(out, a + b)
    assert out.shape == LONG and out.dtype == np.float32
    assert not np.may_share_memory(out, a) and not np.may_share_memory(out, b)


def _channels_last(x):
    return np.ascontiguousarray(x.transpose(0, 2, 3, 1)).transpose(0, 3, 1, 2)


@pytest.mark.parametrize("shape", [(2, 33, 40, 50), (1, 33, 40, 50)])  # a batch of one too
def test_channels_last_arrays_are_summed_and_copied_in_their_layout(shape):
    a, b = (_channels_last(x) for x in _pair(shape))
    assert not a.flags.c_contiguous and a.size >= _threaded.THRESHOLD
    out = _threaded.add(a, b)
    np.testing.assert_array_equal(out, a + b)
    assert out.strides == a.strides  # NumPy's own sum keeps the layout too
    dst = np.empty_like(a)
    _threaded.copy(dst, b)
    np.testing.assert_array_equal(dst, b)


@pytest.mark.parametrize(
    "make",
    [
        lambda: _pair((7, 5)),  # short
        lambda: _pair(LONG, np.float64),  # another dtype
        lambda: (_pair(LONG)[0], np.float32(2.5)),  # a scalar
        lambda: (_pair(LONG)[0], _pair((1, 257, 129))[1]),  # broadcast
        lambda: tuple(x[:, ::2] for x in _pair(LONG)),  # strided
        lambda: (_pair(LONG)[0], _pair(LONG, np.float64)[1]),  # mixed dtypes
        lambda: (lambda a, b: (a, _channels_last(b)))(*_pair((2, 33, 40, 50))),  # two layouts
    ],
    ids=["short", "float64", "scalar", "broadcast", "strided", "mixed", "layouts"],
)
def test_anything_else_is_numpys_sum(make):
    a, b = make()
    out = _threaded.add(a, b)
    want = a + b
    assert out.dtype == want.dtype and out.shape == want.shape
    np.testing.assert_array_equal(out, want)


def test_a_long_copy_writes_every_value_and_overlaps_go_to_numpy():
    a, b = _pair(LONG)
    _threaded.copy(a, b)
    np.testing.assert_array_equal(a, b)
    # a copy onto itself, and between overlapping views of one buffer
    _threaded.copy(a, a)
    np.testing.assert_array_equal(a, b)
    flat = np.arange(2 * _threaded.THRESHOLD + 8, dtype=np.float32)
    want = flat[: _threaded.THRESHOLD + 8].copy()
    _threaded.copy(flat[_threaded.THRESHOLD :], flat[: _threaded.THRESHOLD + 8])
    np.testing.assert_array_equal(flat[_threaded.THRESHOLD :], want)


def test_a_sum_into_a_buffer_of_another_length_is_refused():
    a, b = _pair((_threaded.THRESHOLD,))
    with pytest.raises(mx.base.MXNetError, match="a sum of 65536 and 65536 values into 3"):
        mx._native.add_into(np.empty(3, np.float32), a, b)


def test_ndarray_addition_and_gradient_sums_of_long_arrays():
    a, b = _pair(LONG, seed=1)
    x, y = mx.nd.array(a), mx.nd.array(b)
    x.attach_grad()
    with autograd.record():
        s = x + y  # the forward addition
        z = s * s + s  # s read twice: its gradient parts are summed
    z.backward()
    np.testing.assert_array_equal((x + y).asnumpy(), a + b)
    np.testing.assert_allclose(x.grad.asnumpy(), 2 * (a + b) + 1, rtol=1e-6, atol=1e-6)


def test_the_local_kvstore_copies_long_values_whole():
    kv = mx.kv.create("local")
    a, b = _pair(LONG, seed=2)
    kv.init("w", mx.nd.array(a))
    kv.push("w", mx.nd.array(b))
    out = mx.nd.zeros(LONG)
    kv.pull("w", out=out)
    np.testing.assert_array_equal(out.asnumpy(), b)
    # two devices' values are summed
    kv.push("w", [mx.nd.array(a), mx.nd.array(b)])
    kv.pull("w", out=out)
    np.testing.assert_array_equal(out.asnumpy(), a + b)


_TWO_THREADS = """
import numpy as np
from mxrs import _threaded, kernels
assert kernels.provider_name() == "onednn", kernels.provider_name()
rng = np.random.default_rng(3)
a, b = (rng.standard_normal((5, 100003)).astype(np.float32) for _ in range(2))
np.testing.assert_array_equal(_threaded.add(a, b), a + b)
d = np.empty_like(a)
_threaded.copy(d, b)
np.testing.assert_array_equal(d, b)
print("ok")
"""


def test_two_threads_give_numpys_numbers():
    env = {**os.environ, "OMP_NUM_THREADS": "2", "MXRS_KERNELS": "onednn"}
    p = subprocess.run(
        [sys.executable, "-c", _TWO_THREADS], env=env, capture_output=True, text=True, timeout=120
    )
    assert p.returncode == 0 and p.stdout.strip() == "ok", p.stdout + p.stderr
