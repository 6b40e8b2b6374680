"""``mx.model.FeedForward`` on a Symbol, as MXNet 1.9.1's: fit, predict, score, save, load."""

import textwrap

import mxnet_ref
import mxrs
import numpy as np
import pytest
from mxrs.base import MXNetError


def _inputs():
    rng = np.random.RandomState(5)
    x = rng.normal(size=(90, 8)).astype(np.float32)
    y = ((x[:, 0] > 0).astype(np.float32) + (x[:, 3] > 0.3)).astype(np.float32)
    return {"x": x, "y": y}


SCRIPT = """
data = mx.sym.Variable('data')
h = mx.sym.Activation(mx.sym.FullyConnected(data, name='fc1', num_hidden=12), act_type='relu')
net = mx.sym.SoftmaxOutput(mx.sym.FullyConnected(h, name='fc2', num_hidden=3), name='softmax')
rng = np.random.RandomState(2)
shapes, _, _ = net.infer_shape(data=(1, 8))
init = {n: mx.nd.array(rng.uniform(-0.3, 0.3, s)) for n, s in zip(net.list_arguments(), shapes)
        if n not in ('data', 'softmax_label')}
train = mx.io.NDArrayIter(inputs['x'], inputs['y'], batch_size=15)
model = mx.model.FeedForward(net, ctx=[mx.cpu(0), mx.cpu(1)], num_epoch=4, epoch_size=4,
                             optimizer='sgd', learning_rate=0.2, momentum=0.9, arg_params=init)
model.fit(train, eval_metric='acc')
for k, v in model.arg_params.items():
    arrays[k] = v.asnumpy()
arrays['pred'] = model.predict(inputs['x'][:37])
result = {'score': model.score(mx.io.NDArrayIter(inputs['x'], inputs['y'], batch_size=30))}
"""


def test_fit_predict_score_match_mxnet(tmp_path):
    ns = {"mx": mxrs, "np": np, "inputs": _inputs(), "arrays": {}, "result": None}
    exec(textwrap.dedent(SCRIPT), ns)
    ref_result, ref_arrays = mxnet_ref.run(tmp_path, "import mxnet as mx\n" + SCRIPT, **_inputs())
    assert sorted(ns["arrays"]) == sorted(ref_arrays)
    for k, v in ref_arrays.items():
        np.testing.assert_allclose(ns["arrays"][k], v, rtol=1e-4, atol=1e-5, err_msg=k)
    assert ns["arrays"]["pred"].shape == (37, 3)
    assert ns["result"]["score"] == pytest.approx(ref_result["score"])


def test_arrays_train_and_a_saved_model_loads_and_predicts_the_same(tmp_path):
    inp = _inputs()
    mxrs.random.seed(0)
    np.random.seed(0)
    data = mxrs.sym.Variable("data")
    h = mxrs.sym.Activation(mxrs.sym.FullyConnected(data, num_hidden=16), act_type="relu")
    net = mxrs.sym.SoftmaxOutput(mxrs.sym.FullyConnected(h, num_hidden=3), name="softmax")
    model = mxrs.model.FeedForward.create(
        net, inp["x"], inp["y"], num_epoch=30, numpy_batch_size=30, learning_rate=0.5,
        momentum=0.9, initializer=mxrs.init.Xavier(),
    )  # fmt: skip
    acc = model.score(inp["x"], inp["y"])
    assert acc > 0.9  # three separable classes, 30 epochs
    pred, data_back = model.predict(inp["x"], return_data=True)
    np.testing.assert_array_equal(data_back, inp["x"])
    model.save(str(tmp_path / "ff"), 30)
    loaded = mxrs.model.FeedForward.load(str(tmp_path / "ff"), 30)
    np.testing.assert_allclose(loaded.predict(inp["x"]), pred, rtol=1e-4, atol=1e-7)
    sym, arg, aux = mxrs.model.load_checkpoint(str(tmp_path / "ff"), 30)
    assert sym.list_arguments() == net.list_arguments() and aux == {}
    assert sorted(arg) == sorted(model.arg_params)


def test_errors():
    net = mxrs.sym.SoftmaxOutput(mxrs.sym.FullyConnected(mxrs.sym.Variable("data"), num_hidden=2))
    with pytest.raises(MXNetError, match="y must be given"):
        mxrs.model.FeedForward(net, num_epoch=1).fit(np.zeros((4, 3), np.float32))
    with pytest.raises(MXNetError, match="X has 4 samples but y has 3"):
        mxrs.model.FeedForward(net, num_epoch=1).fit(np.zeros((4, 3)), np.zeros(3))
    with pytest.raises(MXNetError, match="no parameters"):
        mxrs.model.FeedForward(net).predict(np.zeros((4, 3), np.float32))
    with pytest.raises(MXNetError, match="Symbol or a gluon Block"):
        mxrs.model.FeedForward("net")
