"""``HybridBlock.export`` and ``gluon.SymbolBlock`` against Apache MXNet 1.9.1: export writes the
files MXNet writes, files exported by either library load in the other with equal outputs, and a
SymbolBlock names, evaluates, differentiates and trains its parameters as MXNet's does."""

import json
import textwrap

import mxnet_ref
import mxrs as mx
import numpy as np
import pytest
from mxrs import autograd, gluon
from mxrs.base import MXNetError

# Gluon code run unchanged by both libraries (``mx`` is either).
NETS = textwrap.dedent(
    """
    def lenet(mx):
        nn = mx.gluon.nn
        net = nn.HybridSequential()
        with net.name_scope():
            net.add(nn.Conv2D(4, kernel_size=3, padding=1), nn.BatchNorm(),
                    nn.Activation("relu"), nn.MaxPool2D(pool_size=2, strides=2),
                    nn.Conv2D(6, kernel_size=3, use_bias=False), nn.BatchNorm(center=False),
                    nn.Activation("tanh"), nn.Flatten(), nn.Dense(10, activation="relu"),
                    nn.Dense(3))
        return net

    def mlp(mx):
        nn = mx.gluon.nn
        net = nn.HybridSequential(prefix="mlp_")
        with net.name_scope():
            net.add(nn.Dense(8, activation="sigmoid", in_units=5), nn.Dense(4, use_bias=False),
                    nn.LeakyReLU(0.1), nn.Dense(2))
        return net

    def two_inputs(mx):
        class Gate(mx.gluon.HybridBlock):
            def __init__(self, **kwargs):
                super().__init__(**kwargs)
                with self.name_scope():
                    self.scale = self.params.get("scale", shape=(1,), init=mx.init.One())
                    self.proj = mx.gluon.nn.Dense(4, flatten=False)

            def hybrid_forward(self, F, x, y, scale):
                h = F.broadcast_mul(self.proj(x), scale)
                return F.relu(h) + F.sigmoid(y) * 2, F.sum(h, axis=1)

        return Gate()

    INPUTS = {"lenet": [(2, 1, 8, 8)], "mlp": [(3, 5)], "two_inputs": [(2, 3, 5), (2, 3, 4)]}

    def build(mx, name, values=None):
        with mx.name.NameManager():
            net = globals()[name](mx)
        net.initialize()
        net.hybridize()
        xs = [mx.nd.ones(s) for s in INPUTS[name]]
        net(*xs)
        for pname, p in net.collect_params().items():
            if values is not None:
                p.set_data(mx.nd.array(values[pname]))
        return net

    def files(mx, prefix, epoch):
        params = mx.nd.load("%s-%04d.params" % (prefix, epoch))
        with open(prefix + "-symbol.json") as f:
            graph = json.load(f)
        return graph, [[k, list(v.shape), str(v.dtype)] for k, v in params.items()]

    def as_list(out):
        return list(out) if isinstance(out, (list, tuple)) else [out]
    """
)
NAMES = ["lenet", "mlp", "two_inputs"]


def _namespace():
    ns = {"json": json}
    exec(NETS, ns)
    return ns


def _values(name, seed=2):
    """Deterministic values of a net's parameters (positive BatchNorm variances)."""
    net = _namespace()["build"](mx, name)
    rng = np.random.default_rng(seed)
    vals = {}
    for pname, p in net.collect_params().items():
        v = rng.standard_normal(p.shape).astype(np.float32) * 0.5
        vals[pname] = np.abs(v) + 0.5 if pname.endswith("_var") else v
    return vals


def _inputs(name, seed=4):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(s).astype(np.float32) for s in _namespace()["INPUTS"][name]]


# ----------------------------------------------------------------------------------- export
def test_export_writes_the_files_mxnet_writes(tmp_path):
    ns = _namespace()
    ours = {}
    for name in NAMES:
        net = ns["build"](mx, name)
        net.export(str(tmp_path / name), epoch=7)
        ours[name] = ns["files"](mx, str(tmp_path / name), 7)
    script = NETS + textwrap.dedent(
        f"""
        import mxnet as mx
        result = {{}}
        for name in {NAMES!r}:
            build(mx, name).export(name, epoch=7)
            result[name] = files(mx, name, 7)
        """
    )
    (tmp_path / "ref").mkdir()
    result, _ = mxnet_ref.run(tmp_path / "ref", script)
    for name in NAMES:
        assert ours[name][0] == result[name][0], name  # the graph, data/data0/data1 inputs
        assert ours[name][1] == result[name][1], name  # arg:/aux: names, order, shapes, dtypes


