"""Block and HybridBlock: naming, registration, parameter collection, save/load, hooks."""

import mxrs as mx
import numpy as np
import pytest
from mxrs import gluon
from mxrs.base import MXNetError
from mxrs.gluon import nn
from mxrs.gluon.parameter import DeferredInitializationError

CTXS = [mx.cpu(0), mx.cpu(1)]


class _Model(gluon.Block):
    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        with self.name_scope():
            self.dense0 = nn.Dense(4, activation="relu")
            self.dense1 = nn.Dense(2)

    def forward(self, x):
        return self.dense1(self.dense0(x))


class _Scale(gluon.HybridBlock):
    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        with self.name_scope():
            self.scale = self.params.get("scale", shape=(1,), init=mx.init.Constant(3.0))

    def hybrid_forward(self, F, x, scale):
        return F.broadcast_mul(x, scale)


def test_top_level_names_count_per_class():
    with mx.name.NameManager():
        a, b, c = nn.Dense(2), nn.Dense(2), nn.Conv2D(3, 3)
        assert (a.name, b.name, c.name) == ("dense0", "dense1", "conv0")
        assert list(a.params.keys()) == ["dense0_weight", "dense0_bias"]
        assert a.prefix == "dense0_"
    with mx.name.NameManager(), mx.name.Prefix("outer_"):
        assert nn.Dense(2).name == "outer_dense0"


def test_name_scope_prefixes_children():
    with mx.name.NameManager():
        net = nn.Sequential()
        with net.name_scope():
            net.add(nn.Dense(3), nn.Dense(4), nn.BatchNorm())
        model = _Model()
    assert [b.name for b in net] == [
        "sequential0_dense0",
        "sequential0_dense1",
        "sequential0_batchnorm0",
    ]
    assert list(net.collect_params().keys()) == [
        "sequential0_dense0_weight",
        "sequential0_dense0_bias",
        "sequential0_dense1_weight",
        "sequential0_dense1_bias",
        "sequential0_batchnorm0_gamma",
        "sequential0_batchnorm0_beta",
        "sequential0_batchnorm0_running_mean",
        "sequential0_batchnorm0_running_var",
    ]
    assert model.dense0.name == "_model0_dense0"
    assert model.dense0.act.name == "_model0_dense0_relu"
    explicit = nn.Dense(2, prefix="fc_")
    assert list(explicit.params.keys()) == ["fc_weight", "fc_bias"]


def test_setattr_registers_children_and_parameters():
    model = _Model(prefix="m_")
    assert list(model._children) == ["dense0", "dense1"]
    scale = _Scale(prefix="s_")
    assert scale._reg_params == {"scale": scale.scale}
    with pytest.raises(TypeError, match="Changing attribute type for dense0"):
        model.dense0 = 5
    with pytest.raises(MXNetError, match="Overriding Parameter attribute scale"):
        scale.scale = gluon.Parameter("other", shape=(1,))


def test_collect_params_with_regex_select():
    with mx.name.NameManager():
        net = nn.HybridSequential(prefix="")
        net.add(nn.Dense(3, in_units=2), nn.Dense(1, in_units=3), nn.BatchNorm(in_channels=1))
    everything = net.collect_params()
    assert list(everything.keys())[:4] == [
        "dense0_weight",
        "dense0_bias",
        "dense1_weight",
        "dense1_bias",
    ]
    assert list(net.collect_params(".*weight").keys()) == ["dense0_weight", "dense1_weight"]
    assert list(net.collect_params("dense0_weight|dense0_bias").keys()) == [
        "dense0_weight",
        "dense0_bias",
    ]
    assert list(net.collect_params(".*running_.*").keys()) == [
        "batchnorm0_running_mean",
        "batchnorm0_running_var",
    ]
    assert list(net.collect_params("weight").keys()) == []  # re.match anchors at the start


def test_block_forward_initialize_on_two_contexts():
    model = _Model(prefix="m_")
    model.initialize(mx.init.Xavier(), ctx=CTXS)
    x = mx.nd.ones((5, 3))
    y0 = model(x)
    y1 = model(x.as_in_context(mx.cpu(1)))
    assert y1.context == mx.cpu(1)
    np.testing.assert_allclose(y0.asnumpy(), y1.asnumpy(), rtol=1e-6)
    for p in model.collect_params().values():
        a, b = p.list_data()
        np.testing.assert_array_equal(a.asnumpy(), b.asnumpy())


