"""GPU contexts through CuPy: the same ops give the CPU's numbers and gradients.

Every test here carries the ``gpu`` marker and is skipped when CuPy or a CUDA GPU is missing.
"""

import mxrs as mx
import numpy as np
import pytest
from gradcheck import rand
from mxrs import autograd, nd

pytestmark = pytest.mark.gpu
cupy = pytest.importorskip("cupy", reason="GPU tests need CuPy and a CUDA GPU")
if mx.context.num_gpus() == 0:
    pytest.skip("GPU tests need a CUDA GPU", allow_module_level=True)


def _run(fn, inputs, ctx, nondiff=()):
    arrays = [nd.array(v, ctx=ctx, dtype=np.asarray(v).dtype) for v in inputs]
    for i, a in enumerate(arrays):
        if i not in nondiff:
            a.attach_grad()
    with autograd.record():
        out = fn(*arrays)
    head = nd.array(rand(*out.shape, seed=7), ctx=ctx, dtype=out.dtype)
    out.backward(head)
    grads = [None if i in nondiff else a.grad.asnumpy() for i, a in enumerate(arrays)]
    assert out.context == ctx
    return out.asnumpy(), grads


def check_same(fn, inputs, nondiff=(), rtol=1e-9):
    """Run ``fn`` on cpu(0) and gpu(0) in float64 and compare outputs and gradients."""
    cpu_out, cpu_grads = _run(fn, inputs, mx.cpu(0), nondiff)
    gpu_out, gpu_grads = _run(fn, inputs, mx.gpu(0), nondiff)
    np.testing.assert_allclose(gpu_out, cpu_out, rtol=rtol, atol=1e-12)
    for c, g in zip(cpu_grads, gpu_grads, strict=True):
        if c is not None:
            np.testing.assert_allclose(g, c, rtol=rtol, atol=1e-12)


def test_arrays_live_on_the_gpu():
    a = nd.array([1, 2, 3], ctx=mx.gpu(0))
    assert a.context == mx.gpu(0) and isinstance(a._data, cupy.ndarray)
    assert repr(a) == "\n[1. 2. 3.]\n<NDArray 3 @gpu(0)>"
    b = a.as_in_context(mx.cpu())
    assert isinstance(b._data, np.ndarray)
    np.testing.assert_array_equal((a * 2).asnumpy(), [2, 4, 6])
    with mx.gpu(0):
        assert nd.zeros((2,)).context == mx.gpu(0)
    a.wait_to_read()
    nd.waitall()


def test_mixing_gpu_and_cpu_raises():
    a = nd.array([1, 2, 3], ctx=mx.gpu(0))
    b = nd.array([5, 6, 7], ctx=mx.cpu(0))
    with pytest.raises(mx.MXNetError) as info:
        a + b
    assert "gpu(0)" in str(info.value) and "cpu(0)" in str(info.value)
    c = a + b.as_in_context(a.context)
    np.testing.assert_array_equal(c.asnumpy(), [6, 8, 10])


@pytest.mark.parametrize(
    "fn,shapes",
    [
        (lambda a, b: a * b + a / (b * b + 1), [(2, 3), (1, 3)]),
        (lambda a: nd.relu(a) + nd.sigmoid(a) * nd.tanh(a), [(3, 4)]),
        (lambda a: nd.softmax(a) + nd.log_softmax(a, axis=0), [(3, 4)]),
        (lambda a: nd.sum(a, axis=1) + nd.max(a, axis=1) + nd.mean(a, axis=1), [(3, 4)]),
        (lambda a, b: nd.dot(a, b), [(3, 4), (4, 2)]),
        (lambda a: nd.topk(a, k=2, ret_typ="value"), [(3, 5)]),
        (lambda a: a[1:, [0, 2, 2]], [(3, 4)]),
    ],
)
def test_ops_match_cpu(fn, shapes):
    check_same(fn, [rand(*s, seed=i) for i, s in enumerate(shapes)])


def test_conv_pool_match_cpu():
    x, w, b = rand(2, 4, 9, 8), rand(6, 2, 3, 3, seed=1), rand(6, seed=2)

    def net(d, wt, bias):
        h = nd.Convolution(
            d,
            wt,
            bias,
            kernel=(3, 3),
            num_filter=6,
            stride=(2, 1),
            pad=(1, 1),
            dilate=(1, 2),
            num_group=2,
        )
        # h is (2, 6, 5, 6); both poolings keep that shape so they can be added.
        return (
            nd.Pooling(nd.relu(h), kernel=(3, 3), stride=(1, 1), pad=(1, 1))
            + nd.Pooling(h, kernel=(3, 3), stride=(1, 1), pad=(1, 1), pool_type="avg")
            + nd.Pooling(h, kernel=(2, 2), stride=(2, 2)).sum()
        )

    check_same(net, [x, w, b])


def test_indexing_nn_match_cpu():
    check_same(
        lambda wt, i: nd.Embedding(i, wt, input_dim=5, output_dim=3),
        [rand(5, 3), np.array([[1, 4], [1, 1]])],
        nondiff=(1,),
    )
    check_same(
        lambda a, lab: nd.softmax_ce_loss(a, lab),
        [rand(4, 5), np.array([0, 4, 2, 2])],
        nondiff=(1,),
    )
    check_same(lambda a, i: nd.pick(a, i), [rand(4, 5), np.array([0, 4, 2, 2])], nondiff=(1,))
    check_same(
        lambda d, g, bt, m, v: nd.BatchNorm(d, g, bt, m, v, fix_gamma=False),
        [rand(4, 3, 2), rand(3) + 2, rand(3), np.zeros(3), np.ones(3)],
        nondiff=(3, 4),
    )


