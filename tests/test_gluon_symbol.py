"""Gluon on Symbols against Apache MXNet 1.9.1: the same Gluon code called on ``mx.sym.var``
builds the same graph (JSON, node names such as ``dense0_fwd``, arguments named after the
Parameters), that graph computes what MXNet's computes, ``Parameter.var`` makes MXNet's
variable, losses build symbols whose forward and backward match MXNet's, and
``autograd.get_symbol`` rebuilds recorded computations."""

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
    def every_layer(mx):
        nn = mx.gluon.nn
        net = nn.HybridSequential()
        with net.name_scope():
            net.add(nn.Conv2D(6, kernel_size=5, activation="relu"), nn.BatchNorm(),
                    nn.MaxPool2D(pool_size=2, strides=2),
                    nn.Conv2D(8, kernel_size=3, padding=1, use_bias=False),
                    nn.AvgPool2D(pool_size=2), nn.GlobalAvgPool2D(), nn.GlobalMaxPool2D(),
                    nn.Flatten(), nn.Dense(20, activation="tanh"), nn.Dropout(0.3),
                    nn.Dense(10, in_units=20, use_bias=False), nn.LeakyReLU(0.1), nn.PReLU(),
                    nn.ELU(), nn.SELU(), nn.GELU(), nn.Swish(), nn.LayerNorm(),
                    nn.InstanceNorm(), nn.Embedding(10, 4), nn.Activation("sigmoid"),
                    nn.Conv2DTranspose(3, kernel_size=2), nn.GroupNorm(1), nn.Conv1D(2, 1),
                    nn.MaxPool1D(), nn.AvgPool1D(), nn.GlobalMaxPool1D(), nn.GlobalAvgPool1D(),
                    nn.Conv1DTranspose(2, 3, strides=2, output_padding=1), nn.Conv3D(2, 1),
                    nn.MaxPool3D(), nn.AvgPool3D(), nn.GlobalMaxPool3D(), nn.GlobalAvgPool3D(),
                    nn.Conv3DTranspose(2, 1, use_bias=False), nn.ReflectionPad2D(1),
                    nn.HybridLambda("tanh"), nn.HybridLambda(lambda F, x: F.clip(x, 0, 6)))
        return net

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
                    nn.LeakyReLU(0.1), nn.Dense(2, flatten=False))
        return net

    def two_inputs(mx):
        class Gate(mx.gluon.HybridBlock):
            def __init__(self, **kwargs):
                super().__init__(**kwargs)
                with self.name_scope():
                    self.scale = self.params.get("scale", shape=(1,), init=mx.init.One(),
                                                 lr_mult=0.5)
                    self.proj = mx.gluon.nn.Dense(4, flatten=False)

            def hybrid_forward(self, F, x, y, scale):
                h = F.broadcast_mul(self.proj(x), scale)
                return F.relu(h) + F.sigmoid(y) * 2, F.sum(h, axis=1)

        return Gate()

    def zoo(name):
        def build(mx):
            return mx.gluon.model_zoo.vision.get_model(name)
        build.__name__ = name
        return build

    INPUTS = {"every_layer": {"data": (1, 3, 32, 32)}, "lenet": {"data": (2, 1, 8, 8)},
              "mlp": {"data": (3, 5)}, "two_inputs": {"x": (2, 3, 5), "y": (2, 3, 4)}}

    def symbolic(mx, build):
        with mx.name.NameManager():
            net = build(mx)
        names = list(INPUTS.get(build.__name__, {"data": None}))
        out = net(*[mx.sym.var(n) for n in names])
        return net, mx.sym.Group(list(out)) if isinstance(out, (list, tuple)) else out

    def describe(mx, build):
        _, out = symbolic(mx, build)
        return {"json": json.loads(out.tojson()), "arguments": out.list_arguments(),
                "outputs": out.list_outputs(), "aux": out.list_auxiliary_states(),
                "attr_dict": out.attr_dict()}

    def evaluate(mx, build, values):
        _, out = symbolic(mx, build)
        exe = out.simple_bind(mx.cpu(), grad_req="null", **INPUTS[build.__name__])
        for name, arr in list(exe.arg_dict.items()) + list(exe.aux_dict.items()):
            arr[:] = values[name]
        return [o.asnumpy() for o in exe.forward(is_train=False)]
    """
)

GRAPHS = ["every_layer", "lenet", "mlp", "two_inputs"]
ZOO = ["resnet18_v1", "resnet18_v2", "alexnet", "vgg11_bn", "mobilenet0.25"]
RUNNABLE = ["lenet", "mlp", "two_inputs"]


def _namespace():
    ns = {"json": json}
    exec(NETS, ns)
    return ns


def _builder(ns, name):
    return ns[name] if name in ns else ns["zoo"](name)


def _values(name):
    """Deterministic values of a runnable net's parameters and inputs, by name."""
    ns = _namespace()
    with mx.name.NameManager():
        net = ns[name](mx)
    net.initialize()
    rng = np.random.default_rng(3)
    shapes = ns["INPUTS"][name]
    vals = {k: rng.standard_normal(s).astype(np.float32) for k, s in shapes.items()}
    net(*[mx.nd.array(v) for v in vals.values()])  # finish the deferred initialization
    for pname, p in net.collect_params().items():
        v = rng.standard_normal(p.shape).astype(np.float32) * 0.5
        vals[pname] = np.abs(v) + 0.5 if pname.endswith("_var") else v
    return vals