def test_export_needs_hybridize_and_a_forward_pass(tmp_path):
    net = gluon.nn.Dense(2, in_units=3)
    net.initialize()
    net(mx.nd.ones((1, 3)))
    with pytest.raises(MXNetError, match="first call block.hybridize"):
        net.export(str(tmp_path / "a"))
    net.hybridize()
    with pytest.raises(MXNetError, match="run forward with this block"):
        net.export(str(tmp_path / "a"))
    net(mx.nd.ones((1, 3)))
    net.export(str(tmp_path / "a"))
    assert (tmp_path / "a-symbol.json").exists() and (tmp_path / "a-0000.params").exists()
    net.hybridize()  # forgets the inputs, as MXNet clears its cached graph
    with pytest.raises(RuntimeError, match="first call block.hybridize"):
        net.export(str(tmp_path / "b"))


def test_mxrs_export_runs_in_mxnet(tmp_path):
    ns = _namespace()
    ref = tmp_path / "ref"
    ref.mkdir()
    expected, inputs = {}, {}
    for name in NAMES:
        net = ns["build"](mx, name, _values(name))
        xs = _inputs(name)
        expected[name] = [o.asnumpy() for o in ns["as_list"](net(*map(mx.nd.array, xs)))]
        net.export(str(ref / name))
        inputs.update({f"{name}_x{i}": x for i, x in enumerate(xs)})
    script = NETS + textwrap.dedent(
        f"""
        import mxnet as mx
        for name in {NAMES!r}:
            xs = [mx.nd.array(v) for k, v in sorted(inputs.items()) if k.startswith(name + "_")]
            data = ["data"] if len(xs) == 1 else ["data%d" % i for i in range(len(xs))]
            block = mx.gluon.SymbolBlock.imports(name + "-symbol.json", data, name + "-0000.params")
            for i, o in enumerate(as_list(block(*xs))):
                arrays["%s_block_%d" % (name, i)] = o.asnumpy()
            sym, args, aux = mx.model.load_checkpoint(name, 0)
            args.update(zip(data, xs))
            exe = sym.bind(mx.cpu(), args, aux_states=aux, grad_req="null")
            for i, o in enumerate(exe.forward(is_train=False)):
                arrays["%s_bind_%d" % (name, i)] = o.asnumpy()
        """
    )
    _, arrays = mxnet_ref.run(ref, script, **inputs)
    for name in NAMES:
        for how in ("block", "bind"):
            for i, want in enumerate(expected[name]):
                np.testing.assert_allclose(arrays[f"{name}_{how}_{i}"], want, rtol=1e-4, atol=1e-5)


# --------------------------------------------------------------------------- MXNet -> mxrs
TRAIN = textwrap.dedent(
    """
    def imported_step(mx, name, xs):
        data = ["data"] if len(xs) == 1 else ["data%d" % i for i in range(len(xs))]
        block = mx.gluon.SymbolBlock.imports(name + "-symbol.json", data, name + "-0000.params")
        xs = [mx.nd.array(x) for x in xs]
        out = {"infer_%d" % i: o.asnumpy() for i, o in enumerate(as_list(block(*xs)))}
        with mx.autograd.record():
            ys = as_list(block(*xs))
            total = sum((y * y).sum() for y in ys)
        total.backward()
        params = block.collect_params()
        for pname, p in params.items():
            if p.grad_req != "null":
                out["grad_" + pname] = p.grad().asnumpy()
            else:
                out["aux_" + pname] = p.data().asnumpy()
        trainer = mx.gluon.Trainer(params, "sgd", {"learning_rate": 0.1})
        trainer.step(1)
        out.update({"after_" + k: p.data().asnumpy() for k, p in params.items()})
        info = {"params": sorted(params.keys()), "reg": sorted(block._reg_params),
                "null": sorted(k for k, p in params.items() if p.grad_req == "null"),
                "repr": repr(block)}
        return info, out
    """
)


