"""``Module.fit`` on dist stores: 2 worker processes × 2 servers, against a 1-process replay.

Worker r trains on its own rows; one process with two contexts fed the two workers' batches
side by side computes the same sums, so every final weight must agree (to float rounding),
whether the servers run the optimizer or the workers do (``MXNET_UPDATE_ON_KVSTORE=0``).
"""

import mxrs as mx
import numpy as np
import pytest
from jobs import launch

ROWS, BATCH, EPOCHS = 32, 8, 3


def _data():
    rng = np.random.RandomState(3)
    x = rng.normal(size=(2 * ROWS, 6)).astype(np.float32)
    y = ((x[:, 0] > 0).astype(np.float32) + (x[:, 1] > 0.5)).astype(np.float32)
    return x, y


def _net(sym):
    data = sym.Variable("data")
    h = sym.Activation(sym.FullyConnected(data, name="fc1", num_hidden=10), act_type="relu")
    h = sym.FullyConnected(h, name="fc2", num_hidden=3, lr_mult=0.5)
    return sym.SoftmaxOutput(h, name="softmax")


def _init(net):
    rng = np.random.RandomState(7)
    shapes, _, _ = net.infer_shape(data=(BATCH, 6))
    return {n: rng.uniform(-0.4, 0.4, s).astype(np.float32)
            for n, s in zip(net.list_arguments(), shapes, strict=True)
            if n not in ("data", "softmax_label")}  # fmt: skip


OPT = {"learning_rate": 0.2, "momentum": 0.9, "wd": 0.01}

WORKER = f"""
import os, sys
import numpy as np
import mxrs as mx
sys.path.insert(0, {str(__import__("os").path.dirname(__file__))!r})
from test_module_dist import _data, _net, _init, OPT, ROWS, BATCH, EPOCHS

kv = mx.kv.create(sys.argv[1])
x, y = _data()
r = kv.rank
train = mx.io.NDArrayIter(x[r * ROWS:(r + 1) * ROWS], y[r * ROWS:(r + 1) * ROWS], BATCH)
net = _net(mx.sym)
mod = mx.mod.Module(net)
init = {{k: mx.nd.array(v) for k, v in _init(net).items()}}
mod.fit(train, num_epoch=EPOCHS, kvstore=kv, optimizer='sgd', optimizer_params=OPT,
        arg_params=init)
arg, _ = mod.get_params()
np.savez(f'w{{r}}.npz', **{{k: v.asnumpy() for k, v in arg.items()}})
print('update_on_kvstore', mod._update_on_kvstore)
"""


def _replay():
    """One process, two contexts, each batch the two workers' batches side by side."""
    x, y = _data()
    parts = [(x[r * ROWS : (r + 1) * ROWS], y[r * ROWS : (r + 1) * ROWS]) for r in range(2)]
    xs, ys = [], []
    for b in range(0, ROWS, BATCH):
        for px, py in parts:
            xs.append(px[b : b + BATCH])
            ys.append(py[b : b + BATCH])
    train = mx.io.NDArrayIter(np.concatenate(xs), np.concatenate(ys), 2 * BATCH)
    net = _net(mx.sym)
    mod = mx.mod.Module(net, context=[mx.cpu(0), mx.cpu(1)])
    init = {k: mx.nd.array(v) for k, v in _init(net).items()}
    mod.fit(train, num_epoch=EPOCHS, kvstore="device", optimizer_params=OPT, arg_params=init)
    return {k: v.asnumpy() for k, v in mod.get_params()[0].items()}


@pytest.mark.parametrize("on_store", ["1", "0"])
def test_dist_sync_fit_equals_two_contexts_in_one_process(tmp_path, monkeypatch, on_store):
    monkeypatch.setenv("MXNET_UPDATE_ON_KVSTORE", on_store)
    proc = launch(tmp_path, WORKER, env=[f"MXNET_UPDATE_ON_KVSTORE={on_store}"],
                  args=["dist_sync"])  # fmt: skip
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert proc.stdout.count(f"update_on_kvstore {on_store == '1'}") == 2
    w0, w1 = (dict(np.load(tmp_path / f"w{r}.npz")) for r in range(2))
    ref = _replay()
    init = _init(_net(mx.sym))
    for k in ref:
        np.testing.assert_allclose(w0[k], w1[k], rtol=1e-6, atol=1e-7, err_msg=k)
        np.testing.assert_allclose(w0[k], ref[k], rtol=1e-4, atol=1e-5, err_msg=k)
        assert np.abs(w0[k] - init[k]).max() > 1e-3, k  # it trained


def test_dist_async_fit_trains_every_worker(tmp_path):
    proc = launch(tmp_path, WORKER, args=["dist_async"])
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    init = _init(_net(mx.sym))
    for r in range(2):
        w = dict(np.load(tmp_path / f"w{r}.npz"))
        assert sorted(w) == sorted(init)
        assert all(np.abs(w[k] - init[k]).max() > 1e-3 for k in init)
