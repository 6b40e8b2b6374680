"""Recording scopes, grad_req semantics, retain_graph, autograd.grad and gradient routing."""

import mxrs as mx
import numpy as np
import pytest
from mxrs import autograd, nd
from mxrs.base import MXNetError


def test_scopes_set_and_restore_flags():
    assert not autograd.is_recording() and not autograd.is_training()
    with autograd.record():
        assert autograd.is_recording() and autograd.is_training()
        with autograd.pause():
            assert not autograd.is_recording() and not autograd.is_training()
        with autograd.predict_mode():
            assert autograd.is_recording() and not autograd.is_training()
    with autograd.record(train_mode=False):
        assert autograd.is_recording() and not autograd.is_training()
    with autograd.train_mode():
        assert autograd.is_training() and not autograd.is_recording()
    assert not autograd.is_recording() and not autograd.is_training()
    assert autograd.set_recording(True) is False
    assert autograd.set_recording(False) is True
    assert autograd.set_training(True) is False
    assert autograd.set_training(False) is True


def test_simple_gradient_and_write_overwrites():
    x = nd.array([1.0, 2.0])
    x.attach_grad()
    for _ in range(2):
        with autograd.record():
            y = (x * x).sum()
        y.backward()
        np.testing.assert_allclose(x.grad.asnumpy(), [2, 4])


def test_grad_req_add_accumulates():
    x = nd.array([1.0, 2.0])
    x.attach_grad(grad_req="add")
    for _ in range(3):
        with autograd.record():
            y = (x * x).sum()
        y.backward()
    np.testing.assert_allclose(x.grad.asnumpy(), [6, 12])


def test_grad_req_null_gets_nothing():
    x, w = nd.array([1.0, 2.0]), nd.array([3.0, 4.0])
    x.attach_grad(grad_req="null")
    w.attach_grad()
    with autograd.record():
        y = (x * w).sum()
    y.backward()
    assert x.grad is None
    np.testing.assert_allclose(w.grad.asnumpy(), [1, 2])


def test_pause_records_nothing():
    x = nd.array([1.0, 2.0])
    x.attach_grad()
    with autograd.record():
        with autograd.pause():
            z = x * 3
        y = x * 2
    assert z._node is None and y._node is not None
    with pytest.raises(mx.MXNetError, match="not in a computational graph"):
        z.backward()
    outside = x * 5
    with pytest.raises(mx.MXNetError, match="not in a computational graph"):
        outside.backward()


def test_retain_graph():
    x = nd.array([1.0, 2.0])
    x.attach_grad(grad_req="add")
    with autograd.record():
        y = (x * x).sum()
    y.backward(retain_graph=True)
    y.backward()
    np.testing.assert_allclose(x.grad.asnumpy(), [4, 8])
    with pytest.raises(mx.MXNetError, match="retain_graph"):
        y.backward()


def test_shared_subexpression_sums_paths_and_head_grad():
    x = nd.array([1.0, -2.0, 3.0])
    x.attach_grad()
    with autograd.record():
        h = x * x
        y = h * x + h  # x^3 + x^2
    y.backward(nd.array([1.0, 2.0, 3.0]))
    xv = np.array([1.0, -2.0, 3.0])
    np.testing.assert_allclose(x.grad.asnumpy(), (3 * xv**2 + 2 * xv) * [1, 2, 3], rtol=1e-6)


def test_backward_of_several_heads():
    x = nd.array([1.0, 2.0])
    x.attach_grad()
    with autograd.record():
        a = x * 2
        b = x * x
    autograd.backward([a, b])
    np.testing.assert_allclose(x.grad.asnumpy(), [4, 6])


