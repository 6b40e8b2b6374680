"""mx.contrib.amp: the op lists, what init makes operators do, dynamic loss scaling (the
sequence of scales and skipped steps, checked against MXNet 1.9.1's LossScaler), graph
conversion (checked node by node against MXNet's), and a bfloat16 ResNet-18-style network
trained on the MNIST subset to float32's accuracy."""

import gzip
import importlib.util
import json
import os

import ml_dtypes
import mxnet_ref
import mxrs as mx
import numpy as np
import pytest
from mxrs import autograd, gluon, nd
from mxrs.base import InvalidUsageError, MXNetError
from mxrs.contrib.amp import amp
from mxrs.contrib.amp._wrap import _namespaces
from mxrs.contrib.amp.loss_scaler import LossScaler
from mxrs.symbol.opinfo import has_op

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BF16 = ml_dtypes.bfloat16


@pytest.fixture(autouse=True)
def amp_off():
    """AMP replaces operator functions process-wide: every test starts and ends without it."""
    amp._reset()
    yield
    amp._reset()


# ----------------------------------------------------------------- lists
def _mxnet_lists(name):
    path = os.path.join(
        REPO, "bench", ".venv-mxnet", "lib", "python3.11", "site-packages", "mxnet", "contrib",
        "amp", "lists", f"{name}.py",
    )  # fmt: skip
    if not os.path.exists(path):
        pytest.fail(f"MXNet 1.9.1 (the reference) is not set up: {path} is missing")
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("dtype, lists", [("float16", "symbol_fp16"), ("bfloat16", "symbol_bf16")])
def test_lists_are_mxnets_restricted_to_mxrs_operators(dtype, lists):
    theirs = _mxnet_lists(lists)
    low = "FP16" if dtype == "float16" else "BF16"
    pairs = [
        (amp.list_lp16_ops(dtype), getattr(theirs, f"{low}_FUNCS")),
        (amp.list_lp16_fp32_ops(dtype), getattr(theirs, f"{low}_FP32_FUNCS")),
        (amp.list_fp32_ops(dtype), theirs.FP32_FUNCS),
        (amp.list_widest_type_cast(dtype), theirs.WIDEST_TYPE_CASTS),
        (amp.list_loss_output_functions(dtype), theirs.LOSS_OUTPUT_FUNCTIONS),
    ]
    for ours, mxnet in pairs:
        mine = [n for n in ours if n != "softmax_ce_loss"]  # mxrs's fused loss: float32 too
        assert [n for n in mxnet if n in set(mine)] == mine  # a subset, in MXNet's order
        for name in ours:  # every entry is an operator mxrs has
            found = [getattr(space, attr, None) for space, attr in _namespaces(mx.nd, name)]
            assert has_op(name) or any(callable(f) for f in found), name
    conditional = [(a, b, list(c)) for a, b, c in theirs.CONDITIONAL_FP32_FUNCS]
    assert amp.list_conditional_fp32_ops(dtype) == conditional
    assert amp.list_lp16_ops("bfloat16") == ["Convolution", "FullyConnected"]
    assert amp.list_fp16_ops() == ["Convolution", "Deconvolution", "FullyConnected", "RNN"]
    assert amp.list_bf16_ops() == amp.list_lp16_ops("bfloat16")
    assert amp.list_lp16_use_fp32_params("float16") is None
    assert amp.list_lp16_use_fp32_params("bfloat16")["BatchNorm"][0] == ""
    assert "Flatten" in amp.list_fp32_ops("bfloat16") and "Flatten" not in amp.list_fp32_ops(
        "float16"
    )


