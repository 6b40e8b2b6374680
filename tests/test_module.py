"""``mx.mod.Module`` against Apache MXNet 1.9.1: the same script, the same numbers.

Each case runs one script twice, in this process with ``mx`` = mxrs and under MXNet 1.9.1
(``mxnet_ref``), and compares every parameter, auxiliary state and output it leaves behind.
"""

import logging
import textwrap

import mxnet_ref
import mxrs
import numpy as np
import pytest
from mxrs.base import MXNetError


def _inputs():
    rng = np.random.RandomState(0)
    x = rng.uniform(-1, 1, (60, 2, 6, 6)).astype(np.float32)
    w = rng.uniform(-1, 1, (72, 3)).astype(np.float32)
    y = (x.reshape(60, -1) @ w).argmax(1).astype(np.float32)
    return {"x": x, "y": y}


# a conv net with BatchNorm (auxiliary states), a multiplier attribute and an initial state
NET = """
import os
data = mx.sym.Variable('data')
c = mx.sym.Convolution(data, name='conv', kernel=(3, 3), num_filter=4, no_bias=True)
c = mx.sym.BatchNorm(c, name='bn', fix_gamma=False)
c = mx.sym.Activation(c, act_type='relu')
c = mx.sym.Pooling(c, kernel=(2, 2), stride=(2, 2), pool_type='max')
w1 = mx.sym.Variable('fc1_weight', lr_mult=0.5)
f = mx.sym.FullyConnected(mx.sym.Flatten(c), weight=w1, name='fc1', num_hidden=8)
f = mx.sym.Activation(f, act_type='tanh')
f = mx.sym.FullyConnected(f, name='fc2', num_hidden=3, wd_mult=2.0)
net = mx.sym.SoftmaxOutput(f, name='softmax')
rng = np.random.RandomState(1)
shapes, _, aux_shapes = net.infer_shape(data=(10, 2, 6, 6))
init = {n: mx.nd.array(rng.uniform(-0.5, 0.5, s)) for n, s in zip(net.list_arguments(), shapes)
        if n not in ('data', 'softmax_label')}
train = mx.io.NDArrayIter(inputs['x'], inputs['y'], batch_size=10)
"""

FIT = """
mod = mx.mod.Module(net, context=CTX, work_load_list=WORKLOAD)
mod.fit(train, eval_data=train, num_epoch=3, kvstore=KV, optimizer=OPT,
        optimizer_params=PARAMS, arg_params=init, aux_params=None, allow_missing=True)
arg, aux = mod.get_params()
for k, v in list(arg.items()) + list(aux.items()):
    arrays[k] = v.asnumpy()
result = {'score': mod.score(train, ['acc', 'ce']),
          'outputs': mod.output_names, 'shapes': [list(s) for _, s in mod.output_shapes]}
arrays['fc2_weight_init'] = init['fc2_weight'].asnumpy()
arrays['pred'] = mod.predict(mx.io.NDArrayIter(inputs['x'][:25], batch_size=10)).asnumpy()
"""


def _both(tmp_path, script, env=None):
    """(mxrs's (result, arrays), MXNet's (result, arrays)) for ``script``."""
    ns = {"mx": mxrs, "np": np, "inputs": _inputs(), "result": None, "arrays": {}}
    exec(textwrap.dedent(script), ns)  # the same code MXNet runs below
    ref = mxnet_ref.run(tmp_path, "import mxnet as mx\n" + script, **_inputs())
    return (ns["result"], ns["arrays"]), ref


def _check_same(mine, ref, rtol=1e-4, atol=1e-5):
    (res, arrays), (ref_res, ref_arrays) = mine, ref
    assert sorted(arrays) == sorted(ref_arrays)
    for k in ref_arrays:
        np.testing.assert_allclose(arrays[k], ref_arrays[k], rtol=rtol, atol=atol, err_msg=k)
    assert res["outputs"] == ref_res["outputs"] and res["shapes"] == ref_res["shapes"]
    for (n1, v1), (n2, v2) in zip(res["score"], ref_res["score"], strict=True):
        assert n1 == n2 and v1 == pytest.approx(v2, rel=1e-4)