def test_autograd_grad_returns_without_touching_grad():
    x = nd.array([1.0, 2.0])
    w = nd.array([0.5, -1.0])
    x.attach_grad()
    w.attach_grad()
    with autograd.record():
        y = (x * w).sum()
    gx, gw = autograd.grad(y, [x, w])
    np.testing.assert_allclose(gx.asnumpy(), [0.5, -1.0])
    np.testing.assert_allclose(gw.asnumpy(), [1, 2])
    assert x.grad.asnumpy().sum() == 0
    with autograd.record():
        y = (x * x).sum()
    g = autograd.grad(y, x)
    np.testing.assert_allclose(g.asnumpy(), [2, 4])
    with pytest.raises(mx.MXNetError, match="not in a computational graph"):
        autograd.grad(y, x, create_graph=True)  # the first grad freed the graph


def test_attach_grad_detaches_and_inplace_in_record():
    x = nd.array([1.0, 2.0])
    x.attach_grad()
    with autograd.record():
        y = x * 3
        y.attach_grad()  # y becomes a leaf
        z = (y * y).sum()
    z.backward()
    np.testing.assert_allclose(y.grad.asnumpy(), [6, 12])
    assert x.grad.asnumpy().sum() == 0
    with autograd.record():
        u = x * 1
        u += x  # recorded: a new node, not a silent mutation
        s = u.sum()
    s.backward()
    np.testing.assert_allclose(x.grad.asnumpy(), [2, 2])


def test_gradient_crosses_contexts_through_as_in_context():
    x = nd.array([1.0, 2.0], ctx=mx.cpu(0))
    x.attach_grad()
    with autograd.record():
        y = x.as_in_context(mx.cpu(1)) * nd.array([3.0, 4.0], ctx=mx.cpu(1))
        z = y.sum()
    assert z.context == mx.cpu(1)
    z.backward()
    assert x.grad.context == mx.cpu(0)
    np.testing.assert_allclose(x.grad.asnumpy(), [3, 4])


def test_mark_variables_and_head_grad_context_check():
    x, gx = nd.array([1.0, 2.0]), nd.zeros((2,))
    autograd.mark_variables([x], [gx])
    with autograd.record():
        y = x * 4
    y.backward()
    np.testing.assert_allclose(gx.asnumpy(), [4, 4])
    with autograd.record():
        y = x * 4
    with pytest.raises(mx.MXNetError, match="cpu"):
        y.backward(nd.ones((2,), ctx=mx.cpu(1)))


def test_unused_variable_keeps_its_gradient():
    x, w = nd.array([1.0]), nd.array([2.0])
    x.attach_grad()
    w.attach_grad()
    w.grad[:] = 7
    with autograd.record():
        y = x * 2
    y.backward()
    assert w.grad.asscalar() == 7


class _Sigmoid(autograd.Function):
    def forward(self, x):
        y = 1 / (1 + nd.exp(-x))
        self.save_for_backward(y)
        return y

    def backward(self, dy):
        (y,) = self.saved_tensors
        return dy * y * (1 - y)


class _SplitScale(autograd.Function):
    def forward(self, a, b):
        return a * 2, a + b

    def backward(self, g1, g2):
        return g1 * 2 + g2, g2


def test_custom_function():
    x = nd.array([-1.0, 0.0, 2.0])
    x.attach_grad()
    with autograd.record():
        y = _Sigmoid()(x) * 3
    y.backward()
    s = 1 / (1 + np.exp(-np.array([-1.0, 0.0, 2.0])))
    np.testing.assert_allclose(x.grad.asnumpy(), 3 * s * (1 - s), rtol=1e-6)
    a, b = nd.array([1.0, 2.0]), nd.array([3.0, 4.0])
    a.attach_grad()
    b.attach_grad()
    with autograd.record():
        p, q = _SplitScale()(a, b)
        z = (p * q).sum()
    z.backward()
    av, bv = np.array([1.0, 2.0]), np.array([3.0, 4.0])
    np.testing.assert_allclose(a.grad.asnumpy(), 2 * (av + bv) + 2 * av, rtol=1e-6)
    np.testing.assert_allclose(b.grad.asnumpy(), 2 * av, rtol=1e-6)
    with autograd.record():
        p, q = _SplitScale()(a, b)
    q.backward()  # p gets no gradient: passed as zeros
    np.testing.assert_allclose(a.grad.asnumpy(), [1, 1])