def test_mxnet_export_imports_trains_and_updates_batchnorm_in_mxrs(tmp_path, monkeypatch):
    names = ["lenet", "mlp"]
    inputs = {}
    for name in names:
        inputs.update({f"{name}__{k}": v for k, v in _values(name, seed=9).items()})
        inputs.update({f"{name}_x{i}": x for i, x in enumerate(_inputs(name, seed=8))})
    script = (
        NETS
        + TRAIN
        + textwrap.dedent(
            f"""
            import mxnet as mx
            result = {{}}
            for name in {names!r}:
                vals = {{k.split("__")[1]: v for k, v in inputs.items()
                         if k.startswith(name + "__")}}
                build(mx, name, vals).export(name)
                xs = [v for k, v in sorted(inputs.items()) if k.startswith(name + "_x")]
                result[name], out = imported_step(mx, name, xs)
                arrays.update({{name + "/" + k: v for k, v in out.items()}})
            """
        )
    )
    result, arrays = mxnet_ref.run(tmp_path, script, **inputs)
    ns = _namespace()
    exec(TRAIN, ns)
    mx.random.seed(0)
    for name in names:
        for suffix in ("-symbol.json", "-0000.params"):
            assert (tmp_path / (name + suffix)).exists()
        xs = [v for k, v in sorted(inputs.items()) if k.startswith(name + "_x")]
        monkeypatch.chdir(tmp_path)  # the files are named relative to it
        info, ours = ns["imported_step"](mx, name, xs)
        assert info == result[name]
        theirs = {k.split("/", 1)[1]: v for k, v in arrays.items() if k.startswith(name + "/")}
        assert sorted(ours) == sorted(theirs)
        for k, v in theirs.items():
            np.testing.assert_allclose(ours[k], v, rtol=1e-4, atol=1e-5, err_msg=f"{name} {k}")


# ------------------------------------------------------------------------ SymbolBlock itself
GRAPH = textwrap.dedent(
    """
    def graph(mx):
        data = mx.sym.var("data")
        fc1 = mx.sym.FullyConnected(data, num_hidden=6, name="model_fc1")
        bn = mx.sym.BatchNorm(fc1, fix_gamma=False, name="model_bn")
        act = mx.sym.Activation(bn, act_type="relu", name="model_relu")
        fc2 = mx.sym.FullyConnected(act, num_hidden=3, name="model_fc2")
        return data, fc1, fc2

    def block_step(mx, values, x):
        data, fc1, fc2 = graph(mx)
        block = mx.gluon.SymbolBlock([fc2, fc1], data)
        block.initialize(mx.init.One())
        first = [o.asnumpy() for o in block(mx.nd.array(x))]
        for name, p in block.collect_params().items():
            p.set_data(mx.nd.array(values[name]))
        trainer = mx.gluon.Trainer(block.collect_params(), "sgd", {"learning_rate": 0.5})
        for _ in range(2):
            with mx.autograd.record():
                out, hidden = block(mx.nd.array(x))
                loss = (out * out).sum() + hidden.sum()
            loss.backward()
            trainer.step(4)
        out = {k: p.data().asnumpy() for k, p in block.collect_params().items()}
        out["predict"] = block(mx.nd.array(x))[0].asnumpy()
        composed = block(mx.sym.var("x"))
        info = {"params": list(block.collect_params().keys()), "reg": list(block._reg_params),
                "shapes": [list(p.shape) for p in block.collect_params().values()],
                "grad_req": [p.grad_req for p in block.collect_params().values()],
                "first": [list(f.shape) for f in first], "repr": repr(block),
                "composed": [s.list_arguments() for s in composed]}
        return info, out
    """
)


def test_symbol_block_names_trains_and_composes_as_mxnet(tmp_path):
    rng = np.random.default_rng(1)
    values = {
        "model_fc1_weight": rng.standard_normal((6, 5)),
        "model_fc1_bias": rng.standard_normal(6),
        "model_bn_gamma": rng.uniform(0.5, 1.5, 6),
        "model_bn_beta": rng.standard_normal(6),
        "model_bn_moving_mean": rng.standard_normal(6),
        "model_bn_moving_var": rng.uniform(0.5, 1.5, 6),
        "model_fc2_weight": rng.standard_normal((3, 6)) * 0.3,
        "model_fc2_bias": rng.standard_normal(3),
    }
    values = {k: v.astype(np.float32) for k, v in values.items()}
    x = rng.standard_normal((4, 5)).astype(np.float32)
    script = GRAPH + textwrap.dedent(
        """
        import mxnet as mx
        x = inputs.pop("x")
        result, arrays = block_step(mx, inputs, x)
        """
    )
    result, arrays = mxnet_ref.run(tmp_path, script, x=x, **values)
    ns = {}
    exec(GRAPH, ns)
    info, ours = ns["block_step"](mx, values, x)
    assert info == result
    assert info["reg"][0] == "fc1_weight"  # the common prefix "model_" is dropped
    for k, v in arrays.items():
        np.testing.assert_allclose(ours[k], v, rtol=1e-4, atol=1e-5, err_msg=k)