def test_bad_use_names_the_problem():
    with pytest.raises(MXNetError, match="float16 and bfloat16.*'int8'"):
        amp.init("int8")
    with pytest.raises(MXNetError, match="did you forget to call amp.init"):
        amp.init_trainer(gluon.Trainer(_dense().collect_params(), "sgd"))
    amp.init("bfloat16")
    amp.init("bfloat16")  # again with the same type: nothing happens, as in MXNet
    with pytest.raises(InvalidUsageError, match="already initialized for bfloat16"):
        amp.init("float16")
    with pytest.raises(TypeError, match="only compatible with Gluon Trainer") as e:
        amp.init_trainer(mx.optimizer.SGD())
    assert isinstance(e.value, MXNetError)
    trainer = gluon.Trainer(_dense().collect_params(), "sgd")
    with pytest.raises(MXNetError, match="did you forget to call amp.init_trainer"):
        with amp.scale_loss(nd.ones((1,)), trainer):
            pass
    with pytest.raises(MXNetError, match="Ops cannot be in two or more lists"):
        amp.convert_symbol(mx.sym.var("x"), "float16", ["FullyConnected"], ["FullyConnected"])
    with pytest.raises(MXNetError, match=r"\['no_such_op'\] are in none of them"):
        amp.convert_symbol(mx.sym.var("x"), "float16", ["no_such_op"])
    with pytest.raises(MXNetError, match="target_dtype float16 and bfloat16"):
        amp.convert_symbol(mx.sym.var("x"), "int8")


# ----------------------------------------------------------------- what init does
def test_init_makes_operators_run_in_the_listed_types():
    amp.init("bfloat16")
    x, w, b = nd.ones((2, 4)), nd.ones((3, 4)) * 0.5, nd.zeros((3,))
    y = nd.FullyConnected(x, w, b, num_hidden=3)  # low precision
    assert y.dtype is BF16 and y.asnumpy().astype(np.float32).tolist() == [[2.0] * 3] * 2
    assert nd.softmax(y).dtype == np.float32  # float32 list
    assert nd.Flatten(y).dtype == np.float32
    assert nd.relu(y).dtype is BF16  # either: the input's type
    assert nd.Activation(y, act_type="relu").dtype is BF16
    assert nd.Activation(y, act_type="softrelu").dtype == np.float32  # conditional
    assert nd.broadcast_add(y, nd.ones((2, 3))).dtype == np.float32  # widest
    assert nd.broadcast_add(y, y).dtype is BF16
    # a graph's nodes run the original functions: its casts are nodes of their own
    data = mx.sym.var("data")
    net = mx.sym.FullyConnected(data, num_hidden=3, name="fc1")
    nodes = json.loads(net.tojson(remove_amp_cast=False))["nodes"]
    casts = [(n["name"], n["attrs"]["dtype"]) for n in nodes if n["op"] == "amp_cast"]
    assert casts == [
        ("amp_cast0", "bfloat16"),
        ("amp_cast1", "bfloat16"),
        ("amp_cast2", "bfloat16"),
    ]
    fc = next(n for n in nodes if n["op"] == "FullyConnected")
    assert fc["name"] == "fc1" and [nodes[i[0]]["name"] for i in fc["inputs"]] == casts_names(casts)
    assert "amp_cast" not in net.tojson()  # removed by default, as MXNet's tojson does
    assert net.list_arguments() == ["data", "fc1_weight", "fc1_bias"]
    assert net.infer_shape(data=(2, 4))[0] == [(2, 4), (3, 4), (3,)]
    ex = net.simple_bind(mx.cpu(), data=(2, 4))
    out = ex.forward(data=x, fc1_weight=w, fc1_bias=b)[0]
    assert out.dtype is BF16 and out.asnumpy().astype(np.float32).tolist() == [[2.0] * 3] * 2
    amp._reset()
    assert nd.FullyConnected(x, w, b, num_hidden=3).dtype == np.float32


def casts_names(casts):
    return [name for name, _ in casts]


def test_loss_output_layers_scale_their_gradient():
    amp.init("float16")
    x = nd.array([[1.0, 2.0]])
    x.attach_grad()
    with autograd.record():
        y = nd.LinearRegressionOutput(x, nd.zeros((1, 2)))
    y.backward()
    # grad_scale is the loss scale: 2 ** 16 times (x - label) / 2 outputs
    np.testing.assert_allclose(x.grad.asnumpy(), [[2.0**15, 2.0**16]])


# ----------------------------------------------------------------- loss scaling
def _dense():
    net = gluon.nn.Dense(2, in_units=3)
    net.initialize(mx.init.Constant(0.5))
    return net