def test_backward_marks_gradient_fresh():
    x = mx.nd.array([1.0, 2.0])
    x.attach_grad()
    assert not x._fresh_grad
    with mx.autograd.record():
        y = (x * x).sum()
    y.backward()
    assert x._fresh_grad
    x._fresh_grad = False
    assert not x._fresh_grad


def _hooked(*arrays):
    """Attach gradients to ``arrays`` and record, per hook call, which gradients were stored."""
    calls = []
    for name, a in arrays:
        a.attach_grad()

        def hook(var, name=name):
            calls.append((name, {n: x.grad.asnumpy().copy() for n, x in arrays}))
            assert var is dict(arrays)[name]

        a._on_grad = hook
    return calls


def test_a_variables_gradient_is_stored_once_its_last_use_is_differentiated():
    # y = w2 * (w1 * x): w2's last (only) use is differentiated first, w1's after it
    x = nd.array([1.0, 2.0])
    w1, w2 = nd.array([3.0, 4.0]), nd.array([5.0, 6.0])
    calls = _hooked(("w1", w1), ("w2", w2))
    with autograd.record():
        y = (w2 * (w1 * x)).sum()
    y.backward()
    assert [name for name, _ in calls] == ["w2", "w1"]
    at_w2 = calls[0][1]
    np.testing.assert_array_equal(at_w2["w2"], [3.0, 8.0])  # w1 * x
    np.testing.assert_array_equal(at_w2["w1"], [0.0, 0.0])  # not yet stored
    np.testing.assert_array_equal(calls[1][1]["w1"], [5.0, 12.0])  # w2 * x


def test_a_shared_variable_is_stored_once_with_every_share_summed():
    # w is used by two ops at different depths: one hook call, after both shares are in
    x = nd.array([1.0, 2.0])
    w, v = nd.array([3.0, 4.0]), nd.array([0.5, 0.5])
    calls = _hooked(("w", w), ("v", v))
    with autograd.record():
        h = w * x
        y = (w * (v * h)).sum()  # d/dw = 2 * v * w * x
    y.backward()
    assert sorted(name for name, _ in calls) == ["v", "w"]
    (at_w,) = [seen for name, seen in calls if name == "w"]
    np.testing.assert_allclose(at_w["w"], [3.0, 8.0])
    np.testing.assert_allclose(v.grad.asnumpy(), [9.0, 32.0])


def test_a_failing_gradient_hook_stops_backward_with_its_error():
    w = nd.array([1.0])
    w.attach_grad()

    def hook(var):
        raise MXNetError("hook says no")

    w._on_grad = hook
    with autograd.record():
        y = (w * 2).sum()
    with pytest.raises(MXNetError, match="hook says no"):
        y.backward()
    with pytest.raises(MXNetError, match="not in a computational graph"):
        y.backward()  # the graph is freed all the same


