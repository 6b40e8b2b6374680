"""ReLU after a residual addition as one operator, and ReLU's own native loops.

An executor or a hybridized block runs an ``elemwise_add`` whose output only a ReLU reads as
one pass (``mxrs.symbol.fusion``); the results and every gradient equal the unfused graph's on
both kernel providers. The native loops (ReLU forward and gradient, the fused addition, the
SGD update) split long buffers over OpenMP's threads, and give the same numbers split or not.
"""

import json
import os
import subprocess
import sys
import textwrap

import mxrs as mx
import numpy as np
import pytest
from mxrs import _native, autograd, kernels
from mxrs._grad_parts import GradParts, defer, total
from mxrs._sparse_rows import SparseRows
from mxrs.gluon import nn
from mxrs.gluon.model_zoo.vision.resnet import BasicBlockV1

PROVIDERS = ("numpy", "onednn")


def close(a, b):
    np.testing.assert_allclose(a, b, rtol=2e-5, atol=2e-5, equal_nan=True)


def count_fused(monkeypatch):
    calls = []
    real = mx.nd.unary._add_relu

    def spy(a, b):
        calls.append(a.shape)
        return real(a, b)

    monkeypatch.setattr(mx.nd.unary, "_add_relu", spy)
    return calls


@pytest.mark.parametrize("provider", PROVIDERS)
@pytest.mark.parametrize("shape", [(3, 5), (2, 16, 24, 24)])  # below and above ACTIVATION_MIN
def test_sum_relu_kernel_matches_the_portable_one(provider, shape):
    rng = np.random.default_rng(1)
    a = rng.standard_normal(shape).astype(np.float32)
    b = rng.standard_normal(shape).astype(np.float32)
    a.flat[:4] = [np.nan, np.inf, -np.inf, 0.0]
    b.flat[:4] = [1.0, -1.0, 1.0, -0.0]
    g = rng.standard_normal(shape).astype(np.float32)
    g.flat[5] = np.nan
    k = kernels.select("Activation", mx.cpu().backend, np.dtype(np.float32))
    with kernels.use(provider):
        k = kernels.select("Activation", mx.cpu().backend, np.dtype(np.float32))
        with np.errstate(invalid="ignore"):
            y, grad = k.add_relu(a, b, True)
            ga, gb = grad(g, (True, True))
    assert k.name == provider
    with np.errstate(invalid="ignore"):
        s = a + b
        want = np.maximum(s, 0)
        want_g = np.where(np.isnan(want), want, g * (want > 0))
    close(y, want)
    close(ga, want_g)
    close(gb, want_g)
    assert np.isnan(y.flat[0]) and np.isnan(ga.flat[0]) and y.flat[1] == np.inf


def test_sum_relu_takes_addends_of_two_layouts():
    rng = np.random.default_rng(2)
    plain = rng.standard_normal((2, 8, 32, 32)).astype(np.float32)
    last = np.ascontiguousarray(plain.transpose(0, 2, 3, 1)).transpose(0, 3, 1, 2) * -0.5
    with kernels.use("onednn"):
        k = kernels.select("Activation", mx.cpu().backend, np.dtype(np.float32))
        y, grad = k.add_relu(last, plain, True)
        (ga, gb) = grad(np.ones_like(plain), (True, True))
    close(y, np.maximum(last + plain, 0))
    close(ga, (last + plain > 0).astype(np.float32))


def residual_net():
    net = nn.HybridSequential()
    with net.name_scope():
        net.add(nn.Conv2D(8, 3, padding=1), BasicBlockV1(8, 1), BasicBlockV1(16, 2, True))
        net.add(nn.GlobalAvgPool2D(), nn.Dense(3))
    net.initialize(mx.init.Xavier())
    return net


def train_step(net, x):
    with autograd.record():
        loss = (net(mx.nd.array(x)) ** 2).sum()
    loss.backward()
    params = net.collect_params()
    return [loss.asnumpy()] + [p.grad().asnumpy() for p in params.values() if p.grad_req != "null"]


