"""gluon.Trainer with the local and device stores, and mx.model.FeedForward."""

import mxrs as mx
import numpy as np
import pytest
from mxrs import autograd, gluon


def _net(seed=7):
    mx.random.seed(seed)
    net = gluon.nn.HybridSequential()
    net.add(gluon.nn.Dense(6, activation="tanh", in_units=4), gluon.nn.Dense(3, in_units=6))
    return net


def _batches(n=5, size=8):
    rng = np.random.RandomState(1)
    return [
        (rng.normal(size=(size, 4)).astype(np.float32), rng.randint(0, 3, size=size))
        for _ in range(n)
    ]


def _train(ctx, kvstore="device", update_on_kvstore=None, optimizer="sgd", params=None, steps=None):
    net = _net()
    net.initialize(mx.init.Xavier(), ctx=ctx)
    trainer = gluon.Trainer(
        net.collect_params(),
        optimizer,
        params or {"learning_rate": 0.1, "momentum": 0.9, "wd": 0.01},
        kvstore=kvstore,
        update_on_kvstore=update_on_kvstore,
    )
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    for x, y in steps or _batches():
        xs = gluon.utils.split_and_load(x, ctx)
        ys = gluon.utils.split_and_load(y, ctx)
        with autograd.record():
            losses = [loss_fn(net(a), b) for a, b in zip(xs, ys, strict=True)]
        autograd.backward(losses)
        trainer.step(x.shape[0])
    return net, trainer


def _weights(net, ctx=None):
    return [p.data(ctx).asnumpy() for p in net.collect_params().values()]


@pytest.mark.parametrize(
    "kvstore,update_on_kvstore",
    [("device", None), ("local", None), ("device", False), (None, None)],
)
def test_two_contexts_train_like_one(kvstore, update_on_kvstore):
    one, t1 = _train([mx.cpu(0)])
    assert t1._kvstore is None  # one device: no store
    two, t2 = _train([mx.cpu(0), mx.cpu(1)], kvstore, update_on_kvstore)
    if kvstore is None:
        assert t2._kvstore is None and not t2._update_on_kvstore
    else:
        assert t2._kvstore.type == kvstore
        assert t2._update_on_kvstore == (update_on_kvstore is not False)
    if kvstore is None:  # no reduction: each device only sees its half of every batch
        return
    for a, b, c in zip(
        _weights(one), _weights(two, mx.cpu(0)), _weights(two, mx.cpu(1)), strict=True
    ):
        np.testing.assert_allclose(b, a, rtol=1e-5, atol=1e-6)
        np.testing.assert_array_equal(b, c)


def test_one_step_of_sgd_matches_the_formula():
    x, y = _batches(1)[0]
    net = _net()
    net.initialize(mx.init.Xavier(), ctx=mx.cpu())
    before = _weights(net)
    trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.5, "wd": 0.1})
    with autograd.record():
        loss = gluon.loss.SoftmaxCrossEntropyLoss()(net(mx.nd.array(x)), mx.nd.array(y))
    loss.backward()
    grads = [p.grad().asnumpy() for p in net.collect_params().values()]
    trainer.step(8)
    for w0, g, w1 in zip(before, grads, _weights(net), strict=True):
        np.testing.assert_allclose(w1, w0 - 0.5 * (g / 8 + 0.1 * w0), rtol=1e-5, atol=1e-7)


def test_stale_gradients_raise_unless_ignored():
    net = _net()
    net.initialize(ctx=mx.cpu())
    extra = gluon.nn.Dense(2, in_units=4)
    extra.initialize(ctx=mx.cpu())
    params = gluon.ParameterDict()
    params.update(net.collect_params())
    params.update(extra.collect_params())
    trainer = gluon.Trainer(params, "sgd", {"learning_rate": 0.1})
    with autograd.record():
        out = net(mx.nd.ones((2, 4))).sum()
    out.backward()
    with pytest.raises(UserWarning, match=f"`{extra.weight.name}`.*ignore_stale_grad=True"):
        trainer.step(2)
    w = extra.weight.data().asnumpy()
    trainer.step(2, ignore_stale_grad=True)
    np.testing.assert_array_equal(extra.weight.data().asnumpy(), w)  # skipped, not updated


def test_allreduce_and_update_when_the_workers_update():
    ctx = [mx.cpu(0), mx.cpu(1)]
    net = _net()
    net.initialize(ctx=ctx)
    trainer = gluon.Trainer(
        net.collect_params(), "sgd", {"learning_rate": 1.0}, update_on_kvstore=False
    )
    x = mx.nd.ones((4, 4))
    with autograd.record():
        losses = [net(p).sum() for p in gluon.utils.split_and_load(x, ctx)]
    autograd.backward(losses)
    g0 = [p.grad(ctx[0]).asnumpy() for p in net.collect_params().values()]
    g1 = [p.grad(ctx[1]).asnumpy() for p in net.collect_params().values()]
    trainer.allreduce_grads()
    for a, b, p in zip(g0, g1, net.collect_params().values(), strict=True):
        for c in ctx:
            np.testing.assert_allclose(p.grad(c).asnumpy(), a + b, rtol=1e-6)
    w = _weights(net)
    trainer.update(4)
    for w0, p in zip(w, net.collect_params().values(), strict=True):
        np.testing.assert_allclose(p.data().asnumpy(), w0 - p.grad().asnumpy() / 4, rtol=1e-6)
    with autograd.record():
        losses = [net(p).sum() for p in gluon.utils.split_and_load(x, ctx)]
    autograd.backward(losses)
    kv_trainer = _train(ctx)[1]
    with pytest.raises(mx.MXNetError, match="update_on_kvstore=False"):
        kv_trainer.allreduce_grads()