@pytest.mark.parametrize("provider", ["numpy", "onednn"])
def test_relu_input_is_freed_once_nothing_else_holds_it(provider):
    """ReLU's gradient comes from its output, so the tape keeps only the place of its input
    in the graph: a residual sum that nothing else holds is freed during the forward pass, and
    every gradient, the symbol and a higher-order gradient through it are unchanged."""
    import gc
    import weakref

    from mxrs import kernels

    a_np = np.linspace(-3, 3, 6000, dtype=np.float32)  # above oneDNN's activation minimum
    with kernels.use(provider):
        a, b = nd.array(a_np), nd.array(a_np[::-1].copy())
        a.attach_grad()
        b.attach_grad()
        with autograd.record():
            s = a * 2 + b
            freed = weakref.ref(s)
            y = nd.relu(s)
            del s
            gc.collect()
            assert freed() is None
            loss = (y * y).sum()
        sym = autograd.get_symbol(loss)
        assert "relu" in sym.tojson()
        loss.backward()
    s_np = a_np * 2 + a_np[::-1]
    want = 2 * np.maximum(s_np, 0)
    np.testing.assert_allclose(a.grad.asnumpy(), 2 * want, rtol=1e-6)
    np.testing.assert_allclose(b.grad.asnumpy(), want, rtol=1e-6)
    # second order: d/dx sum(relu(2x)^2) = 4 relu(2x), whose own gradient is 8 where x > 0
    x = nd.array([-1.0, 0.5, 2.0])
    x.attach_grad()
    with autograd.record():
        z = nd.relu(x * 2)
        (gx,) = autograd.grad((z * z).sum(), [x], create_graph=True)
        total = gx.sum()
    total.backward()
    np.testing.assert_allclose(gx.asnumpy(), [0.0, 4.0, 16.0])
    np.testing.assert_allclose(x.grad.asnumpy(), [0.0, 8.0, 8.0])


def test_a_long_gradient_stored_into_its_own_buffer():
    """A leaf head given its own ``.grad`` as head gradient: the store copies a buffer onto
    itself (long float32 gradients go through the threaded native copy, which must not)."""
    x = mx.nd.ones((300, 300))
    x.attach_grad()
    with autograd.record():
        y = x * 2
    y.backward()
    x.backward(x.grad)
    np.testing.assert_array_equal(x.grad.asnumpy(), np.full((300, 300), 2, np.float32))


class _Both(autograd.Function):
    """``a + b``, whose backward gives one array as both inputs' gradient."""

    def forward(self, a, b):
        return a + b

    def backward(self, dy):
        return dy, dy


def test_a_fresh_gradient_becomes_the_grad_buffer_and_the_old_one_is_freed():
    """Nothing but ``.grad`` holds its buffer and nothing but the pass the new gradient: the new
    buffer takes the old one's place (no copy), the ``.grad`` array stays the same object, and
    the old buffer is freed."""
    import weakref

    from mxrs import _sole

    x = nd.array(np.arange(6, dtype=np.float32).reshape(2, 3))
    x.attach_grad()
    grad = x.grad
    old = weakref.ref(grad._data)
    with autograd.record():
        y = (x * x * 3).sum()
    y.backward()
    assert x.grad is grad
    if _sole._SOLE is None:  # an interpreter whose counts cannot prove it: copied in
        assert x.grad._data is old()
    else:
        assert old() is None
    np.testing.assert_allclose(x.grad.asnumpy(), 6 * np.arange(6).reshape(2, 3))


def test_a_grad_buffer_still_viewed_is_written_in_place():
    """A view of ``.grad`` (an NDArray slice sharing its memory) sees the next gradient."""
    x = nd.array(np.arange(6, dtype=np.float32).reshape(2, 3))
    x.attach_grad()
    with autograd.record():
        y = (x * x).sum()
    y.backward()
    row = x.grad[1:2]
    with autograd.record():
        y = (x * x * 3).sum()
    y.backward()
    np.testing.assert_allclose(row.asnumpy(), [[18, 24, 30]])
    np.testing.assert_allclose(x.grad.asnumpy(), 6 * np.arange(6).reshape(2, 3))


def test_one_gradient_array_given_to_two_variables_leaves_them_two_buffers():
    a, b = nd.array([1.0, 2.0]), nd.array([3.0, 4.0])
    a.attach_grad()
    b.attach_grad()
    with autograd.record():
        y = _Both()(a, b)
    y.backward(nd.array([5.0, 7.0]))
    np.testing.assert_allclose(a.grad.asnumpy(), [5, 7])
    np.testing.assert_allclose(b.grad.asnumpy(), [5, 7])
    a.grad[:] = 0
    np.testing.assert_allclose(b.grad.asnumpy(), [5, 7])
