"""The multi-tensor form of ``Optimizer.update`` / ``update_multi_precision`` (lists of indices,
weights, gradients and states, as MXNet's aggregated updates take them): each parameter is
updated exactly as on its own."""

import mxrs as mx
import numpy as np
import pytest
from mxrs import test_utils as tu
from mxrs.base import MXNetError

SHAPES = [(4, 3), (5,), (2, 2, 2)]


def _tensors(dtype, seed):
    rng = np.random.default_rng(seed)
    ws = [mx.nd.array(rng.uniform(-1, 1, s), dtype=dtype) for s in SHAPES]
    gs = [mx.nd.array(rng.uniform(-1, 1, s), dtype=dtype) for s in SHAPES]
    return ws, gs


@pytest.mark.parametrize(
    "name, kwargs, dtype",
    [
        ("lamb", {"wd": 0.03, "clip_gradient": 0.4}, np.float32),
        ("lamb", {"multi_precision": True, "bias_correction": False}, np.float16),
        ("sgd", {"momentum": 0.9, "wd": 0.01, "multi_precision": True}, np.float16),
        ("nag", {"momentum": 0.9, "multi_precision": True}, np.float16),
        ("adam", {"wd": 0.01}, np.float64),
        ("sgld", {}, np.float32),
    ],
)
def test_a_list_update_equals_one_update_per_parameter(name, kwargs, dtype):
    multi = mx.optimizer.create(name, learning_rate=0.05, **kwargs)
    single = mx.optimizer.create(name, learning_rate=0.05, **kwargs)
    ws1, gs1 = _tensors(dtype, 1)
    ws2, gs2 = _tensors(dtype, 1)
    st1 = [multi.create_state_multi_precision(i, w) for i, w in enumerate(ws1)]
    st2 = [single.create_state_multi_precision(i, w) for i, w in enumerate(ws2)]
    for _ in range(3):
        mx.random.seed(7)  # SGLD's noise: the same draws in the same order
        multi.update_multi_precision([0, 1, 2], ws1, gs1, st1)
        mx.random.seed(7)
        for i in range(3):
            single.update_multi_precision(i, ws2[i], gs2[i], st2[i])
    for w1, w2, w0 in zip(ws1, ws2, _tensors(dtype, 1)[0], strict=True):
        assert w1.dtype == dtype
        np.testing.assert_array_equal(w1.asnumpy(), w2.asnumpy())
        assert not np.array_equal(w1.asnumpy(), w0.asnumpy())  # it did update
    assert multi._index_update_count == {0: 3, 1: 3, 2: 3}
    tu.compare_ndarray_tuple(tuple(st1), tuple(st2), rtol=0, atol=0)


def test_plain_update_takes_lists_too():
    opt = mx.optimizer.SGD(learning_rate=0.5)
    ws, gs = _tensors(np.float32, 2)
    before = [w.asnumpy() for w in ws]
    opt.update([0, 1, 2], ws, gs, [None] * 3)
    for w, g, b in zip(ws, gs, before, strict=True):
        np.testing.assert_allclose(w.asnumpy(), b - 0.5 * g.asnumpy(), rtol=1e-6)


def test_lists_of_different_lengths_are_refused_and_change_nothing():
    opt = mx.optimizer.SGD(learning_rate=0.5)
    ws, gs = _tensors(np.float32, 3)
    before = [w.asnumpy() for w in ws]
    with pytest.raises(MXNetError, match="3 indices need a list of 3 grads, got 2 items"):
        opt.update([0, 1, 2], ws, gs[:2], [None] * 3)
    with pytest.raises(MXNetError, match="3 indices need a list of 3 weights, got NDArray"):
        opt.update_multi_precision([0, 1, 2], ws[0], gs, [None] * 3)
    for w, b in zip(ws, before, strict=True):
        np.testing.assert_array_equal(w.asnumpy(), b)
    assert opt._index_update_count == {}


def test_compare_optimizer_with_a_list_of_shapes_updates_opt2_in_one_call():
    calls = []

    class Spy(mx.optimizer.SGD):
        def update_multi_precision(self, index, weight, grad, state):
            calls.append(index)
            super().update_multi_precision(index, weight, grad, state)

    kw = {"learning_rate": 0.1, "momentum": 0.9}
    tu.compare_optimizer(mx.optimizer.SGD(**kw), Spy(**kw), SHAPES, np.float32, ntensors=3)
    assert calls[0] == [0, 1, 2]  # then one call per parameter, by the list form
    with pytest.raises(AssertionError):
        tu.compare_optimizer(
            mx.optimizer.SGD(learning_rate=0.1),
            Spy(learning_rate=0.2),
            SHAPES,
            np.float32,
            ntensors=3,
        )
    with pytest.raises(ValueError, match="2 shapes for ntensors=3"):
        tu.compare_optimizer(Spy(**kw), Spy(**kw), SHAPES[:2], np.float32, ntensors=3)
