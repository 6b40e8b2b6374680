"""Gluon training across 2 worker processes and 2 servers, checked against a 1-process replay."""

import json

import mxrs as mx
import numpy as np
from jobs import launch
from mxrs import autograd, gluon

STEPS_PER_EPOCH, EPOCHS, BATCH, LR, MOM, WD = 4, 2, 8, 0.1, 0.9, 1e-3


def _data():
    rng = np.random.RandomState(0)
    x = rng.normal(size=(64, 5)).astype(np.float32)
    y = (x[:, 0] + x[:, 1] > 0).astype(np.float32) + (x[:, 2] > 1)
    return x, y


def _net():
    net = gluon.nn.HybridSequential()
    net.add(gluon.nn.Dense(8, activation="relu", in_units=5), gluon.nn.Dense(3, in_units=8))
    return net


WORKER = f"""
import json, sys
import numpy as np
import mxrs as mx
from mxrs import autograd, gluon
sys.path.insert(0, {str(__import__("os").path.dirname(__file__))!r})
from test_gluon_dist import _data, _net

kv = mx.kv.create(sys.argv[1])
r = kv.rank
mx.random.seed(100)
x, y = _data()
ds = gluon.data.ArrayDataset(x, y, np.arange(len(x), dtype=np.float32))
loader = gluon.data.DataLoader(ds, batch_size={BATCH},
                               sampler=gluon.data.SplitSampler(len(x), kv.num_workers, r))
ctx = [mx.cpu(0), mx.cpu(1)]
net = _net()
net.initialize(mx.init.Xavier(), ctx=ctx)
trainer = gluon.Trainer(net.collect_params(), 'sgd',
                        {{'learning_rate': {LR}, 'momentum': {MOM}, 'wd': {WD}}}, kvstore=kv)
loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
if r == 0:
    net.save_parameters('init.params')
order = []
for epoch in range({EPOCHS}):
    for data, label, idx in loader:
        order.append([int(i) for i in idx.asnumpy()])
        datas = gluon.utils.split_and_load(data, ctx)
        labels = gluon.utils.split_and_load(label, ctx)
        with autograd.record():
            losses = [loss_fn(net(d), l) for d, l in zip(datas, labels)]
        autograd.backward(losses)
        trainer.step(data.shape[0])
mx.nd.waitall()
net.save_parameters(f'final{{r}}.params')
with open(f'order{{r}}.json', 'w') as f:
    json.dump(order, f)
# weights loaded after training are this worker's to use; training on them is an error
net.load_parameters('init.params', ctx=ctx)
loaded = net(mx.nd.array(x[:4], ctx=ctx[0])).asnumpy()
with autograd.record():
    loss = loss_fn(net(mx.nd.array(x[:4], ctx=ctx[0])), mx.nd.array(y[:4], ctx=ctx[0]))
loss.backward()
try:
    trainer.step(4, ignore_stale_grad=True)
except mx.MXNetError as e:
    print('refused:', e, flush=True)
print('ok', r, flush=True)
"""


def _replay(tmp_path):
    """The same SGD steps in one process: each step applies sum_w grad_w / batch."""
    x, y = _data()
    net = _net()
    net.initialize(ctx=mx.cpu())
    net.load_parameters(str(tmp_path / "init.params"))
    params = list(net.collect_params().values())
    orders = [json.loads((tmp_path / f"order{r}.json").read_text()) for r in range(2)]
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    moms = [np.zeros(p.shape, np.float32) for p in params]
    for step in range(len(orders[0])):
        total = [np.zeros(p.shape, np.float32) for p in params]
        for order in orders:
            idx = order[step]
            with autograd.record():
                loss = loss_fn(net(mx.nd.array(x[idx])), mx.nd.array(y[idx]))
            loss.backward()
            for t, p in zip(total, params, strict=True):
                t += p.grad().asnumpy() / BATCH
        for t, m, p in zip(total, moms, params, strict=True):
            w = p.data().asnumpy()
            m[:] = MOM * m - LR * (t + WD * w)
            p.set_data(mx.nd.array(w + m))
    return net


def test_two_workers_train_like_one_process_replaying_their_steps(tmp_path):
    result = launch(tmp_path, WORKER, args=["dist_sync"])
    assert result.returncode == 0, result.stdout + result.stderr
    refused = "refused: Trainer: set_data (or load_parameters) changed Parameters"
    assert result.stdout.count(refused) == 2, result.stdout
    finals = []
    for r in range(2):
        net = _net()
        net.initialize(ctx=mx.cpu())
        net.load_parameters(str(tmp_path / f"final{r}.params"))
        finals.append([p.data().asnumpy() for p in net.collect_params().values()])
    for a, b in zip(*finals, strict=True):
        np.testing.assert_array_equal(a, b)  # both workers hold the same weights
    orders = [json.loads((tmp_path / f"order{r}.json").read_text()) for r in range(2)]
    assert len(orders[0]) == STEPS_PER_EPOCH * EPOCHS
    assert not set(orders[0][0]) & set(orders[1][0])  # SplitSampler: disjoint parts
    replay = [p.data().asnumpy() for p in _replay(tmp_path).collect_params().values()]
    for got, want in zip(finals[0], replay, strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