def test_loss_scale_sequence_matches_mxnet(tmp_path):
    pattern = [0, 1, 0, 0, 0, 0, 1, 1, 0, 0, 0, 0, 0, 0]
    script = """
    import mxnet as mx
    from mxnet.contrib.amp.loss_scaler import LossScaler
    net = mx.gluon.nn.Dense(2, in_units=3)
    net.initialize()
    params = list(net.collect_params().values())
    ls = LossScaler()
    ls._scale_seq_len = 3
    result = []
    for bad in inputs["pattern"].tolist():
        for p in params:
            p.grad()[:] = 1.0
        if bad:
            params[0].grad()[0, 1] = float("inf")
        skipped = ls.has_overflow(params)
        result.append([ls.loss_scale, bool(skipped)])
    """
    want, _ = mxnet_ref.run(tmp_path, script, pattern=np.array(pattern))
    params = list(_dense().collect_params().values())
    ls = LossScaler()
    ls._scale_seq_len = 3
    got = []
    for bad in pattern:
        for p in params:
            p.grad()[:] = 1.0
        if bad:
            params[0].grad()[0, 1] = float("inf")
        skipped = ls.has_overflow(params)
        got.append([ls.loss_scale, skipped])
    assert got == [[s, bool(k)] for s, k in want]
    assert got[1] == [2.0**16, True] and got[2] == [2.0**15, False]  # lowered a step late


def test_float16_training_skips_overflowing_steps_and_lowers_the_scale():
    amp.init("float16")
    net = _dense()
    trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 1.0})
    amp.init_trainer(trainer)
    x = nd.array([[1.0, -1.0, 0.5], [0.25, 2.0, -1.0]])
    target = nd.array([[1.0, 0.0], [0.0, 1.0]])
    scales, changed, losses = [], [], []
    for step in range(5):
        used = trainer._amp_loss_scaler.loss_scale
        with autograd.record():
            out = net(x)
            loss = ((out.astype("float32") - target) ** 2).sum() * 0.01
            with amp.scale_loss(loss, trainer) as scaled:
                autograd.backward(scaled)
        assert out.dtype == np.float16
        assert float(scaled.asscalar()) == pytest.approx(float(loss.asscalar()) * used)
        weight = net.weight.data()
        if step == 2:  # an overflow in float16
            net.weight.grad()[0, 0] = np.inf
        before = weight.asnumpy().copy()
        want = before - 1.0 * _unscaled_grad(net, x, target)
        trainer.step(1)
        changed.append(not np.array_equal(before, weight.asnumpy()))
        if step != 2:
            np.testing.assert_allclose(weight.asnumpy(), want, rtol=1e-3, atol=1e-3)
        scales.append(used)
        losses.append(float(loss.asscalar()))
    assert changed == [True, True, False, True, True]
    assert scales == [2.0**16, 2.0**16, 2.0**16, 2.0**16, 2.0**15]  # lowered a step late
    assert losses[-1] < losses[0]
    # a second Trainer gets a scaler of its own
    other = gluon.Trainer(_dense().collect_params(), "sgd")
    amp.init_trainer(other)
    assert other._amp_loss_scaler is not trainer._amp_loss_scaler


def _unscaled_grad(net, x, target):
    """The float32 gradient of the loss with respect to the weight."""
    w, b = net.weight.data().asnumpy(), net.bias.data().asnumpy()
    err = x.asnumpy() @ w.T + b - target.asnumpy()
    return 0.02 * err.T @ x.asnumpy()


def test_unscale_divides_the_gradients_by_the_loss_scale():
    amp.init("float16")
    net = _dense()
    trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.1})
    amp.init_trainer(trainer)
    x = nd.array([[1.0, 2.0, 3.0]])
    with autograd.record():
        loss = net(x).astype("float32").sum() * 2.0**-10
        with amp.scale_loss(loss, trainer) as scaled:
            scaled.backward()
    np.testing.assert_array_equal(net.weight.grad().asnumpy(), [[64.0, 128.0, 192.0]] * 2)
    amp.unscale(trainer)
    np.testing.assert_array_equal(
        net.weight.grad().asnumpy(), np.array([[1.0, 2.0, 3.0]] * 2) * 2.0**-10
    )
    assert trainer._scale == 1.0