def test_gradient_flows_back_from_gpu_to_cpu():
    x = nd.array([1.0, 2.0])
    x.attach_grad()
    with autograd.record():
        y = (x.as_in_context(mx.gpu(0)) * 3).sum()
    y.backward()
    assert x.grad.context == mx.cpu(0)
    np.testing.assert_allclose(x.grad.asnumpy(), [3, 3])


def test_random_and_dropout_on_gpu():
    mx.random.seed(5)
    a = mx.random.uniform(shape=(4, 4), ctx=mx.gpu(0))
    mx.random.seed(5)
    b = mx.random.uniform(shape=(4, 4), ctx=mx.gpu(0))
    assert a.context == mx.gpu(0)
    np.testing.assert_array_equal(a.asnumpy(), b.asnumpy())
    assert mx.random.normal(shape=(3,), ctx=mx.gpu(0)).shape == (3,)
    with autograd.train_mode():
        y = nd.Dropout(nd.ones((100,), ctx=mx.gpu(0)), p=0.5).asnumpy()
    assert set(np.unique(y)) <= {0.0, 2.0}


def test_nccl_reduce_sums_on_the_root_gpu():
    from mxrs.kvstore import _nccl

    if not _nccl.available():
        pytest.skip("this CuPy has no NCCL")
    a = cupy.arange(12, dtype=cupy.float32).reshape(3, 4)
    out = _nccl.reduce_to([a], [0], 0)
    assert out is not a and out.device.id == 0
    np.testing.assert_array_equal(out.get(), np.arange(12).reshape(3, 4))
    # the same device twice is no NCCL communicator: the caller adds instead
    assert _nccl.reduce_to([a, a], [0, 0], 0) is None


def test_device_store_sums_gpu_values_on_the_gpu():
    kv = mx.kv.create("device")
    kv.init(3, nd.zeros((2, 3), ctx=mx.gpu(0)))
    kv.push(3, [nd.ones((2, 3), ctx=mx.gpu(0)) * i for i in (1, 2, 3)])
    out = nd.zeros((2, 3), ctx=mx.gpu(0))
    kv.pull(3, out=out)
    assert out.context == mx.gpu(0)
    np.testing.assert_array_equal(out.asnumpy(), np.full((2, 3), 6.0))


def test_pinned_host_copy_holds_the_device_values():
    be = mx.gpu(0).backend
    a = cupy.arange(10, dtype=cupy.float16)[::2]  # not contiguous
    host = be.to_host_pinned(a)
    assert isinstance(host, np.ndarray) and host.dtype == np.float16
    np.testing.assert_array_equal(host, np.arange(0, 10, 2))


_DIST_TRAIN = """
import os, sys
import numpy as np
import mxrs as mx
from mxrs import autograd, gluon

def train(ctx, kv, rows):
    mx.random.seed(0)
    net = gluon.nn.HybridSequential()
    net.add(gluon.nn.Conv2D(4, 3, padding=1, in_channels=2), gluon.nn.Activation("relu"),
            gluon.nn.Dense(3, in_units=4 * 6 * 6))
    net.initialize(mx.init.Xavier(), ctx=mx.cpu(0))  # drawn on the CPU: equal everywhere
    net.collect_params().reset_ctx(ctx)
    opt = {"learning_rate": 0.1, "momentum": 0.9}
    trainer = gluon.Trainer(net.collect_params(), "sgd", opt, kvstore=kv)
    rng = np.random.default_rng(0)
    x_all, y_all = rng.uniform(-1, 1, (16, 2, 6, 6)), rng.integers(0, 3, 16)
    x = mx.nd.array(x_all[rows], ctx=ctx)
    y = mx.nd.array(y_all[rows], ctx=ctx)
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    for _ in range(3):
        with autograd.record():
            loss = loss_fn(net(x), y)
        loss.backward()
        trainer.step(16)
    return np.concatenate([p.data(ctx).asnumpy().ravel() for p in net.collect_params().values()])

if __name__ == "__main__":
    kv = mx.kv.create("dist_device_sync")
    r = kv.rank
    w = train(mx.gpu(0), kv, slice(8 * r, 8 * r + 8))
    np.save(f"w{r}.npy", w)
    print("ok", r, flush=True)
"""


def test_dist_device_sync_trains_on_gpus_as_one_process_on_the_whole_batch(tmp_path):
    """Two workers on the GPU, two servers: each worker's gradients leave the GPU once (pinned
    memory), the servers sum and update, and both workers hold the weights one process gets
    from the whole batch."""
    import importlib.util

    from jobs import launch

    result = launch(tmp_path, _DIST_TRAIN, n=2, s=2, env=["MXRS_CUDNN_TF32=0"])
    assert result.returncode == 0, result.stdout + result.stderr
    w0, w1 = np.load(tmp_path / "w0.npy"), np.load(tmp_path / "w1.npy")
    np.testing.assert_array_equal(w0, w1)
    spec = importlib.util.spec_from_file_location("dist_train", tmp_path / "worker.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    want = module.train(mx.cpu(0), "local", slice(0, 16))
    np.testing.assert_allclose(w0, want, rtol=1e-4, atol=1e-5)