def test_learning_rate_and_states_round_trip(tmp_path):
    steps = _batches(6)
    adam = {"learning_rate": 0.01}
    ref, _ = _train([mx.cpu(0), mx.cpu(1)], optimizer="adam", params=adam, steps=steps)
    net, trainer = _train([mx.cpu(0), mx.cpu(1)], optimizer="adam", params=adam, steps=steps[:3])
    trainer.save_states(str(tmp_path / "t.states"))
    net.save_parameters(str(tmp_path / "n.params"))
    # A fresh trainer resumes from the files and ends where uninterrupted training ends.
    net2 = _net()
    net2.initialize(ctx=[mx.cpu(0), mx.cpu(1)])
    net2.load_parameters(str(tmp_path / "n.params"), ctx=[mx.cpu(0), mx.cpu(1)])
    t2 = gluon.Trainer(net2.collect_params(), "adam", adam)
    t2.load_states(str(tmp_path / "t.states"))
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    for x, y in steps[3:]:
        xs = gluon.utils.split_and_load(x, [mx.cpu(0), mx.cpu(1)])
        ys = gluon.utils.split_and_load(y, [mx.cpu(0), mx.cpu(1)])
        with autograd.record():
            losses = [loss_fn(net2(a), b) for a, b in zip(xs, ys, strict=True)]
        autograd.backward(losses)
        t2.step(x.shape[0])
    for a, b in zip(_weights(ref), _weights(net2), strict=True):
        np.testing.assert_allclose(b, a, rtol=1e-5, atol=1e-7)
    assert trainer.learning_rate == pytest.approx(0.01)
    trainer.set_learning_rate(0.5)
    assert trainer.learning_rate == 0.5 and trainer.optimizer.learning_rate == 0.5


def test_bad_arguments():
    net = _net()
    net.initialize(ctx=mx.cpu())
    with pytest.raises(mx.MXNetError, match="Parameters"):
        gluon.Trainer([1, 2], "sgd")
    with pytest.raises(mx.MXNetError):
        gluon.Trainer(net.collect_params(), "no-such-optimizer")
    with pytest.raises(mx.MXNetError, match="optimizer_params must be empty"):
        gluon.Trainer(net.collect_params(), mx.optimizer.SGD(), {"learning_rate": 1})


class _Recorder(gluon.nn.HybridBlock):
    """Dense layer that records the batch size each context sees."""

    def __init__(self):
        super().__init__()
        self.seen = []
        with self.name_scope():
            self.dense = gluon.nn.Dense(3, in_units=4)

    def hybrid_forward(self, F, x):
        self.seen.append((x.context, x.shape[0]))
        return self.dense(x)


def test_feedforward_work_load_list_splits_a_batch_of_8_into_6_and_2():
    net = _Recorder()
    model = mx.model.FeedForward(
        net, ctx=[mx.cpu(0), mx.cpu(1)], num_epoch=1, numpy_batch_size=8, learning_rate=0.1
    )
    x, y = _batches(1)[0]
    model.fit(x, y, work_load_list=[3, 1], kvstore="local")
    assert net.seen[:2] == [(mx.cpu(0), 6), (mx.cpu(1), 2)]
    with pytest.raises(mx.MXNetError, match="work_load_list has 3 entries for 2 contexts"):
        model.fit(x, y, work_load_list=[1, 1, 1])


def test_feedforward_fits_predicts_and_scores():
    rng = np.random.RandomState(0)
    x = rng.normal(size=(256, 4)).astype(np.float32)
    y = (x[:, 0] > 0).astype(np.int64) + (x[:, 1] > 0)
    seen = []
    model = mx.model.FeedForward(
        _net(),
        ctx=[mx.cpu(0), mx.cpu(1)],
        num_epoch=15,
        numpy_batch_size=32,
        learning_rate=0.5,
        momentum=0.9,
        initializer=mx.init.Xavier(),
    )
    model.fit(x, y, eval_data=(x, y), batch_end_callback=lambda p: seen.append(p.nbatch))
    assert seen[:8] == list(range(8)) and len(seen) == 15 * 8
    pred = model.predict(x)
    assert pred.shape == (256, 3)
    acc = model.score(x, y)
    assert acc > 0.9
    assert (pred.argmax(axis=1) == y).mean() == pytest.approx(acc)


def test_feedforward_trains_through_a_last_batch_smaller_than_its_contexts():
    # 65 rows in batches of 32: the last batch has 1 row for 3 contexts, so two get an empty
    # slice (as MXNet 1.9.1's split gives); they take part in the step with nothing to add.
    rng = np.random.RandomState(1)
    x = rng.normal(size=(65, 4)).astype(np.float32)
    y = (x[:, 0] > 0).astype(np.int64)
    net = _Recorder()
    model = mx.model.FeedForward(
        net,
        ctx=[mx.cpu(0), mx.cpu(1), mx.cpu(2)],
        num_epoch=1,
        numpy_batch_size=32,
        learning_rate=0.1,
    )
    model.fit(x, y)
    assert net.seen[-3:] == [(mx.cpu(0), 1), (mx.cpu(1), 0), (mx.cpu(2), 0)]
    assert all(np.isfinite(p.data().asnumpy()).all() for p in net.collect_params().values())