# ----------------------------------------------------------------- conversion
_GRAPH = """
data = sym.var("data")
c = sym.Convolution(data, num_filter=4, kernel=(3, 3), name="conv1")
b = sym.BatchNorm(c, name="bn1")
a = sym.Activation(b, act_type="relu", name="relu1")
p = sym.Pooling(a, kernel=(2, 2), stride=(2, 2), pool_type="max", name="pool1")
f = sym.Flatten(p, name="flat")
fc = sym.FullyConnected(f, num_hidden=10, name="fc1")
fc2 = sym.FullyConnected(f, num_hidden=10, name="fc2")
s = sym.elemwise_add(fc, fc2, name="add")
sp = sym.split(s, num_outputs=2, axis=1, name="sp")
e = sym.exp(sp[1], name="exp1")
r = sym.Activation(e, act_type="softrelu", name="soft")
cc = sym.concat(sp[0], r, name="cat")
m = sym.broadcast_mul(cc, data.reshape((0, -1)).slice_axis(axis=1, begin=0, end=10), name="mul")
net = sym.SoftmaxOutput(m, name="softmax")
"""


def _describe(graph_json):
    nodes = json.loads(graph_json)["nodes"]
    out = []
    for n in nodes:
        if n["op"] == "null":
            continue
        attrs = n.get("attrs", {})
        kept = {k: attrs[k] for k in ("dtype", "num_outputs") if k in attrs and "amp" in n["op"]}
        ins = [f"{nodes[i[0]]['name']}:{i[1]}" for i in n["inputs"]]
        out.append([n["op"], n["name"], kept, ins])
    return out


def test_converted_graphs_match_mxnet(tmp_path):
    script = (
        """
    import mxnet as mx
    from mxnet.contrib import amp
    sym = mx.sym
    """
        + _GRAPH.replace("\n", "\n    ")
        + """
    shapes = dict(zip(net.list_arguments(), net.infer_shape(data=(2, 1, 8, 8))[0]))
    aux = dict(zip(net.list_auxiliary_states(), net.infer_shape(data=(2, 1, 8, 8))[2]))
    result = {}
    for td in ["float16", "bfloat16"]:
        out = amp.convert_symbol(net, target_dtype=td)
        result[td] = out.tojson(remove_amp_cast=False)
        args = {k: mx.nd.ones(v) for k, v in shapes.items() if k not in ("data", "softmax_label")}
        auxs = {k: mx.nd.ones(v) for k, v in aux.items()}
        m, a2, x2 = amp.convert_model(net, args, auxs, target_dtype=td, cast_optional_params=True)
        result[td + "_model"] = m.tojson(remove_amp_cast=False)
        attrs = m.attr_dict()
        result[td + "_types"] = {k: attrs[k]["__dtype__"] for k in list(a2) + list(x2)}
    """
    )
    want, _ = mxnet_ref.run(tmp_path, script)
    scope = {"sym": mx.sym}
    exec(_GRAPH, scope)
    net = scope["net"]
    arg_shapes, _, aux_shapes = net.infer_shape(data=(2, 1, 8, 8))
    shapes = dict(zip(net.list_arguments(), arg_shapes, strict=True))
    aux = dict(zip(net.list_auxiliary_states(), aux_shapes, strict=True))
    for td in ["float16", "bfloat16"]:
        out = amp.convert_symbol(net, target_dtype=td)
        assert _describe(out.tojson(remove_amp_cast=False)) == _describe(want[td])
        args = {
            k: nd.ones(v) * 0.01 for k, v in shapes.items() if k not in ("data", "softmax_label")
        }
        auxs = {k: nd.ones(v) for k, v in aux.items()}
        m, a2, x2 = amp.convert_model(net, args, auxs, target_dtype=td, cast_optional_params=True)
        assert _describe(m.tojson(remove_amp_cast=False)) == _describe(want[td + "_model"])
        attrs = m.attr_dict()
        assert {k: attrs[k]["__dtype__"] for k in list(a2) + list(x2)} == want[td + "_types"]
        assert np.dtype(a2["fc1_weight"].dtype).name == td
        assert a2["bn1_gamma"].dtype == np.float32
        # the converted model runs, and the casts are gone from what is saved
        ex = m.simple_bind(mx.cpu(), data=(2, 1, 8, 8))
        for k, v in {**a2, **x2}.items():
            (ex.arg_dict if k in ex.arg_dict else ex.aux_dict)[k][:] = v
        res = ex.forward(data=nd.ones((2, 1, 8, 8)))[0]
        assert res.dtype == np.float32 and res.shape == (2, 10)
        assert "amp_cast" not in m.tojson()