CASES = {
    # two contexts cut 3:1, the optimizer on the 'device' store
    "device-2ctx-on-store": ("[mx.cpu(0), mx.cpu(1)]", "[3, 1]", "'device'", "1"),
    # the same with the optimizer run here on each context with the summed gradient
    "device-2ctx-local-update": ("[mx.cpu(0), mx.cpu(1)]", "[3, 1]", "'device'", "0"),
    # 'local' over two contexts, equal shares
    "local-2ctx": ("[mx.cpu(0), mx.cpu(1)]", "None", "'local'", "1"),
    # one context: no store at all
    "1ctx-no-store": ("mx.cpu()", "None", "'local'", "1"),
}


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize(
    "opt,params",
    [
        ("'sgd'", "{'learning_rate': 0.3, 'momentum': 0.9, 'wd': 0.01}"),
        ("'adam'", "{'learning_rate': 0.02, 'wd': 0.001}"),
    ],
)
def test_fit_matches_mxnet(tmp_path, monkeypatch, case, opt, params):
    ctx, workload, kv, on_store = CASES[case]
    monkeypatch.setenv("MXNET_UPDATE_ON_KVSTORE", on_store)
    head = (
        f"os.environ['MXNET_UPDATE_ON_KVSTORE'] = '{on_store}'\n"
        f"CTX, WORKLOAD, KV, OPT, PARAMS = {ctx}, {workload}, {kv}, {opt}, {params}\n"
    )
    mine, ref = _both(tmp_path, NET + head + FIT)
    _check_same(mine, ref)
    # the weights moved (a mutation that skips the update would pass the comparison)
    assert np.abs(mine[1]["fc2_weight"] - mine[1]["fc2_weight_init"]).max() > 1e-2


def test_forward_backward_update_steps_and_input_grads_match_mxnet(tmp_path):
    script = (
        NET
        + """
mod = mx.mod.Module(net, context=[mx.cpu(0), mx.cpu(1)])
mod.bind(train.provide_data, train.provide_label, inputs_need_grad=True)
mod.init_params(mx.init.Xavier(), arg_params=init, allow_missing=True)
mod.init_optimizer(kvstore='local', optimizer='nag',
                   optimizer_params={'learning_rate': 0.1, 'momentum': 0.8})
metric = mx.metric.create('acc')
for batch in train:
    mod.forward(batch, is_train=True)
    mod.backward()
    mod.update()
    mod.update_metric(metric, batch.label)
arrays['input_grad'] = mod.get_input_grads()[0].asnumpy()
arrays['out'] = mod.get_outputs()[0].asnumpy()
arrays['out_ctx1'] = mod.get_outputs(merge_multi_context=False)[0][1].asnumpy()
arg, aux = mod.get_params()
for k, v in list(arg.items()) + list(aux.items()):
    arrays[k] = v.asnumpy()
result = {'acc': metric.get()[1]}
"""
    )
    (res, arrays), (ref_res, ref_arrays) = _both(tmp_path, script)
    assert res["acc"] == pytest.approx(ref_res["acc"])
    for k in ref_arrays:
        np.testing.assert_allclose(arrays[k], ref_arrays[k], rtol=1e-4, atol=1e-6, err_msg=k)