def test_symbol_block_shares_parameters_to_extract_features():
    with mx.name.NameManager():
        net = _namespace()["mlp"](mx)
    net.initialize()
    x = mx.nd.array(np.random.default_rng(0).standard_normal((2, 5)))
    data = mx.sym.var("data")
    internals = net(data).get_internals()
    hidden = internals["mlp_dense0_sigmoid_fwd_output"]
    feat = gluon.SymbolBlock([hidden, internals["mlp_dense1_fwd_output"]], data,
                             params=net.collect_params())  # fmt: skip
    h0, h1 = feat(x)
    assert feat.collect_params()["mlp_dense0_weight"] is net.collect_params()["mlp_dense0_weight"]
    np.testing.assert_allclose(h0.asnumpy(), net[0](x).asnumpy(), rtol=1e-6)
    np.testing.assert_allclose(h1.asnumpy(), net[1](net[0](x)).asnumpy(), rtol=1e-6)
    single = gluon.SymbolBlock(hidden, [data], params=net.collect_params())
    assert isinstance(single(x), mx.nd.NDArray)


def test_imports_reads_plain_names_and_checks_missing_and_extra(tmp_path):
    net = _namespace()["build"](mx, "mlp", _values("mlp"))
    net.export(str(tmp_path / "mlp"))
    x = mx.nd.ones((2, 5))
    want = net(x).asnumpy()
    # MXNet checkpoints carry arg:/aux: prefixes; plain names (save_parameters style) work too
    plain = tmp_path / "plain.params"
    mx.nd.save(str(plain), {k: p.data() for k, p in net.collect_params().items()})
    for params in (tmp_path / "mlp-0000.params", plain):
        block = gluon.SymbolBlock.imports(str(tmp_path / "mlp-symbol.json"), "data", str(params))
        np.testing.assert_allclose(block(x).asnumpy(), want, rtol=1e-6)
    # a SymbolBlock exports its graph and parameters again, unchanged
    block.export(str(tmp_path / "again"), epoch=2)
    assert (tmp_path / "again-symbol.json").read_text() == (
        tmp_path / "mlp-symbol.json"
    ).read_text()
    again = mx.nd.load(str(tmp_path / "again-0002.params"))
    first = mx.nd.load(str(tmp_path / "mlp-0000.params"))
    assert list(again) == list(first)
    for k, v in first.items():
        np.testing.assert_array_equal(again[k].asnumpy(), v.asnumpy())
    partial = tmp_path / "partial.params"
    mx.nd.save(str(partial), {"arg:mlp_dense0_weight": mx.nd.ones((8, 5)), "arg:extra": x})
    with pytest.raises(MXNetError, match="is missing"):
        gluon.SymbolBlock.imports(str(tmp_path / "mlp-symbol.json"), ["data"], str(partial))
    with pytest.raises(MXNetError, match="not present"):
        gluon.SymbolBlock.imports(
            str(tmp_path / "mlp-symbol.json"), ["data"], str(partial), allow_missing=True
        )
    block = gluon.SymbolBlock.imports(
        str(tmp_path / "mlp-symbol.json"),
        ["data"],
        str(partial),
        allow_missing=True,
        ignore_extra=True,
    )
    assert block.collect_params()["mlp_dense0_weight"].data().asnumpy().sum() == 40
    with pytest.raises(MXNetError, match="has not been initialized"):
        block(x)


def test_symbol_block_infers_deferred_shapes_and_refuses_bad_inputs():
    data = mx.sym.var("data")
    out = mx.sym.FullyConnected(mx.sym.BatchNorm(data, name="bn"), num_hidden=2, name="fc")
    block = gluon.SymbolBlock(out, data)
    params = block.collect_params()
    assert params["bn_moving_mean"].grad_req == "null"
    assert params["fc_weight"].shape is None
    block.initialize(mx.init.One())  # the default Uniform() would make variances negative
    assert block(mx.nd.ones((3, 4))).shape == (3, 2)
    assert params["fc_weight"].shape == (2, 4)
    with pytest.raises(MXNetError, match="must be variable"):
        gluon.SymbolBlock(out, out)
    with pytest.raises(MXNetError, match="mixed NDArrays and Symbols"):
        block(mx.nd.ones((3, 4)), mx.sym.var("y"))
    with pytest.raises(MXNetError, match="does not match"):
        block(mx.nd.ones((3, 4)), mx.nd.ones((3, 4)))
    with pytest.raises(MXNetError, match="Invalid input format"):
        block(mx.sym.var("a"), mx.sym.var("b"))


def test_symbol_block_gradients_reach_its_parameters():
    data = mx.sym.var("data")
    block = gluon.SymbolBlock(mx.sym.FullyConnected(data, num_hidden=1, name="fc"), data)
    block.initialize(mx.init.One())
    x = mx.nd.array([[1.0, 2.0], [3.0, 4.0]])
    with autograd.record():
        y = block(x).sum()
    y.backward()
    params = block.collect_params()
    np.testing.assert_allclose(params["fc_weight"].grad().asnumpy(), [[4.0, 6.0]])
    np.testing.assert_allclose(params["fc_bias"].grad().asnumpy(), [2.0])