def test_convert_hybrid_block_runs_in_bfloat16():
    net = gluon.nn.HybridSequential()
    net.add(gluon.nn.Conv2D(4, 3), gluon.nn.BatchNorm(), gluon.nn.Activation("relu"))
    net.add(gluon.nn.Flatten(), gluon.nn.Dense(5))
    net.initialize(mx.init.Xavier())
    x = nd.array(np.random.RandomState(0).uniform(-1, 1, (2, 1, 6, 6)))
    with pytest.raises(MXNetError, match="hybridize"):
        amp.convert_hybrid_block(net, "bfloat16")
    net.hybridize()
    want = net(x).asnumpy()
    low = amp.convert_hybrid_block(net, "bfloat16", cast_optional_params=True)
    params = low.collect_params()
    assert np.dtype(params[net[0].weight.name].dtype).name == "bfloat16"
    assert np.dtype(params[net[1].gamma.name].dtype).name == "float32"
    assert np.dtype(params[net[4].weight.name].dtype).name == "bfloat16"
    got = low(x)
    assert got.dtype == np.float32
    np.testing.assert_allclose(got.asnumpy(), want, rtol=5e-2, atol=5e-2)
    with pytest.raises(MXNetError, match="should be a HybridBlock"):
        amp.convert_hybrid_block(gluon.nn.Sequential(), "bfloat16")


# ----------------------------------------------------------------- training in bfloat16
def _mnist(kind, n):
    root = os.path.join(REPO, "data", "mnist")
    with gzip.open(os.path.join(root, f"{kind}-images-idx3-ubyte.gz")) as f:
        x = np.frombuffer(f.read(), np.uint8, offset=16).reshape(-1, 1, 28, 28)[:n]
    with gzip.open(os.path.join(root, f"{kind}-labels-idx1-ubyte.gz")) as f:
        y = np.frombuffer(f.read(), np.uint8, offset=8)[:n]
    return x.astype(np.float32) / 255, y.astype(np.float32)


def _train(bfloat16):
    """A ResNet-18-style network (model zoo's ResNetV1 with BasicBlockV1 units, 2-2-2-2, a
    thumbnail stem for 1x28x28, channels 16-16-32-64-128 instead of 64-...-512 to fit CI's two
    cores) trained 4 epochs with SGD; returns its test accuracy and its output type."""
    from mxrs.gluon.model_zoo.vision.resnet import BasicBlockV1, ResNetV1

    if bfloat16:
        amp.init(target_dtype="bfloat16")
    mx.random.seed(0)
    rng = np.random.RandomState(0)
    xtr, ytr = _mnist("train", 6000)
    xte, yte = _mnist("t10k", 1000)
    net = ResNetV1(BasicBlockV1, [2, 2, 2, 2], [16, 16, 32, 64, 128], classes=10, thumbnail=True)
    net.initialize(mx.init.Xavier(magnitude=2.0))
    net.hybridize()
    trainer = gluon.Trainer(
        net.collect_params(), "sgd", {"learning_rate": 0.1, "momentum": 0.9, "wd": 1e-4}
    )
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    for lr in [0.1, 0.05, 0.01, 0.002]:
        trainer.set_learning_rate(lr)
        order = rng.permutation(len(xtr))
        for i in range(0, len(xtr), 100):
            idx = order[i : i + 100]
            with autograd.record():
                loss = loss_fn(net(nd.array(xtr[idx])), nd.array(ytr[idx]))
            loss.backward()
            trainer.step(100)
    out = net(nd.array(xte))
    accuracy = float((out.astype("float32").argmax(axis=1).asnumpy() == yte).mean())
    return accuracy, out.dtype, loss.dtype


def test_bfloat16_resnet_trains_to_float32_accuracy():
    acc32, out32, _ = _train(bfloat16=False)
    amp._reset()
    acc16, out16, loss16 = _train(bfloat16=True)
    assert out32 == np.float32 and out16 is BF16  # the classifier ran in bfloat16
    assert loss16 == np.float32  # the loss in float32 (its op is on the float32 list)
    assert acc32 > 0.95
    assert abs(acc16 - acc32) <= 0.01, (acc16, acc32)
