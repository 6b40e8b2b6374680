"""Contexts: naming, equality, scoping, GPU availability and cross-context errors."""

import importlib.util

import mxrs as mx
import numpy as np
import pytest
from mxrs import nd

HAS_CUPY = importlib.util.find_spec("cupy") is not None


def test_repr_and_equality():
    assert repr(mx.cpu()) == "cpu(0)" and str(mx.gpu(1)) == "gpu(1)"
    assert mx.cpu() == mx.cpu(0) and mx.cpu(0) != mx.cpu(1) and mx.cpu(0) != mx.gpu(0)
    assert len({mx.cpu(0), mx.cpu(0), mx.cpu(1)}) == 2
    assert mx.Context("gpu", 2) == mx.gpu(2) and mx.Context(mx.cpu(3)) == mx.cpu(3)
    assert mx.gpu(1).device_type == "gpu" and mx.gpu(1).device_id == 1


def test_unknown_device_type_raises():
    with pytest.raises(mx.MXNetError, match="tpu"):
        mx.Context("tpu")


def test_with_scope_sets_current_context():
    assert mx.current_context() == mx.cpu(0)
    with mx.cpu(2):
        assert mx.current_context() == mx.cpu(2)
        a = nd.zeros((2,))
        with mx.cpu(3):
            assert nd.ones((1,)).context == mx.cpu(3)
        assert mx.current_context() == mx.cpu(2)
    assert a.context == mx.cpu(2)
    assert mx.current_context() == mx.cpu(0)


@pytest.mark.skipif(HAS_CUPY, reason="checks behaviour without CuPy")
def test_without_cupy_gpu_arrays_raise_and_no_gpus():
    assert mx.context.num_gpus() == 0
    ctx = mx.gpu(0)  # making the context itself is fine
    with pytest.raises(mx.MXNetError, match="CuPy"):
        nd.zeros((2,), ctx=ctx)
    with pytest.raises(mx.MXNetError, match="CuPy"):
        nd.ones((2,)).as_in_context(mx.gpu(0))


def test_cpu_contexts_are_distinct_for_operations():
    a = nd.array([1, 2, 3], ctx=mx.cpu(0))
    b = nd.array([5, 6, 7], ctx=mx.cpu(1))
    for op in (
        lambda: a + b,
        lambda: nd.dot(a, b),
        lambda: nd.concat(a, b, dim=0),
        lambda: nd.where(a, a, b),
    ):
        with pytest.raises(mx.MXNetError) as info:
            op()
        assert "cpu(0)" in str(info.value) and "cpu(1)" in str(info.value)
    with pytest.raises(mx.MXNetError, match="cpu\\(1\\)"):
        a += b


def test_moving_between_contexts():
    a = nd.array([1, 2, 3], ctx=mx.cpu(0))
    b = nd.array([5, 6, 7], ctx=mx.cpu(1))
    c = a + b.as_in_context(a.context)
    assert c.context == mx.cpu(0)
    np.testing.assert_array_equal(c.asnumpy(), [6, 8, 10])
    assert a.as_in_context(mx.cpu(0)) is a
    d = a.copyto(mx.cpu(1))
    assert d.context == mx.cpu(1) and d is not a
    d[:] = 0
    assert a.asnumpy().sum() == 6  # a real copy
    e = nd.zeros((3,), ctx=mx.cpu(2))
    assert a.copyto(e) is e
    np.testing.assert_array_equal(e.asnumpy(), [1, 2, 3])
    with pytest.raises(mx.MXNetError, match="shape"):
        a.copyto(nd.zeros((4,)))


def test_default_ctx_reads_and_sets_the_thread_default_with_a_deprecation_warning():
    import threading

    with pytest.warns(DeprecationWarning, match="Context.default_ctx is deprecated"):
        assert mx.Context.default_ctx == mx.cpu(0)
    try:
        with pytest.warns(DeprecationWarning):
            mx.Context.default_ctx = mx.cpu(1)
        assert mx.current_context() == mx.cpu(1)
        assert mx.nd.zeros((1,)).context == mx.cpu(1)
        with mx.cpu(2):
            assert mx.current_context() == mx.cpu(2)
        assert mx.current_context() == mx.cpu(1)
        seen = []
        t = threading.Thread(target=lambda: seen.append(mx.current_context()))
        t.start()
        t.join()
        assert seen == [mx.cpu(0)]  # per thread, as MXNet's
    finally:
        with pytest.warns(DeprecationWarning):
            mx.Context.default_ctx = mx.cpu(0)
    assert mx.current_context() == mx.cpu(0)