def test_hybrid_block_receives_its_parameters_on_the_input_context():
    block = _Scale(prefix="s_")
    block.initialize(ctx=CTXS)
    out = block(mx.nd.array([1.0, 2.0], ctx=mx.cpu(1)))
    assert out.context == mx.cpu(1)
    np.testing.assert_array_equal(out.asnumpy(), [3, 6])
    block.hybridize()
    np.testing.assert_array_equal(block(mx.nd.array([1.0])).asnumpy(), [3])
    with pytest.raises(MXNetError, match="at least one NDArray among the inputs"):
        block(np.ones(2))


def test_deferred_initialization_error_before_forward_and_shapes_after():
    net = nn.HybridSequential(prefix="n_")
    with net.name_scope():
        net.add(nn.Dense(5, activation="relu"), nn.Dense(2))
    net.initialize(ctx=CTXS)
    w = net[0].weight
    assert w.shape == (5, 0)
    assert w.list_ctx() == CTXS
    with pytest.raises(DeferredInitializationError, match="n_dense0_weight.*deferred"):
        w.data()
    net(mx.nd.ones((4, 2, 3)))
    assert w.shape == (5, 6) and net[1].weight.shape == (2, 5)
    assert [a.context for a in w.list_data()] == CTXS
    assert repr(net[0]) == "Dense(6 -> 5, Activation(relu))"


def test_custom_block_with_uninferable_shape_fails_clearly():
    class Bad(gluon.HybridBlock):
        def __init__(self):
            super().__init__(prefix="bad_")
            self.w = self.params.get("weight", shape=(0,), allow_deferred_init=True)

        def hybrid_forward(self, F, x, w):
            return x * w

    bad = Bad()
    bad.initialize()
    with pytest.raises(
        MXNetError,
        match="Deferred initialization failed because shape cannot "
        r"be inferred. Bad cannot infer the shapes of "
        r"\['bad_weight'\]",
    ):
        bad(mx.nd.ones((2,)))


def test_hybrid_block_children_must_be_hybrid():
    with pytest.raises(MXNetError, match="Children of HybridBlock must also be HybridBlock"):
        nn.HybridSequential().add(nn.Sequential())


def test_sharing_parameters_between_blocks():
    dense0 = nn.Dense(3, in_units=2, prefix="d0_")
    dense1 = nn.Dense(3, in_units=2, params=dense0.collect_params())
    assert dense1.weight is dense0.weight and dense1.bias is dense0.bias
    dense0.initialize()
    x = mx.nd.ones((1, 2))
    np.testing.assert_array_equal(dense0(x).asnumpy(), dense1(x).asnumpy())


def test_hooks_and_apply():
    block = _Scale(prefix="s_")
    block.initialize()
    seen = []
    pre = block.register_forward_pre_hook(lambda b, args: seen.append(("pre", args[0].shape)))
    post = block.register_forward_hook(lambda b, args, out: seen.append(("post", out.shape)))
    block(mx.nd.ones((2,)))
    assert seen == [("pre", (2,)), ("post", (2,))]
    pre.detach()
    with post:
        pass
    block(mx.nd.ones((2,)))
    assert len(seen) == 2
    names = []
    model = _Model(prefix="m_")
    assert model.apply(lambda b: names.append(b.name)) is model
    assert names == ["m_dense0_relu", "m_dense0", "m_dense1", "m"]