@pytest.mark.parametrize("provider", PROVIDERS)
def test_resnet_units_end_in_one_sum_relu_pass(provider, monkeypatch):
    """The zoo's V1 units compute ``relu(residual + body)`` with the fused operator and give
    the numbers of the two operators run apart (hybridized, the body's last BatchNorm computes
    it: tests/test_residual_end.py)."""
    x = np.random.default_rng(3).standard_normal((4, 3, 12, 12)).astype(np.float32)
    results = []
    with kernels.use(provider):
        for apart in (True, False):
            if apart:
                monkeypatch.setattr(mx.nd.unary, "_add_relu", lambda a, b: mx.nd.relu(a + b))
            else:
                monkeypatch.undo()
                calls = count_fused(monkeypatch)
            mx.random.seed(5)
            results.append(train_step(residual_net(), x))
    assert calls == [(4, 8, 12, 12), (4, 16, 6, 6)]
    want, got = results
    assert len(got) == len(want) > 10
    for g, w in zip(got, want, strict=True):
        close(g, w)


@pytest.mark.parametrize("provider", PROVIDERS)
@pytest.mark.parametrize("readers", [1, 2, 3])
def test_gradient_parts_of_a_shared_output_are_added_in_the_relu_pass(
    provider, readers, monkeypatch
):
    """``relu(a + b)`` read by several ops (a unit's output feeds the next unit's body and
    shortcut): the tape hands the ReLU's gradient the parts, and the oneDNN provider adds them
    in its one native pass; the gradients are those of the sum."""
    calls = []
    real = _native.relu_backward_sum

    def spy(y, *rest):
        calls.append(y.shape)
        real(y, *rest)

    monkeypatch.setattr(_native, "relu_backward_sum", spy)
    rng = np.random.default_rng(8)
    shape = (2, 16, 24, 24)  # above ACTIVATION_MIN
    a0, b0 = (rng.standard_normal(shape).astype(np.float32) for _ in range(2))
    with kernels.use(provider):
        a, b = mx.nd.array(a0), mx.nd.array(b0)
        a.attach_grad()
        b.attach_grad()
        with autograd.record():
            y = mx.nd.unary._add_relu(a, b)
            loss = (y * 1).sum()
            for k in range(2, readers + 1):
                loss = loss + (y * k).sum()
        loss.backward()
    weight = sum(range(1, readers + 1))
    want = (a0 + b0 > 0).astype(np.float32) * weight
    close(a.grad.asnumpy(), want)
    close(b.grad.asnumpy(), want)
    assert calls == ([shape] if provider == "onednn" and readers > 1 else [])


def test_gradient_parts_only_for_dense_arrays_of_one_shape():
    x, y = np.ones((2, 3), np.float32), np.full((2, 3), 2, np.float32)
    parts = defer(x, y)
    assert type(parts) is GradParts and len(defer(parts, x)) == 3
    np.testing.assert_array_equal(total(defer(parts, x)), np.full((2, 3), 4))
    assert total(x) is x
    assert defer(x, np.ones((3, 2), np.float32)) is None
    rows = SparseRows(np.array([1]), np.ones((1, 3), np.float32), (2, 3), mx.cpu().backend)
    assert defer(rows, x) is None and defer(x, rows) is None


def test_exported_resnet_graph_keeps_mxnet_nodes_and_its_executor_fuses(monkeypatch):
    net = residual_net()
    net.hybridize()
    net(mx.nd.zeros((1, 3, 8, 8)))
    sym = net(mx.sym.var("data"))
    ops = [n["op"] for n in json.loads(sym.tojson())["nodes"]]
    assert "elemwise_add" in ops and ops.count("Activation") == 2 + 2  # two per unit
    calls = count_fused(monkeypatch)
    x = np.random.default_rng(7).standard_normal((2, 3, 8, 8)).astype(np.float32)
    args = {n: p.data() for n, p in net.collect_params().items() if n in sym.list_arguments()}
    args["data"] = mx.nd.array(x)
    aux = {n: p.data() for n, p in net.collect_params().items() if n in sym.list_auxiliary_states()}
    out = sym.bind(mx.cpu(), args, aux_states=aux).forward()[0]
    assert calls == [(2, 8, 8, 8), (2, 16, 4, 4)]
    close(out.asnumpy(), net(mx.nd.array(x)).asnumpy())


def sum_relu_graph(expose_sum=False, extra_reader=False):
    a, b = mx.sym.var("a"), mx.sym.var("b")
    s = a + b
    out = mx.sym.Activation(s, act_type="relu")
    outs = [out]
    if expose_sum:
        outs.append(s)
    if extra_reader:
        outs.append(s * 2)
    return mx.sym.Group(outs)