def test_checkpoint_and_resume_equals_uninterrupted_training(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    ns = {"mx": mxrs, "np": np, "inputs": _inputs(), "arrays": {}}
    exec(textwrap.dedent(NET), ns)
    net, init, train = ns["net"], ns["init"], ns["train"]
    params = {"learning_rate": 0.1, "momentum": 0.9}

    full = mxrs.mod.Module(net)
    full.fit(train, num_epoch=4, optimizer_params=params, arg_params=init, allow_missing=True)

    first = mxrs.mod.Module(net)
    first.fit(
        train,
        num_epoch=2,
        optimizer_params=params,
        arg_params=init,
        allow_missing=True,
        epoch_end_callback=mxrs.callback.do_checkpoint("ck"),
    )
    first.save_optimizer_states("ck-0002.states")
    assert (tmp_path / "ck-symbol.json").exists() and (tmp_path / "ck-0002.params").exists()
    resumed = mxrs.mod.Module.load("ck", 2, load_optimizer_states=True)
    with pytest.warns(UserWarning, match="already initialized"):  # as MXNet: loaded = set
        resumed.fit(train, begin_epoch=2, num_epoch=4, optimizer_params=params)
    a, _ = full.get_params()
    b, _ = resumed.get_params()
    for k in a:
        np.testing.assert_allclose(b[k].asnumpy(), a[k].asnumpy(), rtol=1e-5, atol=1e-6)
    # without the optimizer states (momentum lost) the result differs: the states mattered
    lost = mxrs.mod.Module.load("ck", 2)
    with pytest.warns(UserWarning, match="already initialized"):
        lost.fit(train, begin_epoch=2, num_epoch=4, optimizer_params=params)
    c, _ = lost.get_params()
    assert not np.allclose(c["fc1_weight"].asnumpy(), a["fc1_weight"].asnumpy(), atol=1e-4)


def test_fit_logs_mxnet_lines_and_calls_callbacks(caplog):
    ns = {"mx": mxrs, "np": np, "inputs": _inputs(), "arrays": {}}
    exec(textwrap.dedent(NET), ns)
    seen, ends = [], []
    mod = mxrs.mod.Module(ns["net"])
    with caplog.at_level(logging.INFO):
        mod.fit(
            ns["train"],
            eval_data=ns["train"],
            num_epoch=2,
            batch_end_callback=lambda p: seen.append((p.epoch, p.nbatch)),
            epoch_end_callback=lambda e, sym, arg, aux: ends.append((e, sorted(arg), sorted(aux))),
        )
    assert seen == [(e, b) for e in range(2) for b in range(6)]
    assert [e for e, _, _ in ends] == [0, 1]
    assert ends[0][1] == sorted(["conv_weight", "bn_beta", "bn_gamma", "fc1_weight",
                                 "fc1_bias", "fc2_weight", "fc2_bias"])  # fmt: skip
    assert ends[0][2] == ["bn_moving_mean", "bn_moving_var"]
    msgs = [r.getMessage() for r in caplog.records]
    for line in (
        "Epoch[0] Train-accuracy=",
        "Epoch[0] Time cost=",
        "Epoch[1] Validation-accuracy=",
    ):
        assert any(m.startswith(line) for m in msgs), (line, msgs)


def _bound(**kw):
    data = mxrs.sym.Variable("data")
    net = mxrs.sym.SoftmaxOutput(mxrs.sym.FullyConnected(data, num_hidden=2, name="fc"),
                                 name="softmax")  # fmt: skip
    mod = mxrs.mod.Module(net, **kw)
    mod.bind([("data", (4, 3))], [("softmax_label", (4,))])
    return mod


def test_errors_name_what_is_wrong():
    data = mxrs.sym.Variable("data")
    net = mxrs.sym.FullyConnected(data, num_hidden=2, name="fc")
    with pytest.raises(MXNetError, match="'images' is not found"):
        mxrs.mod.Module(net, data_names=["images"])
    with pytest.raises(MXNetError, match="work_load_list has 1 entries for 2 contexts"):
        mxrs.mod.Module(net, context=[mxrs.cpu(0), mxrs.cpu(1)], work_load_list=[1])
    with pytest.warns(UserWarning, match="'softmax_label' is not found"):
        mod = mxrs.mod.Module(net)
    with pytest.raises(MXNetError, match="bind the module"):
        mod.forward(mxrs.io.DataBatch([mxrs.nd.ones((4, 3))]))
    with pytest.raises(MXNetError, match="does not match the module's data_names"):
        mod.bind([("x", (4, 3))])
    mod = _bound()
    with pytest.raises(MXNetError, match="'fc_weight' is not in the given parameters"):
        mod.init_params(arg_params={"fc_bias": mxrs.nd.zeros((2,))})
    mod.init_params()
    with pytest.raises(MXNetError, match="no optimizer"):
        mod.update()
    with pytest.raises(MXNetError, match="num_epoch"):
        mod.fit(mxrs.io.NDArrayIter(np.zeros((4, 3)), np.zeros(4), batch_size=4))
    with pytest.raises(MXNetError, match="cannot be split"):
        _bound(context=[mxrs.cpu(0), mxrs.cpu(1)], work_load_list=[100, 1]).bind(
            [("data", (1, 3))], force_rebind=True
        )


def test_a_batch_of_another_size_rebinds_and_keeps_the_parameters():
    mod = _bound()
    mod.init_params(mxrs.init.Xavier())
    before = mod.get_params()[0]["fc_weight"].asnumpy().copy()
    x = np.arange(18, dtype=np.float32).reshape(6, 3)
    mod.forward(mxrs.io.DataBatch([mxrs.nd.array(x)], [mxrs.nd.zeros((6,))]), is_train=False)
    out = mod.get_outputs()[0].asnumpy()
    assert out.shape == (6, 2)
    w, b = before, mod.get_params()[0]["fc_bias"].asnumpy()
    z = x @ w.T + b
    expect = np.exp(z - z.max(1, keepdims=True))
    np.testing.assert_allclose(out, expect / expect.sum(1, keepdims=True), rtol=1e-5)
    assert mod.data_shapes[0].shape == (6, 3)


def test_save_params_and_load_params_round_trip(tmp_path):
    mod = _bound()
    mod.init_params(mxrs.init.Xavier())
    mod.save_params(str(tmp_path / "m.params"))
    other = _bound()
    other.init_params(mxrs.init.Zero())
    other.load_params(str(tmp_path / "m.params"))
    for k, v in mod.get_params()[0].items():
        np.testing.assert_array_equal(other.get_params()[0][k].asnumpy(), v.asnumpy())
    # the file is a checkpoint's parameter file: mx.model.load_params reads it
    (tmp_path / "m-0001.params").write_bytes((tmp_path / "m.params").read_bytes())
    arg, aux = mxrs.model.load_params(str(tmp_path / "m"), 1)
    assert sorted(arg) == ["fc_bias", "fc_weight"] and aux == {}
    with pytest.raises(MXNetError, match="no parameter file"):
        other.load_params(str(tmp_path / "missing.params"))