@pytest.fixture(scope="module")
def mxnet_side(tmp_path_factory):
    inputs = {f"{b}__{k}": v for b in RUNNABLE for k, v in _values(b).items()}
    script = NETS + textwrap.dedent(
        f"""
        import mxnet as mx
        result = {{}}
        for b in {GRAPHS + ZOO!r}:
            result[b] = describe(mx, globals()[b] if b in globals() else zoo(b))
        for b in {RUNNABLE!r}:
            vals = {{k.split("__", 1)[1]: v for k, v in inputs.items() if k.startswith(b + "__")}}
            for i, o in enumerate(evaluate(mx, globals()[b], vals)):
                arrays["%s_%d" % (b, i)] = o
        """
    )
    return mxnet_ref.run(tmp_path_factory.mktemp("gluon_symbol"), script, **inputs)


@pytest.mark.parametrize("build", GRAPHS + ZOO)
def test_gluon_code_on_symbols_builds_mxnets_graph(build, mxnet_side):
    ns = _namespace()
    ours = ns["describe"](mx, _builder(ns, build))
    theirs = mxnet_side[0][build]
    for key in ("arguments", "outputs", "aux", "attr_dict"):
        assert ours[key] == theirs[key], key
    assert ours["json"] == theirs["json"]  # node names (dense0_fwd...), attrs, inputs


@pytest.mark.parametrize("build", RUNNABLE)
def test_the_graph_computes_what_mxnet_and_the_block_compute(build, mxnet_side):
    ns = _namespace()
    vals = _values(build)
    theirs = [v for k, v in sorted(mxnet_side[1].items()) if k.startswith(build + "_")]
    graph = ns["evaluate"](mx, ns[build], vals)
    with mx.name.NameManager():
        net = ns[build](mx)
    net.initialize()
    inputs = [mx.nd.array(vals[k]) for k in ns["INPUTS"][build]]
    net(*inputs)
    for name, p in net.collect_params().items():
        p.set_data(mx.nd.array(vals[name]))
    imperative = net(*inputs)
    imperative = imperative if isinstance(imperative, (list, tuple)) else [imperative]
    assert len(graph) == len(theirs) == len(imperative)
    for g, t, i in zip(graph, theirs, imperative, strict=True):
        np.testing.assert_allclose(g, t, rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(i.asnumpy(), t, rtol=1e-4, atol=1e-5)


def test_symbol_calls_name_nodes_in_the_block_scope_and_pass_parameter_variables():
    with mx.name.NameManager():
        net = gluon.nn.Dense(3, activation="relu", in_units=2)
    out = net(mx.sym.var("data"))
    assert out.name == "dense0_relu_fwd"
    assert out.list_arguments() == ["data", "dense0_weight", "dense0_bias"]
    internals = out.get_internals().list_outputs()
    assert "dense0_fwd_output" in internals
    assert out.get_internals()["dense0_weight"].attr("__shape__") == "(3, 2)"
    # the same Parameter gives the same (cached) variable, in any graph
    assert net.weight.var() is net.weight.var()
    twice = net(net(mx.sym.var("data")))
    assert twice.list_arguments() == ["data", "dense0_weight", "dense0_bias"]


def test_parameter_var_matches_mxnet(tmp_path):
    code = textwrap.dedent(
        """
        def variables(mx):
            p = mx.gluon.Parameter("w", shape=(3, 0), lr_mult=2.0, wd_mult=0.5,
                                   init=mx.init.Xavier(magnitude=2), dtype="float16")
            q = mx.gluon.Parameter("b", init="zeros", grad_req="null")
            return [json.loads(v.var().tojson()) for v in (p, q)]
        """
    )
    ns = {"json": json}
    exec(code, ns)
    result, _ = mxnet_ref.run(tmp_path, code + "import mxnet as mx\nresult = variables(mx)\n")
    assert ns["variables"](mx) == result


def test_mixing_ndarrays_and_symbols_is_refused():
    net = gluon.nn.Dense(2, in_units=3)
    net.initialize()
    with pytest.raises(MXNetError, match="mixed NDArrays and Symbols"):
        net(mx.nd.ones((1, 3)), mx.sym.var("y"))
    with pytest.raises(MXNetError, match="mixed NDArrays and Symbols"):
        net([mx.nd.ones((1, 3)), mx.sym.var("y")])


# --------------------------------------------------------------------------------------- losses
LOSSES = textwrap.dedent(
    """
    def net(mx, num_hidden):
        data = mx.sym.Variable("data")
        fc1 = mx.sym.FullyConnected(data, name="fc1", num_hidden=8)
        act1 = mx.sym.Activation(fc1, name="relu1", act_type="relu")
        return mx.sym.FullyConnected(act1, name="fc3", num_hidden=num_hidden)

    def loss_symbol(mx, case, extra):
        L = mx.gluon.loss
        loss, nh = {
            "softmax_ce": (L.SoftmaxCrossEntropyLoss(), 5),
            "softmax_ce_weighted": (L.SoftmaxCrossEntropyLoss(), 5),
            "softmax_ce_scaled": (L.SoftmaxCrossEntropyLoss(axis=1, weight=0.5), 5),
            "kl_div": (L.KLDivLoss(from_logits=False), 2),
            "sigmoid_bce": (L.SigmoidBinaryCrossEntropyLoss(), 1),
            "l2": (L.L2Loss(), 1),
            "l1": (L.L1Loss(), 1),
            "huber": (L.HuberLoss(), 1),
            "hinge": (L.HingeLoss(), 1),
            "triplet": (L.TripletLoss(), 3),
        }[case]
        syms = [mx.sym.var(n) for n in extra]
        return mx.sym.make_loss(loss(net(mx, nh), *syms))

    def loss_run(mx, case, values):
        extra = {k: v for k, v in values.items() if k != "data" and not k.startswith("fc")}
        sym = loss_symbol(mx, case, extra)
        exe = sym.simple_bind(mx.cpu(), **{k: v.shape for k, v in values.items()
                                           if k == "data" or k in extra})
        for name, arr in exe.arg_dict.items():
            arr[:] = values[name]
        out = {"out": exe.forward(is_train=True)[0].asnumpy()}
        exe.backward()
        out.update({"grad_" + k: g.asnumpy() for k, g in exe.grad_dict.items()})
        return sym.list_arguments(), out
    """
)
LOSS_EXTRA = {
    "softmax_ce": {"label": ("int", 5, (4,))},
    "softmax_ce_weighted": {"label": ("int", 5, (4,)), "w": ("uniform", 1, (4, 1))},
    "softmax_ce_scaled": {"label": ("int", 5, (4,))},
    "kl_div": {"label": ("uniform", 1, (4, 2))},
    "sigmoid_bce": {"label": ("int", 2, (4,))},
    "l2": {"label": ("uniform", 1, (4, 1))},
    "l1": {"label": ("uniform", 1, (4,))},
    "huber": {"label": ("uniform", 1, (4, 1))},
    "hinge": {"label": ("sign", 1, (4, 1))},
    "triplet": {"pos": ("uniform", 1, (4, 3)), "neg": ("uniform", 1, (4, 3))},
}
LOSS_CASES = list(LOSS_EXTRA)


def _loss_values(case):
    rng = np.random.default_rng(11)
    vals = {"data": rng.uniform(-1, 1, (4, 6)).astype(np.float32)}
    for name, (kind, n, shape) in LOSS_EXTRA[case].items():
        if kind == "int":
            vals[name] = rng.integers(0, n, shape).astype(np.float32)
        elif kind == "sign":
            vals[name] = np.sign(rng.standard_normal(shape)).astype(np.float32)
        else:
            vals[name] = rng.uniform(0, 1, shape).astype(np.float32)
    nh = {"kl_div": 2, "triplet": 3}.get(case, 5 if case.startswith("softmax") else 1)
    vals["fc1_weight"] = rng.uniform(-0.5, 0.5, (8, 6)).astype(np.float32)
    vals["fc1_bias"] = rng.uniform(-0.5, 0.5, (8,)).astype(np.float32)
    vals["fc3_weight"] = rng.uniform(-0.5, 0.5, (nh, 8)).astype(np.float32)
    vals["fc3_bias"] = rng.uniform(-0.5, 0.5, (nh,)).astype(np.float32)
    return vals


@pytest.fixture(scope="module")
def mxnet_losses(tmp_path_factory):
    inputs = {f"{c}__{k}": v for c in LOSS_EXTRA for k, v in _loss_values(c).items()}
    script = LOSSES + textwrap.dedent(
        f"""
        import mxnet as mx
        result = {{}}
        for case in {list(LOSS_EXTRA)!r}:
            vals = {{k.split("__", 1)[1]: v for k, v in inputs.items()
                     if k.startswith(case + "__")}}
            result[case], out = loss_run(mx, case, vals)
            arrays.update({{case + "__" + k: v for k, v in out.items()}})
        """
    )
    return mxnet_ref.run(tmp_path_factory.mktemp("losses"), script, **inputs)


@pytest.mark.parametrize("case", LOSS_CASES)
def test_losses_on_symbols_compute_what_mxnet_computes(case, mxnet_losses):
    ns = {}
    exec(LOSSES, ns)
    args, ours = ns["loss_run"](mx, case, _loss_values(case))
    assert args == mxnet_losses[0][case]
    theirs = {
        k.split("__", 1)[1]: v for k, v in mxnet_losses[1].items() if k.startswith(case + "__")
    }
    assert sorted(ours) == sorted(theirs)
    for k, v in theirs.items():
        np.testing.assert_allclose(ours[k], v, rtol=1e-4, atol=1e-5, err_msg=k)


# ----------------------------------------------------------------------------- get_symbol
GET_SYMBOL = textwrap.dedent(
    """
    def recorded(mx, x0, z0, w0):
        x, z, w = mx.nd.array(x0), mx.nd.array(z0), mx.nd.array(w0)
        x.attach_grad()
        z.attach_grad()
        with mx.autograd.record():
            y1 = x * x + 2 * x - 1
            y2 = x * x + 2 * z - 1 + mx.nd.exp(x) * w / (z + 3) - mx.nd.relu(x) ** 2
        out = {}
        for name, y in (("y1", y1), ("y2", y2)):
            sym = mx.autograd.get_symbol(y)
            args = sym.list_arguments()
            feed = dict(zip(args, [mx.nd.array(v) for v in (x0, z0, w0)]))
            out[name] = (len(args), y.asnumpy(), sym.eval(ctx=mx.cpu(), **feed)[0].asnumpy())
        return out
    """
)


def test_get_symbol_rebuilds_the_recorded_computation(tmp_path):
    rng = np.random.default_rng(5)
    x0, z0, w0 = (rng.uniform(0.5, 2, (3,)).astype(np.float32) for _ in range(3))
    script = GET_SYMBOL + textwrap.dedent(
        """
        import mxnet as mx
        out = recorded(mx, inputs["x0"], inputs["z0"], inputs["w0"])
        result = {k: v[0] for k, v in out.items()}
        arrays.update({k + "_sym": v[2] for k, v in out.items()})
        """
    )
    result, arrays = mxnet_ref.run(tmp_path, script, x0=x0, z0=z0, w0=w0)
    ns = {}
    exec(GET_SYMBOL, ns)
    ours = ns["recorded"](mx, x0, z0, w0)
    assert {k: v[0] for k, v in ours.items()} == result == {"y1": 1, "y2": 3}
    for name, (_, direct, from_symbol) in ours.items():
        np.testing.assert_allclose(from_symbol, direct, rtol=1e-5)
        np.testing.assert_allclose(from_symbol, arrays[name + "_sym"], rtol=1e-5)


def test_get_symbol_names_and_errors():
    x = mx.nd.ones((2,))
    with pytest.raises(MXNetError, match="not part of a computation graph"):
        autograd.get_symbol(x)
    x.attach_grad()
    assert autograd.get_symbol(x).list_arguments() == ["var0"]
    with autograd.record():
        a, b = mx.nd.split(mx.nd.concat(x, x * 3, dim=0), num_outputs=2, axis=0)
        y = b - a
    sym = autograd.get_symbol(y)
    assert sym.list_arguments() == ["var0"]
    assert [n.op for n in sym._nodes() if n.op] == [
        "_mul_scalar",
        "Concat",
        "SliceChannel",
        "broadcast_sub",
    ]
    np.testing.assert_allclose(sym.eval(ctx=mx.cpu(), var0=x)[0].asnumpy(), [2.0, 2.0])
    y.backward()
    with pytest.raises(MXNetError, match="freed by backward"):
        autograd.get_symbol(y)