def test_save_and_load_parameters_round_trip(tmp_path):
    def make():
        net = nn.HybridSequential()
        with net.name_scope():
            net.add(nn.Dense(4, activation="tanh"), nn.BatchNorm(), nn.Dense(2))
        return net

    net = make()
    net.initialize(mx.init.Xavier(), ctx=CTXS)
    x = mx.nd.array(np.random.default_rng(0).standard_normal((3, 5)))
    with mx.autograd.record():  # deferred init; the running statistics move on both copies
        net(x), net(x.as_in_context(mx.cpu(1)))
    fname = str(tmp_path / "net.params")
    net.save_parameters(fname)
    assert sorted(mx.nd.load(fname)) == [
        "0.bias",
        "0.weight",
        "1.beta",
        "1.gamma",
        "1.running_mean",
        "1.running_var",
        "2.bias",
        "2.weight",
    ]
    other = make()
    other.load_parameters(fname, ctx=CTXS)
    for (k, a), b in zip(
        net._collect_params_with_prefix().items(),
        other._collect_params_with_prefix().values(),
        strict=True,
    ):
        assert b.list_ctx() == CTXS, k
        for ctx in CTXS:
            np.testing.assert_array_equal(a.data(ctx).asnumpy(), b.data(ctx).asnumpy())
    np.testing.assert_array_equal(net(x).asnumpy(), other(x).asnumpy())
    # Loading into an initialized network writes into the existing arrays.
    arrays = other[0].weight.list_data()
    other.load_parameters(fname)
    assert other[0].weight.list_data()[0] is arrays[0]


def test_load_parameters_missing_and_extra(tmp_path):
    class Nested(gluon.Block):
        def __init__(self):
            super().__init__()
            with self.name_scope():
                self.features = nn.HybridSequential()
                self.features.add(nn.Dense(3, in_units=2), nn.Dense(2, in_units=3))
                self.output = nn.Dense(1, in_units=2)

        def forward(self, x):
            return self.output(self.features(x))

    net = Nested()
    net.initialize()
    fname = str(tmp_path / "nested.params")
    net.save_parameters(fname)
    assert "features.1.bias" in mx.nd.load(fname)

    smaller = nn.HybridSequential()
    smaller.add(nn.Dense(3, in_units=2))
    with pytest.raises(MXNetError, match=r"Parameter '0.weight' is missing in file"):
        smaller.load_parameters(fname)

    class Renamed(Nested):
        def __init__(self):
            super().__init__()
            with self.name_scope():
                self.extra = nn.Dense(1, in_units=1)

    bigger = Renamed()
    with pytest.raises(MXNetError, match="Parameter 'extra.weight' is missing"):
        bigger.load_parameters(fname)
    bigger.load_parameters(fname, allow_missing=True)
    assert not bigger.extra.weight._is_initialized()

    partial = Nested()
    del partial._children["output"]
    with pytest.raises(
        MXNetError, match="Parameter 'output.weight' loaded from file .* is not present"
    ):
        partial.load_parameters(fname)
    partial.load_parameters(fname, ignore_extra=True)
    np.testing.assert_array_equal(
        partial.features[1].bias.data().asnumpy(), net.features[1].bias.data().asnumpy()
    )


def test_load_parameters_accepts_prefixed_names(tmp_path):
    net = nn.Dense(2, in_units=3, prefix="fc_")
    net.initialize()
    fname = str(tmp_path / "legacy.params")
    net.collect_params().save(fname, strip_prefix="fc_")
    other = nn.Dense(2, in_units=3, prefix="other_")
    other.load_parameters(fname)
    np.testing.assert_array_equal(other.weight.data().asnumpy(), net.weight.data().asnumpy())


def test_cast_and_repr():
    model = _Model(prefix="m_")
    model.initialize()
    model(mx.nd.ones((1, 2)))
    model.cast("float64")
    assert model.dense0.weight.data().dtype == np.float64
    assert model(mx.nd.ones((1, 2), dtype="float64")).dtype == np.float64
    assert repr(model) == (
        "_Model(\n  (dense0): Dense(2 -> 4, Activation(relu))\n  (dense1): Dense(4 -> 2, linear)\n)"
    )


def test_unregistered_container_warns():
    class Holder(gluon.Block):
        def __init__(self):
            super().__init__()
            self.layers = [nn.Dense(2)]

    with pytest.warns(UserWarning, match="unregistered container with Blocks"):
        Holder().collect_params()


def test_summary_prints_each_layer(capsys):
    net = nn.HybridSequential()
    net.add(nn.Dense(4, in_units=3), nn.Dense(2, in_units=4))
    net.initialize()
    net.summary(mx.nd.ones((1, 3)))
    out = capsys.readouterr().out
    assert "Dense-1" in out and "Dense-2" in out
    assert "Total params: 26" in out