@pytest.mark.parametrize("kw", [{}, {"expose_sum": True}, {"extra_reader": True}])
def test_executor_fuses_only_a_sum_that_only_the_relu_reads(kw, monkeypatch):
    rng = np.random.default_rng(4)
    arrays = {n: mx.nd.array(rng.standard_normal((2, 40, 60)).astype(np.float32)) for n in "ab"}
    grads = {n: mx.nd.zeros((2, 40, 60)) for n in "ab"}
    calls = count_fused(monkeypatch)
    ex = sum_relu_graph(**kw).bind(mx.cpu(), arrays, args_grad=grads)
    outs = ex.forward(is_train=True)
    ex.backward([mx.nd.ones(o.shape) for o in outs])
    assert calls == ([(2, 40, 60)] if not kw else [])
    s = arrays["a"].asnumpy() + arrays["b"].asnumpy()
    close(outs[0].asnumpy(), np.maximum(s, 0))
    extra = 1.0 if kw.get("expose_sum") else 2.0 if kw.get("extra_reader") else 0.0
    want_grad = (s > 0).astype(np.float32) + extra
    close(grads["a"].asnumpy(), want_grad)
    close(grads["b"].asnumpy(), want_grad)


def test_fused_sum_relu_differentiates_twice():
    rng = np.random.default_rng(6)
    a0 = rng.standard_normal((3, 4)).astype(np.float32)
    b0 = rng.standard_normal((3, 4)).astype(np.float32)
    results = []
    for fused in (True, False):
        a, b = mx.nd.array(a0), mx.nd.array(b0)
        a.attach_grad()
        b.attach_grad()
        with autograd.record():
            y = mx.nd.unary._add_relu(a, b) if fused else mx.nd.relu(a + b)
            (ga,) = autograd.grad((y * y).sum(), [a], create_graph=True)
            z = (ga * a).sum()
        z.backward()
        results.append([ga.asnumpy(), a.grad.asnumpy(), b.grad.asnumpy()])
    for got, want in zip(*results, strict=True):
        close(got, want)
    mask = (a0 + b0 > 0).astype(np.float32)
    close(results[0][2], 2 * a0 * mask)  # d/db of sum(2 relu(a+b) a) where a+b > 0


def test_native_loops_split_over_threads_give_the_same_numbers():
    """Three OpenMP threads on buffers long enough to split, against NumPy's formulas."""
    script = textwrap.dedent(
        """
        import numpy as np
        from mxrs import _native, kernels
        from mxrs._backend import NUMPY
        kernels.select("Activation", NUMPY, np.dtype(np.float32))  # loads oneDNN and its OpenMP
        rng = np.random.default_rng(0)
        n = 1_000_003
        a, b, g = (rng.standard_normal(n).astype(np.float32) for _ in range(3))
        a[::1000] = np.nan
        y = np.empty_like(a)
        _native.relu_add_forward(a, b, y)
        s = a + b
        assert np.array_equal(y, np.maximum(s, 0), equal_nan=True)
        _native.relu_forward(a, y)
        assert np.array_equal(y, np.maximum(a, 0), equal_nan=True)
        gx = np.empty_like(a)
        _native.relu_backward(y, g, gx)
        assert np.array_equal(gx, np.where(np.isnan(y), y, g * (y > 0)), equal_nan=True)
        w = rng.standard_normal(n).astype(np.float32)
        m = rng.standard_normal(n).astype(np.float32)
        g = np.nan_to_num(g)
        w0, m0 = w.copy(), m.copy()
        _native.sgd_update(w, g, m, 0.1, 0.01, 0.9, 0.5, 1.0)
        m_want = 0.9 * m0 - 0.1 * 0.01 * w0 - 0.1 * np.clip(0.5 * g, -1, 1)
        np.testing.assert_allclose(m, m_want, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(w, w0 + m_want, rtol=1e-5, atol=1e-6)
        print("ok")
        """
    )
    env = dict(os.environ, OMP_NUM_THREADS="3", MXRS_KERNELS="onednn")
    env.pop("MXNET_OMP_MAX_THREADS", None)
    r = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120
    )
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr
